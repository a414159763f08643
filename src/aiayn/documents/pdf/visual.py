"""Text in the order it is seen, for a PDF page. A PDF draws each glyph where it is told, left
to right: it has no paragraph direction and no shaping, so a reader shows letters in the order
and the forms they were drawn in. A translation with Hebrew or Arabic letters is therefore put
in visual order here, as a layout engine would before drawing it.

- The embedding level of each character by the Unicode Bidirectional Algorithm (UAX #9) for a
  paragraph of one direction: its rules W1-W7, N0-N2 and I1-I2 (explicit embeddings and
  isolates, which a translation does not hold, count as boundary neutrals). The paragraph's
  direction is the target language's, or where the model's pair is unknown, that of its
  first strong letter (P2-P3).
- A line's stretches of one level reversed by rule L2, highest levels first; each stretch of
  odd level drawn reversed with its brackets mirrored (rule L4, by python-bidi's table of
  mirror images). A combining mark (a Hebrew vowel point) then comes before its letter, as
  rule L3 leaves it: DejaVu draws its marks to the right of where they stand, over the
  letter drawn next.
- Arabic letters in the forms they take joined to their neighbours (arabic-reshaper: Unicode's
  presentation forms, which DejaVu Sans draws), their short vowels kept.

python-bidi's ``get_display`` reorders a whole line's characters (rules L1-L2, not L3-L4); a
line here is pieces in several fonts and styles, so the levels are resolved here and each
piece is placed by them (the tests check the order against ``get_display``'s)."""

from __future__ import annotations

import bisect
import functools
import unicodedata

from ...errors import require
from ..direction import right_to_left_letters

__all__ = ["drawn", "levels", "order", "paragraph_level", "right_to_left_letters"]

