"""Decoding and training throughput of two checkouts of aiayn, side by side.

For a change that must not make aiayn slower (a refactor, a new option): the working tree
against another checkout of the repository (for example ``git worktree add /tmp/base HEAD~1``).
Every measurement runs alone in a fresh process that imports aiayn from one checkout's
``src/`` only; the two checkouts alternate, ``--rounds`` times per row, and the table shows
each one's median.

- decoding: the aiayn rows of ``benchmarks/decode_speed.py`` (its ``--worker`` mode, run from
  each checkout's own copy of the script): random-weight ``small`` and ``base`` models, 30
  tokens forced per sentence, float32, ``--int8`` and ``--compile``; generated tokens per
  second.
- training: ``aiayn.train.step.train_step`` on the same token batches of the embedded demo
  corpus (prepared once; or ``--train-data``, a prepared directory), at most ``--max-tokens``
  padded tokens per batch, fp32 and bf16, with fused Adam for both checkouts and the allocator
  set as ``aiayn train`` sets it (where the checkout has that setting); target tokens per
  second over the timed steps after warm-up (``--train-steps WARM TIMED``, default 3 and 10
  at ``small``, 2 and 5 at ``base``).
- evaluation (``--evaluate CHECKPOINT SRC REF``): the wall time of the whole ``aiayn evaluate``
  command on real data (beam 4), float32, ``--compile`` and ``--int8``, with the BLEU and chrF
  each printed. ``--compile`` runs once untimed per checkout first, so that its compiled steps
  are on disk and each timed run loads them, as every run after a user's first does.

    .venv/bin/python benchmarks/compare_checkouts.py --baseline /tmp/base [--rounds 3]
        [--skip-decode] [--decode-rows 'small,1,1,aiayn --compile' ...] [--skip-train]
        [--precisions fp32 bf16] [--train-data runs/q-bible/data] [--train-steps 3 10]
        [--evaluate runs/q-bible/run runs/q-bible/dev.en runs/q-bible/dev.es]
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

HERE = Path(__file__).resolve().parents[1]
# every worker starts from this environment, not from what importing aiayn here would add (its
# OpenMP spin, which each checkout chooses for itself)
START_ENV = dict(os.environ)
DECODE_ROWS = [(size, batch, beam, label, system)
               for size in ("small", "base")
               for batch, beam, label in ((32, 1, "greedy"), (32, 4, "beam 4"), (1, 1, "greedy"))
               for system in ("aiayn", "aiayn --int8", "aiayn --compile")]
TRAIN_ROWS = [(size, precision) for size in ("small", "base") for precision in ("fp32", "bf16")]
STEPS = {"small": (3, 10), "base": (2, 5)}  # (warm-up, timed) steps


# the spin ``aiayn train`` runs with (``aiayn.runtime.threads.SHARED_SPIN_COUNT``), given to the
# training workers, which import aiayn as a library, unless the user chose a policy
TRAIN_SPIN = {} if {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"} & set(START_ENV) else {
    "GOMP_SPINCOUNT": "3000"}


def in_checkout(checkout: Path, argv: list[str], extra_env: dict[str, str] | None = None
                ) -> float:
    """Run a worker with ``checkout``'s src/ first on the path; its last line is the figure."""
    env = {**START_ENV, **(extra_env or {}), "PYTHONPATH": str(checkout / "src")}
    out = subprocess.run([sys.executable, *argv], env=env, check=True, capture_output=True,
                         text=True).stdout
    return float(out.strip().splitlines()[-1])


def decode_rate(checkout: Path, size: str, batch: int, beam: int, system: str) -> float:
    return in_checkout(checkout, [str(checkout / "benchmarks" / "decode_speed.py"),
                                  "--worker", system, "--sizes", size, "--batch", str(batch),
                                  "--beam", str(beam), "--repeats", "3"])


def train_rate(checkout: Path, data: Path, size: str, precision: str, max_tokens: int,
               steps: list[int] | None) -> float:
    extra = ["--train-steps", *map(str, steps)] if steps else []
    return in_checkout(checkout, [__file__, "--train-worker", str(data), "--size", size,
                                  "--precision", precision, "--max-tokens", str(max_tokens),
                                  *extra], TRAIN_SPIN)


