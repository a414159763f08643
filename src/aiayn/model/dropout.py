"""Dropout (§5.4) with cheaper masks on CPU.

On CPU, ``torch.nn.functional.dropout`` draws one Bernoulli sample per element, a sizeable part
of a training step (docs/design.md, "Experiments behind the decisions"). Here the mask
comes from 16 random bits per element,
drawn as 64-bit words from torch's generator (so ``torch.manual_seed`` still governs it): the
keep test ``bits >= p * 2^16`` has the exact probability for any p that is a multiple of 2^-16
and is off by less than 2^-16 otherwise. The keep test writes the mask as 0 and 1 in the
input's own dtype when that is a 16-bit float: PyTorch multiplies bfloat16 by a bool tensor
through a slow mixed-type path (4.4 against 0.6 ms for 8M elements), by a bfloat16 one at
memory speed. On other devices PyTorch's fused dropout is used.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p)."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    return _MaskedScale.apply(x, _keep_mask(x, p), 1.0 / (1.0 - p))


def _keep_mask(x: Tensor, p: float) -> Tensor:
    """1 where an element of x is kept, 0 where it is dropped: x's dtype if 16-bit, else bool."""
    n = x.numel()
    words = torch.randint(-2 ** 63, 2 ** 63 - 1, ((n + 3) // 4,), dtype=torch.int64,
                          device=x.device)  # 4 x 16 random bits per word
    bits = words.view(torch.int16)[:n].view(x.shape)  # uniform over [-2^15, 2^15)
    dtype = x.dtype if x.is_floating_point() and x.element_size() == 2 else torch.bool
    return torch.ge(bits, round(p * 65536) - 32768, out=torch.empty_like(x, dtype=dtype))


class _MaskedScale(torch.autograd.Function):
    """x * mask * scale, and the same for the gradient (two passes, no mixed-type product)."""

    @staticmethod
    def forward(ctx, x: Tensor, mask: Tensor, scale: float) -> Tensor:
        ctx.save_for_backward(mask)
        ctx.scale = scale
        return (x * mask).mul_(scale)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (mask,) = ctx.saved_tensors
        return (grad * mask).mul_(ctx.scale), None, None


class Dropout(nn.Module):
    """``nn.Dropout`` with the cheaper CPU mask above."""

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout ({p}) must be in [0, 1)")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
