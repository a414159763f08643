"""The paper's training recipe (§5.3, §5.4): the run configuration, the loss and the schedule."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
import yaml
from torch import Tensor

from ..config import PRESETS, ConfigError, ModelConfig, check_keys, finite_number

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
FP32_PRODUCTS = ("auto", "onednn", "pytorch")
SCHEDULES = ("auto", "paper", "budget")
DECAYS = ("cosine", "inverse-sqrt")


ARCHS = ("encoder-decoder", "decoder-only", "encoder")
TASKS = ("translate", "classify")
DEVICES = ("auto", "cpu", "cuda")


def setting(default: Any, help: str, *, unit: str | None = None, choices: tuple | None = None,
            flag: bool = True) -> Any:
    """A TrainConfig field with its help text, unit or choices, from which `aiayn train`'s flag
    is made; ``flag=False`` keeps a setting to the YAML config."""
    factory = {"default_factory": default} if callable(default) else {"default": default}
    return dataclasses.field(**factory, metadata={"help": help, "unit": unit, "choices": choices,
                                                  "flag": flag})


@dataclass(frozen=True)
class TrainConfig:
    """Every training setting; the defaults are the paper's recipe (§5.3, §5.4).

    Each field's help (``dataclasses.fields(TrainConfig)[i].metadata["help"]``) says what it
    does and its unit; `aiayn train` makes one flag of each.
    """

    arch: str = setting("encoder-decoder", "what to train: encoder-decoder (translation), "
                        "decoder-only (a language model on the target side) or encoder (a "
                        "classifier, with --task classify)", choices=ARCHS)
    task: str = setting("translate", "translate (sequences: encoder-decoder, decoder-only) or "
                        "classify (labels: --arch encoder on data prepared with --task "
                        "classify)", choices=TASKS)
    preset: str = setting("base", "model size that --model overrides apply to",
                          choices=tuple(PRESETS))
    model: dict[str, Any] = setting(dict, "ModelConfig overrides (vocabulary size and special "
                                    "ids come from the data)", flag=False)
    init: str = setting("", "start from this checkpoint's weights and model (an imported model "
                        "or aiayn's own) with a fresh optimizer and schedule; the data must be "
                        "prepared with its vocabulary (`aiayn prepare --tokenizer CKPT`)",
                        unit="CKPT")
    max_tokens: int = setting(4096, "padded tokens per batch, per side (the paper: ~25,000 "
                              "per step)", unit="TOKENS")
    grad_accum: int = setting(1, "batches accumulated into one optimizer step", unit="BATCHES")
    schedule: str = setting("auto", "learning-rate schedule: budget = fitted to the run's "
                            "budget (warmup 10% of its steps, a peak set by the model width, "
                            "cosine decay to 5% of it, the last checkpoints averaged); paper = "
                            "§5.3 with --warmup and --lr-scale; auto = budget when --max-steps, "
                            "--max-minutes or --max-epochs is given, else paper",
                            choices=SCHEDULES)
    decay: str = setting("cosine", "the fitted schedule's decay after its warmup: cosine to 5% "
                         "of the peak at the last step, or inverse-sqrt (the paper's shape, "
                         "peak x sqrt(warmup / step)); docs/quality.md compares them",
                         choices=DECAYS)
    lr_scale: float = setting(1.0, "factor on the learning rate of either schedule (the "
                              "paper's: d_model^-0.5 min(step^-0.5, step warmup^-1.5), §5.3)",
                              unit="FACTOR")
    warmup: int = setting(4000, "warmup steps of the paper's schedule (the paper: 4000)",
                          unit="STEPS")
    adam_betas: tuple[float, float] = setting((0.9, 0.98), "Adam's beta_1, beta_2", flag=False)
    adam_eps: float = setting(1e-9, "Adam's epsilon", flag=False)
    label_smoothing: float = setting(0.1, "label smoothing epsilon (the paper: 0.1)",
                                     unit="EPSILON")
    alignment_weight: float = setting(0.1, "weight of guided alignment's loss (the alignment "
                                      "head's cross-entropy against the data's word "
                                      "alignments, Marian's default) when the data holds them "
                                      "(`aiayn prepare --alignments`); 0 = not trained",
                                      unit="WEIGHT")
    aligner: bool = setting(False, "guided alignment trains a separate attention head (its "
                            "own projections, the row fed each target word aligning it) rather "
                            "than the last decoder layer's first head: better links for "
                            "--alignments and inline tags, but CTranslate2 and Marian exports "
                            "cannot carry it")
    aligner_only: bool = setting(False, "train the --init model's aligner alone (a new one "
                                 "where it has none): the model's own weights stay as they are "
                                 "(no dropout), so it translates as before and places inline "
                                 "tags and --alignments by the aligner's links")
    clip_norm: float = setting(0.0, "clip gradients to this global norm; 0 = no clipping",
                               unit="NORM")
    max_steps: int = setting(0, "stop after this many optimizer steps; 0 = no limit",
                             unit="STEPS")
    max_epochs: int = setting(0, "stop after this many passes over the data; 0 = no limit",
                              unit="EPOCHS")
    max_minutes: float = setting(0.0, "stop after this many minutes of training; 0 = no limit",
                                 unit="MINUTES")
    precision: str = setting("auto", "auto = chosen from the hardware and printed at start "
                             "(CUDA: bf16, or fp16 without bf16; CPU: bf16 only where it has "
                             "native bf16 and bf16 products measure faster, else fp32); fp32; "
                             "bf16 (autocast, CPU or CUDA); fp16 (autocast + loss scaling, "
                             "CUDA)", choices=PRECISIONS)
    fp32_products: str = setting("auto", "the library of float32 training's matrix products "
                                 "on the CPU: auto = oneDNN where its products measure 1.2x "
                                 "PyTorch's default (MKL) or faster at start (AMD CPUs with "
                                 "AVX-512), printed, and kept on resume; onednn; pytorch",
                                 choices=FP32_PRODUCTS)
    compile: bool = setting(False, "the model's training pass through torch.compile "
                            "(Inductor, dynamic shapes: compiled once, in the first steps, "
                            "2-3 minutes on a GPU); on an H100 1.07x (base) to 1.21x "
                            "(big) the eager step's speed; on the CPU no faster "
                            "(docs/benchmarks.md)")
    valid_every: int = setting(500, "validate (loss, perplexity, BLEU) and checkpoint every "
                               "this many steps", unit="STEPS")
    valid_bleu_sentences: int = setting(200, "validation sentences decoded (greedy) for BLEU; "
                                        "0 = no BLEU", unit="SENTENCES")
    keep_last: int = setting(5, "step checkpoints kept besides the best", unit="CHECKPOINTS")
    max_bad_steps: int = setting(5, "stop after this many steps in a row with a non-finite "
                                 "loss or gradient (each one is skipped)", unit="STEPS")
    patience: int = setting(0, "stop after this many validations without a lower validation "
                            "loss; 0 = never", unit="VALIDATIONS")
    log_every: int = setting(10, "steps between lines of RUN/metrics.jsonl", unit="STEPS")
    seed: int = setting(1, "seeds the parameters, dropout and batch order", unit="N")
    on_save_error: str = setting("stop", "when a checkpoint cannot be written (full disk, I/O "
                                 "error): stop, or continue training and write the next one",
                                 choices=("stop", "continue"))
    threads: int = setting(0, "torch CPU threads; 0 = one per core this process may use",
                           unit="THREADS")
    device: str = setting("auto", "where to train; auto = cuda when available", choices=DEVICES)

    def __post_init__(self) -> None:
        def fail(name: str, why: str) -> None:
            raise ConfigError(f"{name} ({getattr(self, name)!r}) {why}")

        for name in ("max_tokens", "grad_accum", "warmup", "valid_every", "log_every",
                     "max_bad_steps"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                fail(name, "must be a positive integer")
        for name in ("max_steps", "max_epochs", "keep_last", "patience", "threads",
                     "valid_bleu_sentences"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                fail(name, "must be a non-negative integer")
        for name in ("compile", "aligner", "aligner_only"):
            if not isinstance(getattr(self, name), bool):
                fail(name, "must be true or false")
        if self.aligner_only and not self.init:
            fail("aligner_only", "trains an aligner beside a finished model: name it with --init")
        if self.aligner_only and self.arch != "encoder-decoder":
            fail("aligner_only", "needs a translation model (--arch encoder-decoder)")
        if not isinstance(self.model, dict):
            fail("model", "must be a mapping of model settings (dropout: 0.1, ...)")
        for name in ("preset", "init"):
            if not isinstance(getattr(self, name), str):
                fail(name, "must be a string")
        for name in ("lr_scale", "adam_eps", "label_smoothing", "alignment_weight", "clip_norm",
                     "max_minutes"):
            if not finite_number(getattr(self, name)):
                fail(name, "must be a finite number")
        if self.adam_eps <= 0:
            fail("adam_eps", "must be positive")
        if not 0.0 <= self.label_smoothing < 1.0:
            fail("label_smoothing", "must be in [0, 1)")
        if self.lr_scale <= 0:
            fail("lr_scale", "must be positive")
        for name in ("max_minutes", "clip_norm", "alignment_weight"):
            if getattr(self, name) < 0:
                fail(name, "must be >= 0")
        for f in fields(self):
            choices = f.metadata["choices"]
            if choices and getattr(self, f.name) not in choices:
                fail(f.name, f"must be one of {', '.join(choices)}")
        if (not isinstance(self.adam_betas, (list, tuple)) or len(self.adam_betas) != 2
                or not all(finite_number(b) and 0 <= b < 1 for b in self.adam_betas)):
            fail("adam_betas", "must be two numbers in [0, 1)")
        object.__setattr__(self, "adam_betas", tuple(self.adam_betas))
        if (self.arch == "encoder") != (self.task == "classify"):
            raise ConfigError("--arch encoder goes with --task classify, and --task classify "
                              "with --arch encoder")
        if not self.init:
            ModelConfig.preset(self.preset, **self.model)  # validates preset and overrides early

    def model_config(self, vocab_size: int) -> ModelConfig:
        """The model to train: the preset with the overrides and the data's vocabulary size."""
        return ModelConfig.preset(self.preset, **{**self.model, "vocab_size": vocab_size})

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "TrainConfig":
        check_keys(values, [f.name for f in fields(cls)], what="training config")
        return cls(**values)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "TrainConfig":
        try:
            values = yaml.safe_load(Path(path).read_bytes().decode("utf-8")) or {}
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text; convert it to UTF-8") from None
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML ({err})".replace("\n", " ")) from None
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: expected a mapping of settings, got "
                              f"{type(values).__name__}")
        return cls.from_dict(values)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        values["adam_betas"] = list(self.adam_betas)
        return values


