"""One optimizer step: teacher-forced forward passes over the micro-batches, the loss, the
backward passes, and the update, skipped when the loss or a gradient is not finite; a batch
that does not fit in memory is retried in halves."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ..data.corpus import Batch
from ..errors import UserError
from ..model import EncoderModel, LanguageModel, Transformer
from ..runtime.hardware import choose_precision
from .copies import Weights16
from .recipe import TrainConfig, autocast_dtype, label_smoothed_nll
from .setup import Run, rank_and_world


def train_step(net: nn.Module, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler,
               micro: list[Batch], *, lr: float, cfg: TrainConfig, device: torch.device,
               copies: Weights16 | None = None) -> tuple[float, float, int, bool]:
    """One optimizer step over the micro-batches ``micro`` (gradient accumulation).

    With ``copies`` the forward and backward passes run on the model's 16-bit weight copies
    instead of under autocast, and each micro-batch's gradients go onto the float32 weights.

    The loss is summed over target tokens and divided by the step's token count across all
    ranks; DDP (or ``copies``) averages gradients over ranks, hence the factor ``world``. A
    step whose loss or gradient is not finite leaves the weights and the optimizer as they
    were. Returns this rank's summed smoothed loss, summed NLL, target tokens, and whether
    the step was finite.
    """
    _, world = rank_and_world()
    inner = _unwrap_compiled(net)
    ddp = inner if isinstance(inner, DistributedDataParallel) else None
    step_tokens = sum(b.target_tokens for b in micro)  # (counted on the host by `collate`)
    if world > 1:
        shared = torch.tensor(float(step_tokens), device=device)
        dist.all_reduce(shared)
        step_tokens = int(shared.item())
    norm = world / float(step_tokens)
    for group in optimizer.param_groups:
        group["lr"] = lr
    # the sums stay on the device, in float64 (as Python would sum the float32 losses), and
    # are read once, with the gradient norm: one wait for the device a step, not one a batch
    sums = torch.zeros(2, dtype=torch.float64, device=device)
    tokens = 0
    if copies is not None:
        copies.refresh()
    for i, batch in enumerate(micro):
        sync = ddp.no_sync() if ddp is not None and i < len(micro) - 1 else nullcontext()
        with sync:
            if cfg.aligner_only:  # the aligner's loss alone, the model run without gradients
                with autocast(device, cfg.precision):
                    weights, source = cast(Transformer, _plain(net)).align(batch.src,
                                                                           batch.tgt_in)
                assert batch.alignment is not None  # (setup requires the data's alignments)
                loss = nll = total = guided_loss(weights, source, batch)
            else:
                with autocast(device, cfg.precision) if copies is None else nullcontext():
                    logits, attention, source = forward_aligned(net, batch, copies)
                loss, nll = label_smoothed_nll(logits.flatten(0, 1), batch.tgt_out.flatten(),
                                               cfg.label_smoothing, batch.pad_id)
                total = loss
                if attention is not None and batch.alignment is not None:
                    total = loss + cfg.alignment_weight * guided_loss(attention, source, batch)
            scaler.scale(total * norm).backward()
        if copies is not None:
            copies.gradients_to_masters()
        sums += torch.stack([loss.detach(), nll.detach()]).double()
        tokens += batch.target_tokens
    if copies is not None and world > 1:
        copies.average_over_processes(world)
    scaler.unscale_(optimizer)  # (a no-op unless fp16 loss scaling is on)
    grads = [p.grad for group in optimizer.param_groups for p in group["params"]
             if p.grad is not None]
    if cfg.clip_norm:
        grad_norm = nn.utils.clip_grad_norm_(
            [p for group in optimizer.param_groups for p in group["params"]], cfg.clip_norm)
    else:
        grad_norm = nn.utils.get_total_norm(grads)
    loss_sum, nll_sum, norm_value = torch.cat([sums, grad_norm.double().reshape(1)]).tolist()
    finite = math.isfinite(norm_value) and math.isfinite(loss_sum)
    if finite or scaler.is_enabled():  # fp16: the scaler skips such a step and lowers its scale
        scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum, nll_sum, tokens, finite


def _plain(net: nn.Module) -> nn.Module:
    """The model itself, out of ``torch.compile``'s and DDP's wrappers."""
    module = _unwrap_compiled(net)
    return module.module if isinstance(module, DistributedDataParallel) else module


def forward(net: nn.Module, batch: Batch, call: Callable[..., Any] | None = None
            ) -> torch.Tensor:
    """Teacher-forced logits: the translation model reads the source, the LM the target alone.
    ``call`` runs the model in ``net``'s place (``Weights16``: on its 16-bit weight copies)."""
    module = _plain(net)
    run = net if call is None else call
    if isinstance(module, LanguageModel):
        return run(batch.tgt_in)
    if isinstance(module, EncoderModel):  # (B, 1, classes): one prediction per text
        return run(batch.src).logits[:, None, :]
    return run(batch.src, batch.tgt_in)


