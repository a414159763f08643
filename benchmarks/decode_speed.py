"""Decoding speed (generated tokens/s): aiayn against CTranslate2 and Hugging Face, each alone.

Every system decodes the same source sentences (25 tokens + EOS, fixed ids) with a model of the
same size (random weights: speed does not depend on them) and is forced to produce exactly
``--out-len`` tokens per sentence, so all do the same work. CTranslate2 runs *our* model,
converted weight for weight into a CTranslate2 Transformer spec, in float32 and int8 (its
compute types on this CPU: float32, int8, int8_float32, the last the same as int8 here);
Hugging Face runs a MarianMTModel of the same shape. ``--ct2-threads 2 1`` gives
CTranslate2 each intra_threads listed and keeps its faster (on the Intel Xeon VMs, its
two-thread OpenMP decoding ran at a fifth of its one-thread rate at batch 1).

Every measurement is a fresh process that loads one system only (CTranslate2's imports neither
torch nor aiayn: checked), warms up, then times ``--repeats`` runs and reports their median.
Each starts from the environment this script was started with, not from what importing aiayn
here sets (its OpenMP spin, ``aiayn.runtime.threads``), which would otherwise reach every process,
CTranslate2's included (both use GNU OpenMP).
Systems alternate within each row, ``--rounds`` times; the table shows each system's median
over the rounds. aiayn decodes as ``aiayn.load`` prepares a model
(``aiayn.runtime.cpu.for_inference``,
the allocator settings); ``aiayn --compile`` as ``aiayn.load(..., compile=True)`` does
(``aiayn.runtime.compiled``: steps of one row and of many compiled, each kind once). Its warm-up
includes the compilations (the disk cache makes them a load after the first process).

``--together`` measures the old way, every system built in one process and run one after the
other: it shows what that does to the figures (docs/benchmarks.md), nothing else.

``--device cuda`` decodes on the GPU: aiayn (its model on the GPU, as ``aiayn translate
--device cuda`` runs it) and Hugging Face, in ``--dtype`` (float32, or the model converted to
bf16 or fp16), the device synchronized before each time is read; CTranslate2 on the GPU in
its float32, float16 or int8_float16 where its wheel finds the CUDA libraries it was built for.

    .venv/bin/python benchmarks/decode_speed.py [--sizes small base] [--rounds 3]
        [--repeats 3] [--systems ...] [--batches 32 1] [--together]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VOCAB, SRC_LEN = 8000, 25
PAD, BOS, EOS = 0, 2, 3
SYSTEMS = ("aiayn", "aiayn --compile", "aiayn --int8", "Hugging Face", "CTranslate2 float32",
           "CTranslate2 int8", "CTranslate2 float16", "CTranslate2 int8_float16")
FLOAT32 = ("aiayn", "aiayn --compile")  # aiayn's float32 systems
ROWS = ((32, 1, "greedy"), (32, 4, "beam 4"), (1, 1, "greedy"))
HERE = Path(__file__).resolve().parent
START_ENV = dict(os.environ)  # before anything imports aiayn, which sets its thread policy


def source_ids(rows: int = 32) -> list[list[int]]:
    """The same sources in every process, without torch: 25 spread ids per sentence."""
    return [[4 + (7919 * (row * SRC_LEN + i)) % (VOCAB - 4) for i in range(SRC_LEN)]
            for row in range(rows)]


def build_model(size: str):
    """The seeded random model every system starts from (on the CPU, in float32)."""
    import torch

    from aiayn import ModelConfig, Transformer
    torch.manual_seed(0)
    return Transformer(ModelConfig.preset(size, vocab_size=VOCAB)).eval()


def synchronizer(device: str):
    """What makes the host wait for ``device``'s queued work (nothing on the CPU)."""
    if device == "cpu":
        return lambda: None
    import torch
    return lambda: torch.cuda.synchronize(device)


class _IdPieces:
    """Stands in for a tokenizer in ``aiayn.interop.ct2.transformer_spec``: the benchmark
    decodes ids, so CTranslate2's vocabulary names id i ``t{i}`` (the special ids aside)."""

    SPECIAL = {PAD: "<blank>", 1: "<unk>", BOS: "<s>", EOS: "</s>"}

    def pieces(self, ids, side: str) -> list[str]:
        return [self.SPECIAL.get(i, f"t{i}") for i in ids]


