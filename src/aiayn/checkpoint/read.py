"""Reading checkpoints: a directory resolved and its ``config.json`` read once, into a
``Checkpoint`` that hands out the model, the tokenizer and the settings."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, overload

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from safetensors.torch import load_model as load_safetensors_model
from torch import nn

from ..config import ConfigError, ModelConfig
from ..data.tokenizer import AnyTokenizer, load_tokenizer
from ..errors import UserError
from ..integrity import recorded, verify
from ..model import ARCHS, build_model

M = TypeVar("M", bound=nn.Module)
WEIGHTS, CONFIG = "model.safetensors", "config.json"
AVERAGED = "averaged"  # RUN/checkpoints/averaged: the average a budgeted run ends with
STATE_TENSORS, STATE_JSON = "train_state.safetensors", "train_state.json"
# what config.json holds besides the ModelConfig's fields
EXTRA_KEYS = ("arch", "languages", "labels", "placeholders")


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
                    "checkpoints/last inside; give a checkpoint directory or a training run")


def list_checkpoints(run_dir: Path) -> list[str]:
    """The names of a run's checkpoints: step directories, best, last."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / WEIGHTS).is_file())


def list_step_checkpoints(run_dir: Path) -> list[Path]:
    return sorted((p for p in (run_dir / "checkpoints").glob("step_*") if p.is_dir()),
                  key=lambda p: p.name)


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint directory, its ``config.json`` read and checked once.

    Attributes:
        path: the checkpoint directory.
        arch: the kind of model ("encoder-decoder", "decoder-only" or "encoder").
        config: the ModelConfig.
        languages: {"source": "en", "target": "es"}, or None when unknown.
        labels: a classifier's labels in the order of its outputs; None for other models.
        placeholders: whether its data was prepared with placeholder protection.
    """

    path: Path
    arch: str
    config: ModelConfig
    languages: dict[str, str] | None = None
    labels: list[str] | None = None
    placeholders: bool = False

    @classmethod
    def open(cls, path: str | Path, which: str | int | None = None) -> "Checkpoint":
        """The checkpoint at ``path``: a checkpoint directory, or a run directory and
        ``which`` of its checkpoints (``resolve_checkpoint``)."""
        directory = resolve_checkpoint(path, which)
        values = _read_config(directory)
        arch = values.pop("arch", "encoder-decoder")
        if arch not in ARCHS:
            raise UserError(f"{directory / CONFIG}: unknown arch {arch!r}; expected one of "
                            f"{', '.join(ARCHS)}")
        languages, labels = values.pop("languages", None), values.pop("labels", None)
        if languages is not None and not (isinstance(languages, dict)
                                          and {"source", "target"} <= set(languages)):
            raise UserError(f"{directory / CONFIG}: 'languages' must be {{\"source\": CODE, "
                            f"\"target\": CODE}}")
        if labels is not None and not (isinstance(labels, list) and len(labels) >= 2):
            raise UserError(f"{directory / CONFIG}: 'labels' must be a list of at least two "
                            "labels")
        placeholders = values.pop("placeholders", False) is True
        try:
            config = ModelConfig.from_dict(values)
        except (ConfigError, TypeError) as err:
            raise UserError(f"{directory / CONFIG}: corrupt or invalid ({err})") from None
        return cls(directory, arch, config, languages, labels, placeholders)

    def require(self, arch: str, hint: str) -> "Checkpoint":
        """This checkpoint if it holds an ``arch`` model, else a UserError ending in ``hint``
        (what to do instead)."""
        if self.arch != arch:
            raise UserError(f"{self.path} holds {_article(self.arch)} {self.arch} model, not "
                            f"{arch}; {hint}")
        return self

    @overload
    def model(self) -> nn.Module: ...

    @overload
    def model(self, kind: type[M]) -> M: ...

    def model(self, kind: type[nn.Module] = nn.Module) -> nn.Module:
        """A new model of the checkpoint's kind and config, with its weights; ``kind``
        (``Transformer``, say) is the class the caller expects, checked."""
        model = build_model(self.arch, self.config,
                            num_classes=len(self.labels) if self.labels else None)
        if not isinstance(model, kind):
            raise UserError(f"{self.path} holds {_article(self.arch)} {self.arch} model, not "
                            f"a {kind.__name__}")
        self.load_weights(model)
        return model

    def load_weights(self, model: nn.Module, *, fresh: tuple[str, ...] = ()) -> None:
        """Load ``model.safetensors`` into ``model``; a corrupt or mismatched file is a
        UserError. Parameters whose names start with one of ``fresh`` may be missing: parts
        that the model adds to the checkpoint's (they keep their initial values)."""
        verify(self.path, [WEIGHTS])
        try:
            missing, unexpected = load_safetensors_model(model, str(self.path / WEIGHTS),
                                                         strict=False)
        except FileNotFoundError:
            raise UserError(f"{self.path}: {WEIGHTS} is missing; the checkpoint is "
                            "incomplete") from None
        except (SafetensorError, RuntimeError, OSError, ValueError) as err:
            lines = [line.strip() for line in str(err).splitlines() if line.strip()]
            # PyTorch heads its list of mismatches with a line that names none of them
            msg = next((line for line in lines if line.startswith("size mismatch")),
                       lines[0] if lines else type(err).__name__)
            raise UserError(f"{self.path / WEIGHTS}: corrupt or does not match the config "
                            f"({msg})") from None
        missing = [name for name in missing if not (fresh and name.startswith(fresh))]
        if missing or unexpected:
            raise UserError(f"{self.path / WEIGHTS}: does not match {CONFIG} (missing "
                            f"{sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]})")

    @functools.cached_property
    def tokenizer(self) -> AnyTokenizer:
        """The checkpoint's vocabulary (either form), checked against the config's sizes."""
        entries = recorded(self.path) or {}
        verify(self.path, [n for n in entries
                           if n not in (WEIGHTS, CONFIG, STATE_TENSORS, STATE_JSON)])
        tokenizer = load_tokenizer(self.path)
        for side, ours, model in (("source", tokenizer.vocab_size, self.config.vocab_size),
                                  ("target", tokenizer.target_vocab_size,
                                   self.config.target_vocab_size)):
            if ours > model:
                raise UserError(f"{self.path}: the {side} vocabulary has {ours} pieces but "
                                f"the model {model}; the checkpoint is inconsistent")
        return tokenizer

    def train_state(self) -> tuple[dict[str, torch.Tensor], dict]:
        """The optimizer's tensors and the training state written beside the weights."""
        verify(self.path, [STATE_TENSORS, STATE_JSON])
        try:
            tensors = load_file(str(self.path / STATE_TENSORS))
            state = json.loads((self.path / STATE_JSON).read_text())
        except FileNotFoundError as err:
            raise UserError(f"{self.path}: training state is missing "
                            f"({Path(err.filename).name}); it cannot be resumed") from None
        except (SafetensorError, json.JSONDecodeError, OSError) as err:
            raise UserError(f"{self.path}: training state is corrupt ({err}); "
                            "resume from an earlier checkpoint") from None
        return tensors, state


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _read_config(directory: Path) -> dict:
    verify(directory, [CONFIG])
    try:
        values = json.loads((directory / CONFIG).read_text())
    except FileNotFoundError:
        raise UserError(f"{directory}: {CONFIG} is missing; the checkpoint is "
                        "incomplete") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{directory / CONFIG}: corrupt or invalid ({err})") from None
    if not isinstance(values, dict):
        raise UserError(f"{directory / CONFIG}: corrupt or invalid (not a mapping)")
    return values
