"""Glossaries: source terms and the target terms they must be translated as.

A glossary file has one term a line, ``source term<TAB>target term``; blank lines and lines
starting with ``#`` are skipped. A term is found in a sentence as whole words, case ignored;
where terms overlap the longest wins. The target terms of the terms found become constraints
of the sentence's beam search (``aiayn.decode.constraints``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError


@dataclass(frozen=True)
class Glossary:
    """(source term, target term) pairs."""

    terms: tuple[tuple[str, str], ...]
    _patterns: list[tuple[re.Pattern, str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ordered = sorted(self.terms, key=lambda t: -len(t[0]))  # the longest term first
        object.__setattr__(self, "_patterns", [
            (re.compile(rf"(?<!\w){re.escape(s)}(?!\w)", re.IGNORECASE), t) for s, t in ordered])

    @classmethod
    def from_pairs(cls, pairs, where: str = "glossary") -> "Glossary":
        """From (source, target) pairs (a list of two-item lists, or a mapping), checked."""
        if not isinstance(pairs, (dict, list, tuple)):
            raise UserError(f"{where}: give a list of (source, target) pairs or a mapping of "
                            "source terms to target terms")
        items = list(pairs.items()) if isinstance(pairs, dict) else list(pairs)
        terms = []
        for k, item in enumerate(items, 1):
            if (not isinstance(item, (list, tuple)) or len(item) != 2
                    or not all(isinstance(x, str) for x in item)):
                raise UserError(f"{where}: term {k} is not a (source, target) pair of strings")
            source, target = (" ".join(x.split()) for x in item)
            if not source or not target:
                raise UserError(f"{where}: term {k} has an empty side; give both terms")
            terms.append((source, target))
        return cls(tuple(terms))

    @classmethod
    def read(cls, path: str | Path) -> "Glossary":
        """A glossary file (UTF-8, source<TAB>target lines); one line names any mistake."""
        p = Path(path)
        if p.is_dir():
            raise UserError(f"--glossary {p}: is a directory; give a file")
        if not p.is_file():
            raise UserError(f"--glossary {p}: no such file")
        try:
            lines = p.read_bytes().decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise UserError(f"--glossary {p}: not UTF-8 text; convert it to UTF-8") from None
        terms = []
        for number, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if "\t" not in line:
                raise UserError(f"--glossary {p}: line {number} has no TAB; write "
                                "'source term<TAB>target term'")
            source, target = (" ".join(x.split()) for x in line.split("\t", 1))
            if not source or not target or "\t" in target:
                raise UserError(f"--glossary {p}: line {number} needs one source term, a TAB "
                                "and one target term")
            terms.append((source, target))
        if not terms:
            raise UserError(f"--glossary {p}: no terms; write 'source term<TAB>target term' "
                            "lines")
        return cls(tuple(terms))

    def found(self, sentence: str) -> list[str]:
        """The target terms of the terms found in ``sentence``, in the order they occur there;
        a stretch of the sentence counts for one term only."""
        taken: list[tuple[int, int, str]] = []
        for pattern, target in self._patterns:
            for m in pattern.finditer(sentence):
                if all(m.end() <= a or b <= m.start() for a, b, _ in taken):
                    taken.append((m.start(), m.end(), target))
        return [target for _, _, target in sorted(taken)]


def term_rate(glossary: Glossary, sources: list[str], hypotheses: list[str]) -> dict:
    """Of the sources with glossary terms, how many translations hold every target term
    (case ignored); {} when no source has any."""
    having = [(glossary.found(s), h.lower()) for s, h in zip(sources, hypotheses)]
    having = [(terms, h) for terms, h in having if terms]
    if not having:
        return {}
    kept = sum(all(t.lower() in h for t in terms) for terms, h in having)
    return {"terms_kept": kept / len(having), "term_sentences": len(having)}
