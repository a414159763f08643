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
    """One layer's buffers. ``self_k``/``self_v`` are preallocated (slots, H, L, Dh): position p
    of a row's keys and values lies in the slot ``DecoderCache.ancestry`` names (its own row
    when that is None); the first ``DecoderCache.length`` positions are valid. ``cross_k`` /
    ``cross_v`` are (B / group, H, S, Dh) or None."""

    self_k: Tensor
    self_v: Tensor
    cross_k: Tensor | None = None
    cross_v: Tensor | None = None


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
        ancestry: (B, L) for each row and position, the slot of the buffers that holds that
            position's keys and values (the row's ancestor when it was written), or None when
            every row's keys and values lie in its own slot (no reorder since the last
            ``gather_pending``).
    """

    layers: list[LayerCache]
    length: int = 0
    src_mask: Tensor | None = None
    src_rows: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    group: int = 1
    ancestry: Tensor | None = None
    _scratch: dict[str, Tensor] = field(default_factory=dict, repr=False)
    _index: tuple[tuple[int, int], Tensor] | None = field(default=None, repr=False)

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
        valid keys/values (B, H, length + t, Dh), each row's own history. After a reorder they
        are gathered into buffers that the next ``append`` (of any layer) overwrites. The
        caller advances ``length`` once per step."""
        rows, end = k.size(0), self.length + k.size(2)
        self._make_room(rows, end)
        cache = self.layers[layer]
        cache.self_k[:rows, :, self.length:end] = k  # each row writes into its own slot
        cache.self_v[:rows, :, self.length:end] = v
        if self.ancestry is None:
            return cache.self_k[:rows, :, :end], cache.self_v[:rows, :, :end]
        index = self._history_index(rows, end)
        return self._gather("k", cache.self_k, index, end), self._gather("v", cache.self_v, index,
                                                                         end)

    def history_slots(self, rows: int) -> Tensor:
        """For a step of ``rows`` rows that writes position ``length`` into each row's own slot:
        the slot that holds each row's keys and values at every position so far, the row's own
        at ``length``, as a new contiguous (rows, length + 1) tensor. Grows the buffers first
        where a reorder added rows. For code that reads the buffers through the ancestry itself
        (the compiled step of many rows, ``aiayn.runtime.compiled``)."""
        end = self.length + 1
        self._make_room(rows, end)
        own = torch.arange(rows, device=self.src_rows.device)
        if self.ancestry is None:
            return own[:, None].expand(rows, end).contiguous()
        self.ancestry[:, self.length] = own
        return self.ancestry[:, :end].contiguous()

    def _make_room(self, rows: int, end: int) -> None:
        """Check that positions up to ``end`` fit, and grow the buffers to ``rows`` slots where a
        reorder added rows (without one, more rows than slots is a caller's mistake)."""
        if end > self.capacity:
            raise ValueError(f"decoder cache is full ({self.capacity} positions); "
                             "allocate it with a larger max_len")
        slots = self.layers[0].self_k.size(0)
        if rows > slots:
            if self.ancestry is None:  # rows only grow through a reorder
                raise ValueError(f"{rows} rows of keys and values for a cache of {slots} rows")
            self._add_slots(rows)

    def _history_index(self, rows: int, end: int) -> Tensor:
        """Rows of the buffers viewed as (slots * H * L, Dh) that make up every row's history,
        in (row, head, position) order; made once a step and shared by the layers."""
        if self._index is not None and self._index[0] == (rows, end):
            return self._index[1]
        k = self.layers[0].self_k
        _, heads, capacity, _ = k.shape
        assert self.ancestry is not None, "the cache has no self-attention history yet"
        self.ancestry[:, self.length:end] = torch.arange(rows, device=k.device)[:, None]
        slots = self.ancestry[:, :end]  # (B, end)
        heads_at = torch.arange(heads, device=k.device)[None, :, None]
        positions = torch.arange(end, device=k.device)
        index = ((slots[:, None, :] * heads + heads_at) * capacity + positions).reshape(-1)
        self._index = ((rows, end), index)
        return index

    def _gather(self, name: str, buffer: Tensor, index: Tensor, end: int) -> Tensor:
        """The rows ``index`` of ``buffer`` as (B, H, end, Dh), in a scratch buffer that all
        layers share: written and read while it is still in the processor's caches, where a
        reordered copy of each layer's whole buffer came back from memory (docs/design.md,
        "Decoding")."""
        _, heads, _, head_dim = buffer.shape
        scratch = self._scratch.get(name)
        if scratch is None or scratch.numel() < index.numel() * head_dim:
            scratch = buffer.new_empty(buffer.numel())
            self._scratch[name] = scratch
        out = scratch[:index.numel() * head_dim].view(-1, head_dim)
        torch.index_select(buffer.view(-1, head_dim), 0, index, out=out)
        return out.view(-1, heads, end, head_dim)

    def _add_slots(self, rows: int) -> None:
        """Grow every layer's buffers to ``rows`` slots, keeping the positions written so far."""
        for cache in self.layers:
            for name in ("self_k", "self_v"):
                old = getattr(cache, name)
                new = old.new_empty((rows,) + old.shape[1:])
                new[:old.size(0), :, :self.length] = old[:, :, :self.length]
                setattr(cache, name, new)
        self._scratch.clear()

    def causal_mask(self, t: int) -> Tensor | None:
        """The look-ahead mask of t new queries over the cached positions and themselves; None
        for one query, which may see every key so far."""
        return causal_mask(t, self.src_rows.device, offset=self.length) if t > 1 else None

    def memory(self, layer: int) -> tuple[Tensor, Tensor, Tensor | None]:
        """Cross-attention keys, values (B / group, H, S, Dh) and source mask of a layer."""
        cache = self.layers[layer]
        assert cache.cross_k is not None and cache.cross_v is not None, "no memory projected"
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

        The self-attention keys and values do not move: the ancestry records, for each new row
        and position, the slot that holds them, and each layer's ``append`` gathers them from
        there for its attention. A beam search thereby reads each layer's buffers once a step
        instead of also copying them into a new order, and the copy it reads is still in the
        processor's cache (docs/design.md, "Decoding"). Code that reads the buffers directly calls
        ``gather_pending`` first."""
        new_rows = self.src_rows.index_select(0, indices)
        if self.ancestry is None:
            slots = torch.arange(len(self.src_rows), device=indices.device)
            self.ancestry = slots[:, None].expand(-1, self.capacity).index_select(0, indices)
        else:
            self.ancestry = self.ancestry.index_select(0, indices)
        self._index = None
        self._reorder_cross(new_rows, group or self.group)
        self.src_rows = new_rows
        return self

    def gather_pending(self) -> "DecoderCache":
        """Move every row's keys and values into its own slot now, as if no reorder had
        happened: the buffers can then be read directly, row by row."""
        if self.ancestry is None:
            return self
        rows = len(self.src_rows)
        index = self._history_index(rows, self.length) if self.length else None
        for cache in self.layers:
            for name, short in (("self_k", "k"), ("self_v", "v")):
                old = getattr(cache, name)
                new = old.new_empty((rows,) + old.shape[1:])
                if index is not None:
                    new[:, :, :self.length] = self._gather(short, old, index, self.length)
                setattr(cache, name, new)
        self.ancestry, self._index = None, None
        self._scratch.clear()
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
            if cache.cross_k is not None and cache.cross_v is not None:
                cache.cross_k = cache.cross_k.index_select(0, select)
                cache.cross_v = cache.cross_v.index_select(0, select)
        if self.src_mask is not None:
            self.src_mask = self.src_mask.index_select(0, select)
