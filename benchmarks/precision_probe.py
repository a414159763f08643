"""What `aiayn train --precision auto` sees on this CPU: its choice, and the matrix-product
rates behind it at a few training shapes, float32 (through PyTorch's ``F.linear`` and through
oneDNN, whichever float32 training takes: ``hardware.onednn_float32``) against bf16.

Run it under narrower instruction sets to see the choice on other CPU kinds, e.g.
``ONEDNN_MAX_CPU_ISA=AVX2`` (no native bf16) or ``ONEDNN_MAX_CPU_ISA=AVX512_CORE``
(bf16 emulated). The log starts with the CPU's model and flags.

    .venv/bin/python benchmarks/precision_probe.py
"""

from __future__ import annotations

import os
import time

import torch

from aiayn.runtime.cpu import onednn_available
from aiayn.runtime.hardware import (
    choose_precision,
    float32_rates,
    onednn_float32,
    product_rate,
)
from aiayn.runtime.threads import use_available_cores

SHAPES = [(4096, 512, 512), (4096, 512, 2048), (4096, 2048, 512), (4096, 512, 8000)]


def main() -> None:
    from machine import header
    print(header())
    use_available_cores()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, ONEDNN_MAX_CPU_ISA="
          f"{os.environ.get('ONEDNN_MAX_CPU_ISA', 'unset')}, ATEN_CPU_CAPABILITY="
          f"{os.environ.get('ATEN_CPU_CAPABILITY', 'unset')}")
    start = time.perf_counter()
    choice = choose_precision(torch.device("cpu"))
    print(f"{choice.describe()}  [{time.perf_counter() - start:.2f} s]")
    plain, onednn = float32_rates()
    print(f"float32 training's products: {'oneDNN' if onednn_float32() else 'F.linear'} "
          f"(oneDNN {onednn:.0f} GFLOP/s, F.linear {plain:.0f})")
    print("| rows x in x out | float32 GFLOP/s (F.linear) | float32 (oneDNN) | bf16 GFLOP/s |\n"
          "|---|---:|---:|---:|")
    for shape in SHAPES:
        rates = [product_rate(torch.float32, shape, seconds=0.4),
                 product_rate(torch.float32, shape, seconds=0.4, onednn=True)
                 if onednn_available() else 0.0,
                 product_rate(torch.bfloat16, shape, seconds=0.4)]
        print(f"| {' x '.join(map(str, shape))} | {rates[0]:.0f} | {rates[1]:.0f} | "
              f"{rates[2]:.1f} |")


if __name__ == "__main__":
    main()
