import os
import subprocess
import sys

import pytest

SCRIPT = """
import resource, sys, torch
from aiayn.decode.memory import reuse_freed_memory
print(reuse_freed_memory())
for _ in range(10):  # the heap settles on reusing its blocks within a few allocations
    torch.ones(10_000_000)  # 40 MB: above glibc's largest automatic mmap threshold (32 MB)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    torch.ones(10_000_000)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def run(keep: str) -> tuple[str, int]:
    env = {**os.environ, "AIAYN_KEEP_MALLOC": keep}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc settings")
def test_freed_buffers_are_reused_instead_of_faulted_in_again():
    applied, faults = run("0")
    kept, faults_kept = run("1")  # the opt-out leaves glibc's defaults
    assert (applied, kept) == ("True", "False")
    assert faults_kept > 5 * 9000  # each 40 MB tensor: ~9,800 fresh 4 KiB pages
    assert faults < 1000
