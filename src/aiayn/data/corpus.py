"""Memory-mapped parallel corpora and token-based batching (§5.1: batches of similar length).

A batch is a set of sentence indices whose padded size, (sentences) x (longest side + 1), stays
within ``max_tokens``. Sentences are sorted by length with random tie-breaking, cut into batches,
and the batch order is shuffled; both depend only on (seed, epoch), so any position in training
is reproducible from (epoch, batch index) alone.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ..config import ModelConfig
from ..errors import UserError
from ..integrity import verify

# The files of a prepared data directory (written by ``aiayn prepare``), named once here
TOKENIZER, STATS = "spm.model", "stats.json"


def ids_file(split: str, side: str) -> str:
    """Every sentence's token ids, concatenated (uint16 or uint32)."""
    return f"{split}.{side}.ids.npy"


def offsets_file(split: str, side: str) -> str:
    """int64, n + 1 offsets: sentence i is ids[offsets[i]:offsets[i + 1]]."""
    return f"{split}.{side}.offsets.npy"


# word alignments of the training pairs (`aiayn prepare --alignments`), as piece links: each
# link two numbers, (source piece, target piece), in ``ids_file(split, ALIGNMENTS)``, with
# offsets as the id files have
ALIGNMENTS = "align"


def text_file(split: str, side: str) -> str:
    """The kept sentences as text (validation only: the BLEU references)."""
    return f"{split}.{side}.txt"


