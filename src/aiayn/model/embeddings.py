"""Token embeddings (§3.4) and positional encodings (§3.5).

Shapes: B batch, T length, D d_model, V vocabulary.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .dropout import Dropout


def sinusoidal_table(max_len: int, d_model: int, base: float = 10000.0, *,
                     layout: str = "interleaved") -> Tensor:
    """PE(pos, 2i) = sin(pos / base^(2i/D)), PE(pos, 2i+1) = cos(pos / base^(2i/D))  (§3.5).

    Returns a (max_len, D) float32 table. An odd D drops the last cosine column. ``layout``
    "halves" (Marian's) puts the same values as all sines, then all cosines: column i holds
    interleaved column 2i, column D/2 + i interleaved column 2i + 1.
    """
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    angle = position / base ** (two_i / d_model)  # (L, ceil(D/2))
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    if layout == "halves":
        table = torch.cat([table[:, 0::2], table[:, 1::2]], dim=1)
    elif layout != "interleaved":
        raise ValueError(f"layout ({layout!r}) must be one of interleaved, halves")
    return table.float()


class PositionalEncoding(nn.Module):
    """Adds position information to embeddings, then dropout on the sum (§3.5, §5.4).

    Args:
        d_model: D.
        max_len: the longest sequence supported.
        kind: "sinusoidal" (fixed, §3.5) or "learned" (one trained vector per position).
        base: sinusoid base (10000 in the paper).
        layout: sinusoid column order, "interleaved" (§3.5) or "halves" (Marian's).
        dropout: dropout on the sum of embeddings and positions.
    """

    def __init__(self, d_model: int, max_len: int, *, kind: str = "sinusoidal",
                 base: float = 10000.0, layout: str = "interleaved",
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.kind, self.max_len = kind, max_len
        if kind == "sinusoidal":
            # not persistent: a deterministic function of the config, not a weight
            self.register_buffer("table", sinusoidal_table(max_len, d_model, base, layout=layout),
                                 persistent=False)
        elif kind == "learned":
            self.table = nn.Parameter(torch.empty(max_len, d_model).normal_(0.0, d_model ** -0.5))
        else:
            raise ValueError(f"positions ({kind!r}) must be one of sinusoidal, learned")
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x (B, T, D) -> x + PE[offset : offset + T], with dropout."""
        end = offset + x.size(1)
        if end > self.max_len:
            raise ValueError(
                f"sequence length {end} exceeds max_len ({self.max_len}); raise max_len in the "
                "config"
            )
        return self.dropout(x + self.table[offset:end])


class Embeddings(nn.Module):
    """Token embedding scaled by sqrt(d_model), plus positional encoding (§3.4, §3.5).

    ``token`` may be shared between modules (source/target sharing and the tied output
    projection, §3.4); this module only reads it. ``scale=False`` leaves the embedding unscaled
    (a departure some Marian models make).
    """

    def __init__(self, token: nn.Embedding, positions: PositionalEncoding, *,
                 scale: bool = True) -> None:
        super().__init__()
        self.token, self.positions = token, positions
        self.scale = math.sqrt(token.embedding_dim) if scale else 1.0

    def at(self, tokens: Tensor, position: Tensor) -> Tensor:
        """Tokens (B, 1) at one position held in a tensor (0-dim int64) -> (B, 1, D), without
        dropout: ``forward`` in inference for code that keeps the position in a tensor (the
        compiled decoding steps over fixed buffers, ``aiayn.runtime.compiled``)."""
        return self.token(tokens) * self.scale + self.positions.table.index_select(
            0, position.view(1))

    def forward(self, tokens: Tensor, offset: int = 0) -> Tensor:
        """(B, T) int64 -> (B, T, D); in bfloat16 under bfloat16 autocast (below)."""
        x = self.positions(self.token(tokens) * self.scale, offset)
        # Under bf16 autocast the residual stream is bf16 from here on: autocast would
        # otherwise cast it to bf16 before every product and add bf16 outputs back to float32
        # (docs/design.md). fp16 keeps float32, whose range fp16 lacks.
        device = x.device.type
        if (torch.is_autocast_enabled(device)
                and torch.get_autocast_dtype(device) == torch.bfloat16):
            x = x.to(torch.bfloat16)
        return x


def token_embedding(vocab_size: int, d_model: int, pad_id: int) -> nn.Embedding:
    """An embedding initialised N(0, D^-1/2) so that x sqrt(D) gives unit scale; pad row zero."""
    emb = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
    nn.init.normal_(emb.weight, 0.0, d_model ** -0.5)
    with torch.no_grad():
        emb.weight[pad_id].zero_()
    return emb
