"""Scaled dot-product attention (§3.2.1, Eq. 1) and multi-head attention (§3.2.2).

Shapes: B batch, H heads, T query length, S key length, D d_model, Dh head dim (d_k = d_v).
Masks are bool, True = may attend (see ``aiayn.model.masks``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .cache import DecoderCache
from .dropout import dropout


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    *,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    return_weights: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (Eq. 1).

    Without ``return_weights`` this is PyTorch's fused kernel; with it, the reference
    computation (``reference_attention``), which also returns the weights (for
    visualization). Faster choices for a device are swapped in from outside the model
    (``aiayn.runtime.cpu.CpuAttention``).

    Args:
        query: (B, H, T, Dh); key, value: (B, H, S, Dh).
        mask: bool, broadcastable to (B, H, T, S), True = may attend.
        is_causal: apply the look-ahead mask (T == S); used instead of ``mask``.
        dropout_p: dropout on the attention weights.
        return_weights: also return the (B, H, T, S) weights, rows summing to 1.
    Returns:
        (B, H, T, Dh) output and the weights or None.
    """
    if return_weights:
        return reference_attention(query, key, value, mask, is_causal=is_causal,
                                   dropout_p=dropout_p)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask,
                                         dropout_p=dropout_p, is_causal=is_causal)
    return out, None


def softmax_rows(scores: Tensor) -> Tensor:
    """softmax over the last dimension; 16-bit scores are normalized in float32 and cast back
    (PyTorch's bf16 softmax on the CPU is up to 8x slower at some row lengths)."""
    if scores.element_size() == 2:
        return scores.softmax(dim=-1, dtype=torch.float32).to(scores.dtype)
    return scores.softmax(dim=-1)


def reference_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    *,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    softmax: Callable[[Tensor], Tensor] = softmax_rows,
) -> tuple[Tensor, Tensor]:
    """Eq. 1 written out: the output and the (B, H, T, S) weights (arguments as
    ``scaled_dot_product_attention``'s; ``softmax`` normalizes the score rows)."""
    # 1) scores
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (B, H, T, S)
    # 2) mask illegal connections with -inf before the softmax (§3.2.3)
    if is_causal:
        t, s = scores.shape[-2:]
        mask = torch.ones(t, s, dtype=torch.bool, device=scores.device).tril()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    # 3) normalize and take the weighted sum of values
    weights = softmax(scores)  # (B, H, T, S)
    attended = dropout(weights, dropout_p)
    return attended @ value, weights  # (B, H, T, Dh)


class Attention(nn.Module):
    """Scaled dot-product attention (Eq. 1) as a module of its own, so that a device's faster
    computation can be swapped in at load time (``aiayn.runtime.cpu.CpuAttention``); it holds
    no parameters."""

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                *, is_causal: bool = False, dropout_p: float = 0.0,
                return_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        return scaled_dot_product_attention(query, key, value, mask, is_causal=is_causal,
                                            dropout_p=dropout_p, return_weights=return_weights)


def merge_heads(y: Tensor) -> Tensor:
    """The heads side by side again, Concat(head_1..head_h) (§3.2.2):
    (B, H, T, Dh) -> (B, T, H * Dh)."""
    b, h, t, dh = y.shape
    return y.transpose(1, 2).reshape(b, t, h * dh)  # (B, T, D)


