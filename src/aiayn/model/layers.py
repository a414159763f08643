"""Encoder and decoder layers and their stacks (§3.1, §3.3).

Shapes: B batch, S source length, T target length, D d_model.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import ModelConfig
from .attention import MultiHeadAttention
from .cache import DecoderCache
from .dropout import dropout, dropout_add

ACTIVATION_FNS: dict[str, Callable[[Tensor], Tensor]] = {"gelu": F.gelu, "swish": F.silu}


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied at every position alike (§3.3, Eq. 2).

    ``activation`` replaces max(0, .): "relu" (the paper), "gelu" or "swish" (SiLU).
    """

    def __init__(self, d_model: int, d_ff: int, *, activation: str = "relu",
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)  # W_1
        self.linear2 = nn.Linear(d_ff, d_model)  # W_2
        self.activation = None if activation == "relu" else ACTIVATION_FNS[activation]
        self.dropout = dropout

    def forward(self, x: Tensor) -> Tensor:
        h = self.linear1(x)  # (..., d_ff), a fresh tensor
        if self.activation is not None:
            h = self.activation(h)
        elif torch.is_grad_enabled():
            # not in place: h is a view of the product's 2-D output, and autograd would undo an
            # in-place ReLU on a view by copying the whole base in the backward pass
            h = h.relu()
        else:
            h = h.relu_()  # inference: overwrite the fresh tensor
        return self.linear2(dropout(h, self.dropout, self.training))


class Residual(nn.Module):
    """Residual connection and LayerNorm around one sub-layer (§3.1, §5.4).

    - "post" (the paper): LayerNorm(x + Dropout(Sublayer(x)))
    - "pre" (departure; Xiong et al. 2020): x + Dropout(Sublayer(LayerNorm(x)))
    - "sandwich" (departure; Ding et al. 2021): x + Dropout(LayerNorm(Sublayer(LayerNorm(x))))

    A layer calls ``enter`` for the sub-layer's input and ``leave`` to add its output back.
    """

    def __init__(self, d_model: int, *, placement: str, dropout: float, eps: float) -> None:
        super().__init__()
        self.placement = placement
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.out_norm = nn.LayerNorm(d_model, eps=eps) if placement == "sandwich" else None
        self.dropout = dropout

    def enter(self, x: Tensor) -> Tensor:
        """The sub-layer's input: x (post-norm) or LayerNorm(x)."""
        return x if self.placement == "post" else self.norm(x)

    def leave(self, x: Tensor, out: Tensor) -> Tensor:
        """x plus the sub-layer's output, normalised as the placement says."""
        if self.out_norm is not None:
            out = self.out_norm(out)
        x = dropout_add(x, out, self.dropout, self.training)  # x + Dropout(out), one pass
        return self.norm(x) if self.placement == "post" else x


def _residual(cfg: ModelConfig) -> Residual:
    return Residual(cfg.d_model, placement=cfg.norm, dropout=cfg.dropout, eps=cfg.layer_norm_eps)


def _attention(cfg: ModelConfig, *, self_attention: bool = True) -> MultiHeadAttention:
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, self_attention=self_attention,
                              dropout=cfg.attn_dropout)


