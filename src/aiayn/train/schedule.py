"""The learning rate of each step, and which late steps are kept for the final average."""

from __future__ import annotations

import time

from ..data.corpus import token_batches
from ..errors import UserError
from .recipe import FittedSchedule, noam_lr
from .setup import Run


class Schedule:
    """The learning rate of each step: the paper's (§5.3), or one fitted to the run's budget
    (``FittedSchedule``) when the run has one. For ``max_minutes`` the expected number of steps
    comes from the measured time per step (validations included) and is re-estimated every
    ``REESTIMATE`` steps; step and epoch budgets give it exactly, so a resumed run follows the
    same rates. A fitted run keeps checkpoints at ``FittedSchedule.TAIL`` fractions of its
    steps and ends by averaging its last ``AVERAGE`` checkpoints."""

    REESTIMATE = 10
    FIRST_GUESS = 1.0  # steps per second, until the first steps are timed
    AVERAGE = 3

    def __init__(self, run: Run) -> None:
        cfg, self.run = run.cfg, run
        budget = bool(cfg.max_steps or cfg.max_minutes or cfg.max_epochs)
        if cfg.schedule == "budget" and not budget:
            raise UserError("--schedule budget fits the schedule to a budget: give --max-steps, "
                            "--max-minutes or --max-epochs (or use --schedule paper)")
        self.fitted = cfg.schedule == "budget" or (cfg.schedule == "auto" and budget)
        self.start_step, self.start_time = run.state.step, time.monotonic()
        self.per_epoch = 0
        if cfg.max_epochs:
            batches = token_batches(run.train_data.sizes, cfg.max_tokens, seed=cfg.seed, epoch=0)
            self.per_epoch = max(1, len(batches) // run.world // cfg.grad_accum)
        self.curve = self._fit(run.state.step) if self.fitted else None
        self.tail_kept: set[float] = set()

    def _fit(self, step: int) -> FittedSchedule:
        cfg, limits = self.run.cfg, list[float]()
        if cfg.max_steps:
            limits.append(cfg.max_steps)
        if cfg.max_epochs:
            limits.append(cfg.max_epochs * self.per_epoch)
        if cfg.max_minutes:
            elapsed, done = time.monotonic() - self.start_time, step - self.start_step
            rate = done / elapsed if done >= self.REESTIMATE and elapsed > 0 else self.FIRST_GUESS
            limits.append(step + rate * max(0.0, cfg.max_minutes * 60 - elapsed))
        return FittedSchedule.fit(round(min(limits)), self.run.model_cfg.d_model, cfg.lr_scale,
                                  cfg.decay)

    def describe(self) -> str:
        cfg, d_model = self.run.cfg, self.run.model_cfg.d_model
        if not self.fitted:
            peak = noam_lr(cfg.warmup, d_model, cfg.warmup, cfg.lr_scale)
            return (f"the paper's: warmup {cfg.warmup:,} steps, peak {peak:.2g}, "
                    "inverse-square-root decay")
        how = " (re-estimated from the step time)" if cfg.max_minutes else ""
        assert self.curve is not None  # (fitted)
        return (f"fitted to the budget: {self.curve.describe()}{how}, then the last "
                f"{self.AVERAGE} checkpoints averaged")

    def lr(self, step: int) -> float:
        """The rate of optimizer step ``step`` (from 1)."""
        if not self.fitted:
            return noam_lr(step, self.run.model_cfg.d_model, self.run.cfg.warmup,
                           self.run.cfg.lr_scale)
        if self.run.cfg.max_minutes and step % self.REESTIMATE == 0:
            self.curve = self._fit(step)
        assert self.curve is not None  # (fitted)
        return self.curve.lr(step)

    def keep_checkpoint(self, step: int) -> bool:
        """Whether ``step`` is one of the late steps checkpointed for the final average."""
        if not self.fitted:
            return False
        assert self.curve is not None  # (fitted)
        if not self.run.cfg.max_minutes:  # a fixed number of steps: exactly there, resumed or not
            return any(step == round(f * self.curve.total) for f in FittedSchedule.TAIL)
        due = [f for f in FittedSchedule.TAIL
               if f not in self.tail_kept and step >= round(f * self.curve.total)]
        self.tail_kept.update(due)
        return bool(due)
