"""The thread policy: a short OpenMP spin set before PyTorch loads, the cores really available."""

import os
import subprocess
import sys

from aiayn import threads


def _policy_in_fresh_process(env: dict[str, str]) -> str:
    code = ("import os, aiayn; print(os.environ.get('GOMP_SPINCOUNT'), "
            "os.environ.get('OMP_WAIT_POLICY'))")
    clean = {k: v for k, v in os.environ.items()
             if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    return subprocess.run([sys.executable, "-c", code], env={**clean, **env},
                          capture_output=True, text=True, check=True).stdout.strip()


def test_importing_aiayn_sets_a_short_spin_unless_the_user_chose_a_policy():
    assert _policy_in_fresh_process({}) == f"{threads.SPIN_COUNT} None"
    assert _policy_in_fresh_process({"OMP_WAIT_POLICY": "ACTIVE"}) == "None ACTIVE"
    assert _policy_in_fresh_process({"GOMP_SPINCOUNT": "50"}) == "50 None"


def test_cgroup_quota_reads_cpu_max(tmp_path):
    assert threads.cgroup_quota(tmp_path) is None  # no file: no limit known
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.cgroup_quota(tmp_path) is None
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert threads.cgroup_quota(tmp_path) == 1.5


def test_available_cores_is_capped_by_the_affinity_mask():
    assert 1 <= threads.available_cores() <= len(os.sched_getaffinity(0))
    code = "from aiayn import threads; print(threads.available_cores())"
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
