"""Training throughput (target tokens/s): aiayn's trainer step against two peers.

- aiayn: ``aiayn.train.trainer.train_step`` (the step the trainer runs) on our Transformer.
- torch: a plain PyTorch loop: nn.Embedding x sqrt(d) + sinusoidal positions, nn.Transformer
  (its default dropout placement), tied output projection, F.cross_entropy with label smoothing.
- marian: Hugging Face ``MarianMTModel`` of the same size (ReLU, scaled and tied embeddings,
  sinusoidal positions), loss as the torch loop.

All three take the same token batches (``aiayn prepare`` output, ``--max-tokens`` per batch),
the same Adam (fused for aiayn and Marian, as aiayn's trainer and Hugging Face's Trainer build
it; PyTorch's default for the plain loop) and label smoothing 0.1, in one process (glibc's
allocator set as ``aiayn train`` sets it, for all three), alternating step by step. float32
and bf16 autocast. Each rate is also given as matrix-product GFLOP/s (the products of forward and
backward counted from the padded shapes: ``matmul_flops``) and as a share of this CPU's
ceiling, the rate of one large matrix product in that precision measured at the start (the
faster of PyTorch's product and oneDNN's). Run by
hand (needs the bench extra: ``pip install transformers``):

    .venv/bin/python benchmarks/train_throughput.py --data runs/quality/data [--sizes small base]
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import nullcontext

# the OpenMP spin that ``aiayn train`` runs with (aiayn.threads.SHARED_SPIN_COUNT), for every
# system of this process, set before PyTorch loads, unless the user chose a policy
if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "3000"

import torch  # noqa: E402
import torch.nn.functional as F
from torch import nn

from aiayn import ModelConfig, Transformer
from aiayn.cpu import onednn_available, onednn_linear, onednn_reorder, reuse_freed_memory
from aiayn.data.corpus import ParallelCorpus, token_batches
from aiayn.model import causal_mask, sinusoidal_table
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train_step


class TorchLoop(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=0)
        self.register_buffer("pe", sinusoidal_table(cfg.max_len, cfg.d_model))
        self.core = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers,
                                   cfg.n_decoder_layers, cfg.d_ff, dropout=cfg.dropout,
                                   batch_first=True)
        self.drop = nn.Dropout(cfg.dropout)

    def embed_tokens(self, x):
        return self.drop(self.embed(x) * self.cfg.d_model ** 0.5 + self.pe[: x.size(1)])

    def forward(self, src, tgt_in):
        pad = src == 0
        out = self.core(self.embed_tokens(src), self.embed_tokens(tgt_in),
                        src_key_padding_mask=pad, memory_key_padding_mask=pad,
                        tgt_mask=~causal_mask(tgt_in.size(1))[0, 0], tgt_is_causal=True)
        return F.linear(out, self.embed.weight)


def marian(cfg: ModelConfig) -> nn.Module:
    from transformers import MarianConfig, MarianMTModel
    conf = MarianConfig(vocab_size=cfg.vocab_size, d_model=cfg.d_model,
                        encoder_layers=cfg.n_encoder_layers, decoder_layers=cfg.n_decoder_layers,
                        encoder_attention_heads=cfg.n_heads, decoder_attention_heads=cfg.n_heads,
                        encoder_ffn_dim=cfg.d_ff, decoder_ffn_dim=cfg.d_ff, dropout=cfg.dropout,
                        attention_dropout=0.0, activation_dropout=0.0, activation_function="relu",
                        max_position_embeddings=cfg.max_len, scale_embedding=True,
                        pad_token_id=0, eos_token_id=3, decoder_start_token_id=2,
                        share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    model = MarianMTModel(conf)

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, src, tgt_in):
            return self.m(input_ids=src, attention_mask=src != 0, decoder_input_ids=tgt_in,
                          decoder_attention_mask=tgt_in != 0, use_cache=False).logits
    return Wrap()


def matmul_flops(cfg: ModelConfig, batch) -> float:
    """FLOPs of the matrix products of one training step on ``batch`` (padded shapes): every
    projection, the attention products (full T x T for causal self-attention, as computed) and
    the output projection; forward 2 x multiply-adds, backward twice the forward."""
    b, s = batch.src.shape
    t = batch.tgt_in.size(1)
    d, f, v = cfg.d_model, cfg.d_ff, cfg.target_vocab_size
    encoder = b * s * (4 * d * d + 2 * d * f) + 2 * b * s * s * d
    decoder = (b * t * (6 * d * d + 2 * d * f) + b * s * 2 * d * d  # + cross K, V of memory
               + 2 * b * t * t * d + 2 * b * t * s * d)
    macs = cfg.n_encoder_layers * encoder + cfg.n_decoder_layers * decoder + b * t * d * v
    return 3 * 2 * macs


def ceiling(precision: str, n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of one n x n x n matrix product in ``precision``, the best of ``repeats`` and of
    two libraries: PyTorch's own product (MKL in float32, oneDNN in bfloat16 on x86) and
    oneDNN's linear product (which PyTorch does not use for float32 training)."""
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    products = [lambda: a @ b]
    if onednn_available():
        reordered = onednn_reorder(b, n)
        products.append(lambda: onednn_linear(a, reordered, None))
    best = float("inf")
    for product in products:
        for _ in range(repeats + 1):
            start = time.perf_counter()
            product()
            best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e9


