"""Page faults that glibc's allocator settings for decoding save
(``aiayn.runtime.cpu.reuse_freed_memory``).

Allocates and frees 40 MB tensors (above glibc's largest automatic mmap threshold, 32 MB) in a
fresh process with and without the settings, and prints the minor page faults of 5 such
allocations once the heap has settled. Machine-dependent, hence a benchmark and not a test:

    .venv/bin/python benchmarks/malloc_faults.py
"""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import resource, torch
from aiayn.runtime.cpu import reuse_freed_memory
print(reuse_freed_memory())
for _ in range(10):  # the heap settles on reusing its blocks within a few allocations
    torch.ones(10_000_000)  # 40 MB
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    torch.ones(10_000_000)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(keep: str) -> tuple[str, int]:
    env = {**os.environ, "AIAYN_KEEP_MALLOC": keep}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    return out[0], int(out[1])


def main() -> int:
    applied, with_settings = faults("0")
    kept, without = faults("1")
    print(f"settings applied: {applied}; minor page faults for 5 x 40 MB: "
          f"{with_settings:,} with the settings, {without:,} with glibc's defaults "
          f"(AIAYN_KEEP_MALLOC=1; applied: {kept})")
    # each 40 MB tensor is ~9,800 fresh 4 KiB pages when the allocator returns it
    ok = applied == "True" and kept == "False" and without > 5 * 9000 and with_settings < 1000
    print("as expected" if ok else "NOT as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
