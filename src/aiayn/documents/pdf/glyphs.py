"""A PDF page's characters read as lines (PDFium's reading), each character with its style
(a rule drawn under or through it among it: an underline, a strike-through), place, the text
object drawing it and the link over it; a line cut where its text stands apart."""

from __future__ import annotations

import ctypes
import re
import statistics
from dataclasses import dataclass, field, replace

from .. import monospaced
from ..direction import right_to_left_letters

# a dot leader: four dots or more, spaced or not, up to the line's end or a page's number
# there (not an ellipsis in a sentence: "Developer Tools.... This step")
LEADER = re.compile(r"\s*(?:\.\s*){4,}(?=\S{0,8}\s*$)")
# kinds of fonts by their names, TeX's Computer Modern among them (CMR10, CMBX12, CMTT10)
_SERIF = re.compile(r"times|roman|nimbusrom|serif(?!.*sans)|georgia|garamond|cambria|palatino|"
                    r"bookman|minion|century|baskerville|charter|utopia|"
                    r"^cm(?:r|bx?|ti|sl|mi|csc|u)\d|^sf(?:rm|bx|ti|sl)", re.IGNORECASE)
# (beside ``documents.monospaced``'s names: PostScript names run a family's words together)
_MONO = re.compile(r"mono|typewriter|nimbusmon|^cm(?:sl|i)?tt|^sftt", re.IGNORECASE)
_BOLD = re.compile(r"bold|black|heavy|demi|medi\b|-(?:b|bd|sb)\b|^cmbx?\d|^sfbx", re.IGNORECASE)
_ITALIC = re.compile(r"italic|oblique|ital\b|-(?:i|it)\b|^cm(?:ti|sl|mi)|^sf(?:ti|sl)",
                     re.IGNORECASE)
# PDF font descriptor flags: FixedPitch, Serif, Italic, ForceBold
_FIXED, _SERIF_FLAG, _ITALIC_FLAG, _BOLD_FLAG = 1, 2, 64, 1 << 18


@dataclass(frozen=True)
class Style:
    """How a stretch of text looks: its font's kind ("sans", "serif", "mono"), weight and
    slant, size in points, fill colour (RGBA) and rules: an underline or a strike-through, each
    as how far below the baseline its top lies (above it: less than 0) and how thick it is,
    in points."""

    kind: str
    bold: bool
    italic: bool
    size: float
    color: tuple[int, int, int, int]
    rules: tuple[tuple[float, float], ...] = ()


Piece = tuple[Style, str, "int | None"]  # a stretch of a word: style, text, its span


@dataclass
class Line:
    text: str = ""
    styles: list[Style] = field(default_factory=list)  # one per character of ``text``
    starts: list[float] = field(default_factory=list)  # each character's left edge
    ends: list[float] = field(default_factory=list)  # and its right edge
    owners: list[int] = field(default_factory=list)  # and the text object drawing it (0: none)
    origins: list[float] = field(default_factory=list)  # and where it was drawn from
    links: list[int] = field(default_factory=list)  # and the link (highlight) over it, or -1
    left: float = 0.0
    right: float = 0.0
    baseline: float = 0.0
    size: float = 0.0
    objects: set[int] = field(default_factory=set)  # the objects drawing it and its rules
    plain: bool = True  # upright and visible
    bases: list[float] = field(default_factory=list)  # each character's own baseline
    leftward: bool = False  # written right to left (``leftward``)


