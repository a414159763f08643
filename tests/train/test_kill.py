"""kill -9 anywhere: training killed at seeded instants (steps, validations, every part of a
checkpoint write, the link swap, pruning, a metrics line) and resumed each time ends with the
weights and metrics.jsonl of a run never interrupted; every checkpoint left behind loads.
`average` and `prepare` killed before they finish leave what existed before intact."""

import json
import math
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from aiayn import checkpoint as ckpt
from aiayn.checkpoint import Checkpoint
from aiayn.cli import main
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from tests.conftest import FAST, PRODUCTS, toy_pairs, write_pairs
from tests.train import killer

STEPS, EVERY, LOG_EVERY, KEEP = 32, 4, 3, 2  # (windows span checkpoints: 3 does not divide 4)
# float32 and its products named: "auto" could choose otherwise between two runs on a machine
# near the margin
FLAGS = ["--preset", "tiny", "--precision", "fp32", "--fp32-products", PRODUCTS,
         "--model", "dropout=0.1", "--max-tokens", "150", "--warmup", "10",
         "--valid-every", str(EVERY), "--log-every", str(LOG_EVERY), "--valid-bleu-sentences",
         "4", "--keep-last", str(KEEP), "--max-steps", str(STEPS), "--no-progress"]
AT_CHECKPOINT = ("validation", "weights", "state", "rename", "link", "prune")
KINDS = ("step", "metrics", *AT_CHECKPOINT, "outside")


def run_killed(kind: str, n: int, argv: list[str]) -> int:
    """``aiayn argv`` killed at the ``n``-th instant of ``kind``: its exit code."""
    return killer.killed(kind, n, argv)


def killed_from_outside(argv: list[str], run: Path, seed: int) -> int:
    """SIGKILL from another process, a seeded moment after training has logged a new line."""
    metrics = run / "metrics.jsonl"
    lines = len(metrics.read_text().splitlines()) if metrics.exists() else 0
    proc = killer.start(argv)
    deadline = time.monotonic() + 120
    while proc.is_alive() and time.monotonic() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) > lines:
            break
        time.sleep(0.01)
    time.sleep(random.Random(seed).uniform(0.0, 0.3))
    proc.kill()
    proc.join()
    return proc.exitcode


def resume_step(run: Path) -> int:
    """The step --resume would continue from: checkpoints/last, or the newest step."""
    last = run / "checkpoints" / "last"
    if not (last / ckpt.WEIGHTS).is_file():
        steps = ckpt.list_step_checkpoints(run)
        if not steps:
            return 0
        last = steps[-1]
    return json.loads((last / ckpt.STATE_JSON).read_text())["position"]["step"]


def metric_writes(after: int, upto: int) -> int:
    """metrics.jsonl lines written for the steps in (after, upto]."""
    return sum((s % LOG_EVERY == 0) + (s % EVERY == 0) for s in range(after + 1, upto + 1))


def events(seed: int, count: int) -> list[tuple[str, int]]:
    """``count`` (kind, step) pairs, every kind at least once, the steps spread over the run."""
    rng = random.Random(seed)
    kinds = list(KINDS) + [rng.choice(KINDS) for _ in range(count - len(KINDS))]
    rng.shuffle(kinds)
    steps = sorted(rng.sample(range(2, STEPS - 1), count))
    return list(zip(kinds, steps))


def assert_every_checkpoint_loads(run: Path) -> None:
    for path in ckpt.list_step_checkpoints(run):
        Checkpoint.open(path).model()
        Checkpoint.open(path).train_state()
    last = run / "checkpoints" / "last"
    if last.is_symlink() and last.exists():
        Checkpoint.open(last.resolve()).model()


def records(run: Path) -> list[dict]:
    """metrics.jsonl without its timings."""
    lines = (run / "metrics.jsonl").read_text().splitlines()
    timings = ("tokens_per_s", "mfu")
    return [{k: v for k, v in json.loads(line).items() if k not in timings} for line in lines]


