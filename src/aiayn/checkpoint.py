"""Self-sufficient checkpoint directories, written atomically, read without unpickling.

A checkpoint directory holds everything needed to translate or to resume:

- ``model.safetensors``       the weights (tied tensors stored once)
- ``config.json``             the resolved ModelConfig
- ``tokenizer.model``         the SentencePiece vocabulary (or, for a model in OPUS-MT's form,
                              ``source.spm``, ``target.spm``, ``vocab.json``
                              [``target_vocab.json``]: ``aiayn.data.tokenizer``)
- ``train_state.safetensors`` optimizer moments and RNG states (tensors only)
- ``train_state.json``        step, data position, schedule, optimizer hyper-parameters, metrics

It is written under a temporary name and renamed into place, so a process killed at any instant
leaves every earlier checkpoint intact. ``RUN/checkpoints/last`` and ``.../best`` are symlinks,
replaced atomically.
"""

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
from safetensors.torch import load_model as load_safetensors_model
from torch import nn

from .config import ConfigError, ModelConfig
from .data.tokenizer import AnyTokenizer
from .data.tokenizer import load_tokenizer as find_tokenizer
from .errors import UserError
from .files import fsync_dir, replace_directory
from .integrity import recorded, verify, write_checksums
from .model import ARCHS, arch_of, build_model

WEIGHTS, CONFIG = "model.safetensors", "config.json"
AVERAGED = "averaged"  # RUN/checkpoints/averaged: the average a budgeted run ends with
STATE_TENSORS, STATE_JSON = "train_state.safetensors", "train_state.json"


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
        extra = {"languages": languages} if languages else {}
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


def step_name(step: int) -> str:
    """The directory name of the checkpoint written after ``step`` optimizer steps."""
    return f"step_{step:07d}"


def resolve_checkpoint(path: str | Path, which: str | int | None = None) -> Path:
    """A checkpoint directory from a checkpoint or run directory, or a clear error.

    For a run directory ``which`` picks the checkpoint: "averaged", "best", "last", a step
    number or the name of any directory under RUN/checkpoints; by default the average a
    budgeted run ends with, else best, else last.
    """
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such checkpoint directory")
    if which is None and (path / WEIGHTS).is_file():
        return path
    root = path / "checkpoints"
    if which is None:
        picks = [AVERAGED, "best", "last"]
    elif isinstance(which, int) or str(which).isdigit():
        picks = [step_name(int(which))]
    else:
        picks = [str(which)]
    for pick in picks:
        if (root / pick / WEIGHTS).is_file():
            return (root / pick).resolve()
    if which is not None:
        raise UserError(f"{path}: no checkpoint {picks[0]!r} in {root}; "
                        f"choose one of: {', '.join(list_checkpoints(path)) or 'none yet'}")
    raise UserError(f"{path}: not a checkpoint (no {WEIGHTS}) and no checkpoints/best or "
                    "checkpoints/last inside; point --checkpoint at a checkpoint directory")


def list_checkpoints(run_dir: Path) -> list[str]:
    """The names of a run's checkpoints: step directories, best, last."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / WEIGHTS).is_file())


def _read_config(ckpt: Path) -> dict:
    verify(ckpt, [CONFIG])
    try:
        values = json.loads((ckpt / CONFIG).read_text())
    except FileNotFoundError:
        raise UserError(f"{ckpt}: {CONFIG} is missing; the checkpoint is incomplete") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{ckpt / CONFIG}: corrupt or invalid ({err})") from None
    if not isinstance(values, dict):
        raise UserError(f"{ckpt / CONFIG}: corrupt or invalid (not a mapping)")
    return values


def load_arch(ckpt: Path) -> str:
    """The kind of model in a checkpoint: 'encoder-decoder' or 'decoder-only'."""
    arch = _read_config(ckpt).get("arch", "encoder-decoder")
    if arch not in ARCHS:
        raise UserError(f"{ckpt / CONFIG}: unknown arch {arch!r}; expected one of {', '.join(ARCHS)}")
    return arch


def load_labels(ckpt: Path) -> list[str] | None:
    """A classifier's labels, in the order of its outputs; None for other models."""
    labels = _read_config(ckpt).get("labels")
    if labels is not None and not (isinstance(labels, list) and len(labels) >= 2):
        raise UserError(f"{ckpt / CONFIG}: 'labels' must be a list of at least two labels")
    return labels


def load_model(ckpt: Path) -> nn.Module:
    """Build the checkpoint's model from its config and load its weights."""
    labels = load_labels(ckpt)
    model = build_model(load_arch(ckpt), load_config(ckpt),
                        num_classes=len(labels) if labels else None)
    load_weights(model, ckpt)
    return model