def read_lines(textpage, page, raw) -> list[Line]:
    """The page's lines as PDFium reads them (it writes a generated line end between two),
    each character with the link over it."""
    areas = _link_areas(page, raw)
    top_level = {ctypes.addressof(raw.FPDFPage_GetObject(page.raw, k).contents)
                 for k in range(raw.FPDFPage_CountObjects(page.raw))}
    name, flags = ctypes.create_string_buffer(256), ctypes.c_int()
    x, y = ctypes.c_double(), ctypes.c_double()
    box = [ctypes.c_double() for _ in range(4)]
    rgba = [ctypes.c_uint() for _ in range(4)]
    lines, line = [], Line()
    fonts: dict[int, tuple[str, bool, bool, float, bool]] = {}
    matrix = raw.FS_MATRIX()
    for index in range(raw.FPDFText_CountChars(textpage)):
        code = raw.FPDFText_GetUnicode(textpage, index)
        obj = raw.FPDFText_GetTextObject(textpage, index)
        if 0xDC00 <= code < 0xE000 and line.text and "\ud800" <= line.text[-1] < "\udc00":
            # the second half of a character beyond 16 bits (UTF-16's surrogates)
            line.text = line.text[:-1] + chr(0x10000 + (ord(line.text[-1]) - 0xD800) * 0x400 +
                                             code - 0xDC00)
            continue
        char = chr(code) if 0 <= code < 0x110000 else "\ufffd"
        if char in "\r\n" and not obj:
            if line.text.strip():
                lines.append(line)
            line = Line()
            continue
        raw.FPDFText_GetCharOrigin(textpage, index, x, y)
        raw.FPDFText_GetCharBox(textpage, index, *box)
        address = ctypes.addressof(obj.contents) if obj else 0
        if obj:
            line.objects.add(address)
            if address not in fonts:
                raw.FPDFText_GetMatrix(textpage, index, matrix)
                kind, bold, italic = _font_style(textpage, index, raw, name, flags)
                # upright: its baseline runs left to right, however slanted its letters
                # (a word processor slants a font that has no italic: PDFium's angle
                # counts the slant as turning)
                upright = matrix.a > 0 and abs(matrix.b) <= 0.01 * matrix.a
                fonts[address] = (kind, bold, italic or abs(matrix.c) > 0.1 * abs(matrix.d),
                                  abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5,
                                  upright)
            kind, bold, italic, scale, upright = fonts[address]
            if address not in top_level or not upright or \
                    raw.FPDFTextObj_GetTextRenderMode(obj) == raw.FPDF_TEXTRENDERMODE_INVISIBLE \
                    or raw.FPDFText_HasUnicodeMapError(textpage, index) == 1:
                line.plain = False  # (the last: a font that does not say what it draws)
            raw.FPDFText_GetFillColor(textpage, index, *rgba)
            # the size on the page: the font's size, times what the drawing scales it by
            size = raw.FPDFText_GetFontSize(textpage, index) * scale
            style = Style(kind, bold, italic, round(size, 1),
                           tuple(v.value for v in rgba))  # type: ignore[arg-type]
        else:  # a space PDFium puts between words
            style = line.styles[-1] if line.styles else None  # type: ignore[assignment]
        if style is None:
            continue
        if raw.FPDFText_IsHyphen(textpage, index):
            char = "\u00ad"  # a hyphen breaking a word at the line's end
        if not line.text:
            line.left, line.baseline = box[0].value, y.value
        line.text += char
        line.styles.append(style)
        line.starts.append(box[0].value)
        line.ends.append(box[1].value)
        line.owners.append(address)
        line.origins.append(x.value)
        line.bases.append(y.value)
        middle = ((box[0].value + box[1].value) / 2, (box[2].value + box[3].value) / 2)
        line.links.append(next((k for k, left, bottom, right, top in areas
                                if left <= middle[0] <= right and bottom <= middle[1] <= top),
                               line.links[-1] if not obj and line.links else -1))
        line.right = max(line.right, box[1].value)
    if line.text.strip():
        lines.append(line)
    lines = [row for line in lines for row in _rows(line)]
    for line in lines:  # half a character, its other half missing
        line.text = re.sub("[\ud800-\udfff]", "\ufffd", line.text)
        if right_to_left_letters(line.text):  # read in order, right to left: its left edge
            line.left = min(line.starts)
    # a page where most lines with letters written right to left are mostly such letters
    # reads its mixed lines so too
    from .reading import in_reading_order, leftward
    mixed = [line for line in lines if right_to_left_letters(line.text)]
    rtl_page = 2 * sum(leftward(line, False) for line in mixed) > len(mixed)
    for line in lines:
        line.leftward = leftward(line, rtl_page)
    lines = [in_reading_order(line) if line.leftward else line for line in lines]
    lines = [part for line in lines for part in _parts(line, around=_neighbours(line, lines))]
    for line in lines:  # (a part of a line, a column or a cell, has its own direction)
        line.leftward = leftward(line, rtl_page)
    for line in lines:
        line.size = statistics.median(s.size for s, c in zip(line.styles, line.text)
                                      if not c.isspace()) if line.text.strip() else 0
    _ruled(lines, page, raw, top_level)
    return lines


def _rows(line: Line) -> list[Line]:
    """A line cut after each hyphen that breaks a word at its end: PDFium reads the word on
    into the next line, with no line end between (the first row keeps the hyphen); the next
    line may be the top of the next column, higher on the page."""
    cuts = [k + 1 for k, c in enumerate(line.text[:-1]) if c == "\u00ad"
            and abs(line.bases[k + 1] - line.bases[k]) > 0.5 * line.styles[k].size]
    return _pieces(line, cuts, rows=True) if cuts else [line]