class ParallelCorpus:
    """One prepared split, memory-mapped: sentence i is ``src(i)``, ``tgt(i)`` (ids, no
    specials)."""

    def __init__(self, data_dir: str | Path, split: str) -> None:
        data_dir = Path(data_dir)
        self.sides = {}
        verify(data_dir, [name(split, side) for name in (ids_file, offsets_file)
                          for side in ("src", "tgt")] + [STATS])
        for side in ("src", "tgt"):
            ids_path = data_dir / ids_file(split, side)
            off_path = data_dir / offsets_file(split, side)
            if not ids_path.is_file() or not off_path.is_file():
                raise UserError(f"{data_dir}: no prepared {split!r} split ({ids_path.name} is "
                                "missing); run `aiayn prepare` first")
            try:
                ids = np.load(ids_path, mmap_mode="r", allow_pickle=False)
                offsets = np.load(off_path, mmap_mode="r", allow_pickle=False)
            except (ValueError, OSError) as err:
                raise UserError(f"{ids_path}: corrupt prepared data ({err}); "
                                "run `aiayn prepare` again") from None
            self.sides[side] = (ids, offsets)
        src_offsets, tgt_offsets = self.sides["src"][1], self.sides["tgt"][1]
        if len(src_offsets) != len(tgt_offsets):
            raise UserError(f"{data_dir}: {split} source and target counts differ; "
                            "run `aiayn prepare` again")
        # the only per-sentence array in memory (2 bytes a sentence; the ids stay on disk):
        # the longer side in model positions, source + EOS or target + BOS/EOS
        sizes = np.maximum(np.diff(src_offsets), np.diff(tgt_offsets)) + 1
        self.sizes = sizes.astype(np.uint16 if sizes.max(initial=0) < 2 ** 16 else np.int32)
        # the word alignments as piece links, where `prepare` was given them
        self.links: tuple[np.ndarray, np.ndarray] | None = None
        links_path = data_dir / ids_file(split, ALIGNMENTS)
        if links_path.is_file():
            verify(data_dir, [ids_file(split, ALIGNMENTS), offsets_file(split, ALIGNMENTS)])
            try:
                self.links = (np.load(links_path, mmap_mode="r", allow_pickle=False),
                              np.load(data_dir / offsets_file(split, ALIGNMENTS),
                                      mmap_mode="r", allow_pickle=False))
            except (ValueError, OSError) as err:
                raise UserError(f"{links_path}: corrupt prepared data ({err}); "
                                "run `aiayn prepare` again") from None
            if len(self.links[1]) != len(src_offsets):
                raise UserError(f"{data_dir}: {split} alignments and sentences differ in "
                                "number; run `aiayn prepare` again")
        stats = data_dir / STATS
        # a classification corpus: the target side is one label index per text
        self.labels = (json.loads(stats.read_text()).get("labels") if stats.is_file()
                       else None)

    def __len__(self) -> int:
        return len(self.sizes)

    def lengths(self, side: str, count: int | None = None) -> np.ndarray:
        """Token counts (no specials) of the first ``count`` sentences of one side."""
        offsets = self.sides[side][1][: None if count is None else count + 1]
        return np.diff(offsets)

    def ids(self, side: str, index: int) -> np.ndarray:
        ids, offsets = self.sides[side]
        return ids[offsets[index]:offsets[index + 1]]

    def rows(self, side: str, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sentences ``indices`` of one side, concatenated, and their lengths: one gather from
        the mapped file (a slice a sentence costs ~7 us of Python each, 7 ms a batch of 25,000
        tokens, while a GPU waits for it)."""
        ids, offsets = self.sides[side]
        indices = np.asarray(indices, dtype=np.int64)
        starts = np.asarray(offsets[indices], dtype=np.int64)
        lengths = np.asarray(offsets[indices + 1], dtype=np.int64) - starts
        # position k of the concatenation is file position start[row] + (k - row's first k)
        positions = np.arange(int(lengths.sum())) + np.repeat(starts - (np.cumsum(lengths)
                                                                         - lengths), lengths)
        return np.asarray(ids[positions]), lengths

    def collate(self, indices: np.ndarray, cfg: ModelConfig) -> "Batch":
        """Pad a batch with the model's special ids: src = ids + EOS; tgt_in = start (BOS, or
        pad for Marian) + ids; tgt_out = ids + EOS. A classification corpus gives tgt_out
        (B, 1) label indices (and ``pad_id`` -1: every label counts)."""
        srcs, src_lengths = self.rows("src", indices)
        tgts, tgt_lengths = self.rows("tgt", indices)
        pad = cfg.pad_id
        src = padded_rows(srcs, src_lengths, pad, last=cfg.eos_id)
        if self.labels is not None:  # text + EOS; the label index, no padding (pad_id -1)
            first = np.cumsum(tgt_lengths) - tgt_lengths
            return Batch(src, src, torch.from_numpy(tgts[first].astype(np.int64)[:, None]), -1)
        tgt_in = padded_rows(tgts, tgt_lengths, pad, first=cfg.start_id)
        tgt_out = padded_rows(tgts, tgt_lengths, pad, last=cfg.eos_id)
        b, t = tgt_in.shape
        alignment = None
        if self.links is not None:
            alignment = torch.zeros(b, t, src.size(1))
            for row, (i, s, x) in enumerate(zip(indices, src_lengths, tgt_lengths)):
                self.alignment(int(i), int(s), int(x), alignment[row], shift=cfg.aligner)
        return Batch(src, tgt_in, tgt_out, pad, alignment)

    def alignment(self, index: int, n_src: int, n_tgt: int, out: Tensor, *,
                  shift: bool = False) -> Tensor:
        """Sentence ``index``'s links written into ``out``, a zeroed (rows, cols) tensor, as
        attention targets: row t (the query that predicts target piece t) spread evenly over
        the source pieces linked to it; the EOS row on the source's EOS; rows of unlinked
        pieces zero. ``shift``: row t + 1 (the query whose input is piece t) takes piece t's
        links instead, and no row the EOS (``ModelConfig.aligner``)."""
        assert self.links is not None
        ids, offsets = self.links
        pairs = torch.from_numpy(np.asarray(ids[offsets[index]:offsets[index + 1]],
                                            dtype=np.int64).reshape(-1, 2))
        out[pairs[:, 1] + int(shift), pairs[:, 0]] = 1.0
        if not shift:
            out[n_tgt, n_src] = 1.0
        return out.div_(out.sum(1, keepdim=True).clamp_min(1.0))


def padded_rows(flat: np.ndarray, lengths: np.ndarray, pad: int, *, first: int | None = None,
                last: int | None = None) -> Tensor:
    """The rows (``flat``, cut at ``lengths``) as one (rows, longest + 1) int64 tensor padded
    with ``pad``, each row after ``first`` or followed by ``last`` (one of them). Written by
    numpy in whole-array passes: a loop over rows costs ~40 us a sentence, 27 ms a batch of
    25,000 tokens."""
    rows, lead = len(lengths), int(first is not None)
    out = np.full((rows, int(lengths.max(initial=0)) + 1), pad, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    if len(flat):
        which = np.repeat(np.arange(rows), lengths)
        where = np.arange(len(flat)) - np.repeat(starts, lengths) + lead
        out[which, where] = flat
    if first is not None:
        out[:, 0] = first
    if last is not None:
        out[np.arange(rows), lengths] = last
    return torch.from_numpy(out)


def split_lines(text: str) -> list[str]:
    """Text as sentences, one a line: split at "\n" alone, a CRLF's "\r" dropped. Other
    characters Python counts as line breaks (U+2028, U+0085, form feed...) stay inside their
    line, so that every input line is one sentence."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


