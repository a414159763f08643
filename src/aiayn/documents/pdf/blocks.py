"""A PDF page's lines joined into paragraphs (where a typesetter's line breaking would have
broken them), each measured for the room its translation has, and written as markup for the
translator."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from .. import Job, prevailing, spanned
from .glyphs import Line, Style, listing, read_lines

# a list mark at a paragraph's start: a bullet, a number or letter and its stop
_MARK = re.compile(r"[\u2022\u2023\u2043\u2219\u25aa\u25ab\u25cf\u25e6\u2013\u2014\-*\u00b7]|"
                   r"\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)]")


@dataclass
class Paragraph:
    """Lines of a page read as one paragraph, and the room its translation has."""

    lines: list[Line]
    mark: str = ""  # a list mark kept as it is
    start: float = 0.0  # where the text after the mark begins on the first line
    right: float = 0.0  # the right edge of its column
    step: float = 0.0  # the distance between its lines
    floor: float = 0.0  # how low its text may reach: the top of the next text below it
    align: str = "left"  # "right" or "center" for a line set so (a running head, a title)
    leftward: bool = False  # written right to left: its lines end at its column's right edge
    foot: bool = False  # nothing of its size below it in its column: it ends the column
    head: bool = False  # nothing of its size above it in its column: it begins the column
    indent: float = 0.0  # how far right of its column's left edge its first line begins

    @property
    def size(self) -> float:
        return statistics.median(line.size for line in self.lines)


@dataclass
class Plan:
    """A paragraph as the translator gets it: its markup, the styles its spans are numbered
    by (the first its own), and the links among them (a span's number: the annotation's)."""

    markup: str
    styles: list[Style]
    links: dict[int, int]


def page_paragraphs(textpage, page, raw, job: Job,
                    number: int) -> tuple[list[Paragraph], set[int]]:
    """The page's paragraphs of upright, visible text, and the text objects of the lines
    left as they are."""
    lines = read_lines(textpage.raw, page, raw)
    unseen = sum(not line.plain for line in lines)
    if unseen:
        job.warn(f"page {number}: {unseen} line(s) left as they are: rotated, invisible, in a "
                 f"reused drawing, or in a font that does not say which letters it draws")
    # the distance between a paragraph's lines for each size: the least that recurs on the page
    # (paragraphs and list items often lie further apart)
    steps: dict[float, list[float]] = {}
    for a, b in zip(lines, lines[1:]):
        if a.size == b.size and 0.9 * a.size <= a.baseline - b.baseline <= 1.8 * a.size:
            steps.setdefault(a.size, []).append(round(2 * (a.baseline - b.baseline)) / 2)
    leading = {size: min((s for s in found if found.count(s) > 1), default=min(found))
               for size, found in steps.items()}
    paragraphs: list[Paragraph] = []
    for line in lines:
        if not line.plain:
            continue
        # the paragraph it goes on with: the last, or one of the few before it where PDFium
        # reads the lines of columns side by side in turn; the word a hyphen broke at the
        # end of the line above goes on whatever it begins with ("ECMA-" / "402) APIs")
        last = paragraphs[-1] if paragraphs else None
        if last is not None and last.lines[-1].text.rstrip().endswith("\u00ad") \
                and last.leftward == line.leftward \
                and _steps_on(last, line, leading.get(line.size)):
            going: Paragraph | None = last
        elif line.leftward:  # (a list's item begins with its mark, or by one drawn apart)
            going = None if _begins_item(line.text) or _marked(line, lines) else next(
                (p for p in reversed(paragraphs[-4:]) if p.leftward and _goes_on(
                    p, line, _column_left(lines, p.lines[-1], line), leading.get(line.size))),
                None)
        else:
            going = None if _MARK.match(line.text) else next(
                (p for p in reversed(paragraphs[-4:]) if not p.leftward and _continues(
                    p, line, _column(lines, p.lines[-1], line), leading.get(line.size))), None)
        if going is not None:
            going.lines.append(line)
        elif line.leftward:  # (a list mark stays in its text: its place is the item's end)
            paragraphs.append(Paragraph([line], start=line.left, leftward=True))
        else:
            paragraphs.append(_with_mark(Paragraph([line])))
    for paragraph in paragraphs:
        _measure(paragraph, lines, leading, page.get_mediabox())
    return paragraphs, {o for line in lines if not line.plain for o in line.objects}


def furniture(pages: list[list[Paragraph]]) -> set[int]:
    """The running heads and feet of a document of three pages or more (ids of their
    paragraphs): lines alone at the top or the foot of a page, on a baseline that is the
    top's (the foot's) on at least three pages and a third of them, whose words recur so on
    another page or that have no letters (a page's number). A page's first line of text
    lies on the same baseline on every page; its words are its own."""
    if len(pages) < 3:
        return set()
    found: set[int] = set()
    for pick in (max, min):
        ends = [pick(p.lines[0].baseline for p in paragraphs) if paragraphs else None
                for paragraphs in pages]
        candidates = []  # (page, paragraph, its words) on a recurring top or foot baseline
        for number, (paragraphs, end) in enumerate(zip(pages, ends)):
            if end is not None and sum(other is not None and abs(other - end) <= 1.0
                                       for other in ends) >= max(3, len(pages) / 3):
                candidates += [(number, p, re.sub(r"[^a-z]+", " ", p.lines[0].text.lower())
                                .strip()) for p in paragraphs
                               if len(p.lines) == 1 and abs(p.lines[0].baseline - end) <= 1.0]
        pages_of: dict[str, set[int]] = {}
        for number, _, words in candidates:
            pages_of.setdefault(words, set()).add(number)
        found.update(id(p) for _, p, words in candidates
                     if not words or len(pages_of[words]) > 1)
    return found


def place_in_columns(paragraphs: list[Paragraph], aside: set[int]) -> None:
    """For each of a page's paragraphs, whether it ends its column (no text with letters in
    its size, or larger, below it across its width, and nothing at all in the next two
    lines' room: a page's number or a smaller footnote further down does not count) or
    begins it (no text with letters above it across its width); running heads and feet,
    ``aside``, do not count. And how far its first line is indented from the column's left
    edge."""
    lines = [line for p in paragraphs if id(p) not in aside for line in p.lines]
    lettered = {id(line) for line in lines if any(c.isalpha() for c in line.text)}
    for paragraph in paragraphs:
        first, last, size = paragraph.lines[0], paragraph.lines[-1], paragraph.size
        left = min(line.left for line in paragraph.lines)
        across = [line for line in lines if line.left < paragraph.right and line.right > left]
        paragraph.foot = not any(
            last.baseline - 0.5 * size > line.baseline and
            (line.size >= 0.95 * size and id(line) in lettered or
             line.baseline > last.baseline - 2 * paragraph.step) for line in across)
        paragraph.head = not any(line.baseline > first.baseline + 0.5 * size
                                 for line in across if id(line) in lettered)
        # (its column: the lines in its size under or over its first line, ten ems up or
        # down; a figure's caption set in the middle of the column is indented so)
        edge = min([first.left] + [line.left for line in lines
                                   if abs(line.size - size) <= 0.05 * size and
                                   line.left < first.right and line.right > first.left and
                                   abs(line.baseline - first.baseline) <= 10 * size])
        paragraph.indent = first.left - edge


def carried_over(before: Paragraph, after: Paragraph, next_page: bool) -> bool:
    """Whether ``after``, beginning a column to the right or on the next page, goes on with
    ``before``, which ended the column before it: a typesetter's line breaking carried the
    sentence over. Both in one size, left to right; ``before`` not ending a sentence, its last
    line ending where ``after``'s first word would not have fitted before its column's edge
    (or at a hyphen that broke a word); ``after`` neither indented nor a list's item."""
    last, first, size = before.lines[-1], after.lines[0], before.size
    if before.leftward or after.leftward or not (before.foot and after.head) or \
            before.align != "left" or after.align != "left" or after.mark or \
            abs(after.size - size) > 0.05 * size or after.indent > 0.6 * size or \
            not (next_page or first.left > before.right - 0.5 * size):
        return False
    text = last.text.rstrip()
    if text.endswith("\u00ad"):
        return True
    if re.search(r"[.!?:;][\"')\]\u2019\u201d\u00bb]*$", text):
        return False
    space = next((k for k, c in enumerate(first.text) if c.isspace()), None)
    word = (first.starts[space] if space is not None else first.right) - first.left
    return before.right - last.right < word + 0.3 * size


