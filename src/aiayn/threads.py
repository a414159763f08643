"""How aiayn's processes use the CPU's cores when they share the machine.

PyTorch's CPU operators run on a GNU OpenMP thread pool. By default a pool thread that has
finished its share of a parallel region spins for about 300,000 iterations before it sleeps,
waiting for the next region. Alone on the machine that saves a wake-up; beside another busy
process it is ruinous: the spinning threads take the cores from the threads they wait for, and
two trainings side by side on two cores ran at a quarter of their speed alone each, instead of
about half. ``set_wait_policy`` (run when ``aiayn`` is imported, before PyTorch is) lowers the
spin to ``SPIN_COUNT`` iterations: long enough to catch the next operator of a decoding step,
short enough to give the core back. Sleeping at once (``OMP_WAIT_POLICY=PASSIVE``) is worse:
every operator then pays a wake-up, and greedy decoding of one sentence at a time took twice as
long. A policy the user set (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``) is kept, and none of
this takes effect if PyTorch was imported before aiayn.

``available_cores`` counts the cores this process may really use (its CPU affinity and its
cgroup's CPU quota), which is what ``use_available_cores`` gives PyTorch's pool, rather than the
cores the machine has. The measurements: docs/benchmarks.md ("Sharing the machine").
"""

from __future__ import annotations

import math
import os
from pathlib import Path

SPIN_COUNT = 3000


def set_wait_policy() -> None:
    """Make idle OpenMP threads spin briefly, then sleep, unless the user chose a policy."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)


def cgroup_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota of this process's cgroup (v2 ``cpu.max``) in cores, or None if unlimited."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return int(quota) / int(period)


def available_cores() -> int:
    """The cores this process can run on: its affinity, capped by its cgroup's CPU quota."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    quota = cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores or 1)


def use_available_cores(threads: int = 0) -> int:
    """Give PyTorch's pool ``threads`` threads, or by default one per available core, unless
    ``OMP_NUM_THREADS`` says otherwise; returns the count in use."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    elif "OMP_NUM_THREADS" not in os.environ and torch.get_num_threads() > available_cores():
        torch.set_num_threads(available_cores())
    return torch.get_num_threads()
