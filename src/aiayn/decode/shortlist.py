"""A vocabulary shortlist: each decoding step scores only the target tokens a batch's source
tokens are likely to be translated into, plus the most frequent ones (Marian's lexical
shortlist, CTranslate2's vocabulary map). For a large target vocabulary the output projection
is most of a step's work; over a shortlist of a few thousand tokens it is a fraction of it.

Built from parallel text: per source token, the ``per_token`` target tokens with the highest
Dice coefficient, 2 c(s, t) / (c(s) + c(t)), where c counts the sentence pairs a token (or
both) occurs in; and the ``frequent`` target tokens found in most sentences. A batch's
shortlist is the union over its source tokens, the frequent ones and EOS; every other token
gets a logit of -inf, so the searches run unchanged over a smaller choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..errors import UserError


@dataclass
class Shortlist:
    """candidates (source vocabulary, per_token): target ids, -1 where fewer; frequent: ids;
    fingerprint: the tokenizer's, which it was built with."""

    candidates: Tensor
    frequent: Tensor
    fingerprint: str

    @classmethod
    def build(cls, pairs: Iterable[tuple[list[int], list[int]]], n_src: int, n_tgt: int,
              fingerprint: str, *, per_token: int = 50, frequent: int = 500,
              chunk: int = 4_000_000) -> "Shortlist":
        src_count = np.zeros(n_src, dtype=np.int64)
        tgt_count = np.zeros(n_tgt, dtype=np.int64)
        keys: list[np.ndarray] = []
        merged = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        pending = 0

        def merge(keys, merged):
            found, counts = np.unique(np.concatenate(keys), return_counts=True)
            both = np.concatenate([merged[0], found])
            weights = np.concatenate([merged[1], counts])
            ids, inverse = np.unique(both, return_inverse=True)
            return ids, np.bincount(inverse, weights=weights).astype(np.int64)

        for src, tgt in pairs:
            s, t = np.unique(np.asarray(src, dtype=np.int64)), np.unique(
                np.asarray(tgt, dtype=np.int64))
            src_count[s] += 1
            tgt_count[t] += 1
            keys.append((s[:, None] * n_tgt + t[None, :]).ravel())
            pending += len(s) * len(t)
            if pending > chunk:
                merged, keys, pending = merge(keys, merged), [], 0
        if keys:
            merged = merge(keys, merged)
        ids, counts = merged
        s, t = ids // n_tgt, ids % n_tgt
        dice = 2 * counts / (src_count[s] + tgt_count[t])
        order = np.lexsort((-dice, s))  # by source token, best first
        candidates = np.full((n_src, per_token), -1, dtype=np.int64)
        starts = np.searchsorted(s[order], np.arange(n_src))
        ends = np.searchsorted(s[order], np.arange(n_src), side="right")
        for token in np.flatnonzero(ends > starts):
            best = t[order[starts[token]:ends[token]]][:per_token]
            candidates[token, :len(best)] = best
        common = np.argsort(-tgt_count, kind="stable")[:frequent]
        return cls(torch.from_numpy(candidates), torch.from_numpy(common.copy()), fingerprint)

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file
        save_file({"candidates": self.candidates.contiguous(),
                   "frequent": self.frequent.contiguous()}, str(path),
                  metadata={"fingerprint": self.fingerprint})

    @classmethod
    def load(cls, path: str | Path, fingerprint: str | None = None) -> "Shortlist":
        """A shortlist file; with ``fingerprint``, refused unless built with that
        vocabulary."""
        from safetensors import safe_open
        p = Path(path)
        if p.is_dir():
            raise UserError(f"--shortlist {p}: is a directory; give the file "
                            "`aiayn shortlist` wrote")
        if not p.is_file():
            raise UserError(f"--shortlist {p}: no such file; build one with `aiayn shortlist`")
        try:
            with safe_open(str(p), framework="pt") as f:
                found = (f.metadata() or {}).get("fingerprint")
                candidates, common = f.get_tensor("candidates"), f.get_tensor("frequent")
        except Exception:  # safetensors raises several kinds for a file not its own
            raise UserError(f"--shortlist {p}: not a shortlist file; build one with "
                            "`aiayn shortlist`") from None
        shortlist = cls(candidates, common, found or "")
        if fingerprint is not None and not shortlist.fits(fingerprint):
            raise UserError(f"--shortlist {p} was built for another vocabulary; build it with "
                            "this checkpoint")
        return shortlist

    def fits(self, fingerprint: str) -> bool:
        """Whether it was built with the vocabulary of this fingerprint."""
        return self.fingerprint == fingerprint

    def vocabulary(self, sources: list[list[int]], extra: Iterable[int] = ()) -> Tensor:
        """The sorted target ids a batch of sources (ids) decodes over."""
        src = torch.tensor(sorted({i for row in sources for i in row
                                   if 0 <= i < len(self.candidates)}), dtype=torch.long)
        ids = torch.cat([self.candidates[src].reshape(-1), self.frequent,
                         torch.tensor(list(extra), dtype=torch.long)])
        return torch.unique(ids[ids >= 0])


class Shortlisted:
    """A translation model whose decoding steps score only ``vocab``'s target ids (the rest
    -inf): the output projection multiplies by those rows of its weight only. A ``Seq2Seq``
    (``aiayn.decode.search``) around an inference ``Transformer`` (float32 or int8) or its
    ``CompiledSteps``, whose steps of many rows then run compiled over the shortlist; an int8
    model's shortlisted rows are its int8 weights, scaled back to float32."""

    returns_log_probs = True

    def __init__(self, model, vocab: Tensor) -> None:
        self.model, self.cfg, self.vocab = model, model.cfg, vocab
        self.compiled = model if hasattr(model, "shortlist_step") else None
        self.inner = model.model if self.compiled is not None else model
        proj = self.inner.output_proj
        if hasattr(proj, "weight_int8"):  # aiayn.runtime.cpu.Int8Linear
            weight = proj.weight_int8[vocab].float() * proj.scale[vocab, None]
        else:
            weight = proj.weight.detach()[vocab]
        self.weight = weight.contiguous()  # (K, D)
        self.bias = (torch.zeros(len(vocab), dtype=self.weight.dtype, device=vocab.device)
                     if proj.bias is None else proj.bias.detach()[vocab].contiguous())  # (K,)

    def encode(self, src: Tensor):
        return self.model.encode(src)

    def init_cache(self, memory: Tensor, src_mask: Tensor, max_len: int, *, beam: int = 1):
        return self.model.init_cache(memory, src_mask, max_len, beam=beam)

    def decode_step(self, tgt: Tensor, cache) -> Tensor:
        """tgt (rows, t) -> log-probabilities (rows, t, V), -inf outside the shortlist."""
        short = None
        if self.compiled is not None:
            short = self.compiled.shortlist_step(tgt, cache, self.weight, self.bias)
        if short is None:
            model = self.inner
            x, _, _ = model.decoder(model.tgt_embed(tgt, offset=cache.length), cache=cache)
            short = F.linear(x, self.weight, self.bias).float().log_softmax(-1)  # (rows, t, K)
        out = short.new_full((*short.shape[:-1], self.cfg.target_vocab_size), float("-inf"))
        out[..., self.vocab] = short
        return out