def peer_step(model, opt, batch, precision):
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else nullcontext()
    with ctx:
        logits = model(batch.src, batch.tgt_in)
    loss = F.cross_entropy(logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0,
                           label_smoothing=0.1, reduction="sum")
    opt.zero_grad(set_to_none=True)
    (loss / batch.target_tokens).backward()
    opt.step()


def bench(corpus, size, precision, steps, max_tokens, systems):
    vocab = int(max(corpus.sides["src"][0].max(), corpus.sides["tgt"][0].max())) + 1
    vocab = max(vocab, 8000)
    cfg = ModelConfig.preset(size, vocab_size=vocab)
    torch.manual_seed(0)
    train_cfg = TrainConfig(preset=size, precision=precision)
    models = {}
    if "aiayn" in systems:
        models["aiayn"] = Transformer(cfg).train()
    if "torch" in systems:
        models["torch"] = TorchLoop(cfg).train()
    if "marian" in systems:
        models["marian"] = marian(cfg).train()
    # each system's Adam as its toolkit builds it: aiayn's trainer and Hugging Face's Trainer
    # (its default for torch >= 2.8, adamw_torch_fused) the fused kernel, a plain loop the default
    fused = {"aiayn": True, "torch": False, "marian": True}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9,
                                fused=fused[k])
            for k, m in models.items()}
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    batches = token_batches(corpus.sizes, max_tokens, seed=1, epoch=0)[: steps + 3]
    batches = [corpus.collate(b, cfg) for b in batches]
    times = {k: [] for k in models}
    tokens = sum(b.target_tokens for b in batches[3:])
    flops = sum(matmul_flops(cfg, b) for b in batches[3:])
    for i, batch in enumerate(batches):
        for name, model in models.items():
            start = time.perf_counter()
            if name == "aiayn":
                train_step(model, opts[name], scaler, [batch], lr=1e-4, cfg=train_cfg,
                           device=torch.device("cpu"))
            else:
                peer_step(model, opts[name], batch, precision)
            if i >= 3:  # warm-up
                times[name].append(time.perf_counter() - start)
    return ({k: tokens / sum(v) for k, v in times.items()},
            {k: flops / sum(v) / 1e9 for k, v in times.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a prepared data directory")
    parser.add_argument("--sizes", nargs="+", default=["small", "base"])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--systems", nargs="+", default=["aiayn", "torch", "marian"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=4000)
    args = parser.parse_args()
    corpus = ParallelCorpus(args.data, "train")
    reuse_freed_memory()  # as `aiayn train` does on the CPU; process-wide, so for every system
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; batches of "
          f"<= {args.max_tokens} padded tokens from {args.data}; {args.steps} timed steps each")
    peaks = {p: ceiling(p) for p in args.precisions}
    print("ceiling (one 2048^3 matrix product): "
          + ", ".join(f"{p} {g:.0f} GFLOP/s" for p, g in peaks.items()))
    print("| size | precision | " + " | ".join(f"{s} tgt tok/s" for s in args.systems)
          + " | aiayn / best peer | " + " | ".join(f"{s} % of ceiling" for s in args.systems)
          + " |")
    print("|---|---|" + "---:|" * (2 * len(args.systems) + 1))
    for size in args.sizes:
        for precision in args.precisions:
            r, g = bench(corpus, size, precision, args.steps, args.max_tokens, args.systems)
            peers = [v for k, v in r.items() if k != "aiayn"]
            ratio = f"{r['aiayn'] / max(peers):.2f}" if peers and "aiayn" in r else "-"
            shares = " | ".join(f"{100 * g[s] / peaks[precision]:.0f}% ({g[s]:.0f} GFLOP/s)"
                                for s in args.systems)
            print(f"| {size} | {precision} | " + " | ".join(f"{r[s]:,.0f}" for s in args.systems)
                  + f" | {ratio} | {shares} |", flush=True)


if __name__ == "__main__":
    main()
