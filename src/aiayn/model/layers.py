"""Encoder and decoder layers and their stacks (§3.1, §3.3).

Shapes: B batch, S source length, T target length, D d_model.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import ModelConfig
from .attention import MultiHeadAttention
from .cache import DecoderCache
from .dropout import Dropout
from .linear import linear
from .masks import causal_mask

SublayerFn = Callable[[Tensor], tuple[Tensor, Tensor | None]]


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied at every position alike (§3.3, Eq. 2)."""

    def __init__(self, d_model: int, d_ff: int, *, activation: str = "relu",
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)  # W_1
        self.linear2 = nn.Linear(d_ff, d_model)  # W_2
        self.relu = activation == "relu"
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        h = linear(x, self.linear1)  # (..., d_ff), a fresh tensor: ReLU may overwrite it
        h = torch.relu_(h) if self.relu else F.gelu(h)
        return linear(self.dropout(h), self.linear2)


class Residual(nn.Module):
    """Residual connection and LayerNorm around one sub-layer (§3.1, §5.4).

    - "post" (the paper): LayerNorm(x + Dropout(Sublayer(x)))
    - "pre" (departure; Xiong et al. 2020): x + Dropout(Sublayer(LayerNorm(x)))
    - "sandwich" (departure; Ding et al. 2021): x + Dropout(LayerNorm(Sublayer(LayerNorm(x))))

    ``enter`` gives the sub-layer its input and ``leave`` adds its output back; ``forward``
    is the two around one call.
    """

    def __init__(self, d_model: int, *, placement: str, dropout: float, eps: float) -> None:
        super().__init__()
        self.placement = placement
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.out_norm = nn.LayerNorm(d_model, eps=eps) if placement == "sandwich" else None
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, sublayer: SublayerFn) -> tuple[Tensor, Tensor | None]:
        out, weights = sublayer(self.enter(x))
        return self.leave(x, out), weights

    def enter(self, x: Tensor) -> Tensor:
        """The sub-layer's input: x (post-norm) or LayerNorm(x)."""
        return x if self.placement == "post" else _layer_norm(x, self.norm)

    def leave(self, x: Tensor, out: Tensor) -> Tensor:
        """x plus the sub-layer's output, normalised as the placement says."""
        if self.out_norm is not None:
            out = _layer_norm(out, self.out_norm)
        if self.training:
            out = self.dropout(out)
        return _layer_norm(x + out, self.norm) if self.placement == "post" else x + out


def _layer_norm(x: Tensor, norm: nn.LayerNorm) -> Tensor:
    # the module's own computation, without a module call (this runs in the decoding loop)
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


def _residual(cfg: ModelConfig) -> Residual:
    return Residual(cfg.d_model, placement=cfg.norm, dropout=cfg.dropout, eps=cfg.layer_norm_eps)


def _attention(cfg: ModelConfig, *, self_attention: bool = True) -> MultiHeadAttention:
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, self_attention=self_attention,
                              dropout=cfg.attn_dropout)


def _ffn(cfg: ModelConfig) -> FeedForward:
    return FeedForward(cfg.d_model, cfg.d_ff, activation=cfg.activation, dropout=cfg.ffn_dropout)


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each in a residual block (§3.1)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn, self.ffn = _attention(cfg), _ffn(cfg)
        self.attn_block, self.ffn_block = _residual(cfg), _residual(cfg)

    def forward(self, x: Tensor, mask: Tensor | None, *,
                return_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """x (B, S, D), mask (B, 1, 1, S) -> (B, S, D) and optional (B, H, S, S) weights."""
        x, weights = self.attn_block(
            x, lambda y: self.self_attn(y, y, y, mask, return_weights=return_weights))
        x, _ = self.ffn_block(x, lambda y: (self.ffn(y), None))
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
        self.ffn, self.ffn_block = _ffn(cfg), _residual(cfg)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        src_mask: Tensor | None = None,
        *,
        self_mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """Whole sequences: x (B, T, D); memory (B, S, D); src_mask (B, 1, 1, S).

        Self-attention is causal over x (``self_mask`` replaces the causal mask when given).
        Returns x, self-attention weights, cross-attention weights.
        """
        x, self_w = self.self_block(x, lambda y: self.self_attn(
            y, y, y, self_mask, is_causal=self_mask is None, return_weights=return_weights))
        cross_w = None
        if self.cross_attn is not None:
            x, cross_w = self.cross_block(x, lambda y: self.cross_attn(
                y, memory, memory, src_mask, return_weights=return_weights))
        x, _ = self.ffn_block(x, lambda y: (self.ffn(y), None))
        return x, self_w, cross_w

    def step(self, x: Tensor, cache: DecoderCache, index: int) -> Tensor:
        """Incremental decoding: x (B, t, D) holds the next t positions. Their keys and values
        are appended to layer ``index`` of the cache (the caller advances ``cache.length``) and
        cross-attention reads the memory projections cached there. Returns (B, t, D).

        The same computation as ``forward`` on the whole prefix, written out without the
        per-sub-layer closures: this runs once per layer for every generated token.
        """
        block = self.self_block
        x = block.leave(x, self._self_step(block.enter(x), cache, index))
        if self.cross_attn is not None:
            block = self.cross_block
            x = block.leave(x, self._cross_step(block.enter(x), cache, index))
        block = self.ffn_block
        return block.leave(x, self.ffn(block.enter(x)))

    def _self_step(self, y: Tensor, cache: DecoderCache, index: int) -> Tensor:
        q, k, v = self.self_attn.project_qkv(y)  # (B, H, t, Dh)
        k, v = cache.append(index, k, v)  # (B, H, length + t, Dh)
        t = y.size(1)
        mask = causal_mask(t, y.device, offset=cache.length) if t > 1 else None
        return self.self_attn.attend(q, k, v, mask)[0]

    def _cross_step(self, y: Tensor, cache: DecoderCache, index: int) -> Tensor:
        assert self.cross_attn is not None
        layer, g = cache.layers[index], cache.group
        b, t, d = y.shape
        # the g rows (beams) of a sentence share its memory: one block of g*t queries each
        q = self.cross_attn.project_query(y.reshape(b // g, g * t, d))  # (B/g, H, g*t, Dh)
        out, _ = self.cross_attn.attend(q, layer.cross_k, layer.cross_v, cache.src_mask)
        return out.reshape(b, t, d)


class Encoder(nn.Module):
    """A stack of N encoder layers, with the final LayerNorm pre- and sandwich-norm need."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.final_norm = (nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
                           if cfg.norm != "post" else None)

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
        self.final_norm = (nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
                           if cfg.norm != "post" else None)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        src_mask: Tensor | None = None,
        *,
        self_mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """x (B, T, D) -> (B, T, D), per-layer self- and cross-attention weights."""
        self_ws, cross_ws = [], []
        for layer in self.layers:
            x, self_w, cross_w = layer(x, memory, src_mask, self_mask=self_mask,
                                       return_weights=return_weights)
            if self_w is not None:
                self_ws.append(self_w)
            if cross_w is not None:
                cross_ws.append(cross_w)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, self_ws, cross_ws

    def step(self, x: Tensor, cache: DecoderCache) -> Tensor:
        """Incremental decoding of the next positions x (B, t, D) -> (B, t, D); advances
        ``cache.length`` by t once every layer has appended its keys and values."""
        for i, layer in enumerate(self.layers):
            x = layer.step(x, cache, i)
        cache.length += x.size(1)
        if self.final_norm is not None:
            x = _layer_norm(x, self.final_norm)
        return x
