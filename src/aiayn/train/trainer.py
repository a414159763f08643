"""The training loop: one plain loop, top to bottom, shared by every architecture.

``train`` sets up (data, model or resumed checkpoint, optimizer) and then runs the loop: a step,
a metrics line every ``log_every`` steps, a validation and a checkpoint every ``valid_every``.
Single process, or one process per device under ``torchrun`` (DistributedDataParallel: gloo on
CPU, NCCL on GPU; each rank takes every world-th batch; rank 0 alone writes).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from .. import checkpoint as ckpt
from ..checkpoint import Checkpoint
from ..config import ConfigError, ModelConfig
from ..data.corpus import Batch, ParallelCorpus, read_stats, split_lines, text_file, token_batches
from ..data.tokenizer import AnyTokenizer, load_tokenizer
from ..decode.options import DecodeOptions
from ..errors import UserError
from ..evaluate import score
from ..model import EncoderModel, LanguageModel, build_model
from ..runtime import cpu
from ..runtime.hardware import choose_precision, peak_flops
from ..runtime.threads import use_available_cores
from ..translate import Translator
from .metrics import MetricsLog, Window, describe, training_flops
from .recipe import (
    PRECISIONS,
    FittedSchedule,
    TrainConfig,
    autocast_dtype,
    label_smoothed_nll,
    noam_lr,
)


@dataclass
class TrainState:
    """Where training is: optimizer steps done, the next batch of the epoch, the best
    validation so far and how many validations since it (for patience), the steps skipped
    for a non-finite loss or gradient, and the sums of the metrics window not yet logged."""

    step: int = 0
    epoch: int = 0
    batch: int = 0
    best: dict = field(default_factory=lambda: {"valid_loss": float("inf"), "step": 0})
    bad_validations: int = 0
    skipped: int = 0  # steps skipped for a non-finite loss or gradient
    bad_steps: int = 0  # of them, how many in a row up to now
    window: dict = field(default_factory=dict)  # Window.sums() at the checkpoint

    def to_json(self) -> dict:
        return {"position": {"step": self.step, "epoch": self.epoch, "batch": self.batch},
                "best": self.best, "bad_validations": self.bad_validations,
                "skipped": self.skipped, "bad_steps": self.bad_steps, "window": self.window}

    @classmethod
    def from_json(cls, state: dict) -> "TrainState":
        return cls(**state["position"], best=state["best"],
                   bad_validations=state["bad_validations"],
                   skipped=state.get("skipped", 0), bad_steps=state.get("bad_steps", 0),
                   window=state.get("window", {}))

    def validated(self, record: dict) -> None:
        """Count a validation: the best so far, or one more without improvement."""
        if record["valid_loss"] < self.best["valid_loss"]:
            self.best, self.bad_validations = {**record}, 0
        else:
            self.bad_validations += 1


@dataclass
class Run:
    """Everything the loop works with, built by ``setup``."""

    cfg: TrainConfig
    model_cfg: ModelConfig
    run_dir: Path
    device: torch.device
    rank: int
    world: int
    model: nn.Module
    net: nn.Module  # the model, wrapped in DDP when there are several processes
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    train_data: ParallelCorpus
    valid_data: ParallelCorpus | None
    valid_sources: list[str]  # the validation pairs kept by `prepare`, as text
    references: list[str]
    tokenizer: AnyTokenizer
    languages: dict[str, str] | None
    labels: list[str] | None
    placeholders: bool  # the data was prepared with placeholder protection
    state: TrainState
    metrics: MetricsLog

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _dist() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _setup_distributed(device: torch.device) -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")


def _device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available; use --device cpu")
    if name == "cuda" and "LOCAL_RANK" in os.environ:
        return torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    return torch.device(name)


def setup(data_dir: Path, run_dir: Path, cfg: TrainConfig, *, resume: bool, log) -> Run:
    """Data, model and optimizer, restored from RUN/checkpoints/last with ``resume``."""
    device = _device(cfg.device)
    if cfg.precision == "fp16" and device.type != "cuda":
        raise UserError("--precision fp16 needs a CUDA device; on CPU use bf16")
    use_available_cores(cfg.threads)
    if device.type == "cpu":
        cpu.reuse_freed_memory()  # every step's activations and gradients reuse their pages
    _setup_distributed(device)
    rank, world = _dist()

    # 1) data and vocabulary
    stats = read_stats(data_dir)
    tokenizer = load_tokenizer(data_dir)
    train_data = ParallelCorpus(data_dir, "train")
    valid_data = ParallelCorpus(data_dir, "valid") if "valid" in stats["splits"] else None

    def text(side: str) -> list[str]:  # the kept validation sentences, as text
        return split_lines((data_dir / text_file("valid", side)).read_text(encoding="utf-8"))
    valid_sources = text("src") if valid_data is not None else []
    references = text("tgt") if valid_data is not None else []
    model_cfg = (_init_config(cfg, tokenizer) if cfg.init
                 else cfg.model_config(tokenizer.vocab_size))
    if int(train_data.sizes.max()) > model_cfg.max_len:
        raise UserError(f"the longest training sentence ({int(train_data.sizes.max())} tokens) "
                        f"exceeds the model's max_len ({model_cfg.max_len}); prepare with a lower "
                        "--max-len or raise model.max_len")

    # 2) precision (once the data is known good), model and optimizer; resume restores the
    #    latter two, the RNG and the data position
    cfg, precision_note = _resolve_precision(cfg, device, run_dir, resume=resume)
    torch.manual_seed(cfg.seed)
    labels = stats.get("labels")
    if (cfg.task == "classify") != (labels is not None):
        raise UserError(f"{data_dir}: " + ("prepared for classification; train it with --arch "
                                           "encoder --task classify" if labels else
                                           "not prepared for classification; prepare it with "
                                           "--task classify"))
    model = build_model(cfg.arch, model_cfg,
                        num_classes=len(labels) if labels else None).to(device)
    if device.type == "cpu":
        cpu.cpu_attention(model)  # the CPU's faster attention for 16-bit training
    if cfg.init and not resume:
        Checkpoint.open(cfg.init).load_weights(model)
        log(f"starting from the weights of {cfg.init}")
    # fused: one pass over each parameter's tensors (CPU and CUDA kernels): 20 against 73 ms a
    # `base` step on the CPU (docs/benchmarks.md)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=cfg.adam_betas,
                                 eps=cfg.adam_eps, fused=device.type in ("cpu", "cuda"))
    if resume and _started_without_checkpoint(run_dir):
        log(f"{run_dir} was stopped before its first checkpoint: starting it from step 0")
        state = TrainState()
    elif resume:
        if rank == 0 and (left := ckpt.remove_leftovers(run_dir)):
            log(f"removed what an interrupted save left in {run_dir / 'checkpoints'}: "
                f"{', '.join(left)}")
        state = _resume(run_dir, model, optimizer, model_cfg, cfg.arch, tokenizer, log)
        if rank == 0 and (stale := run_dir / "checkpoints" / ckpt.AVERAGED).is_dir():
            shutil.rmtree(stale)  # (the average of where the run was; rewritten at its end)
            log(f"removed {stale}: the run goes on, and its end writes a new average")
    elif ckpt.list_step_checkpoints(run_dir):
        raise UserError(f"{run_dir} already holds checkpoints; pass --resume to continue it "
                        "or choose another --out")
    else:
        state = TrainState()
    if rank == 0:
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg.save(run_dir / "train_config.json")
        model_cfg.save(run_dir / "model_config.json")
    metrics = MetricsLog(run_dir, rank == 0, tolerate_errors=cfg.on_save_error == "continue",
                         log=log)
    metrics.truncate_after(state.step)
    net = DistributedDataParallel(model) if world > 1 else model
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.precision == "fp16")
    if rank == 0:
        if precision_note:
            log(precision_note)
        n_params = sum(p.numel() for p in model.parameters())
        log(f"model: {cfg.preset} {n_params / 1e6:.1f}M parameters, vocab {model_cfg.vocab_size}, "
            f"{len(train_data):,} training pairs, {world} process(es) on {device}")
    return Run(cfg, model_cfg, run_dir, device, rank, world, model, net, optimizer, scaler,
               train_data, valid_data, valid_sources, references, tokenizer,
               stats.get("languages"), labels,
               bool(stats.get("placeholders")), state, metrics)


def _resolve_precision(cfg: TrainConfig, device: torch.device, run_dir: Path, *,
                       resume: bool) -> tuple[TrainConfig, str]:
    """``cfg`` with ``precision`` "auto" replaced by the hardware's choice, or on ``resume`` by
    the precision the run started with, so that it goes on exactly; and a line saying which
    and why ("" for a precision the user named). Under DDP every process takes the first
    one's choice."""
    if cfg.precision != "auto":
        return cfg, ""
    saved = run_dir / "train_config.json"
    if resume and saved.is_file():
        try:
            started = json.loads(saved.read_text()).get("precision")
        except (OSError, ValueError, AttributeError):
            started = None
        if started in PRECISIONS and started != "auto":
            return replace(cfg, precision=started), f"precision: {started} (the run's own)"
    choice = choose_precision(device)
    precision = choice.precision
    if dist.is_available() and dist.is_initialized():
        shared = [precision]
        dist.broadcast_object_list(shared, src=0)
        precision = shared[0]
    return replace(cfg, precision=precision), choice.describe()


