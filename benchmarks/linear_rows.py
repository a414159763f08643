"""Decoding's linear products, float32, inference mode, at the decoder's shapes: ``F.linear``
(PyTorch's, through MKL), ``aiayn.runtime.cpu.CpuLinear``'s split product (one block of output
features per thread, ``torch.bmm``) and its oneDNN product (the weight reordered once).

Microseconds per product (median of 5 runs of 200 calls) for 1 and for all threads, and which
path ``CpuLinear`` takes. A product repeated on one weight reads it from the cache; a decoding
step reads each of its weights once. So a second table runs one row through all 19 products of
a ``small`` decoding step in sequence (3 layers of self-attention qkv and output, cross-attention
query and output, FFN in and out, then the 8,000-way output layer: 19 MB of float32 weights),
each weight its own, and gives microseconds per step and the weight bytes read per second.
Run by hand:

    .venv/bin/python benchmarks/linear_rows.py
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from aiayn.runtime.cpu import ONEDNN_MIN_ROWS, SPLIT_MAX_ROWS, CpuLinear, onednn_available

SHAPES = {  # (in, out): small = d_model 256, d_ff 1024; base = 512, 2048; vocabulary 8000
    "small qkv": (256, 768), "small ffn in": (256, 1024), "small ffn out": (1024, 256),
    "small output": (256, 8000), "base qkv": (512, 1536), "base ffn in": (512, 2048),
    "base ffn out": (2048, 512), "base output": (512, 8000),
}
ROWS = (1, 2, 4, 32, 128, 832)  # one step of 1, 32 greedy or 32 x 4 beams; 32 sources of 26


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
    print(f"torch {torch.__version__}, us per product: F.linear / split / oneDNN "
          f"(oneDNN available: {onednn_available()}); * = the path CpuLinear takes")
    print("| shape | threads | " + " | ".join(f"{r} rows" for r in ROWS) + " |")
    print("|---|---:|" + "---:|" * len(ROWS))
    for name, (d_in, d_out) in SHAPES.items():
        layer = nn.Linear(d_in, d_out, bias="output" not in name)
        fast = CpuLinear(layer, pack="output" in name)
        for t in sorted({1, threads}):
            torch.set_num_threads(t)
            cells = []
            for rows in ROWS:
                x = torch.randn(rows, d_in)
                with torch.inference_mode():
                    plain = per_call(lambda: F.linear(x, layer.weight, layer.bias))
                    split = onednn = None
                    if rows <= SPLIT_MAX_ROWS and fast._split(layer.weight) is not None:
                        split = per_call(lambda: fast.split_product(x))
                    if onednn_available():
                        onednn = per_call(lambda: fast.onednn_product(x))
                taken = ("onednn" if rows >= ONEDNN_MIN_ROWS and onednn else
                         "split" if split else "plain")
                cells.append(" / ".join(
                    "-" if v is None else f"{v:,.0f}" + ("*" if taken == k else "")
                    for k, v in (("plain", plain), ("split", split), ("onednn", onednn))))
            print(f"| {name} {d_in}x{d_out} | {t} | " + " | ".join(cells) + " |", flush=True)
        torch.set_num_threads(threads)
    step_sequence()


STEP = [(256, 768), (256, 256), (256, 256), (256, 256), (256, 1024), (1024, 256)] * 3 + [
    (256, 8000)]  # (in, out) of a small decoding step's products, in order


def step_sequence(rounds: int = 3) -> None:
    layers = [nn.Linear(d_in, d_out, bias=i < len(STEP) - 1)
              for i, (d_in, d_out) in enumerate(STEP)]
    fast = [CpuLinear(layer, pack=i == len(STEP) - 1) for i, layer in enumerate(layers)]
    xs = [torch.randn(1, d_in) for d_in, _ in STEP]
    size = sum(layer.weight.numel() * 4 for layer in layers)
    ways = {"F.linear": lambda: [F.linear(x, la.weight, la.bias) for x, la in zip(xs, layers)],
            "split": lambda: [f.split_product(x) for x, f in zip(xs, fast)]}
    if onednn_available():
        ways["oneDNN"] = lambda: [f.onednn_product(x) for x, f in zip(xs, fast)]
    print(f"\none row through the {len(STEP)} products of a small decoding step "
          f"({size / 1e6:.0f} MB of weights), us per step (GB/s); median of {rounds} "
          "alternating rounds")
    with torch.inference_mode():
        for f in fast:
            f._split(f.weight)
        times = {name: [] for name in ways}
        for _ in range(rounds):
            for name, fn in ways.items():
                times[name].append(per_call(fn, calls=100))
    print("| " + " | ".join(ways) + " |\n|" + "---:|" * len(ways))
    print("| " + " | ".join(f"{statistics.median(t):,.0f} ({size / statistics.median(t) / 1e3:.0f})"
                            for t in times.values()) + " |")


if __name__ == "__main__":
    main()
