"""Text in and out of a model: the one path between strings and token ids.

Every caller that turns text into ids or ids into text goes through a ``TextCodec``:
translation, scoring, attention maps, evaluation, training's validation BLEU and every route
of the server. Encoding a source returns a ``Source``, the ids the model reads plus what
decoding needs to give the text back (the placeholders masked out of it, for a model trained
with ``prepare --placeholders``); decoding takes the hypothesis and that ``Source``. So the
command line, the Python API and the service cannot drift apart.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

from . import placeholders as ph
from .config import ModelConfig
from .data.tokenizer import AnyTokenizer


@dataclass(frozen=True)
class Source:
    """A source sentence as the model reads it.

    Attributes:
        text: the sentence as given.
        ids: its subword ids plus EOS (only EOS for a blank sentence).
        placeholders: the placeholders masked out of it, in order; decoding puts them back.
    """

    text: str
    ids: list[int]
    placeholders: tuple[str, ...] = ()

    @property
    def blank(self) -> bool:
        return len(self.ids) <= 1


class TextCodec:
    """Encodes sentences for a model and decodes its outputs back to text.

    Args:
        tokenizer: the checkpoint's vocabulary.
        cfg: the model's config (its length limit and special ids).
        placeholders: mask placeholders as the training data was (``aiayn.placeholders``).
        warn: where warnings go (a line each); stderr by default.
    """

    def __init__(self, tokenizer: AnyTokenizer, cfg: ModelConfig, *, placeholders: bool = False,
                 warn: Callable[[str], None] | None = None) -> None:
        self.tokenizer, self.cfg, self.placeholders = tokenizer, cfg, placeholders
        self.warn = warn or (lambda msg: print(f"aiayn: warning: {msg}", file=sys.stderr))

    def encode(self, text: str, line: int | None = None) -> Source:
        """A source sentence's ids plus EOS, truncated (with a warning naming ``line``) to
        the model's length limit."""
        found: list[str] = []
        masked = text
        if self.placeholders:
            masked, _, found = ph.mask(text)
        if not masked.strip():
            return Source(text, [self.cfg.eos_id], tuple(found))
        ids = self.tokenizer.encode(masked)
        limit = self.cfg.max_len - 1
        if len(ids) > limit:
            where = f"line {line}: " if line is not None else ""
            self.warn(f"{where}input of {len(ids)} tokens truncated to {limit}")
            ids = ids[:limit]
        return Source(text, ids + [self.cfg.eos_id], tuple(found))

    def encode_target(self, text: str, source: Source, *, limit: int | None = None) -> list[int]:
        """A target sentence's ids (no EOS) as the model would write it after ``source``:
        its placeholders take the sentinels of the source's. At most ``limit`` ids (by default
        the model's length limit less EOS)."""
        if self.placeholders:
            text = ph.mask(source.text, text)[1] or ""
        limit = self.cfg.max_len - 1 if limit is None else limit
        return self.tokenizer.encode_target(text)[:limit] if text.strip() else []

    def decode(self, ids: list[int], source: Source) -> str:
        """The text of an output for ``source``, its placeholders put back."""
        text = self.tokenizer.decode(ids)
        return ph.restore(text, list(source.placeholders)) if self.placeholders else text
