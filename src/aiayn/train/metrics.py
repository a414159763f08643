"""Training metrics: ``RUN/metrics.jsonl`` (and TensorBoard when installed), and the running
window of training losses that each logged line averages."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..config import ModelConfig
from ..errors import UserError


def training_flops(arch: str, cfg: ModelConfig, src: tuple[int, int],
                   tgt: tuple[int, int], *, aligner_only: bool = False) -> float:
    """The model FLOPs of one training step on a batch of (B, S) sources and (B, T) targets,
    counted from the model's shapes: each product of an (m, k) and a (k, n) matrix is 2mkn, a
    step is three forward passes' worth (the backward pass computes two products for each of
    the forward's), padded positions count (they are computed). Elementwise work (norms,
    softmax, dropout) is left out, as model FLOPs utilization counts it. ``aligner_only``:
    one forward pass without the output layer (``aiayn train --aligner-only``; the aligner's
    own products are left out too)."""
    d, f = cfg.d_model, cfg.d_ff
    (b, s), (_, t) = src, tgt
    projections = 2 * (4 * d * d + 2 * d * f)  # per position per layer: Q, K, V, O and the FFN
    forward = 0.0
    if arch in ("encoder-decoder", "encoder"):  # self-attention over S positions
        forward += cfg.n_encoder_layers * b * s * (projections + 2 * 2 * s * d)
    if arch == "encoder-decoder":  # masked self-attention, cross-attention and its K, V
        cross = 2 * 2 * d * d * t + 2 * 2 * d * d * s + 2 * 2 * t * s * d
        forward += cfg.n_decoder_layers * b * (t * (projections + 2 * 2 * t * d) + cross)
    if arch == "decoder-only":
        forward += cfg.n_decoder_layers * b * t * (projections + 2 * 2 * t * d)
    if aligner_only:
        return forward
    if arch != "encoder":  # the output layer over the target vocabulary
        forward += 2 * b * t * d * cfg.target_vocab_size
    return 3 * forward


class MetricsLog:
    """``RUN/metrics.jsonl``, one JSON object a line; TensorBoard too when it is installed."""

    def __init__(self, run_dir: Path, enabled: bool, *, tolerate_errors: bool = False,
                 log=print) -> None:
        self.path, self.enabled, self.tb = run_dir / "metrics.jsonl", enabled, None
        self.tolerate_errors, self.log, self.failing = tolerate_errors, log, False
        if enabled:
            try:
                from torch.utils.tensorboard import SummaryWriter
                self.tb = SummaryWriter(str(run_dir / "tensorboard"))
            except ImportError:
                pass

    def truncate_after(self, step: int) -> None:
        """On resume, drop lines logged after the checkpoint (they will be logged again), and
        a last line cut short by a killed process."""
        if not (self.enabled and self.path.exists()):
            return
        kept = [line for line in self.path.read_text(errors="replace").splitlines()
                if _record(line).get("step", step + 1) <= step]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, self.path)

    def write(self, record: dict) -> None:
        if not self.enabled:
            return
        try:
            with open(self.path, "a") as handle:
                handle.write(json.dumps(record) + "\n")
        except OSError as err:
            if not self.tolerate_errors:
                raise UserError(f"{self.path}: could not be written ({err.strerror or err}); "
                                "free some space and continue with --resume") from None
            if not self.failing:
                self.log(f"aiayn: warning: {self.path}: could not be written "
                         f"({err.strerror or err}); its lines are lost until it can be")
            self.failing = True
            return
        self.failing = False
        if self.tb is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)):
                    self.tb.add_scalar(key, value, record["step"])

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


@dataclass
class Window:
    """Summed losses and target tokens since the last logged line; its rates count the
    training steps' time, not the validations' and checkpoints' between them (``pause``)."""

    loss: float = 0.0
    nll: float = 0.0
    tokens: int = 0
    flops: float = 0.0  # model FLOPs of this process's steps (not carried over a resume)
    start: float = field(default_factory=time.monotonic)
    paused: float = 0.0  # seconds of the window spent on other work than the steps

    carried: int = 0  # tokens restored from a checkpoint: in the losses, not in the rate

    @classmethod
    def resumed(cls, sums: dict) -> "Window":
        """The window a checkpoint saved (``sums``), continued after a resume."""
        return cls(**sums, carried=sums.get("tokens", 0))

    def sums(self) -> dict:
        return {"loss": self.loss, "nll": self.nll, "tokens": self.tokens}

    def pause(self, seconds: float) -> None:
        """Leave ``seconds`` (a validation, a checkpoint) out of the window's rates."""
        self.paused += seconds

    def add(self, loss: float, nll: float, tokens: int, flops: float = 0.0) -> None:
        self.loss, self.nll, self.tokens = self.loss + loss, self.nll + nll, self.tokens + tokens
        self.flops += flops

    def record(self, step: int, epoch: int, lr: float, world: int,
               peak: float | None = None) -> dict:
        """Per-token losses and target tokens per second (over all ranks) of the window; with
        the device's ``peak`` (FLOP/s), the model FLOPs utilization of this process."""
        elapsed = max(time.monotonic() - self.start - self.paused, 1e-9)
        record = {"step": step, "epoch": epoch, "loss": self.loss / self.tokens,
                  "nll": self.nll / self.tokens, "lr": lr,
                  "tokens_per_s": (self.tokens - self.carried) * world / elapsed}
        if peak and self.flops:
            record["mfu"] = self.flops / elapsed / peak
        return record


def _record(line: str) -> dict:
    """A metrics line as a dict; {} for a line that is not one (cut short, say)."""
    try:
        record = json.loads(line)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def describe(record: dict) -> str:
    """A record as one line: ``step 500 valid_loss 3.21 ...``."""
    return " ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in record.items())
