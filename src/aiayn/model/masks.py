"""Attention masks, all in one convention.

The rule: a mask is a bool tensor where **True means "may attend"**, the convention of
``torch.nn.functional.scaled_dot_product_attention``. Masks broadcast against attention scores
of shape (B, H, T_query, T_key):

- padding mask  (B, 1, 1, S): key position s is a real token (§3.2.3, "illegal connections").
- causal mask   (1, 1, T, T): query t may see keys 0..t (the decoder's look-ahead mask, §3.2.3).

``torch.nn.MultiheadAttention`` uses the opposite meaning (True = masked); convert with ``~``
only at that boundary.
"""

from __future__ import annotations

import torch
from torch import Tensor


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """(B, S) token ids -> (B, 1, 1, S) bool, True at real tokens."""
    return (tokens != pad_id)[:, None, None, :]


def causal_mask(size: int, device: torch.device | None = None, *, offset: int = 0) -> Tensor:
    """(1, 1, size, offset + size) bool: query i (at absolute position offset + i) sees keys <= it.

    ``offset`` is the number of cached positions before the queries (incremental decoding).
    """
    rows = torch.arange(size, device=device)[:, None] + offset
    cols = torch.arange(offset + size, device=device)[None, :]
    return (cols <= rows)[None, None]


def causal_padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """(B, T) -> (B, 1, T, T): causal and not a pad key; a pad query still sees itself.

    Used by the decoder-only model when prompts are left-padded. Letting every position see
    itself keeps each softmax row defined (a row with no allowed key would be NaN).
    """
    size = tokens.size(1)
    mask = causal_mask(size, tokens.device) & padding_mask(tokens, pad_id)
    return mask | torch.eye(size, dtype=torch.bool, device=tokens.device)