def forward_aligned(net: nn.Module, batch: Batch, call: Callable[..., Any] | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """``forward``'s logits, and when the batch carries alignment targets (guided alignment)
    the alignment head's (B, T, S) weights and the source aligner's (B, S, T) where the model
    has one; ``call`` as ``forward``'s."""
    with _shape_settings(net):
        if batch.alignment is None:
            return forward(net, batch, call), None, None
        run = net if call is None else call
        return run(batch.src, batch.tgt_in, return_alignment=True)


def _shape_settings(net: nn.Module):
    """The setting a compiled model runs (and compiles) under: batch shapes vary, and one
    graph serves them all without Dynamo's guess that a source and a target of the same
    length in the first batch always have the same length (which compiles a second graph)."""
    if _unwrap_compiled(net) is net:
        return nullcontext()
    from torch.fx.experimental import _config as shapes  # (private: a second graph without)
    if not hasattr(shapes, "use_duck_shape"):
        return nullcontext()
    return shapes.patch(use_duck_shape=False)  # type: ignore[attr-defined]


def _unwrap_compiled(net: nn.Module) -> nn.Module:
    """The module that ``torch.compile`` wrapped (``aiayn train --compile``), else ``net``."""
    return getattr(net, "_orig_mod", net)


def alignment_loss(attention: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Guided alignment's loss, summed over target tokens: the cross-entropy of the alignment
    head's weights against the word alignments' (rows spread evenly over the linked source
    pieces; unlinked rows add nothing), as Marian's ``--guided-alignment-cost ce``."""
    return -(target * attention.float().clamp_min(1e-9).log()).sum()


def guided_loss(attention: torch.Tensor, source: torch.Tensor | None, batch: Batch
                ) -> torch.Tensor:
    """``alignment_loss`` of the alignment head, plus the source aligner's (``source``, where
    the model has one) against the same links read from the source side."""
    assert batch.alignment is not None
    loss = alignment_loss(attention, batch.alignment)
    if source is None:
        return loss
    return loss + alignment_loss(source, source_alignment(batch.alignment, batch.src,
                                                          batch.pad_id))


def source_alignment(alignment: torch.Tensor, src: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The source aligner's targets (B, S, T) from the aligner's (B, T, S) (``shift``ed: row
    t + 1 holds target piece t's links): each source piece spread evenly over the target
    rows linked to it, and a piece with none (of a pair that has links) on row 0, the empty
    word; the EOS, padding and pairs without links add nothing."""
    linked = (alignment > 0).transpose(1, 2).float()  # (B, S, T)
    real = src != pad_id
    real[torch.arange(src.size(0)), real.sum(1) - 1] = False  # (each source's EOS)
    has_links = linked.flatten(1).any(1)
    linked[..., 0] += (real & has_links[:, None] & ~linked.any(2)).float()
    return linked.div_(linked.sum(2, keepdim=True).clamp_min(1.0))


def autocast(device: torch.device, precision: str):
    """The autocast context of a precision (none for float32)."""
    if precision == "auto":  # a config used outside `train` (evaluate_loss), not yet resolved
        precision = choose_precision(device).precision
    dtype = autocast_dtype(precision)
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else nullcontext()


def fitting_step(run: Run, micro: list[Batch], lr: float,
                  log) -> tuple[float, float, int, bool]:
    """``train_step``; a step whose batch does not fit in memory is run again as twice as
    many micro-batches of half the sentences (the same gradient), down to single sentences,
    before training stops with a line that says which flag to lower."""
    while True:
        try:
            return train_step(run.net, run.optimizer, run.scaler, micro, lr=lr, cfg=run.cfg,
                              device=run.device, copies=run.copies)
        except (torch.OutOfMemoryError, RuntimeError) as err:
            if not _out_of_memory(err):
                raise
            run.optimizer.zero_grad(set_to_none=True)
            if run.copies is not None:
                run.copies.zero_grad()
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
