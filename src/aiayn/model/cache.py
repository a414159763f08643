"""The incremental decoding state: an explicit object passed into and out of each decoder step.

Per decoder layer it holds the self-attention keys and values of every position decoded so far
and, for the encoder-decoder, the cross-attention keys and values of the source memory, computed
once per source. Modules keep no hidden inference state.

Shapes: B rows (sentences x beams), H heads, L capacity, S source length, Dh head dim.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from .masks import causal_mask


@dataclass
class LayerCache:
    """One layer's buffers. ``self_k``/``self_v`` are preallocated (B, H, L, Dh); the first
    ``DecoderCache.length`` positions are valid. ``cross_k``/``cross_v`` are (B, H, S, Dh) or None.
    ``pending`` holds the rows a reorder has chosen that the buffers have not yet gathered
    (they do at the layer's next append); ``spare`` the previous buffers, which the next
    gather writes into."""

    self_k: Tensor
    self_v: Tensor
    cross_k: Tensor | None = None
    cross_v: Tensor | None = None
    pending: Tensor | None = None
    spare: dict[str, Tensor] = field(default_factory=dict)

    def gather(self, length: int) -> None:
        """Carry out the pending reorder: the rows ``pending`` of the first ``length``
        positions, gathered into the spare buffers, which then take the buffers' place."""
        indices, self.pending = self.pending, None
        if indices is None:
            return
        rows = len(indices)
        for name in ("self_k", "self_v"):
            buf = getattr(self, name)
            spare = self.spare.get(name)
            if spare is None or spare.size(0) < rows:
                spare = buf.new_empty((rows,) + buf.shape[1:])
            spare = spare[:rows]
            torch.index_select(buf[:, :, :length], 0, indices, out=spare[:, :, :length])
            self.spare[name] = buf
            setattr(self, name, spare)


@dataclass
class DecoderCache:
    """Decoding state for a stack of decoder layers.

    Attributes:
        layers: one LayerCache per decoder layer.
        length: number of target positions already decoded (the next position's index).
        src_mask: (B / group, 1, 1, S) source padding mask, or None for a decoder-only model.
        src_rows: (B,) which source sentence each row decodes.
        group: consecutive rows that decode one sentence (the beams) and share one row of
            cross-attention keys and values, which are (B / group, H, S, Dh): each sentence's
            memory is stored and read once, its beams attending together as one query block.
    """

    layers: list[LayerCache]
    length: int = 0
    src_mask: Tensor | None = None
    src_rows: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    group: int = 1

    @classmethod
    def allocate(cls, n_layers: int, rows: int, n_heads: int, max_len: int, head_dim: int,
                 like: Tensor) -> "DecoderCache":
        """Empty self-attention buffers (rows, H, max_len, Dh) for each of ``n_layers`` layers,
        with the dtype and device of ``like``; one source sentence per row."""
        shape = (rows, n_heads, max_len, head_dim)
        layers = [LayerCache(like.new_empty(shape), like.new_empty(shape))
                  for _ in range(n_layers)]
        return cls(layers, src_rows=torch.arange(rows, device=like.device))

    @property
    def capacity(self) -> int:
        return self.layers[0].self_k.size(2) if self.layers else 0

    def append(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Write new self-attention keys/values (B, H, t, Dh) at ``length`` and return all
        valid keys/values (B, H, length + t, Dh). The caller advances ``length`` once per step."""
        cache = self.layers[layer]
        cache.gather(self.length)
        end = self.length + k.size(2)
        if end > self.capacity:
            raise ValueError(f"decoder cache is full ({self.capacity} positions); "
                             "allocate it with a larger max_len")
        cache.self_k[:, :, self.length:end] = k
        cache.self_v[:, :, self.length:end] = v
        return cache.self_k[:, :, :end], cache.self_v[:, :, :end]

    def causal_mask(self, t: int) -> Tensor | None:
        """The look-ahead mask of t new queries over the cached positions and themselves; None
        for one query, which may see every key so far."""
        return causal_mask(t, self.src_rows.device, offset=self.length) if t > 1 else None

    def memory(self, layer: int) -> tuple[Tensor, Tensor, Tensor | None]:
        """Cross-attention keys, values (B / group, H, S, Dh) and source mask of a layer."""
        cache = self.layers[layer]
        return cache.cross_k, cache.cross_v, self.src_mask

    def by_sentence(self, x: Tensor) -> Tensor:
        """(B, t, D) -> (B / group, group * t, D): the rows (beams) of one sentence as one block
        of queries, so that each sentence's memory is read once for all of them."""
        b, t, d = x.shape
        return x.reshape(b // self.group, self.group * t, d)

    def by_row(self, x: Tensor) -> Tensor:
        """The inverse of ``by_sentence``: (B / group, group * t, D) -> (B, t, D)."""
        n, gt, d = x.shape
        return x.reshape(n * self.group, gt // self.group, d)

    def reorder(self, indices: Tensor, *, group: int | None = None) -> "DecoderCache":
        """Keep rows ``indices`` (B',) in that order: beams that survive, finished sentences that
        leave, one row repeated per beam. ``group`` is the number of consecutive rows that
        decode one sentence from now on (default: as before; a search that decodes the first
        step with one row per sentence passes its beam size). Cross-attention keys and values
        are left alone when every group still decodes the same source sentence (a reorder
        among one sentence's beams).

        The self-attention keys and values move lazily: each layer gathers its rows at its next
        ``append``, just before its attention reads them, so that they are read while still in
        the processor's cache rather than gathered for every layer at the end of a step and
        read back from memory later (docs/benchmarks.md). Code that reads the buffers directly
        calls ``gather_pending`` first."""
        new_rows = self.src_rows.index_select(0, indices)
        for cache in self.layers:
            cache.pending = indices if cache.pending is None else cache.pending[indices]
        self._reorder_cross(new_rows, group or self.group)
        self.src_rows = new_rows
        return self

    def gather_pending(self) -> "DecoderCache":
        """Carry out every layer's pending reorder now."""
        for cache in self.layers:
            cache.gather(self.length)
        return self

    def _reorder_cross(self, new_rows: Tensor, g: int) -> None:
        """Select the cross-attention rows the new rows need, copying only when they change."""
        old_sentences = self.src_rows[::self.group]
        grouped = len(new_rows) % g == 0 and bool(
            (new_rows.view(-1, g) == new_rows.view(-1, g)[:, :1]).all())
        new_sentences = new_rows[::g] if grouped else new_rows
        self.group = g if grouped else 1
        if grouped and torch.equal(new_sentences, old_sentences):
            return  # a reorder among each sentence's own rows: nothing to move
        position = torch.full((int(old_sentences.max()) + 1,), -1, dtype=torch.long,
                              device=new_rows.device)
        position[old_sentences] = torch.arange(len(old_sentences), device=new_rows.device)
        select = position[new_sentences]
        for cache in self.layers:
            if cache.cross_k is not None:
                cache.cross_k = cache.cross_k.index_select(0, select)
                cache.cross_v = cache.cross_v.index_select(0, select)
        if self.src_mask is not None:
            self.src_mask = self.src_mask.index_select(0, select)