def _init_config(cfg: TrainConfig, tokenizer: AnyTokenizer) -> ModelConfig:
    """The model of the checkpoint training starts from (``--init``), with the ``model``
    overrides (dropout, say) applied; its vocabulary must be the data's."""
    source = Checkpoint.open(cfg.init)
    if source.arch != cfg.arch:
        raise UserError(f"--init {cfg.init}: it holds a {source.arch} model, not "
                        f"{cfg.arch}; pass the matching --arch")
    if source.tokenizer.fingerprint() != tokenizer.fingerprint():
        raise UserError(f"--init {cfg.init}: the data was prepared with another vocabulary; "
                        f"prepare it with `aiayn prepare --tokenizer {cfg.init}`")
    try:
        return source.config.replace(**cfg.model)
    except ConfigError as err:
        raise UserError(f"--model: {err}") from None


def _started_without_checkpoint(run_dir: Path) -> bool:
    """A run directory that training wrote to (its configs) but that holds no checkpoint."""
    return ((run_dir / "train_config.json").is_file() and not ckpt.list_step_checkpoints(run_dir)
            and not (run_dir / "checkpoints" / "last").exists())


def _resume(run_dir: Path, model: nn.Module, optimizer: torch.optim.Optimizer,
            model_cfg: ModelConfig, arch: str, tokenizer: AnyTokenizer, log) -> TrainState:
    """Restore weights, optimizer, RNG and training state from RUN/checkpoints/last (or, when
    a killed process left ``last`` dangling, from the newest step checkpoint)."""
    if (run_dir / "checkpoints" / "last" / ckpt.WEIGHTS).is_file():
        saved = Checkpoint.open(run_dir, "last")
    elif steps := [p for p in ckpt.list_step_checkpoints(run_dir) if (p / ckpt.WEIGHTS).is_file()]:
        saved = Checkpoint.open(steps[-1])
        log(f"checkpoints/last is missing; resuming from the newest checkpoint, {steps[-1].name}")
    else:
        raise UserError(f"--resume: {run_dir} has no checkpoint to resume from "
                        "(checkpoints/last is missing); drop --resume to start afresh")
    _check_resumable(saved, model_cfg, arch, tokenizer)
    saved.load_weights(model)
    tensors, saved_state = saved.train_state()
    ckpt.load_optimizer(optimizer, tensors, saved_state["optimizer"])
    torch.set_rng_state(tensors["rng.cpu"])
    if "rng.cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng.cuda"])
    state = TrainState.from_json(saved_state)
    log(f"resuming {saved.path.name} at step {state.step} (epoch {state.epoch}, "
        f"batch {state.batch})")
    return state


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


