"""Dropout (§5.4) with cheaper masks on CPU.

On CPU, ``torch.nn.functional.dropout`` draws one Bernoulli sample per element, a sizeable part
of a training step (docs/design.md, "Experiments behind the decisions"). Here the mask
comes from 16 random bits per element,
drawn as 64-bit words from torch's generator (so ``torch.manual_seed`` still governs it), a
large mask's words in two halves on two threads (``random_words``): the
keep test ``bits >= p * 2^16`` has the exact probability for any p that is a multiple of 2^-16
and is off by less than 2^-16 otherwise. The keep test writes the mask in the input's own
dtype: PyTorch multiplies a float by a bool tensor through a slow mixed-type path (4.4 against
0.6 ms for 8M bfloat16 elements, 6.3 against 2.9 ms for 8M float32), by one of its own dtype
at memory speed. In float32 the mask holds the kept elements' scale 1 / (1 - p) itself, so
that the input and the gradient are each one pass; 16-bit floats cannot hold that scale
exactly and scale apart. ``dropout_add`` is the residual connection's x + Dropout(y) in one
pass (``torch.addcmul``). On other devices PyTorch's fused dropout is used.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F
from torch import Tensor, nn

HALVES_FROM = 1 << 16  # words; below, a second thread's hand-off costs more than it saves
_HELPER: list[tuple[int, ThreadPoolExecutor]] = []  # (the process it serves, the thread)


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p)."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    return _MaskedScale.apply(x, *keep_mask(x, p))


def dropout_add(x: Tensor, y: Tensor, p: float, training: bool = True) -> Tensor:
    """x + Dropout(y), the residual connection's sum (§5.4), in one pass on the CPU."""
    if not training or p == 0.0:
        return x + y
    if y.device.type != "cpu":
        return x + F.dropout(y, p, True)
    return _MaskedAdd.apply(x, y, *keep_mask(y, p))


def keep_mask(x: Tensor, p: float) -> tuple[Tensor, float]:
    """A dropout mask for x (drawn as ``dropout`` draws it) in x's dtype, 0 where an element
    is dropped, and the scale still to apply: float32 masks hold 1 / (1 - p) where kept (the
    scale left is 1), 16-bit ones hold 1."""
    n = x.numel()
    words = random_words((n + 3) // 4)  # 4 x 16 random bits per word
    bits = words.view(torch.int16)[:n].view(x.shape)  # uniform over [-2^15, 2^15)
    mask = torch.ge(bits, round(p * 65536) - 32768, out=torch.empty_like(x))
    scale = 1.0 / (1.0 - p)
    if x.element_size() == 2:
        return mask, scale
    return mask.mul_(scale), 1.0


def random_words(n: int) -> Tensor:
    """n uniformly random int64 words (all 64 bits) on the CPU, from torch's generator.

    Its draws are sequential, one thread's work while the others wait (2% of a `base` step).
    From ``HALVES_FROM`` words on, the second half comes from a generator seeded by a draw of
    torch's and is filled on a second thread while the first half is: the words are the same
    whatever the thread count, so a run resumed with other threads draws the same masks."""
    words = torch.empty(n, dtype=torch.int64)
    if n < HALVES_FROM:
        return words.random_(-2 ** 63, None)
    seed = int(torch.randint(0, 2 ** 62, (1,)))
    first, second = words[:n // 2], words[n // 2:]

    def draw_second() -> None:
        second.random_(-2 ** 63, None, generator=torch.Generator().manual_seed(seed))

    drawn = _helper().submit(draw_second) if torch.get_num_threads() > 1 else None
    first.random_(-2 ** 63, None)
    if drawn is None:
        draw_second()
    else:
        drawn.result()
    return words


def _helper() -> ThreadPoolExecutor:
    """The one thread that draws second halves, made on first use, and again in a forked
    child (which has none of its parent's threads)."""
    if not _HELPER or _HELPER[0][0] != os.getpid():
        _HELPER[:] = [(os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="aiayn-dropout"))]
    return _HELPER[0][1]


class _MaskedScale(torch.autograd.Function):
    """x * mask * scale, and the same for the gradient (no mixed-type product)."""

    @staticmethod
    def forward(ctx, x: Tensor, mask: Tensor, scale: float) -> Tensor:
        ctx.save_for_backward(mask)
        ctx.scale = scale
        return _scaled(x * mask, scale)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (mask,) = ctx.saved_tensors
        return _scaled(grad * mask, ctx.scale), None, None


class _MaskedAdd(torch.autograd.Function):
    """x + y * mask * scale as one pass; the gradients are grad and grad * mask * scale."""

    @staticmethod
    def forward(ctx, x: Tensor, y: Tensor, mask: Tensor, scale: float) -> Tensor:
        ctx.save_for_backward(mask)
        ctx.scale = scale
        return torch.addcmul(x, y, mask, value=scale)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (mask,) = ctx.saved_tensors
        return grad, _scaled(grad * mask, ctx.scale), None, None


def _scaled(x: Tensor, scale: float) -> Tensor:
    """x (a fresh tensor) times scale, in place; no pass when the scale is 1."""
    return x if scale == 1.0 else x.mul_(scale)


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
