"""The thread policy: the OpenMP spin chosen before PyTorch loads, the cores really available."""

import os
import subprocess
import sys
from pathlib import Path

from aiayn.runtime import threads


def _policy_in_fresh_process(env: dict[str, str], code: str) -> str:
    code += ("; import os; "
             "print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))")
    clean = {k: v for k, v in os.environ.items()
             if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    return subprocess.run([sys.executable, "-c", code], env={**clean, **env},
                          capture_output=True, text=True, check=True).stdout.strip()


def _command_line(args: list[str]) -> str:
    return f"import aiayn.cli; aiayn.cli.main({args!r})"


def test_importing_aiayn_changes_nothing():
    assert _policy_in_fresh_process({}, "import aiayn, aiayn.translate, aiayn.cli") == \
        "None None"
    # and the command line's module loads without PyTorch, so that it can set the spin first
    assert _policy_in_fresh_process({}, "import sys, aiayn.cli; assert 'torch' not in "
                                        "sys.modules") == "None None"


def test_the_command_line_sets_a_spin_unless_the_user_chose_a_policy():
    spins = {f"{threads.SPIN_COUNT} None", f"{threads.SHARED_SPIN_COUNT} None"}
    translate = _command_line(["translate", "--checkpoint", "/nonexistent"])
    assert _policy_in_fresh_process({}, translate) in spins  # which: how busy the machine is
    assert (_policy_in_fresh_process({}, _command_line(["train", "--data", "/nonexistent",
                                                        "--out", "/nonexistent/run"]))
            == f"{threads.SHARED_SPIN_COUNT} None")
    assert _policy_in_fresh_process({"OMP_WAIT_POLICY": "ACTIVE"}, translate) == "None ACTIVE"
    assert _policy_in_fresh_process({"GOMP_SPINCOUNT": "50"}, translate) == "50 None"


def test_training_and_a_busy_machine_get_the_short_spin():
    assert threads.spin_count("translate", busy=False) == threads.SPIN_COUNT
    assert threads.spin_count(None, busy=False) == threads.SPIN_COUNT
    assert threads.spin_count(None, busy=True) == threads.SHARED_SPIN_COUNT
    assert threads.spin_count("train", busy=False) == threads.SHARED_SPIN_COUNT


class _Stat:
    """A /proc/stat that reads ``procs_running`` as each of ``counts`` in turn."""

    def __init__(self, *counts: int) -> None:
        self.counts = list(counts)

    def read_text(self) -> str:
        return f"cpu  1 2 3 4\nprocs_running {self.counts.pop(0)}\nprocs_blocked 0\n"


def test_machine_busy_counts_the_other_runnable_tasks():
    cpus, ours = os.cpu_count(), threads.available_cores()
    assert not threads.machine_busy(_Stat(1, 1, 1))  # only this process runs
    crowded = cpus - ours + 2  # others + our threads > cpus
    assert threads.machine_busy(_Stat(crowded, crowded, crowded))
    assert not threads.machine_busy(_Stat(crowded, 1, crowded))  # a moment's blip: not busy
    assert not threads.machine_busy(Path("/nonexistent/stat"))  # unknown: not busy


def test_cgroup_quota_reads_cpu_max(tmp_path):
    assert threads.cgroup_quota(tmp_path) is None  # no file: no limit known
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.cgroup_quota(tmp_path) is None
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert threads.cgroup_quota(tmp_path) == 1.5


def test_available_cores_is_capped_by_the_affinity_mask():
    assert 1 <= threads.available_cores() <= len(os.sched_getaffinity(0))
    code = "from aiayn.runtime import threads; print(threads.available_cores())"
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"


def test_use_available_cores_honours_an_explicit_count():
    import torch
    before = torch.get_num_threads()
    try:
        assert threads.use_available_cores(1) == 1
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
