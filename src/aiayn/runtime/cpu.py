"""CPU helpers for inference and training, applied from outside the model.

The model files read as the paper; what makes decoding and training fast on a CPU lives here
and is swapped in by ``for_inference`` (decoding) and ``cpu_layers`` (training):

- ``CpuLinear``: a float32 linear layer whose products take the fastest path for their row
  count. One row (a decoding step of one sentence) is split into one block of output features
  per thread, as a batched product, so that every core reads its share of the weight
  (PyTorch's ``F.linear`` runs it on one thread). More rows go through oneDNN with the weight
  reordered once into its blocked layout: PyTorch's ``F.linear`` runs float32 products through
  MKL, which on AMD processors takes a slower path than oneDNN's. Where the machine measured
  oneDNN's float32 products faster (``hardware.onednn_float32``), float32 training's
  products go through oneDNN too, forward and backward (``onednn_training``).
- ``CpuAttention``: the attention of decoding steps (a few queries per head over many heads)
  and of 16-bit training through the reference computation, where PyTorch's fused kernel is
  slower on the CPU; short score rows padded away from the softmax's scalar path.
- ``Int8Linear``: int8 products (``--int8``), each row quantized with its own scale.
- ``CpuFeedForward``: the feed-forward network with oneDNN's product applying the ReLU, and
  float32 training's network as one autograd function with fewer passes.
- ``top_k``: ``torch.topk`` over a vocabulary through vectorized block maxima.
- ``reuse_freed_memory``: glibc's allocator settings that let each decoding step reuse the
  pages the previous one freed.

Why each one pays, with the measurements: docs/design.md ("Speed lives beside the model",
"Experiments behind the decisions").
"""

from __future__ import annotations

import copy
import ctypes
import ctypes.util
import functools
import math
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..model import (
    Attention,
    FeedForward,
    causal_mask,
    reference_attention,
    scaled_dot_product_attention,
    softmax_rows,
)
from ..model.dropout import dropout, keep_mask

M = TypeVar("M", bound=nn.Module)
SPLIT_MAX_ROWS = 128  # above this, one large matrix product already uses every core
ONEDNN_MIN_ROWS = 2  # from two rows on, oneDNN's product beats the split one
ONEDNN_ROWS_HINT = 32  # the row count oneDNN lays the weight out for (any count then works)
PACKED = ("output_proj",)  # layers whose block-wise transposed weight is worth a copy


def most_even_blocks(features: int, threads: int) -> int:
    """The most blocks, at most ``threads``, that split ``features`` evenly; 0 when none does."""
    return next((n for n in range(threads, 1, -1) if features % n == 0), 0)


@functools.cache
def _onednn_ops() -> bool:
    """Whether this PyTorch has the oneDNN linear operators (x86 and ARM builds do)."""
    ops = torch.ops.mkldnn
    try:
        return (torch.backends.mkldnn.is_available() and hasattr(ops, "_reorder_linear_weight")
                and hasattr(ops, "_linear_pointwise"))
    except (AttributeError, RuntimeError):
        return False


def onednn_available() -> bool:
    """oneDNN products can run: the operators exist and ``torch.backends.mkldnn`` is enabled."""
    return bool(torch.backends.mkldnn.enabled) and _onednn_ops()


def onednn_bf16_available() -> bool:
    """oneDNN's bf16 products can run: oneDNN is there and has bf16 kernels for this CPU
    (AVX512_BF16, AMX, AVX-NE-CONVERT or the AVX-512 subsets that emulate it; not AVX2
    alone), PyTorch's own check, which also honours a cap set by ``ONEDNN_MAX_CPU_ISA``."""
    return onednn_available() and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def onednn_reorder(weight: Tensor, rows_hint: int = ONEDNN_ROWS_HINT) -> Tensor:
    """A linear layer's (out, in) weight in oneDNN's blocked layout, for ``onednn_linear``."""
    return torch.ops.mkldnn._reorder_linear_weight(weight, rows_hint)


def onednn_linear(x: Tensor, reordered: Tensor, bias: Tensor | None,
                  activation: str = "none") -> Tensor:
    """``F.linear(x, weight, bias)`` by oneDNN, with ``reordered = onednn_reorder(weight)``
    or the weight itself (any strides); ``activation`` "relu" applies max(0, .) as the
    product writes its output."""
    return torch.ops.mkldnn._linear_pointwise(x, reordered, bias, activation, [], "")


def onednn_weight_gradient(grad: Tensor, x: Tensor) -> Tensor:
    """grad^T x, a linear layer's weight gradient (out, in) from its output's gradient
    (N, out) and its input (N, in), by oneDNN. The wider of the two takes the weight's place
    in oneDNN's product (the result then transposed as a view): the other way round ran at
    0.53-0.55x the speed at three shapes of unequal widths (docs/design.md)."""
    if x.size(1) >= grad.size(1):
        return onednn_linear(grad.t(), x.t(), None)  # (out, in)
    return onednn_linear(x.t(), grad.t(), None).t()  # (in, out) transposed


def _row_sums(g: Tensor) -> Tensor:
    """The sum of g's (N, F) rows: a matrix-vector product, which uses every thread where a
    column sum ran at half that speed."""
    return torch.mv(g.t(), g.new_ones(g.size(0)))