class Preemption:
    """SIGTERM or SIGINT (a scheduler's preemption, Ctrl-C) asks training to stop: the current
    step finishes, a checkpoint is written and ``train`` returns with ``stopped`` "signal".
    A second signal stops at once (KeyboardInterrupt). Handlers are installed only in the main
    thread and restored on exit."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.received: int | None = None
        self.previous: dict[int, Any] = {}

    def _handle(self, signum, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = signum

    def __enter__(self) -> "Preemption":
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def train(data_dir: str | Path, run_dir: str | Path, cfg: TrainConfig, *, resume: bool = False,
          progress: bool = True, log=print) -> dict:
    """Train a model on a prepared data directory; checkpoints go to ``run_dir``.

    Returns a summary: steps, final and best validation figures, the last checkpoint, and why
    it stopped ("signal" when preempted: ``resume=True`` then continues exactly).
    Raises UserError for bad data, flags or checkpoints.
    """
    with Preemption() as preemption:
        return _train(Path(data_dir), Path(run_dir), cfg, resume, progress, log, preemption)


def _train(data_dir: Path, run_dir: Path, cfg: TrainConfig, resume: bool, progress: bool,
           log, preemption: Preemption) -> dict:
    run = setup(data_dir, run_dir, cfg, resume=resume, log=log)
    state, schedule = run.state, Schedule(run)
    if run.is_main:
        log(f"schedule: {schedule.describe()}")
    start_time, start_step = time.monotonic(), state.step
    bar = _progress_bar(cfg, state) if progress and run.is_main else None
    window, last_saved, summary, stop = Window.resumed(state.window), -1, {}, ""
    run.net.train()
    for micro in _micro_batches(run):
        lr = schedule.lr(state.step + 1)
        loss, nll, tokens, finite = _fitting_step(run, micro, lr, log)
        state.step, state.batch = state.step + 1, state.batch + cfg.grad_accum
        if finite:
            flops = sum(training_flops(cfg.arch, run.model_cfg, (b.src.size(0), b.src.size(1)),
                                       (b.tgt_in.size(0), b.tgt_in.size(1))) for b in micro)
            window.add(loss, nll, tokens, flops)
            state.bad_steps = 0
        else:
            _skipped(run, lr, log)
        if bar is not None:
            bar.update(1)
        if state.step % cfg.log_every == 0 and window.tokens:  # (a skipped step logs nothing)
            record = window.record(state.step, state.epoch, lr, run.world,
                                   peak_flops(run.device, run.cfg.precision))
            run.metrics.write(record)
            if bar is not None:
                bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{lr:.2e}",
                                tok_s=f"{record['tokens_per_s']:.0f}",
                                mfu=f"{record.get('mfu', 0):.0%}")
            window = Window()
        stop = _budget_spent(cfg, state, start_time, run.world)
        if preemption.received is not None:  # a checkpoint, no validation: resume is exact
            stop = "signal"
            break
        keep = schedule.keep_checkpoint(state.step)
        if state.step % cfg.valid_every == 0 or stop or keep:
            summary = validate(run)
            if bar is not None and len(summary) > 1:  # progress and validation to stderr
                bar.write(describe(summary), file=sys.stderr)
            if save(run, window, final=bool(stop)):
                last_saved = state.step
            if cfg.patience and state.bad_validations >= cfg.patience and not stop:
                stop = "patience"
        if stop:
            break
    else:
        stop = "max_epochs"
    if bar is not None:
        bar.close()
    run.metrics.close()
    if last_saved != state.step:
        save(run, window, final=True)
    averaged = None
    if schedule.fitted and stop != "signal" and run.is_main:
        averaged = average_last(run, Schedule.AVERAGE, log)
    if run.world > 1:
        dist.barrier()
    if stop == "signal":
        name = signal.Signals(preemption.received or signal.SIGTERM).name
        log(f"stopped by {name} after step {state.step}; checkpoint "
            f"{run.run_dir / 'checkpoints' / ckpt.step_name(state.step)} written: "
            "continue with --resume")
    return {"stopped": stop, "step": state.step, "epoch": state.epoch, "skipped": state.skipped,
            "steps_run": state.step - start_step, "minutes": (time.monotonic() - start_time) / 60,
            "last": summary, "best": state.best,
            "checkpoint": str((run.run_dir / "checkpoints" / "last").resolve()),
            **({"averaged": str(averaged)} if averaged else {})}


def average_last(run: Run, count: int, log) -> Path | None:
    """Average the run's last ``count`` step checkpoints into RUN/checkpoints/averaged (which
    ``aiayn.load(RUN)`` prefers); a failure to write it is reported, not fatal."""
    steps = ckpt.list_step_checkpoints(run.run_dir)[-count:]
    out = run.run_dir / "checkpoints" / ckpt.AVERAGED
    try:
        ckpt.average_checkpoints(steps, out)
    except (OSError, UserError) as err:
        print(f"aiayn: warning: {out}: the average could not be written ({err})",
              file=sys.stderr)
        return None
    log(f"averaged {len(steps)} checkpoints ({steps[0].name} .. {steps[-1].name}) into {out}")
    return out


def _fitting_step(run: Run, micro: list[Batch], lr: float,
                  log) -> tuple[float, float, int, bool]:
    """``train_step``; a step whose batch does not fit in memory is run again as twice as
    many micro-batches of half the sentences (the same gradient), down to single sentences,
    before training stops with a line that says which flag to lower."""
    while True:
        try:
            return train_step(run.net, run.optimizer, run.scaler, micro, lr=lr, cfg=run.cfg,
                              device=run.device)
        except (torch.OutOfMemoryError, RuntimeError) as err:
            if not _out_of_memory(err):
                raise
            run.optimizer.zero_grad(set_to_none=True)
            if run.device.type == "cuda":
                torch.cuda.empty_cache()
            split = [half for batch in micro for half in batch.halves()]
            if len(split) == len(micro) or run.world > 1:  # (ranks must take equal steps)
                raise UserError(f"step {run.state.step + 1}: a batch does not fit in "
                                f"{run.device.type} memory ({str(err).splitlines()[0]}); lower "
                                "--max-tokens, and raise --grad-accum to keep the step's "
                                "size") from None
            if run.is_main:
                log(f"step {run.state.step + 1}: out of memory; retrying as {len(split)} "
                    "smaller micro-batches")
            micro = split


def _out_of_memory(err: Exception) -> bool:
    """Whether an exception says that an allocation failed (CUDA's or the CPU allocator's)."""
    return isinstance(err, torch.OutOfMemoryError) or "can't allocate memory" in str(err)


def _skipped(run: Run, lr: float, log) -> None:
    """Count a step skipped for a non-finite loss or gradient; stop after too many in a row."""
    state = run.state
    state.skipped, state.bad_steps = state.skipped + 1, state.bad_steps + 1
    if run.is_main:
        log(f"step {state.step}: the loss or a gradient is not finite; the step was skipped "
            f"({state.skipped} so far)")
    if state.bad_steps >= run.cfg.max_bad_steps:
        good = ckpt.list_step_checkpoints(run.run_dir)
        last = good[-1] if good else "none yet"
        raise UserError(f"training diverged: {state.bad_steps} steps in a row up to step "
                        f"{state.step} had a non-finite loss or gradient (learning rate "
                        f"{lr:.3g}); the last good checkpoint is {last}; resume from it with "
                        "a lower --lr-scale or with --clip-norm")


def _micro_batches(run: Run) -> Iterator[list[Batch]]:
    """The rest of training, ``grad_accum`` batches at a time, epoch after epoch from the
    state's position (the loop advances ``state.batch``), until ``max_epochs``."""
    cfg, state = run.cfg, run.state
    while not (cfg.max_epochs and state.epoch >= cfg.max_epochs):
        batches = token_batches(run.train_data.sizes, cfg.max_tokens, seed=cfg.seed,
                                epoch=state.epoch)
        usable = len(batches) - len(batches) % run.world  # every rank gets as many
        batches = batches[run.rank:usable:run.world]
        while state.batch + cfg.grad_accum <= len(batches):
            yield [run.train_data.collate(batches[state.batch + i], run.model_cfg).to(run.device)
                   for i in range(cfg.grad_accum)]
        state.epoch, state.batch = state.epoch + 1, 0