def _pieces(line: Line, cuts: list[int], rows: bool = False) -> list[Line]:
    """``line`` cut before each index of ``cuts``, each piece without the spaces it begins
    with (none of spaces alone); ``rows``: each piece on the baseline of its first character
    (else the line's)."""
    pieces = []
    for a, b in zip([0, *cuts], [*cuts, len(line.text)]):
        k = a + len(line.text[a:b]) - len(line.text[a:b].lstrip())
        if line.text[k:b].strip():
            pieces.append(Line(line.text[k:b], line.styles[k:b], line.starts[k:b],
                               line.ends[k:b], line.owners[k:b], line.origins[k:b],
                               line.links[k:b], line.starts[k], max(line.ends[k:b]),
                               line.bases[k] if rows else line.baseline, 0.0,
                               {o for o in line.owners[k:b] if o}, line.plain,
                               line.bases[k:b], line.leftward))
    return pieces


def _ruled(lines: list[Line], page, raw, top_level: set[int]) -> None:
    """Underlines and strike-throughs, which a PDF draws as thin rules under or through the
    words (a link's, an underlined or struck word's), as the style of the characters they
    cross or lie under; each rule becomes one of its line's objects, taken off with the text
    it marks."""
    rules = []
    box = [ctypes.c_float() for _ in range(4)]
    for k in range(raw.FPDFPage_CountObjects(page.raw)):
        obj = raw.FPDFPage_GetObject(page.raw, k)
        if raw.FPDFPageObj_GetType(obj) != raw.FPDF_PAGEOBJ_PATH or \
                not raw.FPDFPageObj_GetBounds(obj, *box):
            continue
        left, bottom, right, top = (v.value for v in box)
        if top - bottom <= 3.0 and right - left >= 2 * (top - bottom):
            rules.append((ctypes.addressof(obj.contents), left, bottom, right, top))
    for line in filter(lambda line: line.plain, lines):  # (rotated text's are not)
        for address, left, bottom, right, top in rules:
            if address not in top_level or top - bottom > 0.15 * line.size or \
                    left < line.left - 0.5 * line.size or right > line.right + 0.5 * line.size \
                    or abs(bottom - line.baseline) > line.size:
                continue  # no wider than the line, no thicker than a heavy underline, near it
            marked = []
            for k, (a, b) in enumerate(zip(line.starts, line.ends)):
                base, size = line.bases[k], line.styles[k].size
                # under the character's own baseline no deeper than a descender, or across
                # the middle of its small letters (a raised mark's own underline is its)
                if left <= (a + b) / 2 <= right and (
                        base - 0.35 * size <= bottom and top <= base
                        or base + 0.15 * size <= bottom and top <= base + 0.5 * size):
                    marked.append((k, (round(base - top, 2), round(top - bottom, 2))))
            if marked:
                line.objects.add(address)
            for k, rule in marked:
                line.styles[k] = replace(line.styles[k], rules=line.styles[k].rules + (rule,))


def _font_style(textpage, index: int, raw, name_buffer, flags) -> tuple[str, bool, bool]:
    raw.FPDFText_GetFontInfo(textpage, index, name_buffer, len(name_buffer), flags)
    name = name_buffer.value.decode("latin-1").split("+")[-1]
    kind = "mono" if flags.value & _FIXED or monospaced(name) or _MONO.search(name) else \
        "serif" if flags.value & _SERIF_FLAG or _SERIF.search(name) else "sans"
    bold = bool(flags.value & _BOLD_FLAG or _BOLD.search(name))  # weights are unreliable
    return kind, bold, bool(flags.value & _ITALIC_FLAG or _ITALIC.search(name))


