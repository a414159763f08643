"""Several translation models decoding as one.

Each model encodes the source and keeps its own decoding cache; at every step the ensemble's
log-probability of a token is the average of the models' log-probabilities (Marian's rule: a
log-linear combination with equal weights). The models must share a vocabulary: the same
special ids and sizes here, the same tokenizer files where ``Translator`` loads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from ..errors import UserError
from ..model import DecoderCache, Transformer


@dataclass
class EnsembleCache:
    """One cache per model, reordered together."""

    caches: list[DecoderCache]

    def reorder(self, rows: Tensor, *, group: int | None = None) -> "EnsembleCache":
        for cache in self.caches:
            cache.reorder(rows, group=group)
        return self


class Ensemble(nn.Module):
    """Translation models with one vocabulary; a ``Seq2Seq`` for the searches whose steps
    return log-probabilities (``returns_log_probs``)."""

    returns_log_probs = True

    def __init__(self, models: list[Transformer]) -> None:
        super().__init__()
        if not models:
            raise UserError("an ensemble needs at least one model")
        first = models[0].cfg
        for model in models[1:]:
            c = model.cfg
            same = (c.vocab_size, c.target_vocab_size, c.pad_id, c.unk_id, c.bos_id, c.eos_id,
                    c.decoder_start)
            if same != (first.vocab_size, first.target_vocab_size, first.pad_id, first.unk_id,
                        first.bos_id, first.eos_id, first.decoder_start):
                raise UserError("the ensemble's models have different vocabularies; ensemble "
                                "only checkpoints trained on the same prepared data")
        self.members = nn.ModuleList(models)
        self.cfg = first.replace(max_len=min(m.cfg.max_len for m in models))

    def encode(self, src: Tensor) -> tuple[list[Tensor], Tensor, list[Tensor]]:
        """Every model's memory; the source mask (the same for all: it depends on the pads)."""
        memories = []
        for model in self.members:
            memory, src_mask, _ = model.encode(src)
            memories.append(memory)
        return memories, src_mask, []

    def init_cache(self, memory: list[Tensor], src_mask: Tensor, max_len: int, *,
                   beam: int = 1) -> EnsembleCache:
        return EnsembleCache([model.init_cache(m, src_mask, max_len, beam=beam)
                              for model, m in zip(self.members, memory)])

    def decode_step(self, tgt: Tensor, cache: EnsembleCache) -> Tensor:
        """tgt (rows, t) -> the average of the models' log-probabilities (rows, t, V)."""
        total = None
        for model, member_cache in zip(self.members, cache.caches):
            lprobs = model.decode_step(tgt, member_cache).float().log_softmax(-1)
            total = lprobs if total is None else total + lprobs
        return total / len(self.members)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced: the average of the models' log-probabilities (B, T, V)."""
        total = None
        for model in self.members:
            lprobs = model(src, tgt_in).float().log_softmax(-1)
            total = lprobs if total is None else total + lprobs
        return total / len(self.members)
