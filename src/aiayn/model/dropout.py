"""Dropout (§5.4) with cheaper masks on CPU.

On CPU, ``torch.nn.functional.dropout`` draws one Bernoulli sample per element, a sizeable part
of a training step (docs/benchmarks.md). Here the mask comes from 16 random bits per element,
drawn as 64-bit words from torch's generator (so ``torch.manual_seed`` still governs it): the
keep test ``bits >= p * 2^16`` has the exact probability for any p that is a multiple of 2^-16
and is off by less than 2^-16 otherwise. On other devices PyTorch's fused dropout is used.
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
    n = x.numel()
    words = torch.randint(-2 ** 63, 2 ** 63 - 1, ((n + 3) // 4,), dtype=torch.int64,
                          device=x.device)  # 4 x 16 random bits per word
    bits = words.view(torch.int16)[:n].view(x.shape)  # uniform over [-2^15, 2^15)
    keep = bits >= round(p * 65536) - 32768
    return x * keep * (1.0 / (1.0 - p))


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
