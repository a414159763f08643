"""Text in and out of a model: the one path between strings and token ids.

Every caller that turns text into ids or ids into text goes through a ``TextCodec``:
translation, scoring, attention maps, evaluation, training's validation BLEU and every route
of the server. Encoding a source returns a ``Source``, the ids the model reads plus what
decoding needs to give the text back (the placeholders masked out of it, for a model trained
with ``prepare --placeholders``); decoding takes the hypothesis and that ``Source``. So the
command line, the Python API and the service cannot drift apart.

No input is cut. ``encode_text`` gives a line as it is when it fits the model's length limit;
a longer one is split into its sentences (``sentences``: sentencex, the segmenter the server
splits paragraphs with), and a sentence still past the limit into pieces between words, each
translated and the translations joined back with spaces (``join``), with one warning per such
sentence.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

from sentencex import segment

from . import placeholders as ph
from .config import ModelConfig
from .data.tokenizer import AnyTokenizer
from .decode.search import Hypothesis


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


def sentences(text: str, language: str) -> list[str]:
    """The sentences of one line of text (sentencex's rules for ``language``), stripped; a
    placeholder is never cut (``placeholders.unbroken``)."""
    pieces = ph.unbroken(lambda t: list(segment(language, t)), text)
    return [s.strip() for s in pieces if s.strip()]


def join(translations: list[str]) -> str:
    """Translations of a line's sentences or pieces, as one line."""
    return " ".join(t for t in translations if t)


class TextCodec:
    """Encodes sentences for a model and decodes its outputs back to text.

    Args:
        tokenizer: the checkpoint's vocabulary.
        cfg: the model's config (its length limit and special ids).
        placeholders: mask placeholders as the training data was (``aiayn.placeholders``).
        language: the source language's code, for sentence splitting ("en" when unknown).
        warn: where warnings go (a line each); stderr by default.
    """

    def __init__(self, tokenizer: AnyTokenizer, cfg: ModelConfig, *, placeholders: bool = False,
                 language: str = "en", warn: Callable[[str], None] | None = None) -> None:
        self.tokenizer, self.cfg, self.placeholders = tokenizer, cfg, placeholders
        self.language = language
        self.warn = warn or (lambda msg: print(f"aiayn: warning: {msg}", file=sys.stderr))

    @property
    def limit(self) -> int:
        """The most source tokens the model reads, EOS excluded."""
        return self.cfg.max_len - 1

    def fits(self, text: str) -> bool:
        """Whether the model reads ``text`` whole as one source."""
        return len(self._source(text).ids) - 1 <= self.limit

    def _source(self, text: str) -> Source:
        """``text``'s ids plus EOS, however many there are."""
        found: list[str] = []
        masked = text
        if self.placeholders:
            masked, _, found = ph.mask(text)
        if not masked.strip():
            return Source(text, [self.cfg.eos_id], tuple(found))
        return Source(text, self.tokenizer.encode(masked) + [self.cfg.eos_id], tuple(found))

    def encode(self, text: str, line: int | None = None) -> Source:
        """A source sentence's ids plus EOS, cut (with a warning naming ``line``) to the
        model's length limit: for scores and attention maps, which read one sentence whole.
        Translation reads ``encode_text``, which cuts nothing."""
        source = self._source(text)
        if len(source.ids) - 1 > self.limit:
            where = f"line {line}: " if line is not None else ""
            self.warn(f"{where}input of {len(source.ids) - 1} tokens truncated to {self.limit}")
            source = Source(text, source.ids[:self.limit] + [self.cfg.eos_id],
                            source.placeholders)
        return source

    def encode_text(self, text: str, line: int | None = None, *,
                    split: bool = False) -> list[Source]:
        """A line as the sources translated for it, whose translations ``join`` gives back as
        one line: the line itself when it fits the model's length limit (``split``: its
        sentences in any case); else its sentences, and a sentence still too long in pieces
        cut between words, with one warning naming ``line``."""
        whole = self._source(text)
        if not split and len(whole.ids) - 1 <= self.limit:
            return [whole]
        out = []
        for sentence in sentences(text, self.language) or [text]:
            source = self._source(sentence)
            if len(source.ids) - 1 <= self.limit:
                out.append(source)
                continue
            pieces = [self._source(piece) for piece in self._pieces(sentence)]
            where = f"line {line}: " if line is not None else ""
            self.warn(f"{where}a sentence of {len(source.ids) - 1} tokens is longer than the "
                      f"model reads ({self.limit}); it is translated in {len(pieces)} pieces "
                      "cut between words")
            out += pieces
        return out

    def _pieces(self, sentence: str) -> list[str]:
        """``sentence`` cut between words into pieces that fit the model; a word longer than
        that alone is cut between characters."""
        fits = self.fits

        def halves(word: str) -> list[str]:
            if fits(word) or len(word) <= 1:
                return [word]
            return halves(word[:len(word) // 2]) + halves(word[len(word) // 2:])

        pieces: list[str] = []
        current: list[str] = []
        for word in sentence.split():
            if fits(" ".join(current + [word])):
                current.append(word)
                continue
            if current:
                pieces.append(" ".join(current))
            current = [word] if fits(word) else []
            if not current:
                pieces += halves(word)
        if current:
            pieces.append(" ".join(current))
        return pieces

    def encode_target(self, text: str, source: Source, *, limit: int | None = None) -> list[int]:
        """A target sentence's ids (no EOS) as the model would write it after ``source``:
        its placeholders take the sentinels of the source's. At most ``limit`` ids (by default
        the model's length limit less EOS)."""
        if self.placeholders:
            text = ph.mask(source.text, text)[1] or ""
        limit = self.limit if limit is None else limit
        ids = self.tokenizer.encode_target(text) if text.strip() else []
        if len(ids) > limit:
            self.warn(f"a target of {len(ids)} tokens is longer than the model writes; its "
                      f"first {limit} are read")
        return ids[:limit]

    def decode(self, ids: list[int], source: Source) -> str:
        """The text of an output for ``source``, its placeholders put back."""
        text = self.tokenizer.decode(ids)
        return ph.restore(text, list(source.placeholders)) if self.placeholders else text

    def decode_lines(self, groups: list[list[Source]], hyps: list[list[Hypothesis]]
                     ) -> list[list[tuple[str, float]]]:
        """Each line's n-best translations as (text, score), from ``hyps``, the hypotheses of
        every source of ``groups`` in order (``encode_text`` per line). A line translated in
        several sources joins their rank-r hypotheses (their best where one has fewer) and
        adds their scores."""
        out, it = [], iter(hyps)
        for group in groups:
            found = [(source, next(it)) for source in group]
            ranks = max(len(h) for _, h in found)
            out.append([(join([self.decode(h[min(r, len(h) - 1)].tokens, s) for s, h in found]),
                         sum(h[min(r, len(h) - 1)].score for _, h in found))
                        for r in range(ranks)])
        return out