@dataclass
class Batch:
    src: Tensor  # (B, S)
    tgt_in: Tensor  # (B, T)
    tgt_out: Tensor  # (B, T)
    pad_id: int
    alignment: Tensor | None = None  # (B, T, S): guided alignment's targets, rows sum to 1 or 0

    @functools.cached_property
    def target_tokens(self) -> int:
        return int((self.tgt_out != self.pad_id).sum())

    def to(self, device: torch.device | str) -> "Batch":
        """The batch on ``device``, its token count taken here first (counting it there would
        wait for the device). To a GPU the copies leave from pinned memory without waiting."""
        device = torch.device(device)

        def move(t: Tensor) -> Tensor:
            if device.type == "cuda" and t.device.type == "cpu":
                return t.pin_memory().to(device, non_blocking=True)
            return t.to(device)
        moved = Batch(move(self.src), move(self.tgt_in), move(self.tgt_out), self.pad_id,
                      None if self.alignment is None else move(self.alignment))
        moved.__dict__["target_tokens"] = self.target_tokens
        return moved

    def halves(self) -> list["Batch"]:
        """The batch as two of half its sentences (one, if it holds only one)."""
        n = self.src.size(0)
        if n < 2:
            return [self]
        cut = (n + 1) // 2
        return [Batch(self.src[rows], self.tgt_in[rows], self.tgt_out[rows], self.pad_id,
                      None if self.alignment is None else self.alignment[rows])
                for rows in (slice(0, cut), slice(cut, n))]


def token_batches(sizes: np.ndarray, max_tokens: int, *, seed: int, epoch: int,
                  shuffle: bool = True) -> list[np.ndarray]:
    """Cut sentence indices into batches whose padded size (count x longest) <= max_tokens.

    Every index appears in exactly one batch. With ``shuffle``, ties in length are broken at
    random and the batch order is shuffled, both from (seed, epoch).
    """
    longest = int(sizes.max()) if len(sizes) else 0
    if longest > max_tokens:
        raise UserError(f"--max-tokens ({max_tokens}) is smaller than the longest sentence "
                        f"({longest} tokens); raise --max-tokens or prepare with a lower --max-len")
    rng = np.random.default_rng([seed, epoch])
    index = np.int32 if len(sizes) < 2 ** 31 else np.int64
    order = (rng.permutation(len(sizes)) if shuffle else np.arange(len(sizes))).astype(index)
    order = order[np.argsort(sizes[order], kind="stable")]  # ascending length, random ties
    sorted_sizes = sizes[order]
    batches, start = [], 0
    n = len(order)
    while start < n:
        # sizes ascend, so the batch's longest is its last; grow while count x longest fits
        end = start + 1
        step = 64
        while end < n:
            probe = min(end + step, n)
            if (probe - start) * int(sorted_sizes[probe - 1]) <= max_tokens:
                end = probe
                step *= 2
            elif step > 1:
                step //= 2
            else:
                break
        batches.append(order[start:end])
        start = end
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def read_stats(data_dir: str | Path) -> dict:
    path = Path(data_dir) / STATS
    if not path.is_file():
        raise UserError(f"{data_dir}: not a prepared data directory (no {STATS}); "
                        "run `aiayn prepare --out DIR` first")
    return json.loads(path.read_text())
