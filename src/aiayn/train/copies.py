"""bf16 training on a GPU through 16-bit copies of the weights, the float32 ones the masters.

Under autocast a GPU step casts every weight before its product, runs LayerNorm in float32
(autocast's rule on CUDA) and casts its output back before the next product: ~440 copy and
cast kernels of a `base` step's ~1,470, launched one by one from the host. Here the step's
forward and backward run on bf16 copies of the model's parameters and floating buffers,
swapped into the modules for the forward pass and made in one pass before the first
micro-batch; each micro-batch's gradients are added onto the float32 parameters' in one pass,
and the optimizer, the gradient clipping, the checkpoints and validation see the float32
model as before (the scheme of fairseq's and Megatron's mixed precision, float32 master
weights). Over several processes the float32 gradients live in one flat buffer, averaged over
the processes in one all-reduce after the step's last backward pass (DDP's hooks sit on the
parameters that autograd reaches, which here are the copies). Used for bf16 where the step is
not compiled (Inductor fuses autocast's casts into their neighbours); fp16 keeps autocast's
float32 residual stream, whose range fp16 lacks.
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.distributed as dist
from torch import Tensor, nn


class Weights16:
    """16-bit copies of ``model``'s floating parameters and buffers, refreshed by ``refresh``,
    run by ``__call__``, whose gradients ``gradients_to_masters`` adds to the parameters'."""

    def __init__(self, model: nn.Module, dtype: torch.dtype = torch.bfloat16,
                 run: nn.Module | None = None) -> None:
        self.model = model
        self.run = model if run is None else run  # (or ``model`` compiled)
        self.masters: list[Tensor] = [p for p in model.parameters() if p.is_floating_point()]
        self.copies = [torch.empty_like(p, dtype=dtype).requires_grad_(p.requires_grad)
                       for p in self.masters]
        copy_of = {id(p): c for p, c in zip(self.masters, self.copies)}
        for buffer in model.buffers():  # constant: cast once
            if buffer.is_floating_point():
                copy_of.setdefault(id(buffer), buffer.to(dtype))
        # every (module's table, name, own tensor, copy): a tensor that several modules share
        # (tied embeddings) has a slot in each
        self.slots: list[tuple[dict[str, Any], str, Tensor, Tensor]] = [
            (table, name, tensor, copy_of[id(tensor)])
            for module in model.modules()
            for table in (cast(dict[str, Any], module._parameters),
                          cast(dict[str, Any], module._buffers))
            for name, tensor in table.items() if id(tensor) in copy_of]
        # the masters' float32 gradients, views of one buffer (one all-reduce a step)
        self.flat = torch.zeros(sum(p.numel() for p in self.masters),
                                device=self.masters[0].device)
        self.grads = [view.view_as(p) for view, p in
                      zip(self.flat.split([p.numel() for p in self.masters]), self.masters)]

    def refresh(self) -> None:
        """Copy the float32 parameters onto their 16-bit copies, in one pass."""
        with torch.no_grad():
            torch._foreach_copy_(self.copies, self.masters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The model's forward on the 16-bit copies (the model's own tensors back after it)."""
        for table, name, _, copy in self.slots:
            table[name] = copy
        try:
            return self.run(*args, **kwargs)
        finally:
            for table, name, tensor, _ in self.slots:
                table[name] = tensor

    def gradients_to_masters(self) -> None:
        """Add the copies' gradients of one backward pass onto the parameters' in float32 (a
        parameter without a gradient gets the copy's), in one pass each way, and clear the
        copies'. A parameter the pass did not reach keeps what it had."""
        reached = [i for i, c in enumerate(self.copies) if c.grad is not None]
        added = [i for i in reached if self.masters[i].grad is not None]
        fresh = [i for i in reached if self.masters[i].grad is None]
        with torch.no_grad():
            if added:
                torch._foreach_add_([cast(Tensor, self.masters[i].grad) for i in added],
                                    [cast(Tensor, self.copies[i].grad) for i in added])
            if fresh:
                torch._foreach_copy_([self.grads[i] for i in fresh],
                                     [cast(Tensor, self.copies[i].grad) for i in fresh])
        for i in fresh:
            self.masters[i].grad = self.grads[i]
        for i in reached:
            self.copies[i].grad = None

    def average_over_processes(self, world: int) -> None:
        """Average the float32 gradients over the ``world`` processes of the group, in one
        all-reduce (every process reaches the same parameters: the same model and recipe)."""
        dist.all_reduce(self.flat)
        self.flat.div_(world)

    def zero_grad(self) -> None:
        """Clear the copies' gradients (a step abandoned halfway)."""
        for copy in self.copies:
            copy.grad = None