def train_worker(data: str, size: str, precision: str, max_tokens: int,
                 steps: list[int] | None) -> None:
    """Time ``train_step`` of the aiayn on the path; print target tokens per second."""
    import inspect

    import torch

    import aiayn
    from aiayn import ModelConfig, Transformer
    from aiayn.data.corpus import ParallelCorpus, token_batches
    from aiayn.train.recipe import TrainConfig
    try:
        from aiayn.train.step import train_step
    except ImportError:  # a checkout from before the trainer was split
        from aiayn.train.trainer import train_step  # type: ignore[attr-defined,no-redef]

    assert Path(aiayn.__file__).resolve().is_relative_to(Path(os.environ["PYTHONPATH"]))
    corpus = ParallelCorpus(data, "train")
    cfg = TrainConfig(preset=size, precision=precision, max_tokens=max_tokens)
    torch.manual_seed(0)
    model = Transformer(ModelConfig.preset(size, vocab_size=8000)).train()
    try:  # the CPU's layers, as `aiayn train` swaps them in (older checkouts: by precision,
        # for every precision, attention only, or built in)
        from aiayn.train.setup import cpu_training_layers
        cpu_training_layers(model, torch.device("cpu"), cfg)
    except ImportError:
        try:
            from aiayn.runtime.cpu import cpu_layers as swap
        except ImportError:
            try:
                from aiayn.runtime.cpu import cpu_attention as swap
            except ImportError:
                swap = None
        if swap is not None:
            swap(model)
    # the same Adam for both checkouts: fused, as `aiayn train` builds it on the CPU
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9,
                                 fused=True)
    try:  # the allocator as `aiayn train` sets it, where the checkout has a setting
        from aiayn.runtime import cpu as runtime_cpu
        train_threshold = getattr(runtime_cpu, "TRAIN_MMAP_THRESHOLD", None)
        runtime_cpu.reuse_freed_memory(
            **({"mmap_threshold": train_threshold} if train_threshold else {}))
    except (ImportError, AttributeError):  # a checkout from before the allocator setting
        pass
    scaler = torch.amp.GradScaler("cuda", enabled=False)
    warm, timed = steps or STEPS[size]
    batches = token_batches(corpus.sizes, max_tokens, seed=1, epoch=0)[:warm + timed]
    tokens, seconds = 0, 0.0
    for i, indices in enumerate(batches):
        # the special ids come from the model since collate takes its config
        new_collate = "cfg" in inspect.signature(corpus.collate).parameters
        batch = corpus.collate(indices, model.cfg) if new_collate else corpus.collate(indices)
        start = time.perf_counter()
        # older checkouts took the pad id; newer ones read it from the batch
        pad = {"pad_id": 0} if "pad_id" in inspect.signature(train_step).parameters else {}
        n = train_step(model, optimizer, scaler, [batch], lr=1e-4, cfg=cfg, **pad,
                       device=torch.device("cpu"))[2]
        if i >= warm:
            tokens, seconds = tokens + n, seconds + time.perf_counter() - start
    print(tokens / seconds)


def evaluate_run(checkout: Path, files: list[str], flags: list[str]) -> tuple[float, str]:
    """Wall seconds of ``aiayn evaluate`` from ``checkout``, and its BLEU / chrF."""
    checkpoint, src, ref = files
    env = {**START_ENV, "PYTHONPATH": str(checkout / "src")}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "aiayn", "evaluate", "--checkpoint", checkpoint,
                          "--src", src, "--ref", ref, *flags], env=env, check=True,
                         capture_output=True, text=True).stdout
    seconds = time.perf_counter() - start
    scores = dict(line.split(" = ", 1) for line in out.splitlines() if " = " in line)
    return seconds, " / ".join(scores[k].split()[0] for k in ("BLEU", "chrF"))


def evaluate_table(files: list[str], checkouts: dict[str, Path], rounds: int) -> None:
    print("\n| mode | baseline s | working tree s | working tree / baseline | BLEU / chrF "
          "baseline | working tree |\n|---|---:|---:|---:|---:|---:|")
    for label, flags in (("float32", []), ("--compile", ["--compile"]), ("--int8", ["--int8"])):
        runs: dict[str, list[float]] = {name: [] for name in checkouts}
        scores: dict[str, str] = {}
        if "--compile" in flags:
            for path in checkouts.values():  # compiled once, untimed
                evaluate_run(path, files, flags)
        for _ in range(rounds):
            for name, path in checkouts.items():  # alternate, round after round
                seconds, scores[name] = evaluate_run(path, files, flags)
                runs[name].append(seconds)
                print(f"{name} {label} wall {seconds:.2f} s", file=sys.stderr, flush=True)
        base, new = (statistics.median(runs[n]) for n in checkouts)
        print(f"| {label} | {base:.1f} | {new:.1f} | {new / base:.2f} | "
              + " | ".join(scores[n] for n in checkouts) + " |", flush=True)