@dataclass(frozen=True)
class FittedSchedule:
    """A schedule made for a run of ``total`` steps: linear warmup over ``WARMUP_FRACTION`` of
    them (at least ``WARMUP_MIN`` steps, at most a quarter of the run) to ``peak``, then a
    ``decay``: "cosine" reaches ``floor`` at the last step; "inverse-sqrt" is the paper's shape
    (peak x sqrt(warmup / step), §5.3), never below ``floor``.

    The peak follows the width as the paper's does (d_model^-0.5) with the constant that a
    30-minute `small` run on this project's machine found best by hand (1.4e-3 at d_model 256;
    the paper's schedule peaks at 7.0e-4 for `base`, 9.9e-4 here)."""

    total: int
    warmup: int
    peak: float
    floor: float
    decay: str = "cosine"

    PEAK_PER_WIDTH = 0.022  # peak = PEAK_PER_WIDTH * d_model^-0.5 * scale
    WARMUP_FRACTION = 0.1
    # at least this many warmup steps (up to a quarter of the run): a post-norm model warmed
    # up over 48 steps of a 480-step run ended at 3.27 BLEU, over 100 at 7.72 (docs/quality.md)
    WARMUP_MIN = 100
    FLOOR_FRACTION = 0.05
    TAIL = (0.9, 0.95)  # fractions of the run after which a checkpoint is kept for averaging

    @classmethod
    def fit(cls, total: int, d_model: int, scale: float = 1.0,
            decay: str = "cosine") -> "FittedSchedule":
        if decay not in DECAYS:
            raise ValueError(f"decay ({decay!r}) must be one of {', '.join(DECAYS)}")
        total = max(1, int(total))
        peak = cls.PEAK_PER_WIDTH * d_model ** -0.5 * scale
        warmup = max(round(cls.WARMUP_FRACTION * total), min(cls.WARMUP_MIN, total // 4))
        return cls(total, max(1, warmup), peak,
                   peak * cls.FLOOR_FRACTION, decay)

    def lr(self, step: int) -> float:
        if step <= self.warmup:
            return self.peak * step / self.warmup
        if self.decay == "inverse-sqrt":
            return max(self.floor, self.peak * (self.warmup / step) ** 0.5)
        progress = min(1.0, (step - self.warmup) / max(1, self.total - self.warmup))
        return self.floor + (self.peak - self.floor) * 0.5 * (1 + math.cos(math.pi * progress))

    def describe(self) -> str:
        if self.decay == "inverse-sqrt":
            return (f"warmup {self.warmup:,} steps, peak {self.peak:.2g}, inverse-square-root "
                    f"decay to {self.lr(self.total):.2g} at ~{self.total:,} steps")
        return (f"warmup {self.warmup:,} steps, peak {self.peak:.2g}, cosine decay to "
                f"{self.floor:.2g} at ~{self.total:,} steps")


def noam_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)  (§5.3, Eq. 3)."""
    step = max(step, 1)
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


# vocabulary entries the loss handles at once. On the CPU the fastest block depends on the
# CPU: 2^17 (512 KiB in float32, a block and its softmax in the cores' L2 caches) on an Intel
# Xeon with AMX, where 2^20 was 1.3x slower; 2^19 on an AMD Zen 4, where 2^17 was 1.4x slower.
# So it is measured, once per process, among these (``cpu_loss_chunk``). On a GPU 256 MiB, one
# block or a few a step (at 1M entries a `base` step of 25,000 tokens launched ~190 blocks'
# kernels, on a host already behind the GPU)
LOSS_CHUNK = 1 << 17
LOSS_CHUNKS = tuple(LOSS_CHUNK << k for k in range(4))
LOSS_CHUNK_ACCELERATOR = 1 << 26
LOSS_MEASURE_ENTRIES = 1 << 23  # the logits the measurement runs the loss on (16 MiB in bf16)


def loss_rows(logits: Tensor) -> int:
    """Rows of ``logits`` the loss takes per block on their device."""
    n, vocab = logits.shape
    if logits.device.type != "cpu":
        chunk = LOSS_CHUNK_ACCELERATOR
    elif n * vocab <= LOSS_CHUNK:  # one block whichever is chosen: nothing to measure
        return n
    else:
        chunk = cpu_loss_chunk(vocab, logits.dtype)
    return max(1, chunk // vocab)


@functools.cache
def cpu_loss_chunk(vocab: int, dtype: torch.dtype) -> int:
    """The block of ``LOSS_CHUNKS`` (vocabulary entries) in which the loss's forward and
    backward passes over CPU logits of this width and dtype ran fastest in this process: the
    best of three rounds on ``LOSS_MEASURE_ENTRIES`` random logits (about 0.2 s on 2 cores,
    once per process and shape). The blocks change the time, not the values: each row's log-softmax
    and gradient are the same whatever rows share its block (tested)."""
    chunks = {max(1, chunk // vocab): chunk for chunk in reversed(LOSS_CHUNKS)}  # by rows
    if len(chunks) == 1:
        return LOSS_CHUNK
    best = {chunk: math.inf for chunk in chunks.values()}
    # (validation asks first under inference mode, whose tensors autograd cannot save)
    with torch.inference_mode(False), torch.enable_grad(), torch.autocast("cpu", enabled=False):
        generator = torch.Generator().manual_seed(0)  # (torch's own stream stays untouched)
        rows = max(1, LOSS_MEASURE_ENTRIES // vocab)
        logits = torch.randn(rows, vocab, generator=generator).to(dtype)
        target = torch.randint(0, vocab, (rows,), generator=generator)
        for _ in range(3):
            for block, chunk in chunks.items():
                x = logits.detach().requires_grad_()
                start = time.perf_counter()
                loss, _ = _SmoothedNLL.apply(x, target, 0.1, 0, block)
                loss.backward()
                best[chunk] = min(best[chunk], time.perf_counter() - start)
    return min(best, key=lambda chunk: (best[chunk], chunk))


def label_smoothed_nll(logits: Tensor, target: Tensor, epsilon: float, pad_id: int
                       ) -> tuple[Tensor, Tensor]:
    """Summed label-smoothed cross-entropy and summed NLL over non-pad targets (§5.4).

    The smoothed target puts 1 - epsilon on the reference token and spreads epsilon uniformly
    over the whole vocabulary: loss = (1 - eps) * NLL + eps * mean_v(-log p_v), with
    -log p_v = logsumexp(x) - x_v. Computed in float32, a block of rows at a time, with its
    own gradient (``_SmoothedNLL``), so that no (N, V) log-probability tensor is ever made.

    Args:
        logits: (N, V), any float dtype; target: (N,) with ``pad_id`` where there is no target.
    Returns:
        (smoothed loss sum, NLL sum), both float32 scalars.
    """
    return _SmoothedNLL.apply(logits, target, float(epsilon), pad_id, loss_rows(logits))


class _SmoothedNLL(torch.autograd.Function):
    """The label-smoothed loss with a hand-written gradient, a block of rows at a time.

    With p = softmax(x) and t the target, per kept row:
    d loss / dx = p - (1 - eps) onehot(t) - eps / V,  d NLL / dx = p - onehot(t).
    Forward takes each block's log-softmax in one fused pass (the NLL is its target entry,
    the smoothing term its mean) and keeps nothing of it; backward recomputes p block by
    block with the fused softmax and writes the gradient once, in the logits' dtype.
    Autograd's version of the same formula makes and walks several (N, V) float32 tensors
    (log-probabilities, the gather's zero-filled gradient, the mean's, the cast back), which
    cost more than the products of a small model's step in bfloat16; a logsumexp and
    separate passes over each block cost 1.3x the fused ones (docs/design.md, "Training").
    """

    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, epsilon: float, pad_id: int, rows: int):
        n = logits.size(0)
        keep = (target != pad_id).float()
        nll = torch.empty(n, dtype=torch.float32, device=logits.device)
        smooth = torch.empty(n, dtype=torch.float32, device=logits.device)
        for start in range(0, n, rows):
            end = min(start + rows, n)
            logp = torch.log_softmax(logits[start:end], -1, dtype=torch.float32)
            nll[start:end] = -logp.gather(1, target[start:end, None])[:, 0]
            smooth[start:end] = -logp.mean(-1)  # mean_v(-log p_v)
        nll.mul_(keep)
        smooth.mul_(keep)
        ctx.save_for_backward(logits, target, keep)
        ctx.epsilon, ctx.rows = epsilon, rows
        return ((1.0 - epsilon) * nll + epsilon * smooth).sum(), nll.sum()

    @staticmethod
    def backward(ctx, grad_loss: Tensor, grad_nll: Tensor):
        logits, target, keep = ctx.saved_tensors
        eps, (n, v), rows = ctx.epsilon, logits.shape, ctx.rows
        # per kept row: on_p * p - uniform - on_target * onehot(t); zero for padding rows
        on_p = (grad_loss + grad_nll) * keep[:, None]  # (n, 1)
        on_target = -(grad_loss * (1.0 - eps) + grad_nll) * keep[:, None]
        uniform = grad_loss * (eps / v) * keep[:, None]
        grad = torch.empty_like(logits)
        for start in range(0, n, rows):
            end = min(start + rows, n)
            p = torch.softmax(logits[start:end], -1, dtype=torch.float32)
            p.mul_(on_p[start:end])
            p.scatter_add_(1, target[start:end, None], on_target[start:end])
            torch.sub(p, uniform[start:end], out=grad[start:end])  # written in logits' dtype
        return grad, None, None, None, None


def autocast_dtype(precision: str) -> torch.dtype | None:
    """The autocast dtype of a resolved precision (not "auto")."""
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
