"""Several translation models decoding as one.

Each model encodes the source and keeps its own decoding cache; at every step the ensemble's
log-probability of a token is the average of the models' log-probabilities (Marian's rule: a
log-linear combination with equal weights). The models must share a vocabulary: the same
special ids and sizes here, the same tokenizer files where ``Translator`` loads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from ..errors import UserError
from ..model import DecoderCache


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

    def __init__(self, models: list[Any]) -> None:
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

    @property
    def models(self) -> list[Any]:
        """The members, each a ``Seq2Seq`` (as ``Transformer`` and ``CompiledSteps`` are)."""
        return list(self.members)

    def encode(self, src: Tensor) -> tuple[list[Tensor], Tensor, list[Tensor]]:
        """Every model's memory; the source mask (the same for all: it depends on the pads)."""
        found = [model.encode(src) for model in self.models]
        return [memory for memory, _, _ in found], found[0][1], []

    def init_cache(self, memory: list[Tensor], src_mask: Tensor, max_len: int, *,
                   beam: int = 1) -> EnsembleCache:
        return EnsembleCache([model.init_cache(m, src_mask, max_len, beam=beam)
                              for model, m in zip(self.models, memory)])

    def decode_step(self, tgt: Tensor, cache: EnsembleCache) -> Tensor:
        """tgt (rows, t) -> the average of the models' log-probabilities (rows, t, V)."""
        total = sum(model.decode_step(tgt, member_cache).float().log_softmax(-1)
                    for model, member_cache in zip(self.models, cache.caches))
        return total / len(self.models)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced: the average of the models' log-probabilities (B, T, V)."""
        total = sum(model(src, tgt_in).float().log_softmax(-1) for model in self.models)
        return total / len(self.models)
