"""How aiayn's processes use the CPU's cores, alone on the machine or sharing it.

PyTorch's CPU operators run on a GNU OpenMP thread pool. A pool thread that has finished its
share of a parallel region spins a while, waiting for the next region, then sleeps; waking it
costs the next region 40 to 80 microseconds here. By default it spins about 300,000 iterations
(milliseconds). Beside another busy process that is ruinous: the spinning threads take the cores
from the threads they wait for, and two trainings side by side on two cores ran at a quarter
of their speed alone each, instead of about half. Too short a spin is costly alone instead: a
beam-search step leaves the pool idle for 50 to 300 microseconds at a time between its
operators, and a pool asleep at each of them made translation a third slower.

So ``set_wait_policy`` (run by the command line first thing, before PyTorch is imported;
importing ``aiayn`` changes nothing) chooses the spin when the process starts:

- ``SHARED_SPIN_COUNT`` iterations (about 50 microseconds here) for training (``aiayn train``),
  whose operators are long and which often runs for hours beside other work, and for any
  process that starts on a machine whose cores are already busy (``machine_busy``);
- ``SPIN_COUNT`` iterations otherwise: long enough to catch the next operator of a decoding
  step, short enough to give a core back within a fraction of a millisecond.

Sleeping at once (``OMP_WAIT_POLICY=PASSIVE``) is worse than either: every operator then pays a
wake-up, and greedy decoding of one sentence at a time took twice as long. A policy the user
set (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``) is kept. A program that uses aiayn as a library
keeps its own policy (set ``GOMP_SPINCOUNT`` before importing torch to choose one). The spin
changes only speed, never results.

``available_cores`` counts the cores this process may really use (its CPU affinity and its
cgroup's CPU quota), which is what ``use_available_cores`` gives PyTorch's pool, rather than the
cores the machine has. The measurements: docs/design.md
("Experiments behind the decisions").
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

SPIN_COUNT = 10000
SHARED_SPIN_COUNT = 3000
PROC_STAT = Path("/proc/stat")


def machine_busy(stat: Path = PROC_STAT, samples: int = 3) -> bool:
    """Whether other work already runs on the cores this process would use: the fewest
    runnable tasks in ``samples`` readings of ``procs_running`` (a millisecond apart), less
    this process, plus this process's threads, is more than the machine's CPUs. False where
    that cannot be read (not Linux)."""
    running = []
    for i in range(samples):
        try:
            line = next(line for line in stat.read_text().splitlines()
                        if line.startswith("procs_running "))
            running.append(int(line.split()[1]))
        except (OSError, StopIteration, ValueError, IndexError):
            return False
        if i + 1 < samples:
            time.sleep(0.001)
    others = min(running) - 1  # this process is running while it reads
    return others + available_cores() > (os.cpu_count() or 1)


def spin_count(command: str | None, busy: bool) -> int:
    """The spin for aiayn's ``command`` (a subcommand, "train", "translate"...) on a machine
    ``busy`` or not."""
    return SHARED_SPIN_COUNT if busy or command == "train" else SPIN_COUNT


def set_wait_policy(command: str | None) -> bool:
    """Choose how long idle OpenMP threads spin before they sleep for the process running
    ``command``, unless the user chose; True when it was set. It takes effect only if
    PyTorch has not been loaded yet: the command line calls it first thing."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return False
    busy = command != "train" and machine_busy()
    os.environ["GOMP_SPINCOUNT"] = str(spin_count(command, busy))
    return True


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
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
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
