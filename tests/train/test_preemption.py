"""Preemption: SIGTERM finishes the step, writes a checkpoint, exits 75; --resume continues to
the same losses and weights as a run never stopped."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

from aiayn import checkpoint as ckpt
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from tests.conftest import FAST, PRODUCTS, losses
from tests.train import killer

STEPS = 120  # (the signal comes after 30: ample room before the end)
# float32 and its products named: "auto" could choose otherwise between two runs on a machine
# near the margin
FLAGS = ["--preset", "tiny", "--precision", "fp32", "--fp32-products", PRODUCTS,
         "--model", "dropout=0.1", "--max-tokens", "150", "--warmup", "10",
         "--valid-every", "100", "--log-every", "1", "--valid-bleu-sentences", "0",
         "--max-steps", str(STEPS), "--no-progress"]


def test_sigterm_checkpoints_and_resume_is_exact(toy_data, tmp_path):
    cfg = TrainConfig(**{**FAST, "valid_every": 100, "valid_bleu_sentences": 0},
                      max_steps=STEPS)
    train(toy_data, tmp_path / "whole", cfg, progress=False, log=lambda *_: None)

    run = tmp_path / "stopped"
    argv = ["train", "--data", str(toy_data), "--out", str(run), *FLAGS]
    output = str(tmp_path / "stopped-output")  # (a process forked with torch imported)
    proc = killer.start(argv, output=output)
    metrics = run / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # signal once training is well under way
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 30:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    proc.join(120)
    err = Path(output + ".err").read_text()
    assert proc.exitcode == 75, err
    stopped_at = json.loads(Path(output + ".out").read_text())["step"]
    assert 30 <= stopped_at < STEPS
    assert f"stopped by SIGTERM after step {stopped_at}" in err
    assert (run / "checkpoints" / ckpt.step_name(stopped_at) / ckpt.WEIGHTS).is_file()

    resumed = subprocess.run([sys.executable, "-m", "aiayn", *argv, "--resume"],
                             capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert losses(tmp_path / "whole") == losses(run)
    a = load_file(str(tmp_path / "whole/checkpoints/last" / ckpt.WEIGHTS))
    b = load_file(str(run / "checkpoints/last" / ckpt.WEIGHTS))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resuming_a_run_past_its_last_step_trains_nothing_and_writes_its_average(toy_data,
                                                                               tmp_path):
    # killed after its last checkpoint, before the average: resuming once trained a step more
    cfg = TrainConfig(**FAST, max_steps=6)
    run = tmp_path / "run"
    train(toy_data, run, cfg, progress=False, log=lambda *_: None)
    checkpoints = run / "checkpoints"
    last = load_file(str(checkpoints / "last" / ckpt.WEIGHTS))
    averaged = load_file(str(checkpoints / "averaged" / ckpt.WEIGHTS))
    metrics = (run / "metrics.jsonl").read_text()
    for path in (checkpoints / "averaged").iterdir():
        path.unlink()
    (checkpoints / "averaged").rmdir()
    lines = []
    summary = train(toy_data, run, cfg, resume=True, progress=False, log=lines.append)
    assert summary["step"] == 6 and summary["steps_run"] == 0
    assert any("no step left to train" in line for line in lines)
    assert (run / "metrics.jsonl").read_text() == metrics
    resumed = load_file(str(checkpoints / "last" / ckpt.WEIGHTS))
    assert all(torch.equal(resumed[k], last[k]) for k in last)
    again = load_file(str(checkpoints / "averaged" / ckpt.WEIGHTS))
    assert all(torch.equal(again[k], averaged[k]) for k in averaged)
