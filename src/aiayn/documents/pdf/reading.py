"""Lines written right to left, read from a PDF page: which lines are (``leftward``), their
characters put in the order they are read from where the glyphs stand (``in_reading_order``),
and a line cut into parts side by side on the page (``parts_seen``, ``glyphs._parts``'s
counterpart). PDFium gives such a line's characters in an order of its own: the reading
order for text one program draws, the order seen for another's."""

from __future__ import annotations

import statistics
import unicodedata

from .glyphs import LEADER, Line


def in_reading_order(line: Line) -> Line:
    """A line written right to left with its characters in the order they are read, rebuilt
    from where they stand on the page: PDFium's own order follows the drawing commands, which
    another program may draw in the order the words are seen (a line with a URL comes back
    with its words reversed). The glyphs left to right, a space where they stand apart, are
    put back in reading order by the Unicode Bidirectional Algorithm (a paragraph written
    right to left), as pdftotext does; a mirrored glyph at an odd level is its mirror image's
    character, and a combining mark stays after its letter."""
    from . import visual
    size = statistics.median(s.size for s in line.styles)
    solid = [k for k, c in enumerate(line.text) if not c.isspace()]
    marks = {k for k in solid if unicodedata.category(line.text[k]) in ("Mn", "Me")}
    letters = sorted((k for k in solid if k not in marks),
                     key=lambda k: (line.starts[k] + line.ends[k]) / 2)
    if not letters:
        return line
    # each mark on the letter it is drawn over: the one whose middle is nearest its own
    over: dict[int, list[int]] = {}
    for k in sorted(marks):
        middle = (line.starts[k] + line.ends[k]) / 2
        base = min(letters, key=lambda j: abs((line.starts[j] + line.ends[j]) / 2 - middle))
        over.setdefault(base, []).append(k)
    seen: list[int | None] = []  # character numbers left to right; None: a space
    for n, k in enumerate(letters):
        if n and line.starts[k] - line.ends[letters[n - 1]] > 0.22 * size:
            seen.append(None)
        seen.append(k)
    text = "".join(" " if k is None else line.text[k] for k in seen)
    levels = visual.levels(text, 1)
    order = visual.order(levels)
    out: list[int | None] = []
    chars: list[str] = []
    for n in order:
        at = seen[n]
        if at is None:
            out.append(None)
            chars.append(" ")
            continue
        chars.append(line.text[at])
        out.append(at)
        for mark in over.get(at, []):
            out.append(mark)
            chars.append(line.text[mark])
    _balanced(chars, [levels[n] % 2 == 1 for n in order for _ in
                      [0, *over.get(seen[n], [])]])  # type: ignore[arg-type]

    def pick(values: list, blank):  # a rebuilt space takes its neighbour's
        return [values[k] if k is not None else blank(n) for n, k in enumerate(out)]
    near = [next((k for k in out[n::-1] if k is not None), letters[0]) for n in range(len(out))]
    return Line("".join(chars), pick(line.styles, lambda n: line.styles[near[n]]),
                pick(line.starts, lambda n: line.ends[near[n]]),
                pick(line.ends, lambda n: line.ends[near[n]]),
                pick(line.owners, lambda n: 0), pick(line.origins, lambda n: line.ends[near[n]]),
                pick(line.links, lambda n: line.links[near[n]]), line.left, line.right,
                line.baseline, line.size, line.objects, line.plain,
                pick(line.bases, lambda n: line.baseline), line.leftward)


def _balanced(chars: list[str], odd: list[bool]) -> None:
    """Brackets at odd levels given as the glyphs drawn (their mirror images), as PDFium gives
    some programs' text, turned round where that pairs more of the line's brackets: PDFium
    turns others itself, so the line's own pairing decides."""
    from .visual import mirror_images
    mirrored = mirror_images()

    def unpaired(text: list[str]) -> int:
        depth = loose = 0
        for c in text:
            if c in "([{":
                depth += 1
            elif c in ")]}":
                loose += depth == 0
                depth = max(0, depth - 1)
        return loose + depth
    turned = [mirrored.get(c, c) if o and c in "()[]{}" else c for c, o in zip(chars, odd)]
    if unpaired(turned) < unpaired(chars):
        chars[:] = turned


def parts_seen(line: Line, size: float, wide: bool) -> list[Line]:
    """``_parts`` for a line with letters written right to left, which PDFium reads in their
    order, not the page's: the same gaps and leaders, measured between characters side by
    side on the page; each part keeps its characters in the order they are read."""
    solid = sorted((k for k, c in enumerate(line.text) if not c.isspace()),
                   key=lambda k: line.starts[k])
    gaps = [(line.starts[b] - line.ends[a], (line.ends[a] + line.starts[b]) / 2)
            for a, b in zip(solid, solid[1:])]
    if wide:
        # a dot leader (a contents line's, seen from its title at the right to its page
        # number at the left) is cut from its title
        cuts = {max(line.ends[k] for k in range(m.start(), m.end()))
                for m in LEADER.finditer(line.text) if m.start() > 0}
        cuts |= {x for gap, x in gaps if gap > 2 * size}
    else:
        words = sorted(gap for gap, _ in gaps if gap > 0.1 * size)  # between words
        usual = words[len(words) // 2] if words else size
        cuts = {x for gap, x in gaps if gap > size and gap > 4 * usual}
    edges = sorted(cuts)
    groups: dict[int, list[int]] = {}
    for k in range(len(line.text)):
        middle = (line.starts[k] + line.ends[k]) / 2
        groups.setdefault(sum(x < middle for x in edges), []).append(k)
    parts = []
    for _, ks in sorted(groups.items()):
        while ks and line.text[ks[0]].isspace():
            ks = ks[1:]
        while ks and line.text[ks[-1]].isspace():
            ks = ks[:-1]
        if ks:
            parts.append(Line("".join(line.text[k] for k in ks), [line.styles[k] for k in ks],
                              [line.starts[k] for k in ks], [line.ends[k] for k in ks],
                              [line.owners[k] for k in ks], [line.origins[k] for k in ks],
                              [line.links[k] for k in ks], min(line.starts[k] for k in ks),
                              max(line.ends[k] for k in ks), line.baseline, 0.0,
                              {line.owners[k] for k in ks if line.owners[k]}, line.plain,
                              [line.bases[k] for k in ks], line.leftward))
    return parts


def leftward(line: Line, rtl_page: bool) -> bool:
    """Whether a line is written right to left: most of its letters are (a paragraph's line
    that begins with a Latin name too), or, on a page mostly written so, the letter standing
    furthest right is (where such a line begins: a URL later in it does not turn it; on a
    page of German, a line that ends with a Hebrew name stays left to right)."""
    strong = [(line.ends[k], kind) for k, kind in
              enumerate(map(unicodedata.bidirectional, line.text)) if kind in ("L", "R", "AL")]
    kinds = [kind for _, kind in strong]
    return bool(strong) and (2 * kinds.count("L") < len(kinds) or
                             rtl_page and max(strong)[1] != "L")