class _OnednnLinear(torch.autograd.Function):
    """``F.linear`` for float32 training with oneDNN's products forward and backward, on a
    CPU where they measured faster than PyTorch's (MKL's: half oneDNN's rate or less with
    AVX-512 on AMD Zen 5). Results equal ``F.linear``'s to float32 rounding."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        ctx.save_for_backward(x, weight)
        ctx.biased = bias is not None
        return onednn_linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        g = grad.reshape(-1, grad.size(-1))  # (N, out)
        grad_x = (onednn_linear(g, weight.t(), None).view(*grad.shape[:-1], weight.size(1))
                  if needs[0] else None)
        grad_w = onednn_weight_gradient(g, x.reshape(-1, x.size(-1))) if needs[1] else None
        grad_b = _row_sums(g) if ctx.biased and needs[2] else None
        return grad_x, grad_w, grad_b


class _Linear16(torch.autograd.Function):
    """``F.linear`` for bf16 training under the CPU's autocast, computed as autocast computes
    it (the operands cast to bf16, each gradient returned in its operand's dtype), with
    oneDNN's product adding the bias as it writes its output (``addmm`` copies the bias into
    its output before the product) and, with ``relu``, applying max(0, .) there too, whose
    gradient is then one pass over the saved output. Results equal autocast's
    (docs/design.md, "Training")."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None, relu: bool) -> Tensor:
        x16, weight16 = x.to(torch.bfloat16), weight.to(torch.bfloat16)
        bias16 = None if bias is None else bias.to(torch.bfloat16)
        out = onednn_linear(x16, weight16, bias16, "relu" if relu else "none")
        ctx.save_for_backward(x16, weight16, out if relu else None)
        ctx.dtypes = (x.dtype, weight.dtype, None if bias is None else bias.dtype)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        x16, weight16, relu_out = ctx.saved_tensors
        needs = ctx.needs_input_grad
        x_dtype, weight_dtype, bias_dtype = ctx.dtypes
        g = grad.to(torch.bfloat16)
        if relu_out is not None:  # zero where the ReLU's output was
            g = torch.ops.aten.threshold_backward(g, relu_out, 0)
        g = g.reshape(-1, g.size(-1))  # (N, out)
        grad_x = grad_w = grad_b = None
        if needs[0]:
            grad_x = g.mm(weight16).view(*grad.shape[:-1], weight16.size(1)).to(x_dtype)
        if needs[1]:
            grad_w = g.t().mm(x16.reshape(-1, x16.size(-1))).to(weight_dtype)
        if bias_dtype is not None and needs[2]:
            grad_b = g.sum(0).to(bias_dtype)  # (in bf16 a column sum beats torch.mv)
        return grad_x, grad_w, grad_b, None