def to_ctranslate2(model, directory: str) -> None:
    """Write our model as a CTranslate2 model, as ``aiayn export --to ctranslate2`` does."""
    from aiayn.interop.ct2 import transformer_spec
    spec = transformer_spec(model, _IdPieces())
    # the sources are given whole to aiayn (25 ids + EOS) and without EOS to CTranslate2, as
    # when these tables were measured: CTranslate2's encoder reads one token less
    spec.config.add_source_eos = False
    spec.validate()
    spec.save(directory)


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def build(system: str, size: str, work: Path | None, out_len: int, threads: int = 0,
          device: str = "cpu", dtype: str = "float32"):
    """``fn(batch, beam, rows)`` decoding source rows ``rows`` (a slice) with one system, on
    ``device`` (aiayn and Hugging Face in ``dtype``); ``threads``: CTranslate2's
    intra_threads (0: one per core)."""
    ids = source_ids()
    if system.startswith("CTranslate2"):
        import ctranslate2
        translator = ctranslate2.Translator(str(work / f"ct2-{size}"), device=device,
                                            compute_type=system.split()[-1],
                                            intra_threads=threads or cores(), inter_threads=1)
        pieces = [[f"t{i}" for i in row] for row in ids]

        def fn(batch, beam, rows):
            translator.translate_batch(pieces[rows], beam_size=beam, length_penalty=0.6,
                                       min_decoding_length=out_len,
                                       max_decoding_length=out_len, max_batch_size=batch)
        return fn
    import torch
    src = torch.tensor([row + [EOS] for row in ids], device=device)
    model = build_model(size)
    wait = synchronizer(device)
    cast = getattr(torch, dtype)
    if system == "Hugging Face":
        from transformers import MarianConfig, MarianMTModel
        cfg = model.cfg
        hf = MarianMTModel(MarianConfig(
            vocab_size=VOCAB, d_model=cfg.d_model, encoder_layers=cfg.n_encoder_layers,
            decoder_layers=cfg.n_decoder_layers, encoder_attention_heads=cfg.n_heads,
            decoder_attention_heads=cfg.n_heads, encoder_ffn_dim=cfg.d_ff,
            decoder_ffn_dim=cfg.d_ff, activation_function="relu",
            max_position_embeddings=cfg.max_len, scale_embedding=True, pad_token_id=PAD,
            eos_token_id=EOS, decoder_start_token_id=BOS, forced_eos_token_id=None)
        ).eval().to(device, cast)

        def fn(batch, beam, rows):
            with torch.inference_mode():
                hf.generate(src[rows], attention_mask=torch.ones_like(src[rows]),
                            num_beams=beam, do_sample=False, min_new_tokens=out_len,
                            max_new_tokens=out_len, length_penalty=0.6)
            wait()
        return fn
    from aiayn.decode.search import beam_search, greedy_search
    from aiayn.runtime.cpu import for_inference, reuse_freed_memory
    from aiayn.runtime.hardware import shape_free_attention
    if device == "cpu":
        reuse_freed_memory()  # as aiayn.load / `aiayn translate` do
    else:
        shape_free_attention()  # (as aiayn.load does on a GPU)
        model = model.to(device, cast)
    model = for_inference(model, int8=system.endswith("int8"))
    if system in ("aiayn --compile", "aiayn --int8"):  # int8: compiled, as aiayn.load does
        from aiayn.runtime.compiled import CompiledSteps
        model = CompiledSteps(model)

    def fn(batch, beam, rows):
        if beam == 1:
            greedy_search(model, src[rows], min_len=out_len - 1, max_len_a=0,
                          max_len_b=out_len)
        else:
            beam_search(model, src[rows], beam=beam, lenpen=0.6, min_len=out_len - 1,
                        max_len_a=0, max_len_b=out_len)
        wait()
    return fn


def measure(fn, batch: int, beam: int, args) -> float:
    """Generated tokens per second: warm-up, then the median of ``args.repeats`` timed runs."""
    sentences = 32 if batch == 32 else args.single

    def once():
        for start in range(0, sentences, batch):
            fn(batch, beam, slice(start, start + batch))
    once()
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    return sentences * args.out_len / statistics.median(times)


def worker(args) -> None:
    """One system's rate, and for CTranslate2 the intra_threads it was best at."""
    work = Path(args.work) if args.work else None
    if not args.worker.startswith("CTranslate2"):
        print(measure(build(args.worker, args.sizes[0], work, args.out_len,
                            device=args.device, dtype=args.dtype), args.batch,
                      args.beam, args), 0)
        return
    rates = {t: measure(build(args.worker, args.sizes[0], work, args.out_len, t,
                              device=args.device), args.batch, args.beam, args)
             for t in args.ct2_threads}
    assert "torch" not in sys.modules and "aiayn" not in sys.modules
    best = max(rates, key=lambda t: rates[t])
    print(rates[best], best)


def prepare(work: Path, sizes: list[str]) -> None:
    """The CTranslate2 conversions of every size's model (float32; int8 is quantized at load)."""
    for size in sizes:
        (work / f"ct2-{size}").mkdir()
        to_ctranslate2(build_model(size), str(work / f"ct2-{size}"))