def _measure(paragraph: Paragraph, lines: list[Line], leading: dict[float, float],
             box: tuple[float, float, float, float]) -> None:
    """Finds the room a paragraph's translation has: its column's right edge (for a line
    alone, up to the next text on its right, or the page's right margin, as wide as its
    left one), and down to the next text below it (or two more lines where none is)."""
    own, size = paragraph.lines, paragraph.size
    steps = [a.baseline - b.baseline for a, b in zip(own, own[1:])]
    paragraph.step = statistics.median(steps) if steps else leading.get(own[0].size, 1.2 * size)
    paragraph.right = max(_column(lines, line, line) for line in own)
    left, last = min(line.left for line in own), own[-1]
    if len(own) == 1:  # a heading reaches the edge of the text below it, where that is wider
        # the text's edges on the page (most lines' right edge: a listing may run past it)
        rights = sorted(line.right for line in lines if line.plain and not listing(line))
        edge = min(line.left for line in lines if line.plain)
        end = rights[int(0.9 * (len(rights) - 1))] if rights else last.right
        middle = (edge + end) / 2
        band = [line for line in lines if line is not last and
                line.baseline - line.size < last.baseline + size and
                line.baseline + line.size > last.baseline - 0.3 * size]
        # a line alone across the page is a running head or a title; one beside other text
        # (a table's cell) is set from where it starts
        if not band and last.right > end - 0.5 * size and last.left > middle and \
                not paragraph.leftward:  # (a line written right to left ends there anyway)
            paragraph.align = "right"
        elif not band and abs((last.left + last.right) / 2 - middle) < 0.5 * size and \
                last.left > edge + 2 * size:
            paragraph.align = "center"
        beside = [line.left for line in band if line.left > last.right]
        paragraph.right = max(last.right, min(beside) - 0.5 * size) if beside else \
            max(paragraph.right, end, box[2] - (edge - box[0]))
    below = [line.baseline + 0.75 * line.size for line in lines
             if line.baseline < last.baseline - 0.5 * size and line.left < paragraph.right
             and line.right > left]
    paragraph.floor = max(below, default=last.baseline - 2 * paragraph.step - 0.75 * size)
    if paragraph.leftward:
        # its translation's room begins at its column's left edge: where the text beside it
        # on the left ends, or the page's text begins (its ragged lines do not show where)
        top, bottom = own[0].baseline + size, last.baseline - 0.3 * size
        beside = [line.right for line in lines if line.right < left and
                  bottom < line.baseline < top]
        paragraph.start = min(left, max(beside) + 0.5 * size if beside else
                              min(line.left for line in lines if line.plain))