class CpuLinear(nn.Module):
    """``nn.Linear`` whose float32 inference products on the CPU take the fastest path.

    - one row: split into one block of output features per thread (``torch.bmm``);
    - two rows or more: oneDNN's product over a copy of the weight in oneDNN's layout;
    - without oneDNN, up to ``SPLIT_MAX_ROWS`` rows split, more rows ``F.linear``.

    It shares the wrapped layer's parameters (so tied weights stay tied); the copies it makes
    are rebuilt whenever the weight is replaced or changed in place. With ``pack`` the split
    blocks are a transposed copy of the weight, laid out block by block, for matrices so wide
    that reading rows of the usual layout is slower than the copy (the output projection).

    With gradients enabled, float32 products go through oneDNN forward and backward where
    ``onednn_training`` is set (``cpu_linears(..., onednn_training=True)``, which training
    does where ``hardware.onednn_float32`` measured them faster); such a layer keeps no copy
    of its weight, whose values the optimizer changes in place, and ``for_inference`` turns
    the flag off in its copy. Where ``bf16_training`` is set (``cpu_linears(...,
    bf16_training=True)``, bf16 training on the CPU), products with gradients under bf16
    autocast go through ``_Linear16``, and the layer likewise keeps no weight copy (its other
    products are ``F.linear``'s). Anything else (another device or dtype, autocast, a
    compiled step) is ``F.linear``; results equal ``F.linear``'s to float32 rounding.

    Attributes:
        weight_blocks: (t, in, out / t) views of the weight (a copy with ``pack``), or None
            before the first split product or when no even split exists.
        bias_blocks: (t, 1, out / t) views of the bias, or None.
        key: what the blocks were made from: (weight data pointer, dtype, thread count,
            weight version with ``pack``).
        reordered: the weight in oneDNN's layout, or None before the first oneDNN product.
        reordered_key: what it was made from: (weight data pointer, weight version).
    """

    def __init__(self, layer: nn.Linear, *, pack: bool = False,
                 onednn_training: bool = False, bf16_training: bool = False) -> None:
        super().__init__()
        self.in_features, self.out_features = layer.in_features, layer.out_features
        self.weight, self.bias = layer.weight, layer.bias  # (out, in), (out,) shared
        self.pack = pack
        self.onednn_training = onednn_training
        self.bf16_training = bf16_training
        self.weight_blocks: Tensor | None = None
        self.bias_blocks: Tensor | None = None
        self.key: tuple | None = None
        self.reordered: Tensor | None = None
        self.reordered_key: tuple | None = None
        self.onednn_name = ""  # its name in a compiled step of many rows (aiayn.runtime.compiled)

    @property
    def blocks(self) -> int:
        """The number of blocks products are split into (0: none yet, or none possible)."""
        return 0 if self.weight_blocks is None else self.weight_blocks.size(0)

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in) -> (..., out)."""
        path = self._path(x)
        if path == "traced":
            return self.traced_product(x)
        if path == "onednn":
            return self.onednn_product(x)
        if path == "split":
            return self.split_product(x)
        if path == "training":
            return cast(Tensor, _OnednnLinear.apply(x, self.weight, self.bias))
        if path == "bf16":
            return cast(Tensor, _Linear16.apply(x, self.weight, self.bias, False))
        return F.linear(x, self.weight, self.bias)

    def relu_product(self, x: Tensor) -> Tensor:
        """max(0, x W^T + b): where oneDNN's product serves (two rows or more) the ReLU is
        applied as the product writes its output, saving a pass over it."""
        if self._path(x) == "onednn":
            return onednn_linear(x, self._reorder(self.weight), self.bias, "relu")
        return F.relu(self(x))

    def _path(self, x: Tensor) -> str:
        """Which product serves x: "training" (oneDNN's, with gradients), "bf16" (oneDNN's
        under bf16 autocast, with gradients), "traced" (compiled by ``aiayn.runtime.compiled``),
        "onednn", "split" or "plain" (``F.linear``)."""
        weight = self.weight
        if torch.is_grad_enabled():
            if self.onednn_products(x):
                return "training"
            return "bf16" if self.bf16_products(x) else "plain"
        if torch.compiler.is_compiling():
            return "traced"
        if self.bf16_training:  # a bf16 training model's (validation): no weight copies
            return "plain"
        if (not x.is_cpu or x.dtype is not torch.float32
                or weight.dtype is not torch.float32 or x.numel() == 0):
            return "plain"
        if self.onednn_training:  # a training model's (validation): its weights change in
            # place at every step, unseen by their version counter under fused Adam, so no
            # copy of them is kept
            return "training" if onednn_available() else "plain"
        rows = x.numel() // self.in_features
        if rows >= ONEDNN_MIN_ROWS and onednn_available():
            return "onednn"
        if rows > SPLIT_MAX_ROWS or self._split(weight) is None:
            return "plain"
        return "split"

    def onednn_products(self, x: Tensor) -> bool:
        """Whether x's product with gradients goes through oneDNN (``onednn_training``, float32
        on the CPU, not autocast or compiled, oneDNN there)."""
        return (self.onednn_training and x.is_cpu and x.dtype is torch.float32
                and self.weight.dtype is torch.float32 and x.numel() > 0
                and not torch.is_autocast_enabled("cpu") and not torch.compiler.is_compiling()
                and onednn_available())

    def bf16_products(self, x: Tensor) -> bool:
        """Whether x's product with gradients goes through ``_Linear16`` (``bf16_training``,
        on the CPU under bf16 autocast, not compiled, oneDNN's bf16 kernels there: without them,
        as with AVX2 alone, autocast's own products)."""
        return (self.bf16_training and x.is_cpu and x.numel() > 0
                and torch.is_autocast_enabled("cpu")
                and torch.get_autocast_dtype("cpu") == torch.bfloat16
                and not torch.compiler.is_compiling() and onednn_bf16_available())

    def onednn_product(self, x: Tensor) -> Tensor:
        """oneDNN's product with the reordered weight (float32 CPU inference, oneDNN there)."""
        return onednn_linear(x, self._reorder(self.weight), self.bias)

    def onednn_weight(self) -> Tensor:
        """The weight in oneDNN's layout, the copy ``onednn_product`` uses (made again when the
        weight or its values changed)."""
        return self._reorder(self.weight)

    def split_product(self, x: Tensor) -> Tensor:
        """One block of output features per thread, as a batched product (float32 CPU
        inference, once ``_split`` has made the blocks)."""
        blocks, d_in = self.weight_blocks, self.in_features
        assert blocks is not None, "split_product before _split made the blocks"
        t = blocks.size(0)
        every = x.reshape(1, -1, d_in).expand(t, -1, d_in)  # (t, M, in): every block, every row
        if self.bias_blocks is None:
            y = torch.bmm(every, blocks)  # (t, M, out / t)
        else:
            y = torch.baddbmm(self.bias_blocks, every, blocks)
        return y.transpose(0, 1).reshape(x.shape[:-1] + (self.out_features,))  # (..., out)

    def traced_product(self, x: Tensor) -> Tensor:
        """The product written for Inductor (``torch.compile``) at a few rows: the dot product of
        each row of x with every row of the weight, which Inductor makes one vectorized loop
        over the weight's contiguous rows, split among the threads and fused with what comes
        before and after it. At one row it is faster than the split product or any matrix
        product the compiled step can call (docs/design.md); eagerly it would materialize
        a (rows, out, in) tensor."""
        y = (x.unsqueeze(-2) * self.weight).sum(-1)  # (..., out)
        return y if self.bias is None else y + self.bias

    def __getstate__(self) -> dict[str, Any]:
        """Its state without the copies made from the weight (remade when first needed): a
        copy of the model gets its own, and oneDNN's layout cannot be copied."""
        state = dict(super().__getstate__())
        state.update(weight_blocks=None, bias_blocks=None, key=None, reordered=None,
                     reordered_key=None)
        return state

    def _reorder(self, weight: Tensor) -> Tensor:
        """The weight in oneDNN's layout, made again when the weight or its values changed."""
        key = (weight.data_ptr(), weight._version)
        if key != self.reordered_key:
            self.reordered = onednn_reorder(weight.detach())
            self.reordered_key = key
        assert self.reordered is not None
        return self.reordered

    def _split(self, weight: Tensor) -> Tensor | None:
        """The weight blocks, made again when the weight, its dtype (or, packed, its values)
        or the thread count changed; None when there is no even split in two or more."""
        threads = torch.get_num_threads()
        key = (weight.data_ptr(), weight.dtype, threads, weight._version if self.pack else None)
        if key != self.key:
            d_out, d_in = weight.shape
            t = most_even_blocks(d_out, threads) if weight.dtype == torch.float32 else 0
            if t:
                blocks = weight.detach().view(t, d_out // t, d_in).transpose(1, 2)
                self.weight_blocks = blocks.contiguous() if self.pack else blocks
                self.bias_blocks = (None if self.bias is None
                                    else self.bias.detach().view(t, 1, d_out // t))
            else:
                self.weight_blocks = self.bias_blocks = None
            self.key = key
        return self.weight_blocks

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, pack={self.pack}"
                + (", onednn_training=True" if self.onednn_training else ""))


# A decoding step on the CPU attends with a few queries per head (one position, or a
# sentence's beams together); there the fused kernel's per-block setup costs more than the
# three small products of the reference computation once enough heads are in the batch.
FEW_QUERIES = 8  # at most this many queries per head
MANY_QUERY_ROWS = 128  # and at least this many (batch x heads x queries)
# PyTorch's CPU softmax over fewer entries than one vector register holds (16 float32 with
# AVX-512) takes a scalar path: 68 us over 512 rows of 15 keys against 7 us at 16 keys. From
# SHORT_ROWS_MIN scores on, such rows are padded with -inf to SHORT_ROW entries (measured:
# docs/design.md); the padding gets weight 0 and is cut off again.
SHORT_ROW = 16
SHORT_ROWS_MIN = 2048


def padded_softmax(scores: Tensor) -> Tensor:
    """``model.softmax_rows``, with rows shorter than ``SHORT_ROW`` padded (enough of them)."""
    s = scores.size(-1)
    if scores.element_size() == 4 and s < SHORT_ROW and scores.numel() >= SHORT_ROWS_MIN:
        padded = F.pad(scores, (0, SHORT_ROW - s), value=float("-inf"))
        return padded.softmax(dim=-1)[..., :s]
    return softmax_rows(scores)


class CpuAttention(nn.Module):
    """``model.Attention`` for the CPU: the same results, by the fastest computation for the case.

    Instead of PyTorch's fused kernel: for bf16 and fp16 inputs (the fused kernel is about
    3.5x slower forward and backward there) the reference computation (three products),
    written as one autograd function in training (``_Attention16``); and for decoding
    steps, inference with at most ``FEW_QUERIES`` queries per head and at least
    ``MANY_QUERY_ROWS`` query rows in all (2 to 3x slower fused for a beam's
    cross-attention over 26 source positions); there short score rows are padded for the
    softmax (``padded_softmax``). Measurements: docs/design.md."""

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                *, is_causal: bool = False, dropout_p: float = 0.0,
                return_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        low_precision = query.dtype in (torch.bfloat16, torch.float16)
        few_queries = (dropout_p == 0.0 and not torch.is_grad_enabled()
                       and query.size(-2) <= FEW_QUERIES
                       and query.numel() >= MANY_QUERY_ROWS * query.size(-1))
        if query.device.type != "cpu" or not (low_precision or few_queries or return_weights):
            return scaled_dot_product_attention(query, key, value, mask, is_causal=is_causal,
                                                dropout_p=dropout_p,
                                                return_weights=return_weights)
        if (low_precision and dropout_p == 0.0 and not return_weights
                and torch.is_grad_enabled()):
            return cast(Tensor, _Attention16.apply(query, key, value, mask, is_causal)), None
        out, weights = reference_attention(query, key, value, mask, is_causal=is_causal,
                                           dropout_p=dropout_p, softmax=padded_softmax)
        return out, weights if return_weights else None


# 16-bit score rows from this length on take PyTorch's 16-bit softmax backward, which is
# vectorized along the row; shorter rows fall to a slow loop there (over 32,768 rows: 2.1 ms
# at 16-31 keys, 0.2-1.2 ms at 32-200) and take plain float32 passes instead (0.7-1.3 ms)
SOFTMAX16_ROW = 32


class _Attention16(torch.autograd.Function):
    """Eq. 1 for 16-bit training on the CPU, with fewer passes than autograd's way through
    ``reference_attention``: the heads are copied out of the projection's layout once (the
    products' transposed operands read in place), the scale rides on the products (alpha),
    the mask is written into the scores in place, and backward needs no mask (the masked
    weights are 0) and, for rows of ``SOFTMAX16_ROW`` keys or more, no float32 copies. The
    probabilities are kept for backward. Results equal the reference computation's to 16-bit
    rounding (docs/design.md). Arguments as ``scaled_dot_product_attention``'s."""

    @staticmethod
    def forward(ctx, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
                is_causal: bool) -> Tensor:
        b, h, t, dh = query.shape
        scale = 1.0 / math.sqrt(dh)
        q, k, v = (x.reshape(b * h, -1, dh) for x in (query, key, value))  # (B * H, T or S, Dh)
        unread = q.new_empty(())  # (baddbmm's input, with beta 0)
        scores = torch.baddbmm(unread, q, k.transpose(1, 2), beta=0.0, alpha=scale)  # (B*H, T, S)
        if is_causal:
            mask = causal_mask(t)  # (1, 1, T, T)
        if mask is not None:
            scores.view(b, h, t, -1).masked_fill_(~mask, float("-inf"))  # (B, H, T, S)
        weights = softmax_rows(scores)  # in float32: PyTorch's 16-bit one is slow at many lengths
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return torch.bmm(weights, v).view(b, h, t, dh)  # (B, H, T, Dh)

    @staticmethod
    def backward(ctx, grad: Tensor):
        q, k, v, weights = ctx.saved_tensors
        b, h, t, dh = grad.shape
        g = grad.reshape(b * h, t, dh)  # (B * H, T, Dh)
        grad_v = torch.bmm(weights.transpose(1, 2), g)  # (B * H, S, Dh)
        grad_weights = torch.bmm(g, v.transpose(1, 2))  # (B * H, T, S)
        if weights.size(-1) >= SOFTMAX16_ROW:
            grad_scores = torch._softmax_backward_data(grad_weights, weights, -1, weights.dtype)
        else:  # p * (dp - sum(p * dp)), row by row, in float32
            products = grad_weights.float().mul_(weights)
            grad_scores = products.sub_(weights * products.sum(-1, keepdim=True)).to(q.dtype)
        unread = q.new_empty(())
        grad_q = torch.baddbmm(unread, grad_scores, k, beta=0.0, alpha=ctx.scale)  # (B*H, T, Dh)
        grad_k = torch.baddbmm(unread, grad_scores.transpose(1, 2), q, beta=0.0,
                               alpha=ctx.scale)  # (B * H, S, Dh)
        return (grad_q.view(b, h, t, dh), grad_k.view(b, h, -1, dh), grad_v.view(b, h, -1, dh),
                None, None)


class CpuFeedForward(nn.Module):
    """``model.FeedForward`` for the CPU, around the same layers. With the paper's ReLU:
    float32 training runs the network as one autograd function (``_ReluFeedForward``), bf16
    training with ``CpuLinear`` layers has the first product apply the ReLU (``_Linear16``), and
    inference with a ``CpuLinear`` first layer has oneDNN's product apply the ReLU as it writes
    its output (``CpuLinear.relu_product``) instead of a pass of its own. Anything else is
    ``FeedForward.forward`` itself, over the same attributes."""

    def __init__(self, ffn: FeedForward) -> None:
        super().__init__()
        self.linear1, self.linear2 = ffn.linear1, ffn.linear2
        self.activation, self.dropout = ffn.activation, ffn.dropout
        self.train(ffn.training)

    def forward(self, x: Tensor) -> Tensor:
        if torch.is_grad_enabled():
            first = self.linear1
            if (self.activation is None and isinstance(first, CpuLinear)
                    and first.bf16_products(x)):  # the ReLU applied by the first product
                hidden = cast(Tensor, _Linear16.apply(x, first.weight, first.bias, True))
                return self.linear2(dropout(hidden, self.dropout, self.training))
            if self._fused_training(x):
                onednn = all(isinstance(m, CpuLinear) and m.onednn_products(x)
                             for m in (self.linear1, self.linear2))
                return cast(Tensor, _ReluFeedForward.apply(
                    x, self.linear1.weight, self.linear1.bias, self.linear2.weight,
                    self.linear2.bias, self.dropout if self.training else 0.0, onednn))
        elif self.activation is None and isinstance(self.linear1, (CpuLinear, Int8Linear)):
            return self.linear2(dropout(self.linear1.relu_product(x), self.dropout,
                                        self.training))
        return FeedForward.forward(self, x)  # type: ignore[arg-type]

    def _fused_training(self, x: Tensor) -> bool:
        """Whether ``_ReluFeedForward`` computes this step: the ReLU, plain float32 linear
        layers with biases, no autocast (16-bit training keeps autograd's way)."""
        layers = (self.linear1, self.linear2)
        return (self.activation is None and x.device.type == "cpu" and _ADD_RELU
                and x.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")
                and all(type(m) in (nn.Linear, CpuLinear) and m.bias is not None
                        and m.weight.dtype == torch.float32 for m in layers))


class _ReluFeedForward(torch.autograd.Function):
    """Dropout(ReLU(x W_1^T + b_1)) W_2^T + b_2 for float32 training on the CPU, with fewer
    passes over the (tokens x d_ff) hidden layer than autograd's way:

    - forward: the first product without its bias (``addmm`` copies a bias into its output
      before the product), then the bias and the ReLU in one pass in place (``_add_relu_``)
      and the dropout mask (drawn as ``dropout`` draws it) in a second;
    - backward: the dropout's scale applied by the product that computes the hidden layer's
      gradient (``addmm``'s alpha), then the ReLU's and the dropout's gradient in one pass
      (zero wherever the saved hidden output is zero, which covers both); the biases'
      gradients as matrix-vector products, which use every thread where a column sum ran at
      half that speed.

    Only the hidden output is saved, which the second product's gradient needs anyway; not
    the ReLU's output and the mask besides. With ``onednn`` every product is oneDNN's (as
    ``_OnednnLinear``'s), the dropout's scale riding on a scaled copy of W_2 instead of the
    product's alpha, which oneDNN's product has not. Measurements: docs/design.md."""

    @staticmethod
    def forward(ctx, x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
                p: float, onednn: bool = False) -> Tensor:
        rows = x.reshape(-1, x.size(-1))  # (N, D)
        first = onednn_linear(rows, w1, None) if onednn else torch.mm(rows, w1.t())
        hidden = torch.ops.aten._add_relu_(first, b1)  # (N, d_ff)
        scale = 1.0
        if p > 0.0:
            mask, _ = keep_mask(hidden, p)  # float32: kept elements hold 1 / (1 - p)
            hidden.mul_(mask)
            scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(rows, w1, w2, hidden)
        ctx.scale, ctx.onednn = scale, onednn
        out = onednn_linear(hidden, w2, b2) if onednn else torch.addmm(b2, hidden, w2.t())
        return out.view(*x.shape[:-1], w2.size(0))

    @staticmethod
    def backward(ctx, grad: Tensor):
        rows, w1, w2, hidden = ctx.saved_tensors
        needs = ctx.needs_input_grad
        g = grad.reshape(-1, grad.size(-1))  # (N, D)
        grad_b2 = _row_sums(g) if needs[4] else None
        # the pre-activation's gradient: scale * g W_2 where the hidden output was kept and
        # positive, zero where ReLU or dropout zeroed it
        if ctx.onednn:
            grad_w2 = onednn_weight_gradient(g, hidden) if needs[3] else None
            scaled = w2 * ctx.scale if ctx.scale != 1.0 else w2  # (D, d_ff): small beside g
            g = onednn_linear(g, scaled.t(), None)
        else:
            grad_w2 = g.t().mm(hidden) if needs[3] else None
            g = torch.addmm(g.new_zeros(()), g, w2, beta=0, alpha=ctx.scale)  # (input unread)
        g = torch.ops.aten.threshold_backward(g, hidden, 0)
        grad_x = grad_w1 = None
        if needs[0]:
            grad_x = onednn_linear(g, w1.t(), None) if ctx.onednn else g.mm(w1)
            grad_x = grad_x.view(grad.shape[:-1] + (w1.size(1),))
        if needs[1]:
            grad_w1 = onednn_weight_gradient(g, rows) if ctx.onednn else g.t().mm(rows)
        grad_b1 = _row_sums(g) if needs[2] else None
        return grad_x, grad_w1, grad_b1, grad_w2, grad_b2, None, None


_ADD_RELU = hasattr(torch.ops.aten, "_add_relu_")  # (a private operator of PyTorch's)


def _swap(model: M, kinds: tuple[type, ...], make: Callable[[str, Any], nn.Module]) -> M:
    """Replace (in place) every submodule of ``model`` whose type is exactly one of ``kinds``
    by ``make(its attribute name, it)``. Returns ``model``."""
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if type(child) in kinds:
                setattr(parent, name, make(name, child))
    return model


def cpu_attention(model: M) -> M:
    """Replace every ``model.Attention`` of ``model`` (in place) by a ``CpuAttention``.
    Returns ``model``."""
    return _swap(model, (Attention,), lambda name, child: CpuAttention())


def cpu_layers(model: M) -> M:
    """Replace (in place) every ``model.Attention`` of ``model`` by a ``CpuAttention`` and every
    ``model.FeedForward`` by a ``CpuFeedForward`` around the same parameters (its weights and
    checkpoints unchanged); as training on the CPU runs a model, and inference after
    ``cpu_linears``. Returns ``model``."""
    return _swap(cpu_attention(model), (FeedForward,), lambda name, child: CpuFeedForward(child))


def cpu_linears(model: M, *, onednn_training: bool = False, bf16_training: bool = False) -> M:
    """Replace every ``nn.Linear`` of ``model`` (in place) by a ``CpuLinear`` sharing its
    parameters; the layers named in ``PACKED`` keep a packed weight copy. With
    ``onednn_training`` their float32 products with gradients (and the feed-forward
    network's, ``cpu_layers``) go through oneDNN; with ``bf16_training`` their products
    with gradients under bf16 autocast do. Returns ``model``."""
    return _swap(model, (nn.Linear,), lambda name, child: CpuLinear(
        child, pack=name in PACKED, onednn_training=onednn_training,
        bf16_training=bf16_training))


class Int8Linear(nn.Module):
    """A linear layer for CPU inference in int8: the weight stored as int8 with one scale per
    output feature, each input row quantized to int8 with its own scale as it comes (the
    scheme of CTranslate2's int8), the product ``torch._int_mm``'s (oneDNN's int8 kernels:
    AMX or VNNI where the CPU has them, AVX2 otherwise), its int32 sums scaled back to float32.

    Each row is quantized on its own, so a row's result does not depend on the other rows of
    its batch; the integer sums are exact, so the compiled steps (``aiayn.runtime.compiled``)
    give the eager step's results but where float32 rounding before the quantization moves a
    value to the next int8 level.

    Attributes:
        weight_int8: (out, in) int8, round(weight / scale).
        weight_packed: (out, in / 4) int32, the same levels four to a word (``packed_levels``)
            for the compiled one-row product; None where ``in`` is not a multiple of 4.
        scale: (out,) float32, each output feature's largest weight magnitude / 127.
        bias: the wrapped layer's bias (shared), or None.
    """

    weight_int8: Tensor
    weight_packed: Tensor | None
    scale: Tensor

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        weight = cast(Tensor, layer.weight).detach()
        self.in_features, self.out_features = weight.size(1), weight.size(0)
        levels, scale = quantized_rows(weight)
        self.register_buffer("weight_int8", levels.to(torch.int8))
        self.register_buffer("weight_packed", packed_levels(self.weight_int8)
                             if self.in_features % 4 == 0 else None)
        self.register_buffer("scale", scale[:, 0])
        self.bias = cast("Tensor | None", layer.bias)
        self.input_levels = 63 if int8_pairs_saturate() else 127

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in) -> (..., out)."""
        if torch.compiler.is_compiling() and self.weight_packed is not None:
            return self.traced_product(x)
        return self.int8_product(x)

    def relu_product(self, x: Tensor) -> Tensor:
        return self.int8_product(x, "relu")

    def _scaled(self, sums: Tensor, row_scale: Tensor, x: Tensor, activation: str) -> Tensor:
        y = sums * (row_scale * self.scale)
        if self.bias is not None:
            y = y + self.bias
        if activation == "relu":
            y = y.relu()
        return y.view(x.shape[:-1] + (self.out_features,))

    def int8_product(self, x: Tensor, activation: str = "none") -> Tensor:
        """The product of x's rows quantized to int8 with the int8 weight, float32 out;
        ``activation`` "relu" applies max(0, .) after it. Inputs of 7 bits
        (``int8_pairs_saturate``) are the library's second operand, the one it does not shift
        to unsigned bytes."""
        quantized, row_scale = quantized_rows(x.reshape(-1, self.in_features),
                                              self.input_levels)
        if self.input_levels == 127:
            sums = torch._int_mm(quantized.to(torch.int8), self.weight_int8.t()).float()
        else:
            sums = torch._int_mm(self.weight_int8, quantized.to(torch.int8).t()).t()
            sums = sums.to(torch.float32, memory_format=torch.contiguous_format)
        return self._scaled(sums, row_scale, x, activation)

    def traced_product(self, x: Tensor) -> Tensor:
        """``int8_product`` written for the compiled step of one row (as
        ``CpuLinear.traced_product``): the quantized row's dot product with every weight row,
        in float32, the weights read four levels to an int32 word (``weight_packed``) and
        each level taken out by two shifts. Inductor makes it one vectorized loop that reads
        a quarter of float32's bytes, with AVX2 as with AVX-512 (its code converts int8 one
        value at a time with AVX2, int32 a vector at a time), without a library call per
        product. Sums of integer products are exact in float32 below 2**24 (any row of up to
        1,040 features, and wider ones in practice), so the results are ``int8_product``'s."""
        assert self.weight_packed is not None
        quantized, row_scale = quantized_rows(x.reshape(-1, self.in_features),
                                              self.input_levels)
        quarters = quantized.view(quantized.size(0), 4, 1, -1)
        words = self.weight_packed
        sums = (quarters[:, 0] * ((words << 24) >> 24).float()
                + quarters[:, 1] * ((words << 16) >> 24).float()
                + quarters[:, 2] * ((words << 8) >> 24).float()
                + quarters[:, 3] * (words >> 24).float())
        return self._scaled(sums.sum(-1), row_scale, x, "none")

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def quantized_rows(rows: Tensor, levels: int = 127) -> tuple[Tensor, Tensor]:
    """(M, n) rows -> each row rounded to integers in [-levels, levels] of its own scale
    (float32, (M, n)) and the scales (M, 1): the row's largest magnitude / levels. Weights
    and inputs are quantized alike."""
    rows = rows.float()
    scale = (rows.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny)
             / levels)
    return (rows / scale).round().clamp(-levels, levels), scale