def run_worker(system: str, size: str, batch: int, beam: int, work: Path, args) -> float:
    env = {**START_ENV, "PYTHONPATH": str(HERE.parent / "src")}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", system, "--work", str(work), "--sizes", size,
         "--batch", str(batch), "--beam", str(beam), "--repeats", str(args.repeats),
         "--out-len", str(args.out_len), "--single", str(args.single),
         "--device", args.device, "--dtype", args.dtype,
         "--ct2-threads", *map(str, args.ct2_threads)],
        check=True, capture_output=True, text=True, env=env).stdout
    rate, threads = out.strip().splitlines()[-1].split()
    if int(threads):
        CT2_THREADS.setdefault(system, []).append(int(threads))
    return float(rate)


CT2_THREADS: dict[str, list[int]] = {}  # the intra_threads each CTranslate2 measurement took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["small", "base"])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--out-len", type=int, default=30)
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 1],
                        help="the rows to measure, by batch size (default: 32 1)")
    parser.add_argument("--single", type=int, default=8, help="sentences for the batch-1 rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3,
                        help="measurements of every system per row, alternating; medians shown")
    parser.add_argument("--together", action="store_true",
                        help="the old way: every system in this one process (see the docs)")
    parser.add_argument("--ct2-threads", type=int, nargs="+", default=[cores()],
                        help="CTranslate2's intra_threads to try in each measurement, the best "
                             "kept (default: one per core; on some machines 1 is faster)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="where every system decodes (default: the CPU)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"],
                        help="aiayn's and Hugging Face's weights and activations on a GPU "
                             "(default float32; the CPU's rows are float32 or int8)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--beam", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # one measurement, printed alone on the last line
        worker(args)
        return
    systems = args.systems
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available here; leave --device out")
    # the peer: CTranslate2 where it is among the systems, Hugging Face otherwise
    peer = "CT2" if any(s.startswith("CTranslate2") for s in systems) else "HF"
    from machine import header
    print(header())
    if peer == "CT2":
        import ctranslate2
        peer_line = (f"CTranslate2 {ctranslate2.__version__} with intra_threads "
                     f"{' or '.join(map(str, args.ct2_threads))} (the faster), inter_threads=1")
    else:
        import transformers
        peer_line = f"transformers {transformers.__version__}"
    where = (f"{torch.cuda.get_device_name(0)}, aiayn and Hugging Face in {args.dtype}"
             if args.device == "cuda" else f"torch with {torch.get_num_threads()} threads")
    print(f"{cores()} cores; torch {torch.__version__}; {where} "
          f"(OMP_NUM_THREADS={START_ENV.get('OMP_NUM_THREADS', 'unset')}, GOMP_SPINCOUNT="
          f"{START_ENV.get('GOMP_SPINCOUNT', 'unset')}, OMP_WAIT_POLICY="
          f"{START_ENV.get('OMP_WAIT_POLICY', 'unset')}); {peer_line}; "
          f"{args.out_len} tokens out per sentence, sources of {SRC_LEN} tokens + EOS; "
          f"length penalty 0.6; median of {args.rounds} round(s) of {args.repeats} repeats, "
          + ("all systems in this one process" if args.together
             else "each system alone in a fresh process"), flush=True)
    first = "CTranslate2 float32" if peer == "CT2" else "Hugging Face"
    print("| size, batch | mode | " + " | ".join(systems) + f" | aiayn float32 / {first} "
          f"| aiayn best / {peer} best | batch-1 ms per sentence (aiayn best, {peer} best) |")
    print("|---|---|" + "---:|" * (len(systems) + 3))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if peer == "CT2":
            prepare(work, args.sizes)
        for size in args.sizes:
            built = ({s: build(s, size, work, args.out_len, device=args.device,
                               dtype=args.dtype) for s in systems} if args.together else {})
            for batch, beam, label in (row for row in ROWS if row[0] in args.batches):
                runs: dict[str, list[float]] = {s: [] for s in systems}
                for _ in range(args.rounds):
                    for s in systems:  # alternate systems within the row, round after round
                        runs[s].append(measure(built[s], batch, beam, args) if args.together
                                       else run_worker(s, size, batch, beam, work, args))
                r = {s: statistics.median(v) for s, v in runs.items()}
                ours = max(v for s, v in r.items() if s.startswith("aiayn"))
                theirs = max(v for s, v in r.items() if not s.startswith("aiayn"))
                ratio = (max((v for s, v in r.items() if s in FLOAT32), default=float("nan"))
                         / r.get(first, float("nan")))
                latency = (f"{1000 * args.out_len / ours:.1f}, {1000 * args.out_len / theirs:.1f}"
                           if batch == 1 else "")
                cells = " | ".join(f"{r[s]:,.0f}" + (
                    f" ({'/'.join(map(str, CT2_THREADS.pop(s)))} thr.)"
                    if s in CT2_THREADS and len(args.ct2_threads) > 1 else "")
                    for s in systems)
                CT2_THREADS.clear()
                print(f"| {size}, {batch} | {label} | {cells} | {ratio:.2f} "
                      f"| {ours / theirs:.2f} | {latency} |", flush=True)


if __name__ == "__main__":
    main()
