"""The paper's training recipe (§5.3, §5.4): the run configuration, the loss and the schedule."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
import yaml
from torch import Tensor

from ..config import ConfigError, ModelConfig, check_keys

PRECISIONS = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class TrainConfig:
    """Every training setting; the defaults are the paper's recipe.

    Args:
        arch: "encoder-decoder" (translation) or "decoder-only" (a language model trained on the
            target side of the data).
        preset: model preset the ``model`` overrides apply to.
        model: ModelConfig overrides (vocabulary size and special ids come from the data).
        max_tokens: padded tokens per batch (per side); the paper used ~25,000 per step.
        grad_accum: batches accumulated into one optimizer step.
        lr_scale: factor on the §5.3 schedule lr = d_model^-0.5 min(step^-0.5, step warmup^-1.5).
        warmup: warmup steps (4000 in the paper).
        adam_betas, adam_eps: Adam's beta_1, beta_2 (0.9, 0.98) and epsilon (1e-9).
        label_smoothing: epsilon_ls (0.1, §5.4).
        clip_norm: gradient clipping by global norm; 0 disables.
        max_steps, max_epochs, max_minutes: stop at whichever comes first (0 = no limit).
        precision: fp32, bf16 (autocast, CPU or CUDA) or fp16 (autocast + loss scaling, CUDA).
        valid_every: validate (loss, perplexity, BLEU) and checkpoint every this many steps.
        valid_bleu_sentences: how many validation sentences greedy BLEU decodes (0 = none).
        keep_last: checkpoints kept besides ``best``.
        patience: stop after this many validations without a better valid_loss; 0 = never.
        log_every: steps between metrics lines.
        seed: seeds parameters, dropout and batch order.
        threads: torch CPU threads; 0 leaves torch's default.
        device: "auto", "cpu" or "cuda".
    """

    arch: str = "encoder-decoder"
    preset: str = "base"
    model: dict[str, Any] = dataclasses.field(default_factory=dict)
    max_tokens: int = 4096
    grad_accum: int = 1
    lr_scale: float = 1.0
    warmup: int = 4000
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    label_smoothing: float = 0.1
    clip_norm: float = 0.0
    max_steps: int = 0
    max_epochs: int = 0
    max_minutes: float = 0.0
    precision: str = "fp32"
    valid_every: int = 500
    valid_bleu_sentences: int = 200
    keep_last: int = 5
    patience: int = 0
    log_every: int = 10
    seed: int = 1
    threads: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        def fail(name: str, why: str) -> None:
            raise ConfigError(f"{name} ({getattr(self, name)!r}) {why}")

        for name in ("max_tokens", "grad_accum", "warmup", "valid_every", "log_every"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                fail(name, "must be a positive integer")
        for name in ("max_steps", "max_epochs", "keep_last", "patience", "threads",
                     "valid_bleu_sentences"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                fail(name, "must be a non-negative integer")
        if not 0.0 <= self.label_smoothing < 1.0:
            fail("label_smoothing", "must be in [0, 1)")
        if self.lr_scale <= 0:
            fail("lr_scale", "must be positive")
        if self.max_minutes < 0 or self.clip_norm < 0:
            fail("max_minutes" if self.max_minutes < 0 else "clip_norm", "must be >= 0")
        if self.precision not in PRECISIONS:
            fail("precision", f"must be one of {', '.join(PRECISIONS)}")
        if self.arch not in ("encoder-decoder", "decoder-only"):
            fail("arch", "must be encoder-decoder or decoder-only")
        if self.device not in ("auto", "cpu", "cuda"):
            fail("device", "must be auto, cpu or cuda")
        if len(self.adam_betas) != 2 or not all(0 <= b < 1 for b in self.adam_betas):
            fail("adam_betas", "must be two numbers in [0, 1)")
        object.__setattr__(self, "adam_betas", tuple(self.adam_betas))
        ModelConfig.preset(self.preset, **self.model)  # validates preset and overrides early

    def model_config(self, vocab_size: int) -> ModelConfig:
        return ModelConfig.preset(self.preset, **{**self.model, "vocab_size": vocab_size})

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "TrainConfig":
        check_keys(values, [f.name for f in fields(cls)], what="training config")
        return cls(**values)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "TrainConfig":
        try:
            values = yaml.safe_load(Path(path).read_text()) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML ({err})".replace("\n", " ")) from None
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: expected a mapping of settings, got {type(values).__name__}")
        return cls.from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        values["adam_betas"] = list(self.adam_betas)
        return values


def noam_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)  (§5.3, Eq. 3)."""
    step = max(step, 1)
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def label_smoothed_nll(logits: Tensor, target: Tensor, epsilon: float, pad_id: int
                       ) -> tuple[Tensor, Tensor]:
    """Summed label-smoothed cross-entropy and summed NLL over non-pad targets (§5.4).

    The smoothed target puts 1 - epsilon on the reference token and spreads epsilon uniformly
    over the whole vocabulary: loss = (1 - eps) * NLL + eps * mean_v(-log p_v).

    Args:
        logits: (N, V); target: (N,) with ``pad_id`` where there is no target.
    Returns:
        (smoothed loss sum, NLL sum), both scalars.
    """
    lprobs = logits.float().log_softmax(dim=-1)  # (N, V)
    keep = (target != pad_id).to(lprobs.dtype)  # (N,)
    nll = -lprobs.gather(-1, target[:, None]).squeeze(-1) * keep  # (N,)
    smooth = -lprobs.mean(dim=-1) * keep  # (N,)
    loss = (1.0 - epsilon) * nll + epsilon * smooth
    return loss.sum(), nll.sum()


def autocast_dtype(precision: str) -> torch.dtype | None:
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