def _budget_spent(cfg: TrainConfig, state: TrainState, start_time: float, world: int) -> str:
    """Why training stops now ("max_steps", "max_minutes"), or "" to go on."""
    stop = ""
    if cfg.max_steps and state.step >= cfg.max_steps:
        stop = "max_steps"
    elif cfg.max_minutes and (time.monotonic() - start_time) / 60 >= cfg.max_minutes:
        stop = "max_minutes"
    if world > 1:  # every rank stops together, whatever its clock says
        flag = torch.tensor(float(bool(stop)))
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        stop = stop or ("max_minutes" if flag.item() else "")
    return stop


def _progress_bar(cfg: TrainConfig, state: TrainState):
    from tqdm import tqdm
    return tqdm(total=cfg.max_steps or None, initial=state.step, unit="step", dynamic_ncols=True)


def validate(run: Run) -> dict:
    """Validation loss (every rank) and BLEU (rank 0) at the current step, logged and counted
    towards the best checkpoint and patience."""
    record: dict = {"step": run.state.step}
    if run.valid_data is None:
        return record
    record.update(evaluate_loss(run.model, run.valid_data, run.cfg, run.device))
    if run.is_main and run.cfg.valid_bleu_sentences and run.cfg.arch == "encoder-decoder":
        record["valid_bleu"] = evaluate_bleu(run, run.cfg.valid_bleu_sentences)
    run.state.validated(record)
    run.metrics.write(record)
    return record


