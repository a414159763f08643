"""Linear layers at inference time, with few rows: matrix-vector products over every thread.

Decoding one token per sentence multiplies a handful of rows by each weight matrix. PyTorch's
CPU ``F.linear`` runs such a product on one thread (torch 2.13 with MKL: a 1 x 256 by 256 x 768
product takes the same time with 1 or 2 threads), so at batch 1 a decoder step is bound by one
core streaming the weights. Here the weight's output features are split into one block per
thread and multiplied as a batch (``torch.bmm``), which PyTorch runs in parallel over the
blocks: the same products (equal to ``F.linear`` up to float rounding), every core reading
its share of the matrix. On this project's 2-core machine (``benchmarks/linear_rows.py``):
1.2-2.7x faster for one row, 1.4-1.8x for four, 1.0-1.3x at 32 and 1.0-1.1x at 128 rows.
Anything else (training, many rows, quantized layers, other devices and dtypes) calls the
layer as usual.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

SPLIT_MAX_ROWS = 128  # above this, one large matrix product already uses every core


def linear(x: Tensor, layer: nn.Module, *, pack: bool = False) -> Tensor:
    """``layer(x)`` for x (..., in) -> (..., out); a float32 ``nn.Linear`` on CPU at inference
    with few rows runs as one block of output features per thread.

    ``pack`` keeps a transposed copy of the weight, laid out block by block (in, out / blocks
    each), for matrices so wide that reading the rows of the usual layout is slower than the
    copy costs: the tied output projection (the copy is rebuilt whenever the weight changes).
    """
    if (torch.is_grad_enabled() or type(layer) is not nn.Linear or not x.is_cpu
            or x.dtype is not torch.float32 or x.numel() > SPLIT_MAX_ROWS * x.shape[-1]):
        return layer(x)  # training, many rows, a quantized layer, another device or dtype
    threads = torch.get_num_threads()
    blocks = _blocks(layer, threads, pack) if threads > 1 else None
    if blocks is None:
        return layer(x)
    weight, bias = blocks
    t = weight.size(0)
    d_in, d_out = x.shape[-1], layer.out_features
    rows = x.reshape(1, -1, d_in).expand(t, -1, d_in)  # (t, M, in): every block, every row
    y = torch.bmm(rows, weight) if bias is None else torch.baddbmm(bias, rows, weight)
    return y.transpose(0, 1).reshape(x.shape[:-1] + (d_out,))  # (t, M, out / t) -> (..., out)


def _blocks(layer: nn.Linear, threads: int, pack: bool) -> tuple[Tensor, Tensor | None] | None:
    """The weight as t (in, out / t) blocks and the bias as t (1, out / t) rows, t the most
    blocks, at most ``threads``, that split the output features evenly; None when none does.
    Views of the parameters, or with ``pack`` a contiguous copy of the weight; kept on the
    layer until the weight is replaced, changes in place (for a copy: any in-place update
    bumps its version), or the thread count changes."""
    weight = layer.weight
    key = (weight.data_ptr(), weight.dtype, threads, weight._version if pack else None)
    cached = layer.__dict__.get("_aiayn_blocks")
    if cached is not None and cached[0] == key:
        return cached[1]
    d_out, d_in = weight.shape
    t = next((n for n in range(threads, 1, -1) if d_out % n == 0), 0)
    blocks = None
    if t and weight.dtype == torch.float32:
        w = weight.detach().view(t, d_out // t, d_in).transpose(1, 2)
        bias = None if layer.bias is None else layer.bias.detach().view(t, 1, d_out // t)
        blocks = (w.contiguous() if pack else w, bias)
    layer.__dict__["_aiayn_blocks"] = (key, blocks)
    return blocks
