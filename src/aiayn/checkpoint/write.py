"""Writing checkpoints: atomically, so that a process killed at any instant leaves every
earlier checkpoint intact; ``RUN/checkpoints/last`` and ``.../best`` are symlinks, replaced
atomically. Also pruning old steps and averaging (§6.1)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file, save_model
from torch import nn

from ..config import ModelConfig
from ..data.tokenizer import AnyTokenizer
from ..errors import UserError
from ..files import fsync_dir, replace_directory
from ..integrity import write_checksums
from ..model import arch_of
from .read import CONFIG, STATE_JSON, STATE_TENSORS, WEIGHTS, Checkpoint


def point(link: Path, target: str) -> None:
    """Atomically make ``link`` a symlink to ``target`` (a sibling name)."""
    tmp = link.with_name(f".{link.name}.tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    """Split an optimizer state dict into flat tensors and JSON-able metadata."""
    state = optimizer.state_dict()
    tensors, scalars = {}, {}
    for index, values in state["state"].items():
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{index}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{index}.{key}"] = value
    groups = [{k: list(v) if isinstance(v, tuple) else v for k, v in g.items()}
              for g in state["param_groups"]]
    return tensors, {"param_groups": groups, "scalars": scalars}


def load_optimizer(optimizer: torch.optim.Optimizer, tensors: dict[str, torch.Tensor],
                   meta: dict) -> None:
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, index, key = name.split(".", 2)
            state.setdefault(int(index), {})[key] = value
    for name, value in meta["scalars"].items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    groups = [{k: tuple(v) if k == "betas" else v for k, v in g.items()}
              for g in meta["param_groups"]]
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def save_checkpoint(run_dir: Path, name: str, model: nn.Module, cfg: ModelConfig,
                    tokenizer: AnyTokenizer, *,
                    extra_tensors: dict[str, torch.Tensor] | None = None,
                    state: dict[str, Any] | None = None,
                    languages: dict[str, str] | None = None,
                    labels: list[str] | None = None, placeholders: bool = False) -> Path:
    """Write ``run_dir/checkpoints/name`` atomically and point ``last`` at it.

    ``config.json`` holds the ModelConfig plus ``arch``, the kind of model (``ARCHS``), and
    ``languages`` ({"source": "en", "target": "es"}) when known, a classifier's ``labels``,
    and ``placeholders`` true when its data was prepared with placeholder protection."""
    root = run_dir / "checkpoints"
    final, tmp = root / name, root / f".tmp-{name}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        save_model(model, str(tmp / WEIGHTS))
        extra: dict[str, Any] = {"languages": languages} if languages else {}
        if labels is not None:
            extra["labels"] = labels
        if placeholders:
            extra["placeholders"] = True
        (tmp / CONFIG).write_text(json.dumps({"arch": arch_of(model), **extra,
                                              **cfg.to_dict()}, indent=2))
        tokenizer.save(tmp)
        if state is not None:
            save_file(extra_tensors or {}, str(tmp / STATE_TENSORS))
            (tmp / STATE_JSON).write_text(json.dumps(state, indent=1) + "\n")
        write_checksums(tmp)
        for file in tmp.iterdir():
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
        fsync_dir(tmp)
        replace_directory(tmp, final)
        point(root / "last", name)
        fsync_dir(root)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        last = root / "last"
        now = f"points at {os.readlink(last)}" if last.is_symlink() else "does not exist yet"
        raise CheckpointWriteError(f"{final}: the checkpoint could not be written "
                                   f"({_reason(err)}); nothing partial was left and "
                                   f"checkpoints/last {now}") from None
    return final


class CheckpointWriteError(UserError):
    """A checkpoint could not be written (full disk, I/O error, read-only directory); the
    partial directory is gone and ``last`` still points at the previous checkpoint."""


def _reason(err: OSError) -> str:
    """``No space left on device (ENOSPC)`` from an OSError."""
    name = errno.errorcode.get(err.errno or 0)
    return f"{err.strerror or err}" + (f" ({name})" if name else "")


def remove_leftovers(run_dir: Path) -> list[str]:
    """Delete what a killed process can leave in RUN/checkpoints: ``.tmp-*`` directories and
    links being built, ``.old-*`` and ``.del-*`` directories being replaced or deleted.
    Returns their names."""
    root = run_dir / "checkpoints"
    if not root.is_dir():
        return []
    found = sorted(p for p in root.iterdir() if p.name.startswith((".tmp-", ".old-", ".del-"))
                   or p.name in (".last.tmp", ".best.tmp"))
    for path in found:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return [p.name for p in found]


@contextlib.contextmanager
def new_directory(out: Path, *, replace: bool = False) -> Iterator[Path]:
    """Build the directory ``out`` under a temporary name beside it and rename it into place
    when the block succeeds (replacing an existing ``out`` only with ``replace``); on any
    failure the partial directory is removed and ``out`` is as it was."""
    tmp = out.with_name(f".tmp-{out.name}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        yield tmp
        if replace:
            replace_directory(tmp, out)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def prune(run_dir: Path, keep_last: int, protect: set[str]) -> None:
    """Delete step checkpoints beyond the newest ``keep_last``, never the protected ones."""
    root = run_dir / "checkpoints"
    steps = sorted((p for p in root.glob("step_*") if p.is_dir()), key=lambda p: p.name)
    for old in steps[:-keep_last] if keep_last else steps:
        if old.name not in protect:  # renamed first: a half-deleted step is never listed
            gone = old.with_name(f".del-{old.name}")
            os.replace(old, gone)
            shutil.rmtree(gone)


def average_checkpoints(paths: list[Path], out: Path) -> Path:
    """Average the weights of ``paths`` (§6.1) into a new checkpoint directory ``out``."""
    if not paths:
        raise UserError("no checkpoints to average")
    first = Checkpoint.open(paths[0])
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        if Checkpoint.open(path).config != first.config:
            raise UserError(f"{path}: its config differs from {paths[0]}; only checkpoints of "
                            "one run can be averaged")
        try:
            tensors = load_file(str(path / WEIGHTS))
        except (SafetensorError, OSError) as err:
            raise UserError(f"{path / WEIGHTS}: corrupt ({err})") from None
        for key, value in tensors.items():
            total[key] = total.get(key, 0) + value.double()
    averaged = {k: (v / len(paths)).float() for k, v in total.items()}
    with new_directory(out, replace=True) as tmp:
        save_file(averaged, str(tmp / WEIGHTS),
                  metadata={"averaged": json.dumps([str(p) for p in paths])})
        shutil.copyfile(paths[0] / CONFIG, tmp / CONFIG)
        first.tokenizer.save(tmp)
        write_checksums(tmp)
    return out