def save(run: Run, window: Window, *, final: bool = False) -> bool:
    """Checkpoint the current step (rank 0): weights, optimizer, RNG, state and the metrics
    window not yet logged; point ``best`` at it when it is the best, and prune old step
    checkpoints. A checkpoint that cannot be written stops training, or with ``on_save_error``
    "continue" is reported and tried again at the next one (never for the ``final`` one).
    Returns whether the checkpoint was written."""
    if not run.is_main:
        return True
    state = run.state
    state.window = window.sums()
    tensors, optimizer_meta = ckpt.optimizer_tensors(run.optimizer)
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    name = ckpt.step_name(state.step)
    try:
        ckpt.save_checkpoint(run.run_dir, name, run.model, run.model_cfg, run.tokenizer,
                             extra_tensors=tensors, languages=run.languages, labels=run.labels,
                             placeholders=run.placeholders,
                             state={**state.to_json(), "optimizer": optimizer_meta,
                                    "train_config": run.cfg.to_dict()})
        if state.best["step"] == state.step:
            ckpt.point(run.run_dir / "checkpoints" / "best", name)
        ckpt.prune(run.run_dir, run.cfg.keep_last, {ckpt.step_name(state.best["step"])})
    except ckpt.CheckpointWriteError as err:
        if run.cfg.on_save_error == "continue" and not final:
            print(f"aiayn: warning: {err}; training goes on and tries again at the next "
                  "checkpoint", file=sys.stderr)
            return False
        raise UserError(f"{err}; free some space and continue with --resume"
                        + ("" if final else ", or pass --on-save-error continue")) from None
    except OSError as err:  # the best link or pruning: the checkpoint itself is complete
        print(f"aiayn: warning: after writing {name}: {err}", file=sys.stderr)
    return True