def load_tokenizer(ckpt: Path) -> AnyTokenizer:
    """The checkpoint's vocabulary (either form), checked against its config's sizes."""
    entries = recorded(ckpt) or {}
    verify(ckpt, [n for n in entries if n not in (WEIGHTS, CONFIG, STATE_TENSORS, STATE_JSON)])
    tokenizer = find_tokenizer(ckpt)
    cfg = load_config(ckpt)
    for side, ours, model in (("source", tokenizer.vocab_size, cfg.vocab_size),
                              ("target", tokenizer.target_vocab_size, cfg.target_vocab_size)):
        if ours > model:
            raise UserError(f"{ckpt}: the {side} vocabulary has {ours} pieces but the model "
                            f"{model}; the checkpoint is inconsistent")
    return tokenizer


def load_languages(ckpt: Path) -> dict[str, str] | None:
    """The checkpoint's language pair, {"source": "en", "target": "es"}, or None if unknown."""
    languages = _read_config(ckpt).get("languages")
    if languages is not None and not (isinstance(languages, dict)
                                      and {"source", "target"} <= set(languages)):
        raise UserError(f"{ckpt / CONFIG}: 'languages' must be {{\"source\": CODE, "
                        f"\"target\": CODE}}")
    return languages


def load_placeholders(ckpt: Path) -> bool:
    """Whether the model was trained on placeholder-protected data (``aiayn.placeholders``)."""
    return _read_config(ckpt).get("placeholders") is True


def load_config(ckpt: Path) -> ModelConfig:
    values = _read_config(ckpt)
    for key in ("arch", "languages", "labels", "placeholders"):
        values.pop(key, None)
    try:
        return ModelConfig.from_dict(values)
    except (ConfigError, TypeError) as err:
        raise UserError(f"{ckpt / CONFIG}: corrupt or invalid ({err})") from None


def load_weights(model: nn.Module, ckpt: Path) -> None:
    """Load ``model.safetensors`` into ``model``; a corrupt or mismatched file is a UserError."""
    verify(ckpt, [WEIGHTS])
    try:
        missing, unexpected = load_safetensors_model(model, str(ckpt / WEIGHTS), strict=False)
    except FileNotFoundError:
        raise UserError(f"{ckpt}: {WEIGHTS} is missing; the checkpoint is incomplete") from None
    except (SafetensorError, RuntimeError, OSError, ValueError) as err:
        msg = str(err).splitlines()[0]
        raise UserError(f"{ckpt / WEIGHTS}: corrupt or does not match the config ({msg})") from None
    if missing or unexpected:
        raise UserError(f"{ckpt / WEIGHTS}: does not match {CONFIG} "
                        f"(missing {sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]})")


def load_train_state(ckpt: Path) -> tuple[dict[str, torch.Tensor], dict]:
    verify(ckpt, [STATE_TENSORS, STATE_JSON])
    try:
        tensors = load_file(str(ckpt / STATE_TENSORS))
        state = json.loads((ckpt / STATE_JSON).read_text())
    except FileNotFoundError as err:
        raise UserError(f"{ckpt}: training state is missing ({Path(err.filename).name}); "
                        "it cannot be resumed") from None
    except (SafetensorError, json.JSONDecodeError, OSError) as err:
        raise UserError(f"{ckpt}: training state is corrupt ({err}); "
                        "resume from an earlier checkpoint") from None
    return tensors, state


def prune(run_dir: Path, keep_last: int, protect: set[str]) -> None:
    """Delete step checkpoints beyond the newest ``keep_last``, never the protected ones."""
    root = run_dir / "checkpoints"
    steps = sorted((p for p in root.glob("step_*") if p.is_dir()), key=lambda p: p.name)
    for old in steps[:-keep_last] if keep_last else steps:
        if old.name not in protect:  # renamed first: a half-deleted step is never listed
            gone = old.with_name(f".del-{old.name}")
            os.replace(old, gone)
            shutil.rmtree(gone)


def list_step_checkpoints(run_dir: Path) -> list[Path]:
    return sorted((p for p in (run_dir / "checkpoints").glob("step_*") if p.is_dir()),
                  key=lambda p: p.name)


def average_checkpoints(paths: list[Path], out: Path) -> Path:
    """Average the weights of ``paths`` (§6.1) into a new checkpoint directory ``out``."""
    if not paths:
        raise UserError("no checkpoints to average")
    cfg = load_config(paths[0])
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        if load_config(path) != cfg:
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
        find_tokenizer(paths[0]).save(tmp)
        write_checksums(tmp)
    return out
