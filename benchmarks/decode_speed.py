"""Decoding speed (generated tokens/s): aiayn against Hugging Face and CTranslate2.

Every system decodes the same random source sentences with a model of the same size (random
weights: speed does not depend on them) and is forced to produce exactly ``--out-len`` tokens
per sentence, so all do the same work. For CTranslate2 our own model is converted (weights
copied into a CTranslate2 Transformer spec) and run in float32 and int8; Hugging Face runs a
MarianMTModel of the same shape. Systems alternate within each row, for ``--rounds`` rounds (the
table shows each system's median); with ``--isolate`` each measurement runs in a fresh process
of its own (the systems' thread pools and caches then cannot disturb one another). aiayn decodes
with the allocator settings that ``aiayn.load`` and ``aiayn translate`` apply
(``aiayn.cpu``). Run by hand (bench extra: ``pip install transformers ctranslate2``):

    .venv/bin/python benchmarks/decode_speed.py [--sizes small base] [--repeats 3] [--isolate]
        [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from aiayn import ModelConfig, Transformer
from aiayn.cpu import for_inference, reuse_freed_memory
from aiayn.decode.search import beam_search, greedy_search

VOCAB = 8000


def to_ctranslate2(model: Transformer, directory: str) -> None:
    """Write our post-norm Transformer as a CTranslate2 model (weights copied, not retrained)."""
    from ctranslate2.specs import common_spec, transformer_spec

    cfg = model.cfg
    spec = transformer_spec.TransformerSpec.from_config(
        (cfg.n_encoder_layers, cfg.n_decoder_layers), cfg.n_heads, pre_norm=False,
        activation=common_spec.Activation.RELU)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    table = model.src_embed.positions.table.numpy()

    def linear(dst, name):
        dst.weight = sd[f"{name}.weight"]
        if f"{name}.bias" in sd:
            dst.bias = sd[f"{name}.bias"]

    def norm(dst, name):
        dst.gamma, dst.beta = sd[f"{name}.weight"], sd[f"{name}.bias"]

    for side, stack in (("encoder", spec.encoder), ("decoder", spec.decoder)):
        emb = stack.embeddings[0] if isinstance(stack.embeddings, list) else stack.embeddings
        emb.weight = sd["src_embed.token.weight"]
        stack.scale_embeddings = True
        stack.position_encodings.encodings = table
    for i, layer in enumerate(spec.encoder.layer):
        p = f"encoder.layers.{i}"
        linear(layer.self_attention.linear[0], f"{p}.self_attn.qkv_proj")
        linear(layer.self_attention.linear[1], f"{p}.self_attn.out_proj")
        norm(layer.self_attention.layer_norm, f"{p}.attn_block.norm")
        linear(layer.ffn.linear_0, f"{p}.ffn.linear1")
        linear(layer.ffn.linear_1, f"{p}.ffn.linear2")
        norm(layer.ffn.layer_norm, f"{p}.ffn_block.norm")
    for i, layer in enumerate(spec.decoder.layer):
        p = f"decoder.layers.{i}"
        linear(layer.self_attention.linear[0], f"{p}.self_attn.qkv_proj")
        linear(layer.self_attention.linear[1], f"{p}.self_attn.out_proj")
        norm(layer.self_attention.layer_norm, f"{p}.self_block.norm")
        linear(layer.attention.linear[0], f"{p}.cross_attn.q_proj")
        linear(layer.attention.linear[1], f"{p}.cross_attn.kv_proj")
        linear(layer.attention.linear[2], f"{p}.cross_attn.out_proj")
        norm(layer.attention.layer_norm, f"{p}.cross_block.norm")
        linear(layer.ffn.linear_0, f"{p}.ffn.linear1")
        linear(layer.ffn.linear_1, f"{p}.ffn.linear2")
        norm(layer.ffn.layer_norm, f"{p}.ffn_block.norm")
    spec.decoder.projection.weight = sd["src_embed.token.weight"]
    vocab = ["<blank>", "<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(4, cfg.vocab_size)]
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    spec.config.layer_norm_epsilon = cfg.layer_norm_eps
    spec.validate()
    spec.save(directory)


def marian(cfg: ModelConfig):
    from transformers import MarianConfig, MarianMTModel
    conf = MarianConfig(vocab_size=cfg.vocab_size, d_model=cfg.d_model,
                        encoder_layers=cfg.n_encoder_layers, decoder_layers=cfg.n_decoder_layers,
                        encoder_attention_heads=cfg.n_heads, decoder_attention_heads=cfg.n_heads,
                        encoder_ffn_dim=cfg.d_ff, decoder_ffn_dim=cfg.d_ff,
                        activation_function="relu", max_position_embeddings=cfg.max_len,
                        scale_embedding=True, pad_token_id=0, eos_token_id=3,
                        decoder_start_token_id=2, forced_eos_token_id=None)
    return MarianMTModel(conf).eval()


def timed(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        time.sleep(0.3)  # let the previous system's worker threads stop spinning
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


SYSTEMS = ("aiayn", "Hugging Face", "CTranslate2 float32", "aiayn --int8", "CTranslate2 int8")
ROWS = ((32, 1, "greedy"), (32, 4, "beam 4"), (1, 1, "greedy"))


def build(name: str, size: str, args, workdir: str):
    """One system, ready to decode ``fn(batch, beam)`` on the shared random sources. Every
    system starts from the same seeded weights (CTranslate2 converts ours)."""
    torch.manual_seed(0)
    cfg = ModelConfig.preset(size, vocab_size=VOCAB)
    ours = Transformer(cfg).eval()
    out_len = args.out_len
    gen = torch.Generator().manual_seed(0)
    src = torch.randint(4, VOCAB, (32, args.src_len), generator=gen)
    src[:, -1] = 3
    if name.startswith("aiayn"):
        reuse_freed_memory()  # as aiayn.load / `aiayn translate` do
        model = for_inference(ours, int8=name.endswith("int8"))

        def fn(batch, beam):
            if beam == 1:
                greedy_search(model, src[:batch], min_len=out_len - 1, max_len_a=0,
                              max_len_b=out_len)
            else:
                beam_search(model, src[:batch], beam=beam, lenpen=0.6, min_len=out_len - 1,
                            max_len_a=0, max_len_b=out_len)
        return fn
    if name == "Hugging Face":
        hf = marian(cfg)

        def fn(batch, beam):
            with torch.inference_mode():
                hf.generate(src[:batch], attention_mask=torch.ones_like(src[:batch]),
                            num_beams=beam, do_sample=False, min_new_tokens=out_len,
                            max_new_tokens=out_len, length_penalty=0.6)
        return fn
    import ctranslate2
    directory = f"{workdir}/ct2"
    if not Path(directory).exists():
        Path(directory).mkdir()
        to_ctranslate2(ours, directory)
    translator = ctranslate2.Translator(directory, device="cpu", compute_type=name.split()[-1],
                                        intra_threads=torch.get_num_threads())
    tokens = [[f"t{int(i)}" for i in row[:-1]] for row in src]

    def fn(batch, beam):
        translator.translate_batch(tokens[:batch], beam_size=beam, max_decoding_length=out_len,
                                   min_decoding_length=out_len, length_penalty=0.6,
                                   max_batch_size=batch)
    return fn


def measure(fn, batch: int, beam: int, args) -> float:
    sentences = 32 if batch == 32 else args.single

    def work():
        for _ in range(0, sentences, batch):
            fn(batch, beam)
    return sentences * args.out_len / timed(work, args.repeats)


def run_size(size: str, args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        systems = {} if args.isolate else {n: build(n, size, args, tmp) for n in SYSTEMS}
        for batch, beam, label in ROWS:
            runs: dict[str, list[float]] = {name: [] for name in SYSTEMS}
            for _ in range(args.rounds):
                for name in SYSTEMS:  # alternate systems within the row, round after round
                    if args.isolate:  # each system alone in a fresh process
                        out = subprocess.run(
                            [sys.executable, __file__, "--worker", name, "--sizes", size,
                             "--batch", str(batch), "--beam", str(beam), "--repeats",
                             str(args.repeats), "--out-len", str(args.out_len), "--src-len",
                             str(args.src_len), "--single", str(args.single)],
                            check=True, capture_output=True, text=True).stdout
                        runs[name].append(float(out.strip().splitlines()[-1]))
                    else:
                        runs[name].append(measure(systems[name], batch, beam, args))
            rates = {name: statistics.median(r) for name, r in runs.items()}
            cells = " | ".join(f"{rates[n]:,.0f}" for n in SYSTEMS)
            ratio = rates["aiayn"] / rates["CTranslate2 float32"]
            ratio8 = rates["aiayn --int8"] / rates["CTranslate2 int8"]
            print(f"| {size}, {batch} | {label} | {cells} | {ratio:.2f} | {ratio8:.2f} |",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["small", "base"])
    parser.add_argument("--out-len", type=int, default=30)
    parser.add_argument("--src-len", type=int, default=25)
    parser.add_argument("--single", type=int, default=8, help="sentences for the batch-1 rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every system this many times per row, alternating; "
                             "the table shows the median")
    parser.add_argument("--isolate", action="store_true",
                        help="time each system in its own fresh process")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--beam", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # one measurement, printed alone on the last line
        with tempfile.TemporaryDirectory() as tmp:
            fn = build(args.worker, args.sizes[0], args, tmp)
            print(measure(fn, args.batch, args.beam, args))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32 unless named "
          f"(aiayn --int8: torch dynamic int8 quantization); "
          f"{args.out_len} tokens out per sentence, sources of {args.src_len} tokens; "
          f"median of {args.rounds} round(s) of {args.repeats} repeats")
    print("| size, batch | mode | aiayn | Hugging Face | CTranslate2 float32 | aiayn --int8 "
          "| CTranslate2 int8 | aiayn / CT2 float32 | aiayn int8 / CT2 int8 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        run_size(size, args)


if __name__ == "__main__":
    main()
