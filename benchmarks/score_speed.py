"""Teacher-forced scoring against beam search: sentences per second on the same pairs.

`aiayn score` reads each reference in one forward pass; `aiayn translate` searches for its
output step by step with a beam. Both run on the same sources in the same process, alternating,
``--rounds`` times; the table shows medians. Run by hand:

    .venv/bin/python benchmarks/score_speed.py --checkpoint runs/demo/averaged \\
        --src dev.en --ref dev.es
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from aiayn.translate import DecodeOptions, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--src", required=True)
    parser.add_argument("--ref", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sources = Path(args.src).read_text(encoding="utf-8").splitlines()
    references = Path(args.ref).read_text(encoding="utf-8").splitlines()
    translator = load(args.checkpoint)
    options = DecodeOptions()  # beam 4, length penalty 0.6
    work = {"score (teacher forcing)": lambda: translator.score(sources, references, options),
            "translate (beam 4)": lambda: translator.translate(sources, options)}
    times: dict[str, list[float]] = {name: [] for name in work}
    for name, fn in work.items():
        fn()  # warm-up
    for _ in range(args.rounds):
        for name, fn in work.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {len(sources)} "
          f"pairs; median of {args.rounds} alternating rounds")
    print("| | seconds | sentences/s |")
    print("|---|---:|---:|")
    rates = {}
    for name, t in times.items():
        rates[name] = len(sources) / statistics.median(t)
        print(f"| {name} | {statistics.median(t):.2f} | {rates[name]:,.0f} |")
    ratio = rates["score (teacher forcing)"] / rates["translate (beam 4)"]
    print(f"\nscore / translate: {ratio:.1f}x per sentence")


if __name__ == "__main__":
    main()
