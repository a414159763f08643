"""Inline tags carried from a source sentence onto its translation through word alignments.

A span is an inline element over a stretch of the source sentence's text: ``<b>`` around two
words, a ``<code>`` kept as written, an ``<img>`` or a comment at a point between words. The
translation is made from the sentence with its tags taken out; each span is then put around the
target words aligned to the source words it covered (the words' hull), as Bergamot does in
Firefox. Spans stay nested as in the source: a child is placed inside its parent's target words,
and siblings that would overlap are moved apart (where the later one's words lie inside the
earlier one's hull, the earlier ends before them; otherwise the later one starts where the
earlier ends), so the output is always well-formed with exactly the source's tags. A span
whose words have no aligned target word goes around the target words that attend to them most
(``fallback``), so that a link or a bold word that was translated does not end up around
nothing; a span over no word (an image, a comment), and one without fallback links (its words
left out of the translation), goes to the point after the target words of the source word
before it (after the whole translation where it follows every source word).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from html import escape
from typing import Callable, Sequence

_WORD = re.compile(r"\S+")


@dataclass
class Span:
    """An inline element over source characters [start, end) of its sentence.

    Attributes:
        open, close: what is written before and after the span's target words.
        keep: when set, written instead of the span's target words (an element kept as it is:
            code, ``translate="no"``, a comment).
        children: the spans inside this one, in source order.
        tag: the caller's own record of the element (its start tag written at the end).
        spaces: for a span over no text, whether whitespace stood before and after it in
            the source, where the sentence's collapsed text no longer says (None: read the
            sentence).
    """

    start: int
    end: int
    open: str = ""
    close: str = ""
    keep: str | None = None
    children: list["Span"] = field(default_factory=list)
    tag: object = None
    spaces: tuple[bool, bool] | None = None

    def shifted(self, offset: int) -> "Span":
        return Span(self.start - offset, self.end - offset, self.open, self.close, self.keep,
                    [c.shifted(offset) for c in self.children], self.tag, self.spaces)


def words(text: str) -> list[tuple[int, int]]:
    """The [start, end) character ranges of the whitespace-separated words of ``text``."""
    return [m.span() for m in _WORD.finditer(text)]


def proportional_links(n_src: int, n_tgt: int) -> list[tuple[int, int]]:
    """Each target word linked to the source word at the same relative position: what tags
    follow when a sentence has no alignment."""
    if not n_src:
        return []
    return [(min(n_src - 1, j * n_src // max(1, n_tgt)), j) for j in range(n_tgt)]


def place(source: str, spans: list[Span], translation: str,
          links: list[tuple[int, int]], *, escape_text: Callable[[str], str] | None = None,
          fallback: Sequence[tuple[int, int]] = ()) -> str:
    """``translation`` with ``spans`` (over ``source``) put around its words.

    Punctuation that a span's source text does not start or end with stays outside it in
    the target (``<b>here</b>.``; "<a>Seite</a>," for ``<a>page</a> to``). The
    translation's own whitespace between words is kept.

    Args:
        source: the source sentence, tags taken out.
        spans: its top-level spans, in source order.
        translation: the translated sentence (plain text).
        links: (source word, target word) alignment pairs, words split at whitespace.
        fallback: more such pairs (each source word's strongest target word,
            ``aiayn.inspect.strongest_targets``), read for a span none of whose words has a link.
        escape_text: how target text is written (default: HTML/XML escaping of &, <, >).
    """
    escape_text = escape_text or (lambda s: escape(s, quote=False))
    src_words = words(source)
    found = words(translation)
    tgt_words = [translation[s:e] for s, e in found]
    gaps = [translation[e:s] for (_, e), (s, _) in zip(found, found[1:])] + [" "]

    def by_source(pairs: Sequence[tuple[int, int]]) -> dict[int, set[int]]:
        found: dict[int, set[int]] = {}
        for i, j in pairs:
            if 0 <= i < len(src_words) and 0 <= j < len(tgt_words):
                found.setdefault(i, set()).add(j)
        return found

    targets, second = by_source(links), by_source(fallback)

    def point(start: int) -> int:
        """The target position after the aligned words of the source word before ``start``;
        after every word where it is after every source word (a picture after a sentence's
        full stop stays after the translation's)."""
        before = [i for i, (_, e) in enumerate(src_words) if e <= start]
        if src_words and len(before) == len(src_words):
            return len(tgt_words)
        for i in reversed(before):
            if i in targets:
                return max(targets[i]) + 1
        return 0

    def covered(span: Span) -> list[int]:
        return [i for i, (s, e) in enumerate(src_words) if s < span.end and e > span.start]

    def every(spans: list[Span]) -> list[Span]:
        return [x for span in spans for x in (span, *every(span.children))]
    kept_words = Counter(i for span in every(spans) if span.keep is not None
                         for i in covered(span))

    def aligned(span: Span) -> set[int]:
        """The target words aligned to the span's words (else their strongest targets: a tag
        over words keeps words)."""
        found = {j for i in covered(span) for j in targets.get(i, ())}
        return found or {j for i in covered(span) for j in second.get(i, ())}

    def arrange(spans: list[Span], lo: int, hi: int) -> list[tuple[Span, int, int, list]]:
        """Spans placed within target words [lo, hi): nested, in order, never overlapping.
        Each goes around the hull of its aligned words; where the next sibling's hull starts
        inside it, it ends before that, around its own words there, so that the next one
        is not pushed past its words (out of them all, when it lies inside)."""
        placed = []
        for order, span in enumerate(spans):
            own = {j for j in aligned(span) if lo <= j < hi}
            a, b = (min(own), max(own) + 1) if own else (point(span.start),) * 2
            a = min(max(a, lo), hi)
            placed.append((a, order, span, min(max(b, a), hi), own))
        placed.sort(key=lambda p: (p[0], p[1]))
        out, edge = [], lo
        for k, (a, _, span, b, own) in enumerate(placed):
            a = max(a, edge)
            b = max(a, b)
            after = placed[k + 1][0] if k + 1 < len(placed) else hi
            before = [j for j in own if a <= j < after]
            if after < b and before:
                b = max(before) + 1
            out.append((span, a, b, arrange(span.children, a, b)))
            edge = b
        return out

    def outside(span: Span, first: str, last: str) -> tuple[str, str]:
        """The punctuation at the start of the span's first target word and at the end of
        its last that is left out of it: what the span's own source text does not start /
        end with (``<b>here</b>.``; the comma German puts after a clause: ``<a>page</a> to
        get`` -> "<a>Seite</a>, um"; ``<a>https://lore.kernel.org/</a>,`` keeps its slash)."""
        if not covered(span):
            return "", ""
        inner = source[span.start:span.end].strip()
        own_lead = _LEAD.match(inner).group()  # type: ignore[union-attr]
        own_trail = _TRAIL.search(inner).group()  # type: ignore[union-attr]
        lead = _LEAD.match(first).group()  # type: ignore[union-attr]
        trail = _TRAIL.search(last).group()  # type: ignore[union-attr]
        return (lead[:len(lead) - len(own_lead)] if lead.endswith(own_lead) else "",
                trail[len(own_trail):] if trail.startswith(own_trail) else "")

    def within(span: Span, word: str) -> tuple[str, str] | None:
        """For a span over part of one source word (a note's mark after its word:
        ``module<sup>1</sup>``), the text of its target ``word`` before and after the same
        part, where that word holds the part at the same end of it, or once; else None (the
        span goes around whole words)."""
        own = covered(span)
        if len(own) != 1:
            return None
        s, e = src_words[own[0]]
        inner = source[max(span.start, s):min(span.end, e)]
        if (span.start <= s and span.end >= e) or not inner or word == inner:
            return None
        if span.end >= e and word.endswith(inner):
            return word[:-len(inner)], ""
        if span.start <= s and word.startswith(inner):
            return "", word[len(inner):]
        if word.count(inner) == 1:
            at = word.index(inner)
            return word[:at], word[at + len(inner):]
        return None

    def around_code(span: Span, lead: str, trail: str) -> tuple[str, str]:
        """Of the marks the translation put around code, its sentence's punctuation stays,
        and what the source has around the code; quotes, brackets or a "$" were the model's
        way of marking code, which the code's formatting does."""
        return ("".join(c for c in lead if c in _OPENING
                        or c in source[max(0, span.start - 2):span.start]),
                "".join(c for c in trail if c in _CLOSING or c in source[span.end:span.end + 2]))

    def partial(span: Span) -> tuple[str, str, str] | None:
        """For a span over part of one source word (``<code>config</code>.yml``), that word's
        text before the span, the span's own and the word's after it; else None."""
        own = covered(span)
        if len(own) != 1 or kept_words[own[0]] > 1:  # (two pieces of code in one word)
            return None
        s, e = src_words[own[0]]
        if span.start <= s and span.end >= e:
            return None
        start, end = max(span.start, s), min(span.end, e)
        if not any(c.isalnum() for c in source[s:start] + source[end:e]):
            return None  # only marks around it (``<code>y</code>.``): the code is the word
        return source[s:start], source[start:end], source[end:e]

    def kept_in_word(span: Span, part: tuple[str, str, str], a: int, b: int) -> str:
        """Target words [a, b) for code kept over part of a word: where one of them holds
        the code's text once (the model copies code: "config.yml-Datei"), the code in its
        place and the rest of the words as translated; else the source's word as written
        around the code, since the translation changed what the code is part of."""
        before, own, after = part

        def edge(word: str) -> bool:  # holding the code once, at an edge of letters
            at = word.find(own)
            return word.count(own) == 1 and (
                at == 0 or not word[at - 1].isalnum() or at + len(own) == len(word)
                or not word[at + len(own)].isalnum())
        holding = [j for j in range(a, b) if own in tgt_words[j]]
        if len(holding) != 1 or not edge(tgt_words[holding[0]]):
            return escape_text(before) + str(span.keep) + escape_text(after)
        out = ""
        for j in range(a, b):
            word = tgt_words[j]
            if j == holding[0]:
                at = word.index(own)
                head, tail = word[:at], word[at + len(own):]
                marks = (_TRAIL.search(head).group(), _LEAD.match(tail).group())  # type: ignore[union-attr]
                lead, trail = around_code(span, *marks)
                out += escape_text(head[:len(head) - len(marks[0])] + lead) + str(span.keep) + \
                    escape_text(trail + tail[len(marks[1]):])
            else:
                out += escape_text(word)
            out += escape_text(gaps[j]) if j < b - 1 else ""
        return out

    def word_of_codes(span: Span) -> int | None:
        """The source word that ``span``, code kept over part of it, shares with other
        such code (``value=<code>"</code>42<code>"</code>``); else None."""
        own = covered(span)
        if span.keep is None or len(own) != 1 or kept_words[own[0]] < 2:
            return None
        s, e = src_words[own[0]]
        return None if span.start <= s and span.end >= e else own[0]

    def codes_in_word(word: int, codes: list[Span], a: int, b: int) -> str:
        """Target words [a, b) for a source word with several pieces of code kept in it:
        where one of them holds the word's stretch from its first code to its last once (the
        model copied it: ``"42"`` in "Wert="42""), that stretch with its code in place and
        the rest as translated; else the source's word as written, its code kept."""
        s, e = src_words[word]
        first, last = codes[0].start, codes[-1].end
        stretch, at = "", first
        for code in codes:
            stretch += escape_text(source[at:code.start]) + str(code.keep)
            at = code.end
        stretch += escape_text(source[at:last])
        inner = source[first:last]
        holding = [j for j in range(a, b) if tgt_words[j].count(inner) == 1]
        if len(holding) != 1:
            return escape_text(source[s:first]) + stretch + escape_text(source[last:e])
        out = ""
        for j in range(a, b):
            word_text = tgt_words[j]
            if j == holding[0]:
                head, _, tail = word_text.partition(inner)
                out += escape_text(head) + stretch + escape_text(tail)
            else:
                out += escape_text(word_text)
            out += escape_text(gaps[j]) if j < b - 1 else ""
        return out

    def glued(span: Span) -> tuple[bool, bool]:
        """Whether a span over no word touches the text before / after it in the source (one
        at the sentence's end, after its trailing space, touches nothing after it)."""
        if span.spaces is not None:
            return not span.spaces[0], not span.spaces[1]
        start, end = min(span.start, len(source)), min(span.end, len(source))
        return (start > 0 and not source[start - 1].isspace(),
                end < len(source) and not source[end].isspace())

    def edges(span: Span, a: int, b: int, cut: tuple[str, str] | None) -> tuple[str, str]:
        """What of target words [a, b) stays outside the span: ``cut`` (the rest of a word
        the span covers part of), or the punctuation ``outside`` gives, where it leaves
        letters inside."""
        if cut is not None:
            return cut
        first, last = tgt_words[a], tgt_words[b - 1]
        lead, trail = outside(span, first, last)
        if lead == first or (a == b - 1 and len(lead) + len(trail) >= len(first)):
            lead = ""
        if trail == last[len(lead) if a == b - 1 else 0:]:
            trail = ""
        return lead, trail

    def write(placed: list, lo: int, hi: int) -> str:
        # (text, index after its last word or -1 for none, glued before, glued after)
        pieces: list[tuple[str, int, bool, bool]] = []
        at = lo
        written: set[int] = set()  # code written with the other code of its word
        for span, a, b, children in placed:
            if id(span) in written:
                continue
            word = word_of_codes(span)
            codes = [] if word is None else [p for p in placed if word_of_codes(p[0]) == word]
            if word is not None and len(codes) == kept_words[word]:
                written |= {id(p[0]) for p in codes}
                a, b = max(at, min(p[1] for p in codes)), max(at, max(p[2] for p in codes))
            pieces += [(escape_text(tgt_words[j]), j + 1, False, False) for j in range(at, a)]
            part = partial(span) if span.keep is not None else None
            if word is not None and id(span) in written:
                pieces.append((codes_in_word(word, sorted((p[0] for p in codes),
                                                          key=lambda c: c.start), a, b),
                               b if b > a else -1, False, False))
            elif part is not None and b > a:
                pieces.append((kept_in_word(span, part, a, b), b, False, False))
            elif part is not None:  # its word left out of the translation: the word as written
                pieces.append((escape_text(part[0]) + str(span.keep) + escape_text(part[2]),
                               -1, False, False))
            elif span.keep is not None and b > a:
                lead, trail = around_code(span, *edges(span, a, b, None))
                pieces.append((escape_text(lead) + span.keep + escape_text(trail), b, False,
                               False))
            elif b == a:
                text = span.keep if span.keep is not None else \
                    span.open + write(children, a, b) + span.close
                pieces.append((text, -1, *glued(span)))
            else:
                first, last = tgt_words[a], tgt_words[b - 1]
                lead, trail = edges(span, a, b, within(span, first) if a == b - 1 else None)
                tgt_words[a] = first[len(lead):]
                tgt_words[b - 1] = tgt_words[b - 1][:len(tgt_words[b - 1]) - len(trail)]
                inner = write(children, a, b)
                tgt_words[a], tgt_words[b - 1] = first, last
                pieces.append((escape_text(lead) + span.open + inner + span.close
                               + escape_text(trail), b, False, False))
            at = b
        pieces += [(escape_text(tgt_words[j]), j + 1, False, False) for j in range(at, hi)]
        out = ""
        for k, (text, end, _, after) in enumerate(pieces):
            out += text
            if k + 1 < len(pieces):
                before = pieces[k + 1][2]
                out += "" if after or before else \
                    escape_text(gaps[end - 1]) if end > 0 else " "
        return out

    return write(arrange(spans, 0, len(tgt_words)), 0, len(tgt_words))


_LEAD = re.compile(r"^[^\w\s]*")
_OPENING, _CLOSING = frozenset("¿¡"), frozenset(".,:;!?…")  # a sentence's punctuation
_TRAIL = re.compile(r"[^\w\s]*$")
