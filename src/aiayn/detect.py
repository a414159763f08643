"""Which language a text is in, among the languages the loaded models read.

lingua (``lingua-language-detector``, the detector LibreTranslate uses) scores the text for a
fixed set of candidates, here the served models' languages only (for ``source: auto``, those
that models translate into the target): a detector asked to choose among two languages is
more accurate than one asked among seventy, and a language no model knows is no use as an
answer. A single candidate is the answer with full confidence.
Placeholders and markup (``aiayn.placeholders``: ``%s``, ``{0}``, ``<b>``, ``&amp;``) are taken
out of the text first: they belong to no language, and in short software strings they
outweighed the words. So are acronyms and names in capitals (``HTML``, ``GNOME``, ``PAL``),
spelled alike in every language, unless the whole text is in capitals.
"""

from __future__ import annotations

import re

from . import placeholders
from .errors import UserError, require

ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]+\b")  # two capitals or more: HTML, GNOME, MP3


class LanguageDetector:
    """Detects which of ``codes`` (ISO 639-1, as models name their pair) a text is in.

    Raises UserError when lingua is not installed or knows none of the codes.
    """

    def __init__(self, codes: list[str]) -> None:
        self.codes = sorted(set(codes))
        self.detector, self.languages = None, {}
        if len(self.codes) < 2:
            return
        lingua = require("lingua", "language detection (source auto)", "serve")
        for code in self.codes:
            iso = getattr(lingua.IsoCode639_1, code.upper(), None)
            if iso is not None:
                self.languages[lingua.Language.from_iso_code_639_1(iso)] = code
        if len(self.languages) < 2:
            raise UserError(f"language detection knows too few of {', '.join(self.codes)}; "
                            "pass the source language")
        self.detector = lingua.LanguageDetectorBuilder.from_languages(*self.languages).build()

    def detect(self, text: str) -> list[tuple[str, float]]:
        """The candidate languages of ``text`` with their confidence in percent, most likely
        first (as LibreTranslate's ``/detect`` answers)."""
        if self.detector is None:
            return [(code, 100.0) for code in self.codes]
        found = self.detector.compute_language_confidence_values(language_words(text))
        return [(self.languages[c.language], round(100 * c.value, 2)) for c in found
                if c.language in self.languages]


def language_words(text: str) -> str:
    """What of ``text`` lingua reads: the text without its placeholders and markup
    (``placeholders.find``) and, unless it is all in capitals, without its acronyms; the
    text as it is where nothing else is left."""
    words = text
    for placeholder in placeholders.find(text):  # %s, {0}, <b>, &amp;: no language's
        words = words.replace(placeholder, " ")
    if any(c.islower() for c in words):  # (a text all in capitals keeps its words)
        words = ACRONYM.sub(" ", words)
    return words if words.strip() else text
