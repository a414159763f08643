"""Load an encoder classifier and label text: the Python API behind `aiayn classify`.

Example::

    classifier = Classifier.load("runs/topics")
    classifier.classify(["a sentence", "another"])   # [("label", probability), ...]
"""

from __future__ import annotations

from pathlib import Path

import torch

from .checkpoint import Checkpoint
from .data.corpus import token_batches
from .errors import UserError
from .model import EncoderModel


class Classifier:
    """An encoder with its classification head, its vocabulary and its labels."""

    def __init__(self, model: EncoderModel, tokenizer, labels: list[str]) -> None:
        self.model, self.tokenizer, self.labels = model.eval(), tokenizer, labels
        self.cfg = model.cfg

    @classmethod
    def load(cls, path: str | Path) -> "Classifier":
        checkpoint = Checkpoint.open(path)
        if checkpoint.arch != "encoder" or checkpoint.labels is None:
            raise UserError(f"{checkpoint.path} is not a classifier; train one with --arch "
                            "encoder --task classify")
        return cls(checkpoint.model(EncoderModel), checkpoint.tokenizer, checkpoint.labels)

    @torch.inference_mode()
    def classify(self, texts: list[str], *, batch_tokens: int = 4096
                 ) -> list[tuple[str, float]]:
        """The most probable label of each text and its probability, in input order."""
        limit = self.cfg.max_len - 1
        ids = [self.tokenizer.encode(t)[:limit] + [self.cfg.eos_id] for t in texts]
        out: list[tuple[str, float]] = [("", 0.0)] * len(ids)
        if not ids:
            return out
        sizes = torch.tensor([len(x) for x in ids]).numpy()
        for batch in token_batches(sizes, max(batch_tokens, int(sizes.max())), seed=0,
                                   epoch=0, shuffle=False):
            src = torch.full((len(batch), int(sizes[batch].max())), self.cfg.pad_id)
            for row, i in enumerate(batch):
                src[row, :len(ids[i])] = torch.tensor(ids[i])
            probs = self.model(src).logits.float().softmax(-1)
            best, index = probs.max(-1)
            for row, i in enumerate(batch):
                out[i] = (self.labels[int(index[row])], float(best[row]))
        return out