def _link_areas(page, raw) -> list[tuple[int, float, float, float, float]]:
    """The page's links, and its highlights and other text markups (underline, squiggle,
    strike-out annotations) that say over which words they lie: each annotation's number
    and its rectangle (left, bottom, right, top); a markup's, one for each of its areas."""
    areas, rect, quad = [], raw.FS_RECTF(), raw.FS_QUADPOINTSF()
    for k in range(raw.FPDFPage_GetAnnotCount(page.raw)):
        annotation = raw.FPDFPage_GetAnnot(page.raw, k)
        kind = raw.FPDFAnnot_GetSubtype(annotation)
        if kind == raw.FPDF_ANNOT_LINK and raw.FPDFAnnot_GetRect(annotation, rect):
            areas.append((k, min(rect.left, rect.right), min(rect.bottom, rect.top),
                          max(rect.left, rect.right), max(rect.bottom, rect.top)))
        elif kind in (raw.FPDF_ANNOT_HIGHLIGHT, raw.FPDF_ANNOT_UNDERLINE,
                      raw.FPDF_ANNOT_SQUIGGLY, raw.FPDF_ANNOT_STRIKEOUT):
            for n in range(raw.FPDFAnnot_CountAttachmentPoints(annotation)):
                if raw.FPDFAnnot_GetAttachmentPoints(annotation, n, quad):
                    xs, ys = (quad.x1, quad.x2, quad.x3, quad.x4), (quad.y1, quad.y2, quad.y3,
                                                                     quad.y4)
                    areas.append((k, min(xs), min(ys), max(xs), max(ys)))
        raw.FPDFPage_CloseAnnot(annotation)
    return areas


def _parts(line: Line, wide: bool = True, around: list[Line] | None = None) -> list[Line]:
    """A line cut where its text stands apart: before a dot leader (a table of contents'
    dots up to a page's number), at a gap between words wider than two of its ems (columns,
    the cells of a table drawn without lines, a tab), and then in each part at a gap wider
    than one em and four times the part's usual space (``wide``: the first pass); not where
    the line is justified, its spaces stretched alike with the lines ``around`` it (the
    lines just above and below) running across them."""
    size = statistics.median(s.size for s in line.styles) if line.styles else 0.0
    around = around or []
    if right_to_left_letters(line.text):
        from .reading import parts_seen
        parts = parts_seen(line, size, wide)
        return [piece for part in parts for piece in _parts(part, False, around)] \
            if wide else parts
    solid = [k for k, c in enumerate(line.text) if not c.isspace()]
    gaps = {b: line.starts[b] - line.ends[a] for a, b in zip(solid, solid[1:])}
    if wide:
        cuts = {m.start() for m in LEADER.finditer(line.text) if m.start() > 0}
        cuts |= {b for b, gap in gaps.items() if gap > 2 * size}
    else:
        words = sorted(gap for gap in gaps.values() if gap > 0.1 * size)  # between words
        usual = words[len(words) // 2] if words else size
        cuts = {b for b, gap in gaps.items() if gap > size and gap > 4 * usual}
    cuts -= _stretched(line, solid, around)
    parts = _pieces(line, sorted(cuts))
    return [piece for part in parts for piece in _parts(part, False, around)] if wide \
        else parts


# how much wider than a justified line's narrowest space its widest may be: TeX stretches the
# space after a sentence's full stop three times as much as the others
_STRETCH = 3.0


def _stretched(line: Line, solid: list[int], around: list[Line]) -> set[int]:
    """The spaces of a justified line (each as the index of the character after it), which
    its typesetter stretched alike to fill the measure: two or more, none more than
    ``_STRETCH`` times as wide as the narrowest, every one with text of a line ``around``
    across it; not in a listing. A table's cells and a page's columns stand apart on the
    lines above and below too."""
    spaces = {b: (line.ends[a], line.starts[b]) for a, b in zip(solid, solid[1:]) if b > a + 1}
    if len(spaces) < 2 or listing(line):
        return set()
    narrowest = max(min(end - start for start, end in spaces.values()), 0.0)
    inked = [(left, right) for other in around
             for left, right, c in zip(other.starts, other.ends, other.text) if not c.isspace()]
    if all(end - start <= _STRETCH * narrowest
           and any(left < end and right > start for left, right in inked)
           for start, end in spaces.values()):
        return set(spaces)
    return set()


def _neighbours(line: Line, lines: list[Line]) -> list[Line]:
    """The lines just above and below ``line``, of about its size, that end where it ends
    (within half an em): a justified paragraph's lines around one of its own."""
    size = statistics.median(s.size for s in line.styles) if line.styles else 0.0
    return [other for other in lines
            if 0.5 * size < abs(other.baseline - line.baseline) < 2 * size
            and abs(other.right - line.right) < 0.5 * size and other.styles
            and abs(statistics.median(s.size for s in other.styles) - size) < 0.2 * size]


def listing(line: Line) -> bool:
    """Whether a line is mostly monospaced."""
    return 2 * sum(s.kind == "mono" for s in line.styles) > len(line.styles)