def evaluate_loss(model: nn.Module, corpus: ParallelCorpus, cfg: TrainConfig,
                  device: torch.device) -> dict:
    """Validation label-smoothed loss, NLL and perplexity per target token."""
    model.eval()
    loss_sum = nll_sum = tokens = 0.0
    predicted: list[torch.Tensor] = []
    gold: list[torch.Tensor] = []
    with torch.inference_mode(), _autocast(device, cfg.precision):
        for indices in token_batches(corpus.sizes, cfg.max_tokens, seed=0, epoch=0, shuffle=False):
            batch = corpus.collate(indices, cast(ModelConfig, model.cfg)).to(device)
            logits = _forward(model, batch)
            loss, nll = label_smoothed_nll(logits.flatten(0, 1), batch.tgt_out.flatten(),
                                           cfg.label_smoothing, batch.pad_id)
            loss_sum, nll_sum = loss_sum + float(loss), nll_sum + float(nll)
            tokens += batch.target_tokens
            if corpus.labels is not None:
                predicted.append(logits[:, 0].argmax(-1))
                gold.append(batch.tgt_out[:, 0])
    model.train()
    mean_nll = nll_sum / tokens
    record = {"valid_loss": loss_sum / tokens, "valid_nll": mean_nll,
              "valid_ppl": math.exp(min(mean_nll, 50))}
    if corpus.labels is not None:
        record.update(classification_scores(torch.cat(predicted), torch.cat(gold),
                                            len(corpus.labels)))
    return record


def classification_scores(predicted: torch.Tensor, gold: torch.Tensor, classes: int) -> dict:
    """Accuracy and macro-averaged F1 (a class that never occurs nor is predicted counts 0)."""
    f1 = []
    for c in range(classes):
        tp = int(((predicted == c) & (gold == c)).sum())
        fp = int(((predicted == c) & (gold != c)).sum())
        fn = int(((predicted != c) & (gold == c)).sum())
        f1.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return {"valid_accuracy": float((predicted == gold).float().mean()),
            "valid_f1": sum(f1) / classes}