@functools.cache
def int8_pairs_saturate() -> bool:
    """Whether oneDNN's int8 product here adds pairs of byte products in 16 bits, saturating:
    where ``ONEDNN_MAX_CPU_ISA`` holds an AVX-512 CPU below VNNI and AMX, its kernels shift
    the first operand to unsigned bytes and add two products of up to 255 x 127 in an int16
    (``vpmaddubsw``), so sums of large values of one sign come out wrong by up to ~10**5
    (random levels over 256-512 features: errors of 74,000-130,000).
    There ``Int8Linear`` quantizes its inputs to 7 bits (as FBGEMM's ``reduce_range``): a
    pair is then at most 2 x 255 x 63 < 2**15 and every sum exact. Probed with one product
    of levels that saturate (an AVX2-only Zen 3 summed exactly)."""
    levels = torch.full((32, 64), 127, dtype=torch.int8)
    return int(torch._int_mm(levels, levels.t())[0, 0]) != 64 * 127 * 127


def packed_levels(levels: Tensor) -> Tensor:
    """(out, in) int8 -> (out, in / 4) int32 whose word i holds, from its low byte up, the
    levels at columns i, i + in/4, i + in/2 and i + 3in/4 (so that each quarter of an input
    row meets one byte of every word, read in order)."""
    quarters = levels.view(levels.size(0), 4, -1).to(torch.int32) & 255
    return (quarters[:, 0] | quarters[:, 1] << 8 | quarters[:, 2] << 16
            | quarters[:, 3] << 24).contiguous()


