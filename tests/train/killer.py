"""Run an aiayn command and SIGKILL it at the N-th occurrence of an instant of one KIND:

    killed(KIND, N, argv)  # its exit code, -9 once killed

Each run is a process of its own, forked from a server that has imported torch and aiayn once
(``multiprocessing``'s forkserver), which spares each run the seconds those imports take.

KIND (what the process is doing when it dies):
  step        inside an optimizer step, before it updates anything
  validation  inside a validation pass
  weights     a checkpoint's model.safetensors just written, the rest not yet
  state       a checkpoint's training state just written, its checksums not yet
  rename      a complete checkpoint directory about to be renamed into place
  link        the new ``last`` link made under its temporary name, not yet swapped in
  prune       an old checkpoint renamed for deletion, not yet deleted
  metrics     half a line of metrics.jsonl written
  average     an average's weights written, its directory not yet renamed into place
  encode      `prepare` encoding its data, its directory not yet renamed into place

The kill is a real SIGKILL from the process to itself: no handler, no cleanup runs.
"""

import importlib
import json
import multiprocessing
import os
import signal
import sys

import torch._dynamo  # noqa: F401  (what torch's optimizers import when first built)

from aiayn.checkpoint import write as ckpt  # the module whose functions save checkpoints
from aiayn.cli import main
from aiayn.train import metrics, step, trainer, validation

prepare = importlib.import_module("aiayn.data.prepare")  # the module, not its function

def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(kind: str, target: int) -> None:
    """Patch the functions of ``kind``'s instant so that the ``target``-th one kills."""
    seen = 0

    def counted(fn, *, before=None, after=None, when=lambda *a, **k: True):
        """``fn`` wrapped: at its ``target``-th call (that ``when`` accepts) run ``before``
        (then die) or call ``fn`` then ``after`` (then die)."""
        def wrapper(*args, **kwargs):
            nonlocal seen
            if when(*args, **kwargs):
                seen += 1
                if seen == target:
                    if before is not None:
                        before(*args, **kwargs)
                        die()
                    fn(*args, **kwargs)
                    if after is not None:
                        after(*args, **kwargs)
                    die()
            return fn(*args, **kwargs)
        return wrapper

    def half_line(self, record):
        with open(self.path, "a") as handle:
            line = json.dumps(record)
            handle.write(line[: len(line) // 2])

    def link_half_made(link, target_name):
        os.symlink(target_name, link.with_name(f".{link.name}.tmp"))

    def rename_oldest(run_dir, keep_last, protect):
        steps = [p for p in trainer.ckpt.list_step_checkpoints(run_dir)[:-keep_last]
                 if p.name not in protect]
        os.replace(steps[0], steps[0].with_name(f".del-{steps[0].name}"))

    def deletes(run_dir, keep_last, protect):
        old = trainer.ckpt.list_step_checkpoints(run_dir)[:-keep_last]
        return any(p.name not in protect for p in old)

    nothing = lambda *a, **k: None  # noqa: E731
    if kind == "step":
        step.train_step = counted(step.train_step, before=nothing)
    elif kind == "validation":
        validation.evaluate_loss = counted(validation.evaluate_loss, before=nothing)
    elif kind == "weights":
        ckpt.save_model = counted(ckpt.save_model, after=nothing)
    elif kind in ("state", "average"):
        ckpt.save_file = counted(ckpt.save_file, after=nothing)
    elif kind == "rename":
        ckpt.replace_directory = counted(ckpt.replace_directory, before=nothing)
    elif kind == "link":
        ckpt.point = counted(ckpt.point, before=link_half_made,
                             when=lambda link, name: link.name == "last")
    elif kind == "prune":
        trainer.ckpt.prune = counted(ckpt.prune, before=rename_oldest, when=deletes)
    elif kind == "metrics":
        metrics.MetricsLog.write = counted(metrics.MetricsLog.write, before=half_line)
    elif kind == "encode":
        prepare.write_checksums = counted(prepare.write_checksums, after=nothing)
    else:
        raise SystemExit(f"unknown kind {kind!r}")


def _child(argv: list[str], kill_at: tuple[str, int] | None, output: str | None) -> None:
    """A forked run: its output to ``output``.out and .err (None: dropped), the instant
    ``kill_at`` armed (None: none), then aiayn."""
    for fd, suffix in ((1, ".out"), (2, ".err")):
        path = os.devnull if output is None else output + suffix
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
    if kill_at is not None:
        arm(*kill_at)
    sys.exit(main(argv))


def start(argv: list[str], kill_at: tuple[str, int] | None = None,
          output: str | None = None) -> multiprocessing.Process:
    """A forked run of ``aiayn argv``, started: killed at the N-th instant of a KIND where
    ``kill_at`` is (KIND, N) (None: let it run); its output written to ``output``.out and
    .err (None: dropped)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # (this module: torch and aiayn imported)
    proc = context.Process(target=_child, args=(argv, kill_at, output))
    proc.start()
    return proc


def killed(kind: str, target: int, argv: list[str], timeout: float = 300) -> int:
    """``aiayn argv`` run in a forked process, killed at ``kind``'s ``target``-th instant:
    its exit code (-9 when the kill came)."""
    proc = start(argv, (kind, target))
    proc.join(timeout)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
        raise TimeoutError(f"aiayn {' '.join(argv)} ran past {timeout} s")
    return proc.exitcode