def evaluate_bleu(run: Run, count: int) -> float:
    """Greedy-decoded sacreBLEU of the first ``count`` validation sentences, scored as
    `aiayn evaluate` scores."""
    count = min(count, len(run.valid_sources))
    run.model.eval()
    translator = Translator(cpu.for_inference(run.model), run.tokenizer,
                            placeholders=run.placeholders)
    outputs = translator.translate(run.valid_sources[:count],
                                   DecodeOptions(beam=1, batch_tokens=run.cfg.max_tokens))
    run.model.train()
    return score(cast("list[str]", outputs), run.references[:count])["bleu"]


def train_step(net: nn.Module, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler,
               micro: list[Batch], *, lr: float, cfg: TrainConfig,
               device: torch.device) -> tuple[float, float, int, bool]:
    """One optimizer step over the micro-batches ``micro`` (gradient accumulation).

    The loss is summed over target tokens and divided by the step's token count across all
    ranks; DDP averages gradients over ranks, hence the factor ``world``. A step whose loss or
    gradient is not finite leaves the weights and the optimizer as they were. Returns this
    rank's summed smoothed loss, summed NLL, target tokens, and whether the step was finite.
    """
    _, world = _dist()
    ddp = net if isinstance(net, DistributedDataParallel) else None
    step_tokens = torch.tensor(float(sum(b.target_tokens for b in micro)))
    if world > 1:
        dist.all_reduce(step_tokens)
    norm = world / float(step_tokens)
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss_sum = nll_sum = 0.0
    tokens = 0
    for i, batch in enumerate(micro):
        sync = ddp.no_sync() if ddp is not None and i < len(micro) - 1 else nullcontext()
        with sync:
            with _autocast(device, cfg.precision):
                logits = _forward(net, batch)
            loss, nll = label_smoothed_nll(logits.flatten(0, 1), batch.tgt_out.flatten(),
                                           cfg.label_smoothing, batch.pad_id)
            scaler.scale(loss * norm).backward()
        loss_sum += loss.item()
        nll_sum += nll.item()
        tokens += batch.target_tokens
    scaler.unscale_(optimizer)  # (a no-op unless fp16 loss scaling is on)
    grads = [p.grad for group in optimizer.param_groups for p in group["params"]
             if p.grad is not None]
    if cfg.clip_norm:
        grad_norm = nn.utils.clip_grad_norm_(
            [p for group in optimizer.param_groups for p in group["params"]], cfg.clip_norm)
    else:
        grad_norm = nn.utils.get_total_norm(grads)
    finite = bool(torch.isfinite(grad_norm)) and math.isfinite(loss_sum)
    if finite or scaler.is_enabled():  # fp16: the scaler skips such a step and lowers its scale
        scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum, nll_sum, tokens, finite


def _forward(net: nn.Module, batch: Batch) -> torch.Tensor:
    """Teacher-forced logits: the translation model reads the source, the LM the target alone."""
    module = net.module if isinstance(net, DistributedDataParallel) else net
    if isinstance(module, LanguageModel):
        return net(batch.tgt_in)
    if isinstance(module, EncoderModel):  # (B, 1, classes): one prediction per text
        return net(batch.src).logits[:, None, :]
    return net(batch.src, batch.tgt_in)


def _autocast(device: torch.device, precision: str):
    if precision == "auto":  # a config used outside `train` (evaluate_loss), not yet resolved
        precision = choose_precision(device).precision
    dtype = autocast_dtype(precision)
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else nullcontext()


def _check_resumable(saved: Checkpoint, model_cfg: ModelConfig, arch: str,
                     tokenizer: AnyTokenizer) -> None:
    """A UserError unless the checkpoint holds this model and this vocabulary."""
    if saved.arch != arch:
        raise UserError(f"cannot resume {saved.path}: it is a {saved.arch} model, not "
                        f"{arch}; use the same --arch, or a new --out")
    old = saved.config
    if old != model_cfg:
        diffs = [f"{k} {v!r} -> {getattr(model_cfg, k)!r}" for k, v in old.to_dict().items()
                 if getattr(model_cfg, k) != v]
        raise UserError(f"cannot resume {saved.path}: the model differs ({'; '.join(diffs)}); "
                        "use the same data and model settings, or a new --out")
    if saved.tokenizer.fingerprint() != tokenizer.fingerprint():
        raise UserError(f"cannot resume {saved.path}: its vocabulary differs from the data's; "
                        "resume with the data it was trained on")
