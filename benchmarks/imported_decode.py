"""What exporting gains: an imported OPUS-MT-shaped model decoded by aiayn, Hugging Face and
CTranslate2 (from aiayn's own export), each system alone in its own process.

The model has the shapes of opus-mt-en-de (vocabulary 58,101, d_model 512, 6+6 layers, 8
heads, FFN 2048, swish) with random weights: speed does not depend on them. It is written as a
Hugging Face folder (``save_pretrained``), brought in with ``aiayn import`` and sent out with
``aiayn export --to ctranslate2`` (float32 and int8). Every system decodes the same random
sources (25 tokens + EOS) and is forced to produce exactly ``--out-len`` tokens, so all do the
same work. Each measurement is a fresh process that loads one system only: the CTranslate2
worker imports neither torch nor aiayn (checked). Systems alternate within each row, round
after round; the table shows medians. Run by hand (``pip install 'aiayn[interop]'``):

    .venv/bin/python benchmarks/imported_decode.py [--rounds 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VOCAB, PAD, EOS = 58101, 58100, 0
# "aiayn": the default where a C++ compiler is present, the compiled steps (built once per
# model shape, before the first timed run); "aiayn --no-compile": the eager step; "aiayn
# --int8": int8 through the compiled steps, as the default decodes int8
SYSTEMS = ("aiayn", "aiayn --no-compile", "aiayn --int8", "Hugging Face",
           "CTranslate2 float32", "CTranslate2 int8")
ROWS = ((32, 1, "greedy"), (32, 4, "beam 4"), (1, 1, "greedy"))


def make_models(work: Path) -> None:
    """The Hugging Face folder, its aiayn import and the two CTranslate2 exports."""
    import gzip
    from importlib.resources import files

    import torch
    import transformers

    from aiayn.cli import main as aiayn
    from aiayn.data.tokenizer import train_tokenizer

    folder = work / "hf"
    folder.mkdir()
    demo = files("aiayn") / "data" / "demo"
    lines = [line.strip() for side in ("en", "es")
             for line in gzip.open(str(demo / f"train.{side}.gz"), "rt", encoding="utf-8")]
    tokenizer = train_tokenizer(lines, work / "spm", vocab_size=8000)
    model, sp = tokenizer.path, tokenizer.sp
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(sp.GetPieceSize()):
        vocab.setdefault(sp.IdToPiece(i), len(vocab))
    while len(vocab) < VOCAB - 1:  # opus-mt-en-de's size: pieces no text reaches fill it
        vocab[f"\u2581filler{len(vocab)}"] = len(vocab)
    vocab["<pad>"] = PAD
    (folder / "vocab.json").write_text(json.dumps(vocab))
    for name in ("source.spm", "target.spm"):
        (folder / name).write_bytes(model.read_bytes())
    config = transformers.MarianConfig(
        vocab_size=VOCAB, d_model=512, encoder_layers=6, decoder_layers=6,
        encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
        decoder_ffn_dim=2048, activation_function="swish", max_position_embeddings=512,
        scale_embedding=True, pad_token_id=PAD, eos_token_id=EOS, forced_eos_token_id=EOS,
        decoder_start_token_id=PAD)
    torch.manual_seed(0)
    transformers.MarianMTModel(config).save_pretrained(str(folder))
    assert aiayn(["import", str(folder), "--out", str(work / "aiayn")]) == 0
    assert aiayn(["export", str(work / "aiayn"), "--to", "ctranslate2", "--out",
                  str(work / "ct2-float32")]) == 0
    assert aiayn(["export", str(work / "aiayn"), "--to", "ctranslate2", "--quantization",
                  "int8", "--out", str(work / "ct2-int8")]) == 0
    ids = [[4 + (7919 * (row * 25 + i)) % 7000 for i in range(25)] for row in range(32)]
    inverse = {i: p for p, i in vocab.items()}
    pieces = [[inverse[x] for x in row] for row in ids]
    (work / "sources.json").write_text(json.dumps({"ids": ids, "pieces": pieces}))


def worker(system: str, work: Path, batch: int, beam: int, args) -> float:
    """Tokens per second of one system on one row (this process loads that system only);
    CTranslate2 at each of ``args.ct2_threads`` intra_threads, the fastest kept."""
    if system.startswith("CTranslate2"):
        return max(_worker(system, work, batch, beam, args, threads)
                   for threads in args.ct2_threads)
    return _worker(system, work, batch, beam, args, 0)


def _worker(system: str, work: Path, batch: int, beam: int, args, threads: int) -> float:
    sources = json.loads((work / "sources.json").read_text())
    sentences = 32 if batch == 32 else args.single
    out_len = args.out_len
    if system.startswith("CTranslate2"):
        import ctranslate2
        translator = ctranslate2.Translator(str(work / f"ct2-{system.split()[-1]}"), device="cpu",
                                            intra_threads=threads)
        tokens = sources["pieces"]

        def fn(rows):
            translator.translate_batch(tokens[rows], beam_size=beam, length_penalty=1.0,
                                       min_decoding_length=out_len,
                                       max_decoding_length=out_len, max_batch_size=batch)
        assert "torch" not in sys.modules and "aiayn" not in sys.modules
    else:
        import torch
        src = torch.tensor([row + [EOS] for row in sources["ids"]])
        if system == "Hugging Face":
            import transformers
            hf = transformers.MarianMTModel.from_pretrained(str(work / "hf")).eval()

            def fn(rows):
                with torch.inference_mode():
                    hf.generate(src[rows], attention_mask=torch.ones_like(src[rows]),
                                num_beams=beam, do_sample=False, min_new_tokens=out_len,
                                max_new_tokens=out_len, length_penalty=1.0)
        else:
            from aiayn.decode.search import beam_search, greedy_search
            from aiayn.translate import Translator
            model = Translator.load(work / "aiayn", int8=system.endswith("int8"),
                                    compile=system != "aiayn --no-compile").model

            def fn(rows):
                if beam == 1:
                    greedy_search(model, src[rows], min_len=out_len - 1, max_len_a=0,
                                  max_len_b=out_len)
                else:
                    beam_search(model, src[rows], beam=beam, lenpen=1.0, lenpen_form="hf",
                                min_len=out_len - 1, max_len_a=0, max_len_b=out_len)

    def work_once():
        for start in range(0, sentences, batch):
            fn(slice(start, start + batch))
    work_once()  # warm-up
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        work_once()
        times.append(time.perf_counter() - start)
    return sentences * out_len / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-len", type=int, default=30)
    parser.add_argument("--single", type=int, default=8, help="sentences for the batch-1 row")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ct2-threads", type=int, nargs="+", default=[os.cpu_count() or 1],
                        help="CTranslate2's intra_threads to try, the fastest kept (default: "
                             "one per core; on some machines 1 is faster)")
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--beam", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(worker(args.worker, Path(args.work), args.batch, args.beam, args))
        return
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_models(work)
        from machine import header
        print(header())
        print(f"{os.cpu_count()} cores; torch default threads, CTranslate2 intra_threads "
              f"{' or '.join(map(str, args.ct2_threads))} (the faster); "
              f"{args.out_len} tokens out per sentence, sources of 25 tokens + EOS; "
              f"length penalty 1.0; median of {args.rounds} rounds of {args.repeats} repeats, "
              "each system in a fresh process")
        print("| batch | mode | " + " | ".join(SYSTEMS) + " | aiayn / CT2 float32 "
              "| aiayn int8 / CT2 int8 | HF / CT2 float32 |")
        print("|---|---|" + "---:|" * (len(SYSTEMS) + 3))
        env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'src'}"}
        for batch, beam, label in ROWS:
            runs: dict[str, list[float]] = {name: [] for name in SYSTEMS}
            for _ in range(args.rounds):
                for name in SYSTEMS:
                    out = subprocess.run(
                        [sys.executable, __file__, "--worker", name, "--work", str(work),
                         "--batch", str(batch), "--beam", str(beam), "--repeats",
                         str(args.repeats), "--out-len", str(args.out_len), "--single",
                         str(args.single), "--ct2-threads", *map(str, args.ct2_threads)],
                        check=True, capture_output=True, text=True, env=env).stdout
                    runs[name].append(float(out.strip().splitlines()[-1]))
            r = {name: statistics.median(v) for name, v in runs.items()}
            cells = " | ".join(f"{r[n]:,.0f}" for n in SYSTEMS)
            print(f"| {batch} | {label} | {cells} | {r['aiayn'] / r['CTranslate2 float32']:.2f} "
                  f"| {r['aiayn --int8'] / r['CTranslate2 int8']:.2f} "
                  f"| {r['Hugging Face'] / r['CTranslate2 float32']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