def _final_norm(cfg: ModelConfig) -> nn.LayerNorm | None:
    """Pre- and sandwich-norm stacks end in a LayerNorm; post-norm layers already end in one."""
    return nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.norm != "post" else None


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each in a residual block (§3.1)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn, self.attn_block = _attention(cfg), _residual(cfg)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, activation=cfg.activation,
                               dropout=cfg.ffn_dropout)
        self.ffn_block = _residual(cfg)

    def forward(self, x: Tensor, mask: Tensor | None, *,
                return_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """x (B, S, D), mask (B, 1, 1, S) -> (B, S, D) and optional (B, H, S, S) weights."""
        # 1) self-attention over the whole source
        y = self.attn_block.enter(x)
        y, weights = self.self_attn(y, y, y, mask, return_weights=return_weights)
        x = self.attn_block.leave(x, y)
        # 2) position-wise feed-forward
        x = self.ffn_block.leave(x, self.ffn(self.ffn_block.enter(x)))
        return x, weights


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, feed-forward (§3.1).

    With ``cross_attention=False`` it is the decoder-only (language model) layer.
    """

    def __init__(self, cfg: ModelConfig, *, cross_attention: bool = True) -> None:
        super().__init__()
        self.self_attn, self.self_block = _attention(cfg), _residual(cfg)
        self.cross_attn = _attention(cfg, self_attention=False) if cross_attention else None
        self.cross_block = _residual(cfg) if cross_attention else None
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, activation=cfg.activation,
                               dropout=cfg.ffn_dropout)
        self.ffn_block = _residual(cfg)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        src_mask: Tensor | None = None,
        *,
        self_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
        index: int = 0,
        return_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """x (B, T, D); memory (B, S, D); src_mask (B, 1, 1, S).

        Without ``cache``, x is the whole target and self-attention is causal over it
        (``self_mask`` replaces the causal mask when given). With ``cache`` (incremental
        decoding), x holds the next positions only: this layer's keys and values go to layer
        ``index`` of the cache and cross-attention reads the memory projections kept there.
        Returns x, self-attention weights, cross-attention weights.
        """
        # 1) masked self-attention (§3.2.3)
        y = self.self_block.enter(x)
        y, self_w = self.self_attn(y, y, y, self_mask, is_causal=self_mask is None,
                                   return_weights=return_weights, cache=cache, layer=index)
        x = self.self_block.leave(x, y)
        # 2) cross-attention over the encoder memory
        cross_w = None
        if self.cross_attn is not None and self.cross_block is not None:
            y, cross_w = self.cross_attn(self.cross_block.enter(x), memory, memory, src_mask,
                                         return_weights=return_weights, cache=cache, layer=index)
            x = self.cross_block.leave(x, y)
        # 3) position-wise feed-forward
        x = self.ffn_block.leave(x, self.ffn(self.ffn_block.enter(x)))
        return x, self_w, cross_w


class Encoder(nn.Module):
    """A stack of N encoder layers, with the final LayerNorm pre- and sandwich-norm need."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.final_norm = _final_norm(cfg)

    def forward(self, x: Tensor, mask: Tensor | None, *,
                return_weights: bool = False) -> tuple[Tensor, list[Tensor]]:
        """x (B, S, D) -> memory (B, S, D) and per-layer weights (empty unless requested)."""
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask, return_weights=return_weights)
            if w is not None:
                weights.append(w)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, weights


class Decoder(nn.Module):
    """A stack of N decoder layers (with or without cross-attention) and the final LayerNorm."""

    def __init__(self, cfg: ModelConfig, *, cross_attention: bool = True) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(cfg, cross_attention=cross_attention)
                                    for _ in range(cfg.n_decoder_layers))
        self.final_norm = _final_norm(cfg)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        src_mask: Tensor | None = None,
        *,
        self_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
        return_weights: bool = False,
        weights_of: int | None = None,
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """x (B, T, D) -> (B, T, D), per-layer self- and cross-attention weights.

        With ``cache``, x holds the next T positions; the cache advances by T once every layer
        has appended its keys and values. ``weights_of``: the weights of this layer alone (the
        others keep the fused attention).
        """
        self_ws, cross_ws = [], []
        for index, layer in enumerate(self.layers):
            x, self_w, cross_w = layer(x, memory, src_mask, self_mask=self_mask, cache=cache,
                                       index=index,
                                       return_weights=return_weights or index == weights_of)
            if self_w is not None:
                self_ws.append(self_w)
            if cross_w is not None:
                cross_ws.append(cross_w)
        if cache is not None:
            cache.length += x.size(1)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, self_ws, cross_ws
