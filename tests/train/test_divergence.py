"""Divergence: a non-finite loss or gradient skips its step and is counted; too many in a row
stop training with a line naming the step, the learning rate and the last good checkpoint."""

import pytest
import torch

from aiayn.checkpoint import Checkpoint
from aiayn.errors import UserError
from aiayn.train import step
from aiayn.train.recipe import TrainConfig
from aiayn.train.setup import setup
from aiayn.train.trainer import train, validate
from tests.conftest import FAST

QUIET = dict(progress=False, log=lambda *_: None)


def _poison(monkeypatch, bad_calls: set[int]) -> None:
    """Make the gradient NaN on the given forward calls (1-based): the loss stays finite."""
    forward, calls = step.forward, [0]

    def poisoned(net, batch, call=None):
        logits = forward(net, batch, call)
        if logits.requires_grad:  # a training step, not a validation
            calls[0] += 1
            if calls[0] in bad_calls:
                logits.register_hook(lambda grad: grad * float("nan"))
        return logits
    monkeypatch.setattr(step, "forward", poisoned)


def test_a_nan_gradient_skips_its_step_and_training_goes_on(toy_data, tmp_path, monkeypatch):
    clean = train(toy_data, tmp_path / "clean", TrainConfig(**FAST, max_steps=8), **QUIET)
    _poison(monkeypatch, {3, 6})
    logged = []
    summary = train(toy_data, tmp_path / "run", TrainConfig(**FAST, max_steps=8),
                    progress=False, log=logged.append)
    assert summary["skipped"] == 2 and summary["step"] == 8 and clean["skipped"] == 0
    assert any("step 3: the loss or a gradient is not finite" in line for line in logged)
    weights = dict(Checkpoint.open(tmp_path / "run", "last").model().named_parameters())
    assert all(torch.isfinite(p).all() for p in weights.values())


def test_too_many_in_a_row_stop_with_the_message(toy_data, tmp_path, monkeypatch):
    _poison(monkeypatch, set(range(6, 100)))
    with pytest.raises(UserError, match=r"training diverged: 3 steps in a row up to step 8 "
                                         r"had a non-finite loss or gradient \(learning rate "
                                         r".*the last good checkpoint is .*step_0000004"):
        train(toy_data, tmp_path / "run", TrainConfig(**FAST, max_steps=20, max_bad_steps=3),
              **QUIET)


def test_validation_survives_a_model_that_produces_nan(toy_data, tmp_path):
    run = setup(toy_data, tmp_path / "run", TrainConfig(**FAST), resume=False,
                        log=lambda *_: None)
    with torch.no_grad():
        for p in run.model.parameters():
            p.fill_(float("nan"))
    record = validate(run)
    assert record["step"] == 0 and "valid_bleu" in record
