"""Few-row linear products: ``F.linear`` against ``aiayn.cpu.SplitLinear`` (one block of output
features per thread, ``torch.bmm``), at the decoder's shapes, float32, inference mode.

Microseconds per product (median of 5 runs of 200 calls) and the ratio F.linear / split, for
1 and for all threads. Run by hand:

    .venv/bin/python benchmarks/linear_rows.py
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from aiayn.cpu import SplitLinear

SHAPES = {  # (in, out): small = d_model 256, d_ff 1024; base = 512, 2048; vocabulary 8000
    "small qkv": (256, 768), "small ffn in": (256, 1024), "small ffn out": (1024, 256),
    "small output": (256, 8000), "base qkv": (512, 1536), "base ffn in": (512, 2048),
    "base ffn out": (2048, 512), "base output": (512, 8000),
}
ROWS = (1, 4, 32, 128)


def per_call(fn, calls: int = 200) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times) * 1e6


def main() -> None:
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, us per product (F.linear / split = speed-up)")
    print("| shape | threads | " + " | ".join(f"{r} rows" for r in ROWS) + " |")
    print("|---|---:|" + "---:|" * len(ROWS))
    for name, (d_in, d_out) in SHAPES.items():
        layer = nn.Linear(d_in, d_out, bias="output" not in name)
        split_layer = SplitLinear(layer, pack="output" in name)
        for t in sorted({1, threads}):
            torch.set_num_threads(t)
            cells = []
            for rows in ROWS:
                x = torch.randn(rows, d_in)
                with torch.inference_mode():
                    plain = per_call(lambda: F.linear(x, layer.weight, layer.bias))
                    split = per_call(lambda: split_layer(x))
                cells.append(f"{plain:,.0f} / {split:,.0f} = {plain / split:.2f}")
            print(f"| {name} {d_in}x{d_out} | {t} | " + " | ".join(cells) + " |", flush=True)
        torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