def test_training_killed_at_seeded_instants_ends_as_an_uninterrupted_run(toy_data, tmp_path):
    cfg = TrainConfig(**{**FAST, "valid_every": EVERY, "log_every": LOG_EVERY,
                         "keep_last": KEEP}, max_steps=STEPS)
    train(toy_data, tmp_path / "whole", cfg, progress=False, log=lambda *_: None)

    run = tmp_path / "killed"
    argv = ["train", "--data", str(toy_data), "--out", str(run), *FLAGS]
    kills, tried = [], []
    for kind, step in events(seed=12, count=10):
        current = resume_step(run)
        if kind in AT_CHECKPOINT:
            checkpoint = max(math.ceil(step / EVERY), KEEP + 1 if kind == "prune" else 1)
            n = checkpoint - current // EVERY
        elif kind == "metrics":
            n = metric_writes(current, step)
        else:
            n = step - current
        n = max(n, 1)  # (an instant already passed: the next one of its kind)
        tried.append((kind, step, n))
        resume = ["--resume"] if run.exists() else []
        if kind == "outside":
            code = killed_from_outside(argv + resume, run, seed=step)
        else:
            code = run_killed(kind, n, argv + resume)
        if code == -signal.SIGKILL:
            kills.append(kind)
        else:
            assert code == 0
        assert_every_checkpoint_loads(run)
    final = subprocess.run([sys.executable, "-m", "aiayn", *argv, "--resume"],
                           capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr

    assert len(kills) >= 10, (kills, tried)
    assert set(KINDS) - {"outside"} <= set(kills), (kills, tried)
    print(f"{len(kills)} kills: {kills}")
    a = load_file(str(tmp_path / "whole/checkpoints/last" / ckpt.WEIGHTS))
    b = load_file(str(run / "checkpoints/last" / ckpt.WEIGHTS))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert records(run) == records(tmp_path / "whole")
    assert not [p.name for p in (run / "checkpoints").iterdir() if p.name.startswith(".")]
    assert main(["check", str(run)]) == 0


def test_resume_after_a_checkpoint_kept_its_metrics_window(toy_data, tmp_path):
    """A window logged after a checkpoint holds the steps before it too, resumed or not."""
    settings = {**FAST, "valid_every": EVERY, "log_every": LOG_EVERY, "schedule": "paper"}
    cfg = TrainConfig(**settings, max_steps=8)
    train(toy_data, tmp_path / "whole", cfg, progress=False, log=lambda *_: None)
    first = TrainConfig(**settings, max_steps=4)
    train(toy_data, tmp_path / "two", first, progress=False, log=lambda *_: None)
    train(toy_data, tmp_path / "two", cfg, resume=True, progress=False, log=lambda *_: None)
    assert records(tmp_path / "two") == records(tmp_path / "whole")


@pytest.fixture
def averaged_run(toy_data, tmp_path):
    cfg = TrainConfig(**{**FAST, "valid_bleu_sentences": 0}, max_steps=8)
    train(toy_data, tmp_path / "run", cfg, progress=False, log=lambda *_: None)
    assert main(["average", str(tmp_path / "run"), "--last", "2",
                 "--out", str(tmp_path / "avg")]) == 0
    return tmp_path / "run", tmp_path / "avg"


def test_average_killed_before_it_finishes_leaves_the_old_average(averaged_run):
    run, avg = averaged_run
    before = (avg / ckpt.WEIGHTS).read_bytes()
    code = run_killed("average", 1, ["average", str(run), "--last", "1", "--out", str(avg)])
    assert code == -signal.SIGKILL
    assert (avg / ckpt.WEIGHTS).read_bytes() == before
    assert main(["check", str(avg)]) == 0
    assert_every_checkpoint_loads(run)


def test_prepare_killed_before_it_finishes_leaves_no_data_and_keeps_the_old(tmp_path):
    src, tgt = write_pairs(tmp_path, "train", toy_pairs(200))
    argv = ["prepare", "--train-src", str(src), "--train-tgt", str(tgt), "--vocab-size", "60",
            "--out", str(tmp_path / "data")]
    assert run_killed("encode", 1, argv) == -signal.SIGKILL
    assert not (tmp_path / "data").exists()
    assert main(argv) == 0
    stats = (tmp_path / "data" / "stats.json").read_text()
    assert run_killed("encode", 1, [*argv, "--overwrite", "--vocab-size", "70"]) == -signal.SIGKILL
    assert (tmp_path / "data" / "stats.json").read_text() == stats
    assert main(["check", str(tmp_path / "data")]) == 0