def _with_mark(paragraph: Paragraph) -> Paragraph:
    first = paragraph.lines[0]
    paragraph.start = first.left
    match = _MARK.match(first.text)
    if match and first.text[match.end():match.end() + 1].isspace() and \
            first.text[match.end():].strip():
        words = len(first.text) - len(first.text[match.end():].lstrip())
        paragraph.mark, paragraph.start = first.text[:match.end()], first.starts[words]
    return paragraph


def _column(lines: list[Line], last: Line, line: Line) -> float:
    """The right edge of the column of text ``last`` and ``line`` are in: the furthest right
    that lines of their size near them end (within ten of its ems above or below), of those
    starting within three ems of them, but listings (lines mostly monospaced, which run on
    past the column)."""
    size, left = line.size, min(last.left, line.left)
    return max([last.right, line.right] + [
        other.right for other in lines if abs(other.size - size) <= 0.05 * size and
        left - 3 * size <= other.left <= max(last.left, line.left) + 3 * size and
        line.baseline - 10 * size <= other.baseline <= last.baseline + 10 * size and
        (listing(other) <= listing(line))])


def _begins_item(text: str) -> bool:
    """Whether a line's text begins with a list mark and a space ("1. ", "• ")."""
    match = _MARK.match(text)
    return match is not None and text[match.end():match.end() + 1].isspace()


def _marked(line: Line, lines: list[Line]) -> bool:
    """Whether a line written right to left has a list mark drawn apart just after its end,
    on its right (a bullet PDFium reads as a line of its own)."""
    return any(_MARK.fullmatch(other.text.strip()) and 0 <= other.left - line.right <
               3 * line.size and abs(other.baseline - line.baseline) < 0.6 * line.size
               for other in lines if other is not line)