def quantize_int8(model: M) -> M:
    """Replace every linear layer of ``model`` (``nn.Linear`` or ``CpuLinear``, in place) by an
    ``Int8Linear`` of its weight. Returns ``model``."""
    return _swap(model, (nn.Linear, CpuLinear), lambda name, child: Int8Linear(child))


def for_inference(model: M, *, int8: bool = False) -> M:
    """An inference copy of ``model`` for the CPU: its own module objects around the same
    parameters and buffers (``model`` itself is left as it is), in eval mode, with
    ``CpuLinear`` products in float32 or ``Int8Linear`` ones (int8 copies of the weights).
    Other devices get the model unchanged."""
    device = next(model.parameters()).device
    if device.type != "cpu":
        if int8:
            raise ValueError("int8 decoding runs on the CPU only")
        return model.eval()
    shared = {id(t): t for t in (*model.parameters(), *model.buffers())}
    fast = cpu_layers(cpu_linears(copy.deepcopy(model, shared).eval()))
    for layer in fast.modules():
        if isinstance(layer, CpuLinear):  # (a training model's): inference keeps weight copies
            layer.onednn_training = layer.bf16_training = False
    return quantize_int8(fast) if int8 else fast


def top_k(x: Tensor, k: int, block: int = 64) -> tuple[Tensor, Tensor]:
    """``x.topk(k, dim=-1)`` (values and indices, best first) for x (rows, V), faster on CPU.

    PyTorch's CPU top-k walks every element one at a time, while a plain maximum is
    vectorized. So: take the maximum of every block of ``block`` entries; a row's k best
    entries lie in its k blocks with the largest maxima (a block holding one of them has a
    maximum at least as large as the k-th best; any other block's maximum is smaller); run
    the exact top-k on those k blocks only. Entries that tie may come back in another order
    than ``torch.topk``'s.
    """
    rows, v = x.shape
    if k == 1 and rows <= 4:  # a plain maximum, the first of equal ones: its one scalar pass
        values, indices = x.max(-1, keepdim=True)  # beats the blocks' several operations at a
        return values, indices  # few rows (7 against 22 us at 1 x 8,000; 158 against 75 at 32)
    n_blocks = v // block
    if n_blocks < 4 * k or not x.is_cpu:
        return x.topk(k, dim=-1)
    head = x[:, :n_blocks * block].reshape(rows, n_blocks, block)  # (rows, blocks, block)
    best_blocks = head.amax(-1).topk(k, dim=-1).indices  # (rows, k)
    cand = head.gather(1, best_blocks[:, :, None].expand(rows, k, block)).view(rows, k * block)
    tail = v - n_blocks * block
    if tail:  # the last, partial block: always a candidate
        cand = torch.cat([cand, x[:, n_blocks * block:]], dim=1)
    values, pos = cand.topk(k, dim=-1)  # pos: candidate j of block j // block, or the tail
    # only the k winners' vocabulary ids are computed, not every candidate's
    indices = best_blocks.gather(1, (pos // block).clamp(max=k - 1)) * block + pos % block
    if tail:
        indices = torch.where(pos >= k * block, pos - k * block + n_blocks * block, indices)
    return values, indices


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc <malloc.h>
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 1 << 30
# training: the logits and their gradient (tokens x vocabulary x 4 bytes: 128 MB at 4,000 tokens
# and 8,000 entries) come back every step, and from fresh mappings each faulted ~31,000 pages
TRAIN_MMAP_THRESHOLD = 1 << 30
C_INT_MAX = (1 << 31) - 1  # mallopt takes a C int
_malloc_applied: bool | None = None


def reuse_freed_memory(keep: int | None = None, *, mmap_threshold: int = MMAP_THRESHOLD) -> bool:
    """Raise glibc's mmap and trim thresholds once per process; True when they are set.

    Every decoding (and training) step allocates and frees the same tensors. glibc serves
    large requests with fresh ``mmap`` mappings and returns the top of the heap to the kernel,
    so those buffers keep coming back as new pages that fault when first written. With the
    thresholds raised, requests below ``mmap_threshold`` (64 MiB; training passes
    ``TRAIN_MMAP_THRESHOLD``) come from the heap and up to ``keep`` bytes of freed heap (by
    default 1 GiB; at most 2 GiB, what glibc takes) stay with the process for reuse.
    Process-wide; ``aiayn.load``, the decoding commands and training on the CPU call it, the
    first call decides (`aiayn serve --keep-freed-mib` calls it first), and
    ``AIAYN_KEEP_MALLOC=1`` in the environment leaves the allocator alone. Does nothing
    elsewhere than glibc (macOS, musl).
    """
    global _malloc_applied
    if _malloc_applied is None:
        _malloc_applied = False
        if sys.platform.startswith("linux") and os.environ.get("AIAYN_KEEP_MALLOC") != "1":
            try:
                mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
            except (OSError, AttributeError):  # not glibc
                return False
            trim = min(TRIM_THRESHOLD if keep is None else keep, C_INT_MAX)
            _malloc_applied = bool(mallopt(M_MMAP_THRESHOLD, min(mmap_threshold, C_INT_MAX))
                                   and mallopt(M_TRIM_THRESHOLD, trim))
    return _malloc_applied
