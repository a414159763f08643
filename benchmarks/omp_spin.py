"""What the OpenMP spin costs and buys on this machine: the wake-up of a sleeping pool, and how
often a beam search puts the pool to sleep.

For each ``GOMP_SPINCOUNT`` in ``--spins`` a fresh process (the variable set before PyTorch
loads, so aiayn's own choice is not made) measures:

- the wake-up: a parallel region (adding 1 to 2^20 floats, about 45 us on two threads) timed
  right after an idle gap of each of ``--gaps`` microseconds (the main thread busy-waits, the
  pool's other threads wait as the spin says), median of 200;
- a beam search (4 beams) of 32 sentences with the random-weight ``small`` model of
  ``decode_speed.py``, forced to 30 tokens: the median seconds of ``--searches`` searches and
  the context switches of the process's threads per search (each one a thread that went to
  sleep and had to be woken).

Run by hand, alone on the machine:

    .venv/bin/python benchmarks/omp_spin.py [--spins 3000 10000 30000 300000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GAPS = (0, 20, 50, 100, 200, 500, 1000)


def switches() -> int:
    """Voluntary context switches of every thread of this process so far."""
    total = 0
    for task in Path("/proc/self/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                total += int(line.split()[1])
    return total


def worker(gaps: list[int], searches: int) -> None:
    import torch

    sys.path.insert(0, str(HERE))
    from decode_speed import EOS, build_model, source_ids

    from aiayn.decode.search import beam_search
    from aiayn.runtime.cpu import for_inference, reuse_freed_memory

    x = torch.zeros(1 << 20)
    wake = []
    for gap in gaps:
        times = []
        for _ in range(200):
            x.add_(1.0)
            end = time.perf_counter() + gap * 1e-6
            while time.perf_counter() < end:
                pass
            start = time.perf_counter()
            x.add_(1.0)
            times.append(time.perf_counter() - start)
        wake.append(statistics.median(times) * 1e6)
    reuse_freed_memory()
    torch.manual_seed(0)
    model = for_inference(build_model("small"))
    src = torch.tensor([row + [EOS] for row in source_ids(32)])

    def search():
        beam_search(model, src, beam=4, lenpen=0.6, min_len=29, max_len_a=0, max_len_b=30)
    search()
    before, times = switches(), []
    for _ in range(searches):
        start = time.perf_counter()
        search()
        times.append(time.perf_counter() - start)
    per_search = (switches() - before) / searches
    print(" ".join(f"{w:.1f}" for w in wake), statistics.median(times), per_search)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spins", type=int, nargs="+", default=[3000, 10000, 30000, 300000])
    parser.add_argument("--gaps", type=int, nargs="+", default=list(GAPS))
    parser.add_argument("--searches", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2,
                        help="processes per spin, alternating; medians shown")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.gaps, args.searches)
        return
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = str(HERE.parent / "src")
    runs: dict[int, list[list[float]]] = {spin: [] for spin in args.spins}
    for _ in range(args.rounds):
        for spin in args.spins:
            out = subprocess.run(
                [sys.executable, __file__, "--worker", "--searches", str(args.searches),
                 "--gaps", *map(str, args.gaps)], env={**env, "GOMP_SPINCOUNT": str(spin)},
                check=True, capture_output=True, text=True).stdout.split()
            runs[spin].append([float(v) for v in out])
    print(f"{os.cpu_count()} CPUs; median of {args.rounds} process(es) per spin; a parallel "
          "region's microseconds after an idle gap; beam 4 over 32 sentences (small, 30 "
          f"tokens), median of {args.searches} searches")
    print("| GOMP_SPINCOUNT | " + " | ".join(f"after {g} us" for g in args.gaps)
          + " | search, s | context switches a search |")
    print("|---:|" + "---:|" * (len(args.gaps) + 2))
    for spin, rows in runs.items():
        cells = [statistics.median(column) for column in zip(*rows)]
        wake, seconds, switched = cells[:-2], cells[-2], cells[-1]
        print(f"| {spin:,} | " + " | ".join(f"{w:.0f}" for w in wake)
              + f" | {seconds:.3f} | {switched:,.0f} |")


if __name__ == "__main__":
    main()
