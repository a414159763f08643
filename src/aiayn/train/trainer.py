"""The training loop: one plain loop, top to bottom, shared by every architecture.

``train`` sets up (``setup``: data, model or resumed checkpoint, optimizer) and then runs the
loop: a step (``step``), a metrics line every ``log_every`` steps, a validation
(``validation``) and a checkpoint every ``valid_every``. Single process, or one process per
device under ``torchrun`` (DistributedDataParallel: gloo on CPU, NCCL on GPU; each rank takes
every world-th batch; rank 0 alone writes).
"""

from __future__ import annotations

import queue
import signal
import sys
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any, Generator, Iterator, TypeVar

import torch
import torch.distributed as dist

from .. import checkpoint as ckpt
from ..data.corpus import Batch, token_batches
from ..errors import UserError
from ..runtime import hardware
from .metrics import Window, describe, training_flops
from .recipe import TrainConfig
from .schedule import Schedule
from .setup import Run, TrainState, setup
from .step import fitting_step
from .validation import validate

T = TypeVar("T")


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
    window, last_saved, summary = Window.resumed(state.window), -1, {}
    stop = _budget_spent(cfg, state, start_time, run.world, run.device)
    if stop:  # resumed at its last step (stopped before its average was written, say)
        last_saved = state.step
        if run.is_main:
            log(f"step {state.step} is the run's last (--max-steps {cfg.max_steps}): no step "
                "left to train")
    run.net.train(not cfg.aligner_only)  # (aligner only: the fixed model without dropout)
    steps = _micro_batches(run, start=not stop)
    with closing(steps):  # (its thread ends with the loop, an error's too)
        for epoch, position, micro in steps:
            lr = schedule.lr(state.step + 1)
            loss, nll, tokens, finite = fitting_step(run, micro, lr, log)
            state.step, state.epoch, state.batch = state.step + 1, epoch, position
            if finite:
                flops = sum(training_flops(cfg.arch, run.model_cfg, (b.src.size(0), b.src.size(1)),
                                           (b.tgt_in.size(0), b.tgt_in.size(1)),
                                           aligner_only=cfg.aligner_only) for b in micro)
                window.add(loss, nll, tokens, flops)
                state.bad_steps = 0
            else:
                _skipped(run, lr, log)
            if bar is not None:
                bar.update(1)
            if state.step % cfg.log_every == 0 and window.tokens:  # (a skipped step logs nothing)
                record = window.record(state.step, state.epoch, lr, run.world,
                                       hardware.peak_flops(run.device, run.cfg.precision))
                run.metrics.write(record)
                if bar is not None:
                    bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{lr:.2e}",
                                    tok_s=f"{record['tokens_per_s']:.0f}",
                                    mfu=f"{record.get('mfu', 0):.0%}")
                window = Window()
            stop = _budget_spent(cfg, state, start_time, run.world, run.device)
            if preemption.received is not None:  # a checkpoint, no validation: resume is exact
                stop = "signal"
                break
            keep = schedule.keep_checkpoint(state.step)
            if state.step % cfg.valid_every == 0 or stop or keep:
                began = time.monotonic()
                summary = validate(run)
                if run.metrics.enabled:  # (a quiet moment: MFU's denominator probed again)
                    hardware.measure_peak_again(run.device, run.cfg.precision)
                if bar is not None and len(summary) > 1:  # progress and validation to stderr
                    bar.write(describe(summary), file=sys.stderr)
                if save(run, window, final=bool(stop)):
                    last_saved = state.step
                window.pause(time.monotonic() - began)  # (the rates are the steps')
                if cfg.patience and state.bad_validations >= cfg.patience and not stop:
                    stop = "patience"
            if stop:
                break
        else:
            if not stop:  # every epoch's batches are taken
                stop = "max_epochs"
                if state.epoch < cfg.max_epochs:
                    state.epoch, state.batch = cfg.max_epochs, 0
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


def _micro_batches(run: Run, start: bool = True
                   ) -> Generator[tuple[int, int, list[Batch]], None, None]:
    """The rest of training, ``grad_accum`` batches at a time, epoch after epoch from the
    state's position until ``max_epochs``: each step's batches, on the device, after the
    position that follows them (epoch, batch index), which the loop takes once it has taken
    the step. They are collated on a thread one step ahead: a GPU that waited for it sat
    idle 10 ms a `base` step. No steps if not ``start``."""
    cfg, state = run.cfg, run.state

    def steps() -> Iterator[tuple[int, int, list[Batch]]]:
        epoch, position = state.epoch, state.batch
        while not (cfg.max_epochs and epoch >= cfg.max_epochs):
            batches = token_batches(run.train_data.sizes, cfg.max_tokens, seed=cfg.seed,
                                    epoch=epoch)
            usable = len(batches) - len(batches) % run.world  # every rank gets as many
            batches = batches[run.rank:usable:run.world]
            while position + cfg.grad_accum <= len(batches):
                micro = [run.train_data.collate(batches[position + i], run.model_cfg)
                         .to(run.device) for i in range(cfg.grad_accum)]
                position += cfg.grad_accum
                yield epoch, position, micro
            epoch, position = epoch + 1, 0

    return ahead(steps() if start else iter(()))


_END = object()  # (what ``ahead``'s thread sends after the last item)


def ahead(items: Iterator[T]) -> Generator[T, None, None]:
    """``items``, each made on a background thread while the caller works on the one before;
    an exception there is raised here, in its turn. The thread ends when the caller closes
    this generator (or drops it)."""
    made: queue.Queue = queue.Queue(maxsize=1)
    done = threading.Event()

    def put(entry: tuple) -> bool:
        while not done.is_set():
            try:
                made.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def fill() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((_END, None))
        except BaseException as err:  # (raised in the caller's thread instead)
            put((None, err))

    maker = threading.Thread(target=fill, daemon=True, name="aiayn-batches")
    maker.start()
    try:
        while True:
            item, err = made.get()
            if err is not None:
                raise err
            if item is _END:
                return
            yield item
    finally:  # the thread finishes its item and ends: one left in PyTorch's C++ code when
        done.set()  # the interpreter exits aborts the process
        maker.join()



def _budget_spent(cfg: TrainConfig, state: TrainState, start_time: float, world: int,
                  device: torch.device) -> str:
    """Why training stops now ("max_steps", "max_minutes"), or "" to go on."""
    stop = ""
    if cfg.max_steps and state.step >= cfg.max_steps:
        stop = "max_steps"
    elif cfg.max_minutes and (time.monotonic() - start_time) / 60 >= cfg.max_minutes:
        stop = "max_minutes"
    if world > 1:  # every rank stops together, whatever its clock says
        flag = torch.tensor(float(bool(stop)), device=device)  # (NCCL reduces GPU tensors)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        stop = stop or ("max_minutes" if flag.item() else "")
    return stop


def _progress_bar(cfg: TrainConfig, state: TrainState):
    from tqdm import tqdm
    return tqdm(total=cfg.max_steps or None, initial=state.step, unit="step", dynamic_ncols=True)