def _column_left(lines: list[Line], last: Line, line: Line) -> float:
    """``_column``'s mirror image for lines written right to left: the left edge of their
    column, the furthest left that lines of their size near them start, of those ending
    within three ems of them."""
    size, right = line.size, max(last.right, line.right)
    return min([last.left, line.left] + [
        other.left for other in lines if abs(other.size - size) <= 0.05 * size and
        min(last.right, line.right) - 3 * size <= other.right <= right + 3 * size and
        line.baseline - 10 * size <= other.baseline <= last.baseline + 10 * size and
        (listing(other) <= listing(line))])


def _steps_on(paragraph: Paragraph, line: Line, leading: float | None) -> bool:
    """Whether ``line`` lies one line below the paragraph's last, in its size (at its
    distance between lines, or the page's ``leading`` for its size)."""
    last, size = paragraph.lines[-1], paragraph.size
    if abs(line.size - size) > 0.1 * size:
        return False
    step = last.baseline - line.baseline
    steps = [a.baseline - b.baseline for a, b in zip(paragraph.lines, paragraph.lines[1:])]
    expected = statistics.median(steps) if steps else leading
    return 0.9 * size <= step <= 1.8 * size and not (
        expected is not None and abs(step - expected) > 0.15 * size)


def _goes_on(paragraph: Paragraph, line: Line, left: float, leading: float | None) -> bool:
    """``_continues`` for lines written right to left: one line below, at the paragraph's
    right edge, after a line that ended because this one's first word (its rightmost) would
    not fit after ``left``, its column's edge."""
    last, size = paragraph.lines[-1], paragraph.size
    if not _steps_on(paragraph, line, leading):
        return False
    if len(paragraph.lines) > 1:  # the paragraph's right edge is known
        if abs(line.right - paragraph.lines[1].right) > 0.6 * size:
            return False
    elif not last.right - 0.6 * size <= line.right <= last.right + 4 * size:
        return False  # neither under the first line's text nor right of its indent
    space = next((k for k, c in enumerate(line.text) if c.isspace()), None)
    word = line.right - min(line.starts[:space] if space else line.starts)
    return last.left - left < word + 0.3 * size


def _continues(paragraph: Paragraph, line: Line, right: float,
               leading: float | None) -> bool:
    """Whether ``line`` goes on with ``paragraph``: one line below its last (at the
    paragraph's distance between lines, or the page's ``leading`` for its size), in its size,
    at its left edge, after a line that ended because this one's first word would not fit
    before ``right``, its column's edge."""
    last, size = paragraph.lines[-1], paragraph.size
    if not _steps_on(paragraph, line, leading):
        return False
    left = paragraph.lines[1].left if len(paragraph.lines) > 1 else None
    if left is not None:  # the paragraph's left edge is known
        if abs(line.left - left) > 0.6 * size:
            return False
    elif not paragraph.start - 4 * size <= line.left <= paragraph.start + 0.6 * size:
        return False  # neither under the first line's text nor left of its indent
    space = next((k for k, c in enumerate(line.text) if c.isspace()), None)
    word = (line.starts[space] if space is not None else line.right) - line.left
    return right - last.right < word + 0.3 * size or last.text.rstrip().endswith("\u00ad")


def vocabulary(paragraphs: list[Paragraph]) -> set[str]:
    """The words of a document's paragraphs, lowercased, without the marks around them: what
    tells a compound broken at its own hyphen from a word a typesetter hyphenated."""
    return {word.strip(_MARKS).lower() for paragraph in paragraphs for line in paragraph.lines
            for word in line.text.split()}


_MARKS = "\u00ad.,;:!?()[]{}\"'\u2018\u2019\u201c\u201d\u00ab\u00bb"


def _hyphen_kept(before: str, after: str, words: set[str] | frozenset[str]) -> bool:
    """Whether the hyphen that ends a line, between ``before`` and ``after`` (the next line),
    is the word's own: a number or a sign follows (``ECMA-`` / ``402``), the word has hyphens
    of its own before (``-mmacosx-version-`` / ``min``: TeX breaks such a word only at
    them), a capital follows a small letter (``Jean-`` / ``Paul``), or the document writes
    the word with its hyphen elsewhere and never without it; else a typesetter broke the
    word there."""
    head = (before.split() or [""])[-1].strip(_MARKS)
    tail = (after.split() or [""])[0].strip(_MARKS)
    if not tail[:1].isalpha() or "-" in head.strip("-"):
        return True
    own, whole = f"{head}-{tail}".lower(), f"{head}{tail}".lower()
    if tail[0].isupper() and head[-1:].islower():
        return whole not in words
    return own in words and whole not in words


