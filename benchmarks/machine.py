"""The head of every benchmark log: the CPU's model and flags (``lscpu``), the date, PyTorch's
version and threads, and the instruction-set caps in force, so that a figure can be traced to
the machine it was measured on.

    from machine import header   # (run as `python benchmarks/NAME.py`: this folder is on the path)
    print(header())
"""

from __future__ import annotations

import os
import subprocess
import time


def header(threads: int | None = None) -> str:
    """Lines for the top of a log; ``threads`` is the thread count the measurements use, where
    PyTorch is not imported by the caller."""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        lscpu = "lscpu: not available"
    lines = [line for line in lscpu.splitlines() if line.startswith(("Model name", "Flags"))]
    lines.append(time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    caps = ", ".join(f"{name}={os.environ[name]}" for name in (
        "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS", "GOMP_SPINCOUNT")
        if name in os.environ)
    try:
        import torch
        lines.append(f"torch {torch.__version__}, {threads or torch.get_num_threads()} threads"
                     + (f"; {caps}" if caps else ""))
    except ImportError:
        lines.append(f"{caps}" if caps else "torch: not imported")
    return "\n".join(lines)


if __name__ == "__main__":  # the head of a shell script's log
    print(header())
