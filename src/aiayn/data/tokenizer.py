"""The shared subword vocabulary (§5.1: byte-pair encoding, shared source-target), via SentencePiece.

Special ids are fixed in ``aiayn.config`` (pad 0, unk 1, bos 2, eos 3), ``ModelConfig``'s
defaults.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterable

import sentencepiece as spm

from ..config import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from ..errors import UserError


class Tokenizer:
    """Text <-> ids with a SentencePiece model; thin on purpose."""

    def __init__(self, model: spm.SentencePieceProcessor, path: Path | None = None) -> None:
        self.sp, self.path = model, path

    @classmethod
    def load(cls, path: str | Path) -> "Tokenizer":
        path = Path(path)
        if not path.is_file():
            raise UserError(f"{path}: tokenizer model not found")
        model = spm.SentencePieceProcessor()
        try:
            model.Load(str(path))
        except (OSError, RuntimeError) as err:
            raise UserError(f"{path}: not a SentencePiece model ({err})") from None
        return cls(model, path)

    @property
    def vocab_size(self) -> int:
        return self.sp.GetPieceSize()

    def encode(self, text: str) -> list[int]:
        return self.sp.EncodeAsIds(text)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return self.sp.Encode(texts, out_type=int)

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.DecodeIds([i for i in ids if i > EOS_ID])

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.sp.IdToPiece(int(i)) for i in ids]


def train_tokenizer(sentences: Iterable[str], prefix: Path, *, vocab_size: int,
                    model_type: str = "bpe", sample_sentences: int = 2_000_000) -> Tokenizer:
    """Train on an iterator of sentences; writes ``prefix.model`` and returns the tokenizer.

    ``sample_sentences`` bounds the memory SentencePiece uses on a large corpus (it samples).
    """
    options = dict(
        sentence_iterator=iter(sentences), model_prefix=str(prefix), vocab_size=vocab_size,
        model_type=model_type, character_coverage=1.0, pad_id=PAD_ID, unk_id=UNK_ID,
        bos_id=BOS_ID, eos_id=EOS_ID, input_sentence_size=sample_sentences,
        shuffle_input_sentence=True, hard_vocab_limit=False, num_threads=2, minloglevel=2,
    )
    with open(os.devnull, "w") as quiet:
        try:
            sys.stderr.fileno()  # SentencePiece silences its log by redirecting this descriptor
            options["logstream"] = quiet
        except (AttributeError, OSError, ValueError):
            pass  # no real stderr (captured, notebook): minloglevel keeps it mostly quiet
        try:
            spm.SentencePieceTrainer.Train(**options)
        except RuntimeError as err:
            raise UserError(f"SentencePiece could not build a {vocab_size}-piece vocabulary: "
                            f"{err}; try a smaller --vocab-size") from None
    return Tokenizer.load(prefix.with_suffix(".model"))
