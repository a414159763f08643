"""The schedule fitted to a budget: its shape at known budgets, the run it drives (rates, late
checkpoints, the final average that loading prefers), exact resume; the paper's one flag away."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from aiayn import checkpoint as ckpt
from aiayn.errors import UserError
from aiayn.train.recipe import FittedSchedule, TrainConfig, noam_lr
from aiayn.train.trainer import train
from aiayn.translate import load
from tests.conftest import FAST, losses


@pytest.mark.parametrize("total,d_model", [(1000, 256), (2350, 256), (100_000, 512), (7, 64)])
def test_fitted_schedule_at_known_budgets(total, d_model):
    s = FittedSchedule.fit(total, d_model)
    assert s.warmup == max(1, round(0.1 * total), min(100, total // 4))
    assert s.peak == pytest.approx(0.022 / math.sqrt(d_model))
    assert s.lr(s.warmup) == pytest.approx(s.peak)
    assert s.lr(1) == pytest.approx(s.peak / s.warmup)
    assert s.lr(total) == pytest.approx(s.peak * 0.05)  # the floor, at the last step
    assert s.lr(total + 500) == pytest.approx(s.floor)
    after = [s.lr(step) for step in range(s.warmup, total + 1)]
    assert all(a >= b for a, b in zip(after, after[1:]))  # decays, never rises


@pytest.mark.parametrize("total,warmup", [(480, 100), (200, 50), (999, 100), (1500, 150)])
def test_a_short_budget_still_warms_up_over_100_steps_or_a_quarter_of_it(total, warmup):
    assert FittedSchedule.fit(total, 256).warmup == warmup


def test_inverse_sqrt_decay_is_the_papers_shape_from_the_fitted_peak():
    s = FittedSchedule.fit(1000, 256, decay="inverse-sqrt")
    assert (s.warmup, s.peak) == (100, pytest.approx(0.022 / 16))
    assert s.lr(100) == pytest.approx(s.peak)
    assert s.lr(400) == pytest.approx(s.peak / 2)  # peak * sqrt(warmup / step)
    assert s.lr(1000) == pytest.approx(s.peak * math.sqrt(0.1))
    # with the paper's warmup and the peak it reaches, the two schedules agree after warmup
    paper = FittedSchedule(100_000, 4000, noam_lr(4000, 512, 4000), 0.0, "inverse-sqrt")
    assert paper.lr(9000) == pytest.approx(noam_lr(9000, 512, 4000))
    assert FittedSchedule(10**6, 10, 1.0, 0.05, "inverse-sqrt").lr(10**6) == 0.05  # the floor
    assert s.describe() == ("warmup 100 steps, peak 0.0014, inverse-square-root decay to "
                            "0.00043 at ~1,000 steps")
    with pytest.raises(ValueError, match="decay"):
        FittedSchedule.fit(1000, 256, decay="linear")


def test_fitted_schedule_describes_itself():
    assert FittedSchedule.fit(2350, 256).describe() == (
        "warmup 235 steps, peak 0.0014, cosine decay to 6.9e-05 at ~2,350 steps")


def rates(run) -> dict[int, float]:
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["lr"] for r in records if "lr" in r}


def test_a_step_budget_runs_the_fitted_schedule_and_ends_with_the_average(toy_data, tmp_path):
    cfg = TrainConfig(**{**FAST, "valid_every": 8, "valid_bleu_sentences": 0, "keep_last": 5},
                      max_steps=40)
    logged = []
    summary = train(toy_data, tmp_path / "run", cfg, progress=False, log=logged.append)
    curve = FittedSchedule.fit(40, 32)  # the tiny preset's width
    assert rates(tmp_path / "run") == {s: curve.lr(s) for s in range(1, 41)}
    assert f"schedule: fitted to the budget: {curve.describe()}, then the last 3 " \
           "checkpoints averaged" in logged
    # late checkpoints at 90% and 95% of the budget, averaged with the last
    assert [p.name for p in ckpt.list_step_checkpoints(tmp_path / "run")][-3:] == [
        "step_0000036", "step_0000038", "step_0000040"]
    averaged = tmp_path / "run" / "checkpoints" / "averaged"
    assert summary["averaged"] == str(averaged)
    assert ckpt.resolve_checkpoint(tmp_path / "run") == averaged.resolve()
    last3 = [load_file(str(p / ckpt.WEIGHTS)) for p in ckpt.list_step_checkpoints(
        tmp_path / "run")[-3:]]
    mean = load_file(str(averaged / ckpt.WEIGHTS))
    for key, value in mean.items():
        torch.testing.assert_close(value, sum(w[key].double() for w in last3).float() / 3)
    assert load(tmp_path / "run").translate(["alpha beta"])  # aiayn.load(RUN) takes it


def test_resume_keeps_the_fitted_schedule_exactly(toy_data, tmp_path, monkeypatch):
    cfg = TrainConfig(**{**FAST, "valid_bleu_sentences": 0}, max_steps=20)
    train(toy_data, tmp_path / "whole", cfg, progress=False, log=lambda *_: None)
    from aiayn.train import trainer
    original = trainer._budget_spent

    def stop_at_8(cfg_, state, start, world, device):  # stopped from outside, the budget kept
        return "max_steps" if state.step == 8 else original(cfg_, state, start, world, device)
    monkeypatch.setattr(trainer, "_budget_spent", stop_at_8)
    train(toy_data, tmp_path / "two", cfg, progress=False, log=lambda *_: None)
    monkeypatch.undo()
    logged = []
    train(toy_data, tmp_path / "two", cfg, resume=True, progress=False, log=logged.append)
    assert any(line.startswith("removed ") and "averaged" in line for line in logged)
    assert rates(tmp_path / "two") == rates(tmp_path / "whole")
    assert losses(tmp_path / "two") == losses(tmp_path / "whole")
    for name in ("last", "averaged"):
        a = load_file(str(tmp_path / "whole/checkpoints" / name / ckpt.WEIGHTS))
        b = load_file(str(tmp_path / "two/checkpoints" / name / ckpt.WEIGHTS))
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_papers_schedule_is_one_flag_away(toy_data, tmp_path):
    cfg = TrainConfig(**{**FAST, "valid_bleu_sentences": 0, "schedule": "paper"}, max_steps=12)
    summary = train(toy_data, tmp_path / "run", cfg, progress=False, log=lambda *_: None)
    assert rates(tmp_path / "run") == {s: noam_lr(s, 32, 10) for s in range(1, 13)}
    assert "averaged" not in summary
    assert not (tmp_path / "run" / "checkpoints" / "averaged").exists()


def test_a_budget_schedule_needs_a_budget(toy_data, tmp_path):
    cfg = TrainConfig(**{**FAST, "schedule": "budget"})
    with pytest.raises(UserError, match="--schedule budget fits the schedule to a budget"):
        train(toy_data, tmp_path / "run", cfg, progress=False, log=lambda *_: None)


def test_the_decay_flag_reaches_the_run(toy_data, tmp_path):
    cfg = TrainConfig(**{**FAST, "valid_bleu_sentences": 0, "decay": "inverse-sqrt"},
                      max_steps=12)
    train(toy_data, tmp_path / "run", cfg, progress=False, log=lambda *_: None)
    curve = FittedSchedule.fit(12, 32, decay="inverse-sqrt")
    assert rates(tmp_path / "run") == {s: curve.lr(s) for s in range(1, 13)}
