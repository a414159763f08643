"""Whole searches through the compiled steps against the eager ones, in one process.

``aiayn.runtime.compiled.CompiledSteps`` (``--compile``) and the eager inference model it
wraps decode
the same 32 sentences (the sources and the random-weight model of ``decode_speed.py``, 30
tokens forced per sentence), one whole search each, alternating, ``--pairs`` times after
two warm-up pairs (the first compiles, or loads the compiled steps from disk). Printed: the
median and quartiles of the time ratios compiled / eager, and whether the two gave the same
tokens. Within one process the two share the machine's phase, which moves the rates of
separate sittings by more than small changes do (docs/benchmarks.md); against CTranslate2,
each system alone, see ``decode_speed.py``. Run by hand:

    .venv/bin/python benchmarks/compiled_search.py [--size small] [--beam 4] [--pairs 12]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decode_speed import EOS, build_model, source_ids  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--beam", type=int, default=4, help="1: greedy search")
    parser.add_argument("--pairs", type=int, default=12)
    args = parser.parse_args()
    import torch

    from aiayn.decode.search import beam_search, greedy_search
    from aiayn.runtime.compiled import CompiledSteps
    from aiayn.runtime.cpu import for_inference, reuse_freed_memory
    reuse_freed_memory()  # as aiayn.load does
    eager = for_inference(build_model(args.size))
    compiled = CompiledSteps(eager)
    src = torch.tensor([row + [EOS] for row in source_ids(32)])

    def search(model):
        if args.beam == 1:
            return [[h] for h in greedy_search(model, src, min_len=29, max_len_a=0,
                                               max_len_b=30)]
        return beam_search(model, src, beam=args.beam, lenpen=0.6, min_len=29, max_len_a=0,
                           max_len_b=30)

    for _ in range(2):
        search(compiled)
        search(eager)
    ratios, same = [], True
    for _ in range(args.pairs):
        start = time.perf_counter()
        got = search(compiled)
        middle = time.perf_counter()
        want = search(eager)
        ratios.append((middle - start) / (time.perf_counter() - middle))
        same &= [h[0].tokens for h in got] == [h[0].tokens for h in want]
    quartiles = statistics.quantiles(ratios, n=4)
    print(f"{args.size}, 32 sentences, {'greedy' if args.beam == 1 else f'beam {args.beam}'}: "
          f"time compiled / eager, median of {args.pairs} pairs {statistics.median(ratios):.3f} "
          f"(quartiles {quartiles[0]:.3f}-{quartiles[2]:.3f}); same tokens: {same}; "
          f"compiled steps {compiled.compiled_steps}, failed: {compiled.failed}")


if __name__ == "__main__":
    main()