def markup(paragraph: Paragraph, words: set[str] | frozenset[str] = frozenset()) -> Plan | None:
    """The paragraph as markup for the translator, its lines joined (a word hyphenated at a
    line's end whole again, a compound broken at its hyphen keeping it: ``words``, the
    document's, tell which): stretches in another style than most of its text are spans
    (monospaced ones code), and text under a link is a link. None for a listing (mostly
    monospaced) and for text without letters."""
    chars: list[tuple[str, Style, int]] = []
    for k, line in enumerate(paragraph.lines):
        text, styles, links = line.text, line.styles, line.links
        if k == 0 and paragraph.mark:
            skip = len(text) - len(text[len(paragraph.mark):].lstrip())
            text, styles, links = text[skip:], styles[skip:], links[skip:]
        if chars and chars[-1][0] == "\u00ad":
            if chars[-1][1].kind == "mono" or _hyphen_kept(  # (code is never hyphenated)
                    "".join(c for c, _, _ in chars[-40:]), text, words):
                chars[-1] = ("-", *chars[-1][1:])  # a compound broken at its own hyphen
            else:
                chars.pop()  # a word broken over two lines
        elif chars:
            chars.append((" ", chars[-1][1], -1))
        text = text.rstrip()
        chars.extend(zip(text, styles, links))
    chars = [c for c in chars if c[0] != "\u00ad"]
    if not any(c.isalpha() for c, _, _ in chars):
        return None  # numbers, marks, a leader's dots
    keys = [(s.kind, s.bold, s.italic, s.color, s.rules) for _, s, _ in chars]
    own_key, own = prevailing((key, 1, s) for (c, s, _), key in zip(chars, keys)
                              if not c.isspace())  # type: ignore[misc]
    if own_key[0] == "mono":
        return None  # a listing
    plan = Plan("", [own], {})
    # a run: characters of one format under one link; a space is in a run only between two
    # characters of it
    runs = [(key, link) for key, (_, _, link) in zip(keys, chars)]
    solid = [k for k, (c, _, _) in enumerate(chars) if not c.isspace()]
    for a, b in zip(solid, solid[1:]):
        for k in range(a + 1, b):
            runs[k] = runs[a] if runs[a] == runs[b] else (own_key, -1)
    pieces, at = [], 0
    while at < len(chars):
        end = at
        while end < len(chars) and runs[end] == runs[at] and (
                chars[end][1] == chars[at][1] or runs[at] == (own_key, -1)):
            end += 1
        text = "".join(c for c, _, _ in chars[at:end])
        (key, link), style = runs[at], chars[at][1]
        if (key, link) == (own_key, -1):
            pieces.append(spanned(text, None))
        else:
            plan.styles.append(style)
            number = len(plan.styles) - 1
            if link >= 0:
                plan.links[number] = link
            pieces.append(spanned(text, number, link=link >= 0, code=key[0] == "mono"))
        at = end
    plan.markup = "".join(pieces)
    return plan


def detached_mark(paragraph: Paragraph, signs: list[Paragraph]) -> Paragraph | None:
    """The list mark of ``paragraph`` where it was read as a line of its own (a bullet drawn
    off its item's baseline): a line of signs alone that is a list mark, standing on the
    item's first line just before it."""
    first = paragraph.lines[0]
    for sign in signs:
        line = sign.lines[0]
        if len(sign.lines) == 1 and _MARK.fullmatch(line.text.strip()) and \
                abs(line.baseline - first.baseline) < 0.6 * first.size and \
                line.right <= first.left + 0.5 and first.left - line.right < 4 * first.size:
            return sign
    return None


def letterless(paragraph: Paragraph) -> bool:
    """Whether a paragraph is only numbers and signs (a page number, a leader's dots)."""
    return not any(c.isalpha() for line in paragraph.lines for c in line.text)


def objects(paragraph: Paragraph) -> set[int]:
    return {o for line in paragraph.lines for o in line.objects}


def apart(chosen: list[Paragraph], kept: set[int]) -> list[Paragraph]:
    """The paragraphs of ``chosen`` that share no drawing command with text left as it is
    (``kept``: its text objects), nor with a paragraph that shares one."""
    while True:
        shared = [p for p in chosen if objects(p) & kept]
        if not shared:
            return chosen
        chosen = [p for p in chosen if p not in shared]
        kept = kept.union(*map(objects, shared))