def prepare_demo(out: Path) -> Path:
    from aiayn.data.prepare import TextPair, prepare
    demo = HERE / "src" / "aiayn" / "data" / "demo"
    prepare(TextPair(demo / "train.en.gz", demo / "train.es.gz"), out, vocab_size=8000,
            log=lambda *_: None)
    return out


def table(rows, measure, checkouts, rounds: int, label) -> None:
    for row in rows:
        runs: dict[str, list[float]] = {name: [] for name in checkouts}
        for _ in range(rounds):
            for name, path in checkouts.items():  # alternate, round after round
                time.sleep(0.5)
                runs[name].append(measure(path, row))
        base, new = (statistics.median(runs[n]) for n in checkouts)
        print(f"| {label(row)} | {base:,.0f} | {new:,.0f} | {new / base:.2f} | "
              + " / ".join(f"{a:,.0f}-{b:,.0f}" for a, b in
                           ((min(runs[n]), max(runs[n])) for n in checkouts)) + " |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="the other checkout (its repository root)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=4000)
    parser.add_argument("--skip-decode", action="store_true")
    parser.add_argument("--skip-train", action="store_true")
    parser.add_argument("--decode-rows", nargs="+", metavar="SIZE,BATCH,BEAM,SYSTEM",
                        help="only these decoding rows, e.g. 'small,1,1,aiayn --compile'")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"],
                        help="the training rows' precisions")
    parser.add_argument("--train-data", type=Path,
                        help="a prepared data directory for the training rows (default: the "
                             "embedded demo corpus)")
    parser.add_argument("--train-steps", nargs=2, type=int, metavar=("WARM", "TIMED"),
                        help="warm-up and timed steps of every training row")
    parser.add_argument("--evaluate", nargs=3, metavar=("CHECKPOINT", "SRC", "REF"),
                        help="also time `aiayn evaluate` of this checkpoint on SRC against REF")
    parser.add_argument("--train-worker", help=argparse.SUPPRESS)
    parser.add_argument("--size", help=argparse.SUPPRESS)
    parser.add_argument("--precision", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.train_worker:
        train_worker(args.train_worker, args.size, args.precision, args.max_tokens,
                     args.train_steps)
        return
    if args.baseline is None:
        parser.error("--baseline is required")
    import torch
    checkouts = {"baseline": args.baseline.resolve(), "working tree": HERE}
    from machine import header
    print(header())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; baseline "
          f"{checkouts['baseline']}, working tree {HERE}; median of {args.rounds} rounds, "
          "each measurement in a fresh process, the checkouts alternating")
    if not args.skip_decode:
        print("\n| size, batch, mode, system | baseline tok/s | working tree tok/s | ratio | "
              "range baseline / working tree |\n|---|---:|---:|---:|---|")
        rows = [r for r in DECODE_ROWS if args.decode_rows is None
                or f"{r[0]},{r[1]},{r[2]},{r[4]}" in args.decode_rows]
        table(rows, lambda path, r: decode_rate(path, r[0], r[1], r[2], r[4]),
              checkouts, args.rounds, lambda r: f"{r[0]}, {r[1]}, {r[3]}, {r[4]}")
    if not args.skip_train:
        with tempfile.TemporaryDirectory() as tmp:
            data = args.train_data or prepare_demo(Path(tmp) / "demo")
            print("\n| size, precision | baseline tgt tok/s | working tree tgt tok/s | ratio | "
                  "range baseline / working tree |\n|---|---:|---:|---:|---|")
            rows = [r for r in TRAIN_ROWS if r[1] in args.precisions]
            table(rows, lambda path, r: train_rate(path, data, r[0], r[1],
                                                         args.max_tokens, args.train_steps),
                  checkouts, args.rounds, lambda r: f"{r[0]}, {r[1]}")
    if args.evaluate:
        evaluate_table(args.evaluate, checkouts, args.rounds)


if __name__ == "__main__":
    main()