_STRONG = {"L": "L", "R": "R", "AL": "R"}
# boundary neutrals and explicit formatting characters: no direction of their own (X9)
_IGNORED = {"BN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}
_NEUTRAL = {"B", "S", "WS", "ON"}
_STRONG_AS = {"L": {"L"}, "R": {"R", "EN", "AN"}}  # the directions N0 reads, numbers as R
# invisible characters that only steer the algorithm: not drawn
INVISIBLE = {"\u200e", "\u200f", "\u061c", *map(chr, range(0x202a, 0x202f)),
             *map(chr, range(0x2066, 0x206a))}


def paragraph_level(text: str, right_to_left: bool | None) -> int:
    """The paragraph's embedding level: 1 where it is written right to left, else 0. That is
    the target language's direction where it is known (``right_to_left`` not None), else
    that of the text's first strong letter (P2-P3)."""
    if right_to_left is not None:
        return int(right_to_left)
    for c in text:
        kind = unicodedata.bidirectional(c)
        if kind in _STRONG:
            return int(_STRONG[kind] == "R")
    return 0


def levels(text: str, base: int) -> list[int]:
    """Each character's resolved embedding level in a paragraph of level ``base``."""
    kinds = [unicodedata.bidirectional(c) or "L" for c in text]
    original = list(kinds)
    sos = "R" if base % 2 else "L"
    visible = [k for k, kind in enumerate(kinds) if kind not in _IGNORED]
    # W1: a combining mark takes the type of the character before it
    before = sos
    for k in visible:
        if kinds[k] == "NSM":
            kinds[k] = "ON" if before in _NEUTRAL else before
        before = kinds[k]
    # W2, W3: a European number after Arabic letters is an Arabic number; AL is R
    strong = sos
    for k in visible:
        if kinds[k] in ("L", "R", "AL"):
            strong = kinds[k]
        elif kinds[k] == "EN" and strong == "AL":
            kinds[k] = "AN"
    for k in visible:
        if kinds[k] == "AL":
            kinds[k] = "R"
    # W4: one separator between two numbers of a kind joins them
    for i in range(1, len(visible) - 1):
        a, k, b = kinds[visible[i - 1]], visible[i], kinds[visible[i + 1]]
        if kinds[k] == "ES" and a == b == "EN" or kinds[k] == "CS" and a == b and a in ("EN", "AN"):
            kinds[k] = a
    # W5: terminators (%, $, degree signs) next to a European number are part of it
    i = 0
    while i < len(visible):
        if kinds[visible[i]] != "ET":
            i += 1
            continue
        j = i
        while j < len(visible) and kinds[visible[j]] == "ET":
            j += 1
        if (i > 0 and kinds[visible[i - 1]] == "EN") or \
                (j < len(visible) and kinds[visible[j]] == "EN"):
            for m in range(i, j):
                kinds[visible[m]] = "EN"
        i = j
    # W6: other separators and terminators are neutral
    for k in visible:
        if kinds[k] in ("ES", "ET", "CS"):
            kinds[k] = "ON"
    # W7: a European number after left-to-right letters is left to right
    strong = sos
    for k in visible:
        if kinds[k] in ("L", "R"):
            strong = kinds[k]
        elif kinds[k] == "EN" and strong == "L":
            kinds[k] = "L"
    _paired_brackets(text, kinds, original, visible, sos)
    # N1, N2: a run of neutrals between two of one direction (numbers count as R) takes it,
    # else the paragraph's
    i = 0
    while i < len(visible):
        if kinds[visible[i]] not in _NEUTRAL:
            i += 1
            continue
        j = i
        while j < len(visible) and kinds[visible[j]] in _NEUTRAL:
            j += 1
        side = [sos if i == 0 else _direction(kinds[visible[i - 1]]),
                sos if j == len(visible) else _direction(kinds[visible[j]])]
        for m in range(i, j):
            kinds[visible[m]] = side[0] if side[0] == side[1] else sos
        i = j
    # I1, I2
    out = [base] * len(text)
    for k in visible:
        kind = kinds[k]
        if base % 2 == 0:
            out[k] = base + {"R": 1, "AN": 2, "EN": 2}.get(kind, 0)
        else:
            out[k] = base + (1 if kind in ("L", "EN", "AN") else 0)
    # the characters X9 takes out take the level of the one before them
    for k in range(len(text)):
        if kinds[k] in _IGNORED:
            out[k] = out[k - 1] if k else base
    return out


def _paired_brackets(text: str, kinds: list[str], original: list[str], visible: list[int],
                     sos: str) -> None:
    """Rule N0: a pair of brackets takes the paragraph's direction where the text between them
    has a letter of it, else the other direction where the text between them and before them
    has that. Pairs are found as BD16 finds them (a stack of 63 openers)."""
    mirrored = mirror_images()
    pairs: list[tuple[int, int]] = []
    stack: list[tuple[str, int]] = []
    for k in visible:
        c = text[k]
        if kinds[k] != "ON" or c not in mirrored:
            continue
        kind = unicodedata.category(c)
        if kind == "Ps":
            if len(stack) == 63:
                break
            stack.append((_canonical(mirrored[c]), k))
        elif kind == "Pe":
            for depth in range(len(stack) - 1, -1, -1):
                if stack[depth][0] == _canonical(c):
                    pairs.append((stack[depth][1], k))
                    del stack[depth:]
                    break
    # the strong types (numbers as R) counted up to each position, and where they stand
    # (brackets resolved below join them: N0 reads the context before a pair with them)
    counts = {"L": [0], "R": [0]}
    for kind in kinds:
        for side, seen in counts.items():
            seen.append(seen[-1] + (kind in _STRONG_AS[side]))
    known = [k for k in visible if kinds[k] in ("L", "R", "EN", "AN")]
    where = {k: n for n, k in enumerate(visible)}
    for opening, closing in sorted(pairs):
        inside = {side for side, seen in counts.items() if seen[closing] > seen[opening + 1]}
        if not inside:
            continue
        direction = sos
        if sos not in inside:
            at = bisect.bisect_left(known, opening)
            direction = _direction(kinds[known[at - 1]]) if at else sos
        for bracket in (opening, closing):
            kinds[bracket] = direction
            bisect.insort(known, bracket)
            after = where[bracket] + 1
            while after < len(visible) and original[visible[after]] == "NSM":
                kinds[visible[after]] = direction
                after += 1


def _canonical(c: str) -> str:
    """A bracket as BD16 compares it: its canonical equivalent (U+2329 is U+3008)."""
    return {"\u2329": "\u3008", "\u232a": "\u3009"}.get(c, c)


def _direction(kind: str) -> str:
    return "L" if kind == "L" else "R"


def order(levels: list[int]) -> list[int]:
    """Rule L2: the positions of a line's units (of these levels) in the order they are
    seen, left to right: from the highest level down to the lowest odd one, every run of
    units at that level or above reversed."""
    seen = list(range(len(levels)))
    if not levels:
        return seen
    lowest_odd = min(level for level in levels) | 1
    for level in range(max(levels), lowest_odd - 1, -1):
        k = 0
        while k < len(seen):
            if levels[seen[k]] < level:
                k += 1
                continue
            j = k
            while j < len(seen) and levels[seen[j]] >= level:
                j += 1
            seen[k:j] = reversed(seen[k:j])
            k = j
    return seen


def drawn(text: str, level: int) -> str:
    """A stretch of one level as it is drawn left to right: Arabic letters in their joined
    forms (arabic-reshaper's), reversed with its brackets mirrored at an odd level; invisible
    marks left out."""
    text = "".join(c for c in text if c not in INVISIBLE)
    if any(unicodedata.bidirectional(c) == "AL" for c in text):
        text = _reshaper().reshape(text)
    if level % 2 == 0:
        return text
    mirrored = mirror_images()
    return "".join(mirrored.get(c, c) for c in reversed(text))


@functools.cache
def _reshaper():
    """arabic-reshaper, keeping the short vowels (its default leaves them out): drawn before
    their letter, as an odd stretch's reversal leaves them, DejaVu sets them on it (checked
    by rendering: كِتَابٌ مُحَمَّد)."""
    reshaper = require("arabic_reshaper", "Arabic letters in PDF files", "documents")
    return reshaper.ArabicReshaper(configuration={"delete_harakat": False})


def mirror_images() -> dict[str, str]:
    """Each character drawn mirrored at an odd level, and its mirror image (rule L4; Unicode's
    BidiMirroring.txt, as python-bidi holds it)."""
    return require("bidi.mirror", "right-to-left letters in PDF files", "documents").MIRRORED