def _split_heads(x: Tensor, parts: int, heads: int) -> tuple[Tensor, ...]:
    """Views of (B, T, parts * D) as parts x (B, H, T, Dh)."""
    b, t, width = x.shape
    x = x.view(b, t, parts, heads, width // (parts * heads))  # (B, T, parts, H, Dh)
    return x.permute(2, 0, 3, 1, 4).unbind(0)  # parts x (B, H, T, Dh)


class _SplitHeads(torch.autograd.Function):
    """``_split_heads`` whose backward writes the heads' gradients (contiguous (B, H, T, Dh),
    as the fused attention returns them) straight into one (B, T, parts * D) gradient: one
    copy, where autograd's way (stacking the parts, then copying the permuted stack into the
    projection's layout) makes two."""

    @staticmethod
    def forward(ctx, x: Tensor, parts: int, heads: int) -> tuple[Tensor, ...]:
        ctx.shape = x.shape
        return _split_heads(x, parts, heads)

    @staticmethod
    def backward(ctx, *grads: Tensor | None):
        b, t, width = ctx.shape
        parts = len(grads)
        like = next(g for g in grads if g is not None)
        out = like.new_empty(b, t, parts, like.size(1), like.size(3))  # (B, T, parts, H, Dh)
        for i, grad in enumerate(grads):
            if grad is None:
                out[:, :, i].zero_()
            else:
                out[:, :, i].copy_(grad.transpose(1, 2))  # (B, T, H, Dh)
        return out.view(b, t, width), None, None


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O,
    head_i = Attention(Q W^Q_i, K W^K_i, V W^V_i).

    The input projections are stacked so that each is one matrix product: self-attention keeps
    ``qkv_proj`` (rows W^Q; W^K; W^V, as ``nn.MultiheadAttention``'s ``in_proj_weight``);
    cross-attention keeps ``q_proj`` (W^Q) for the decoder queries and ``kv_proj`` (W^K; W^V)
    for the encoder memory, which incremental decoding projects once per source. Every
    projection is an ``nn.Linear``, so the CPU's int8 layers (``Int8Linear``) replace all of them.

    Args:
        d_model: model width D.
        n_heads: number of heads h; Dh = D / h.
        self_attention: queries, keys and values come from one input (else: cross-attention).
        dropout: dropout on attention weights.
    """

    def __init__(self, d_model: int, n_heads: int, *, self_attention: bool = True,
                 dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.self_attention, self.dropout = self_attention, dropout
        if self_attention:
            self.qkv_proj = nn.Linear(d_model, 3 * d_model)  # [W^Q; W^K; W^V]
        else:
            self.q_proj = nn.Linear(d_model, d_model)  # W^Q
            self.kv_proj = nn.Linear(d_model, 2 * d_model)  # [W^K; W^V]
        self.out_proj = nn.Linear(d_model, d_model)  # W^O
        self.attend = Attention()  # Eq. 1

    def split_heads(self, x: Tensor, parts: int) -> tuple[Tensor, ...]:
        """A projection's output into heads: (B, T, parts * D) -> parts x (B, H, T, Dh)."""
        if torch.is_grad_enabled() and x.requires_grad:
            return _SplitHeads.apply(x, parts, self.n_heads)
        return _split_heads(x, parts, self.n_heads)

    def project_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention keys and values: memory (B, S, D) -> 2 x (B, H, S, Dh)."""
        k, v = self.split_heads(self.kv_proj(memory), 2)
        return k, v

    def forward(
        self,
        query: Tensor,
        key: Tensor | None,
        value: Tensor | None,
        mask: Tensor | None = None,
        *,
        is_causal: bool = False,
        return_weights: bool = False,
        cache: DecoderCache | None = None,
        layer: int = 0,
    ) -> tuple[Tensor, Tensor | None]:
        """Args: query (B, T, D), key and value (B, S, D); mask broadcastable to (B, H, T, S).

        Self-attention takes one tensor as query, key and value; cross-attention one tensor
        (the encoder memory) as key and value. With ``cache`` (incremental decoding) the
        query holds only the next positions: self-attention appends their keys and values to
        layer ``layer`` of the cache and attends over every position so far; cross-attention
        reads the memory's keys and values that the cache holds (key and value unused).
        Returns (B, T, D) and, when ``return_weights``, the (B, H, T, S) weights.
        """
        # 1) project to heads
        if self.self_attention:
            if not (key is query and value is query):
                raise ValueError("self-attention takes the same tensor as query, key and value")
            q, k, v = self.split_heads(self.qkv_proj(query), 3)  # (B, H, T, Dh)
            if cache is not None:
                k, v = cache.append(layer, k, v)  # (B, H, length + T, Dh)
                mask, is_causal = cache.causal_mask(query.size(1)), False
        elif cache is not None:
            query = cache.by_sentence(query)  # (B / g, g * T, D): a sentence's rows, one block
            q = self.split_heads(self.q_proj(query), 1)[0]  # (B / g, H, g * T, Dh)
            k, v, mask = cache.memory(layer)  # (B / g, H, S, Dh)
        else:
            if key is not value or key is None:
                raise ValueError("cross-attention takes the same tensor (memory) as key and value")
            q = self.split_heads(self.q_proj(query), 1)[0]  # (B, H, T, Dh)
            k, v = self.project_kv(key)  # (B, H, S, Dh)
        # 2) attend
        dropout_p = self.dropout if self.training else 0.0
        out, weights = self.attend(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p,
                                   return_weights=return_weights)  # (B, H, T, Dh)
        # 3) merge heads
        out = self.out_proj(merge_heads(out))  # (B, T, D)
        if cache is not None and not self.self_attention:
            out = cache.by_row(out)  # back to (B, T, D)
        return out, weights
