"""PDF files (.pdf, pypdfium2: PDFium, the engine of Chrome's PDF viewer). A PDF holds no
paragraphs, only glyphs placed on pages; PDFium reads them in order as lines. Lines are joined
into paragraphs here, each paragraph is translated whole with its bold, italic, colours and
code carried by the markup path (as a Word paragraph's runs are), and the translation is set
again in the paragraph's place: from its first line's start, wrapped at its column's edge,
the font made smaller (to 70%) where the translation needs more room than the original had.

A line is first cut where its text stands apart (columns, a table's cells, a contents line's
dots). Lines belong to one paragraph where the second follows the first at one line's
distance, in the same font size, starting where the first started (or where a first line's
indent or list mark ends), and where the first line ended because the second's first word
would not have fitted on it. A list mark (a bullet, "1.", "a)") stays where it was. A
paragraph mostly in a monospaced font (a listing) is left as it is; so are rotated text,
invisible text (a scanned page's recognised words, under its picture), text inside a reused
drawing (a form XObject) and text in a font that does not say which letters it draws (they
would be read as other letters), with everything sharing a drawing command with them.
Numbers and signs (page numbers, a leader's dots) sharing one with translated text are drawn
again where they were.

The translation is set in the PDF standard fonts (Helvetica, Times, Courier, in their bold
and italic) that every reader has, chosen by the original font's kind. They hold the Latin
letters of Western European languages; a translation with other letters needs a Unicode font
(DejaVu), embedded where found. Pictures, drawings, links and form fields stay as they are. A
page whose content PDFium cannot write again as it drew it is left as it was.
"""

from __future__ import annotations

import ctypes
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError, require
from . import Job, spanned, stretches

# a list mark at a paragraph's start: a bullet, a number or letter and its stop
_MARK = re.compile(r"[\u2022\u2023\u2043\u2219\u25aa\u25ab\u25cf\u25e6\u2013\u2014\-*\u00b7]|"
                   r"\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)]")
# a dot leader: four dots or more, spaced or not
_LEADER = re.compile(r"\s*(?:\.\s*){4,}")
# kinds of fonts by their names, TeX's Computer Modern among them (CMR10, CMBX12, CMTT10)
_SERIF = re.compile(r"times|roman|nimbusrom|serif(?!.*sans)|georgia|garamond|cambria|palatino|"
                    r"bookman|minion|century|baskerville|charter|utopia|"
                    r"^cm(?:r|bx?|ti|sl|mi|csc|u)\d|^sf(?:rm|bx|ti|sl)", re.IGNORECASE)
_MONO = re.compile(r"courier|mono|consolas|menlo|monaco|inconsolata|typewriter|nimbusmon|"
                   r"lucida ?console|\bcode\b|^cm(?:sl|i)?tt|^sftt", re.IGNORECASE)
_BOLD = re.compile(r"bold|black|heavy|demi|medi\b|-(?:b|bd|sb)\b|^cmbx?\d|^sfbx", re.IGNORECASE)
_ITALIC = re.compile(r"italic|oblique|ital\b|-(?:i|it)\b|^cm(?:ti|sl|mi)|^sf(?:ti|sl)",
                     re.IGNORECASE)
# PDF font descriptor flags: FixedPitch, Serif, Italic, ForceBold
_FIXED, _SERIF_FLAG, _ITALIC_FLAG, _BOLD_FLAG = 1, 2, 64, 1 << 18
_STANDARD = {("sans", False, False): "Helvetica", ("sans", True, False): "Helvetica-Bold",
             ("sans", False, True): "Helvetica-Oblique",
             ("sans", True, True): "Helvetica-BoldOblique",
             ("serif", False, False): "Times-Roman", ("serif", True, False): "Times-Bold",
             ("serif", False, True): "Times-Italic", ("serif", True, True): "Times-BoldItalic",
             ("mono", False, False): "Courier", ("mono", True, False): "Courier-Bold",
             ("mono", False, True): "Courier-Oblique", ("mono", True, True): "Courier-BoldOblique"}
# Unicode fonts for letters the standard fonts lack, by kind: Debian's fonts-dejavu-core and
# matplotlib's copy
_DEJAVU = {"sans": "DejaVuSans", "serif": "DejaVuSerif", "mono": "DejaVuSansMono"}
_SHAPES = {(False, False): "", (True, False): "-Bold", (False, True): "-Oblique",
           (True, True): "-BoldOblique"}
_SMALLEST = 0.7  # the least a paragraph's font is made smaller to fit its translation
_Box = tuple[float, float, float, float]  # left, bottom, right, top


@dataclass(frozen=True)
class _Style:
    """How a stretch of text looks: its font's kind ("sans", "serif", "mono"), weight and
    slant, size in points and fill colour (RGBA)."""

    kind: str
    bold: bool
    italic: bool
    size: float
    color: tuple[int, int, int, int]


_Piece = tuple[_Style, str, "int | None"]  # a stretch of a word: style, text, its span


@dataclass
class _Line:
    text: str = ""
    styles: list[_Style] = field(default_factory=list)  # one per character of ``text``
    starts: list[float] = field(default_factory=list)  # each character's left edge
    ends: list[float] = field(default_factory=list)  # and its right edge
    owners: list[int] = field(default_factory=list)  # and the text object drawing it (0: none)
    origins: list[float] = field(default_factory=list)  # and where it was drawn from
    links: list[int] = field(default_factory=list)  # and the link over it (-1: none)
    left: float = 0.0
    right: float = 0.0
    baseline: float = 0.0
    size: float = 0.0
    objects: set[int] = field(default_factory=set)  # the text objects drawing it
    plain: bool = True  # upright and visible


@dataclass
class _Paragraph:
    lines: list[_Line]
    mark: str = ""  # a list mark kept as it is
    start: float = 0.0  # where the text after the mark begins on the first line
    right: float = 0.0  # the right edge of its column
    step: float = 0.0  # the distance between its lines
    floor: float = 0.0  # how low its text may reach: the top of the next text below it
    align: str = "left"  # "right" or "center" for a line set so (a running head, a title)

    @property
    def size(self) -> float:
        return statistics.median(line.size for line in self.lines)


def translate_pdf(data: bytes, job: Job) -> bytes:
    pdfium = require("pypdfium2", "PDF files", "documents")
    import pypdfium2.raw as raw
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as err:
        problem = ("it is encrypted with a password; save it without one"
                   if getattr(err, "err_code", None) == raw.FPDF_ERR_PASSWORD
                   else f"PDFium cannot read it ({err})")
        raise UserError(f"not a PDF file that can be translated: {problem}") from None
    try:
        pages = [document[k] for k in range(len(document))]
    except pdfium.PdfiumError as err:
        raise UserError(f"not a PDF file that can be translated: PDFium cannot read one of "
                        f"its pages ({err})") from None
    found: list[tuple[Any, _Paragraph, _Plan]] = []
    signs: dict[int, list[_Paragraph]] = {}  # by page: text without letters
    for number, page in enumerate(pages, start=1):
        textpage = page.get_textpage()
        paragraphs, kept = _paragraphs(textpage, page, raw, job, number)
        textpage.close()
        plans = {id(p): _markup(p) for p in paragraphs}
        signs[number] = [p for p in paragraphs if _letterless(p)]
        kept = kept.union(*(_objects(p) for p in paragraphs
                            if plans[id(p)] is None and not _letterless(p)))
        for paragraph in _apart([p for p in paragraphs if plans[id(p)] is not None], kept):
            found.append((page, paragraph, plans[id(paragraph)]))  # type: ignore[arg-type]
    if not found:
        job.warn("the PDF has no text that can be translated: no page holds lines of visible, "
                 "upright text (a scanned page is a picture)")
    translated = job.markup([plan.markup for _, _, plan in found]) if found else []
    writer = _Writer(document, raw)
    drawn: dict[int, Any] = {}  # by page index: the changed page as PDFium draws it
    for number, page in enumerate(pages, start=1):
        mine = [(paragraph, stretches(out), plan)
                for (on, paragraph, plan), out in zip(found, translated) if on is page]
        taken: set[int] = set().union(*(_objects(p) for p, _, _ in mine))
        # numbers and dots drawn by the same commands as translated text: drawn again as
        # they were (a contents line's leader and page number)
        redrawn = [p for p in signs[number] if _objects(p) & taken]
        gone = _remove(page, taken.union(*map(_objects, redrawn)), raw)
        linked: dict[int, list[tuple[float, float, float, float]]] = {}
        for paragraph, pieces, plan in mine:
            for span, box in writer.set(page, paragraph, pieces, plan.styles):
                if span in plan.links:
                    linked.setdefault(plan.links[span], []).append(box)
        for paragraph in redrawn:
            writer.again(page, paragraph)
        _relink(page, raw, linked)
        if gone:
            drawn[number - 1] = _picture(page)
            raw.FPDFPage_GenerateContent(page.raw)
        for obj in gone:
            raw.FPDFPageObj_Destroy(obj)
        page.close()
    out = _saved(document)
    writer.close()
    # PDFium writes a changed page's content again, and cannot write everything it reads (a
    # calibrated colour space's fills come out black): a page whose written content draws
    # otherwise than the page did in memory is left as it was
    written = pdfium.PdfDocument(out)
    lossy = [k for k, picture in drawn.items() if _differs(_picture(written[k]), picture)]
    written.close()
    if lossy:
        original = pdfium.PdfDocument(data)
        for k in lossy:
            document.del_page(k)
            document.import_pages(original, [k], index=k)
        job.warn(f"page(s) {', '.join(str(k + 1) for k in lossy)} left as they were: PDFium "
                 f"cannot write their drawings again as it drew them")
        out = _saved(document)
        original.close()
    document.close()
    return out


def _saved(document) -> bytes:
    import io
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _picture(page):
    """A page drawn at half of 72 dots an inch, in grey (a numpy array); None where PDFium
    cannot draw it (a page of no size)."""
    try:
        return page.render(scale=0.5, grayscale=True).to_numpy().copy()
    except Exception:  # pypdfium2 raises ValueError, PdfiumError
        return None


def _differs(a, b) -> bool:
    """Whether two drawings of a page differ by more than anti-aliasing: more than 0.2% of
    their dots by more than an eighth of the range (or cannot be compared)."""
    import numpy as np
    if a is None or b is None or a.shape != b.shape:
        return True
    return bool(np.mean(np.abs(a.astype(np.int16) - b.astype(np.int16)) > 32) > 0.002)


def _font_style(textpage, index: int, raw, name_buffer, flags) -> tuple[str, bool, bool]:
    raw.FPDFText_GetFontInfo(textpage, index, name_buffer, len(name_buffer), flags)
    name = name_buffer.value.decode("latin-1").split("+")[-1]
    kind = "mono" if flags.value & _FIXED or _MONO.search(name) else \
        "serif" if flags.value & _SERIF_FLAG or _SERIF.search(name) else "sans"
    bold = bool(flags.value & _BOLD_FLAG or _BOLD.search(name))  # weights are unreliable
    return kind, bold, bool(flags.value & _ITALIC_FLAG or _ITALIC.search(name))


def _link_areas(page, raw) -> list[tuple[int, float, float, float, float]]:
    """The page's links: each annotation's number and its rectangle (left, bottom, right,
    top)."""
    areas, rect = [], raw.FS_RECTF()
    for k in range(raw.FPDFPage_GetAnnotCount(page.raw)):
        annotation = raw.FPDFPage_GetAnnot(page.raw, k)
        if raw.FPDFAnnot_GetSubtype(annotation) == raw.FPDF_ANNOT_LINK and \
                raw.FPDFAnnot_GetRect(annotation, rect):
            areas.append((k, min(rect.left, rect.right), min(rect.bottom, rect.top),
                          max(rect.left, rect.right), max(rect.bottom, rect.top)))
        raw.FPDFPage_CloseAnnot(annotation)
    return areas


def _lines(textpage, page, raw) -> list[_Line]:
    """The page's lines as PDFium reads them (it writes a generated line end between two),
    each character with the link over it."""
    areas = _link_areas(page, raw)
    top_level = {ctypes.addressof(raw.FPDFPage_GetObject(page.raw, k).contents)
                 for k in range(raw.FPDFPage_CountObjects(page.raw))}
    name, flags = ctypes.create_string_buffer(256), ctypes.c_int()
    x, y = ctypes.c_double(), ctypes.c_double()
    box = [ctypes.c_double() for _ in range(4)]
    rgba = [ctypes.c_uint() for _ in range(4)]
    lines, line = [], _Line()
    fonts: dict[int, tuple[str, bool, bool, float]] = {}
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
            line = _Line()
            continue
        raw.FPDFText_GetCharOrigin(textpage, index, x, y)
        raw.FPDFText_GetCharBox(textpage, index, *box)
        address = ctypes.addressof(obj.contents) if obj else 0
        if obj:
            line.objects.add(address)
            if address not in top_level or raw.FPDFText_GetCharAngle(textpage, index) or \
                    raw.FPDFTextObj_GetTextRenderMode(obj) == raw.FPDF_TEXTRENDERMODE_INVISIBLE \
                    or raw.FPDFText_HasUnicodeMapError(textpage, index) == 1:
                line.plain = False  # (the last: a font that does not say what it draws)
            if address not in fonts:
                raw.FPDFText_GetMatrix(textpage, index, matrix)
                fonts[address] = (*_font_style(textpage, index, raw, name, flags),
                                  abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5)
            kind, bold, italic, scale = fonts[address]
            raw.FPDFText_GetFillColor(textpage, index, *rgba)
            # the size on the page: the font's size, times what the drawing scales it by
            size = raw.FPDFText_GetFontSize(textpage, index) * scale
            style = _Style(kind, bold, italic, round(size, 1),
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
        middle = ((box[0].value + box[1].value) / 2, (box[2].value + box[3].value) / 2)
        line.links.append(next((k for k, left, bottom, right, top in areas
                                if left <= middle[0] <= right and bottom <= middle[1] <= top),
                               line.links[-1] if not obj and line.links else -1))
        line.right = max(line.right, box[1].value)
    if line.text.strip():
        lines.append(line)
    for line in lines:  # half a character, its other half missing
        line.text = re.sub("[\ud800-\udfff]", "\ufffd", line.text)
    lines = [part for line in lines for part in _parts(line)]
    for line in lines:
        line.size = statistics.median(s.size for s, c in zip(line.styles, line.text)
                                      if not c.isspace()) if line.text.strip() else 0
    return lines


def _parts(line: _Line, wide: bool = True) -> list[_Line]:
    """A line cut where its text stands apart: before a dot leader (a table of contents'
    dots up to a page's number), at a gap between words wider than two of its ems (columns,
    the cells of a table drawn without lines, a tab), and then in each part at a gap wider
    than one em and four times the part's usual space (``wide``: the first pass)."""
    size = statistics.median(s.size for s in line.styles) if line.styles else 0.0
    solid = [k for k, c in enumerate(line.text) if not c.isspace()]
    gaps = {b: line.starts[b] - line.ends[a] for a, b in zip(solid, solid[1:])}
    if wide:
        cuts = {m.start() for m in _LEADER.finditer(line.text) if m.start() > 0}
        cuts |= {b for b, gap in gaps.items() if gap > 2 * size}
    else:
        words = sorted(gap for gap in gaps.values() if gap > 0.1 * size)  # between words
        usual = words[len(words) // 2] if words else size
        cuts = {b for b, gap in gaps.items() if gap > size and gap > 4 * usual}
    parts = []
    for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(line.text)]):
        k = a + len(line.text[a:b]) - len(line.text[a:b].lstrip())
        if line.text[k:b].strip():
            parts.append(_Line(line.text[k:b], line.styles[k:b], line.starts[k:b],
                               line.ends[k:b], line.owners[k:b], line.origins[k:b],
                               line.links[k:b], line.starts[k], max(line.ends[k:b]),
                               line.baseline, 0.0,
                               {o for o in line.owners[k:b] if o}, line.plain))
    return [piece for part in parts for piece in _parts(part, False)] if wide else parts


def _paragraphs(textpage, page, raw, job: Job,
                number: int) -> tuple[list[_Paragraph], set[int]]:
    """The page's paragraphs of upright, visible text, and the text objects of the lines
    left as they are."""
    lines = _lines(textpage.raw, page, raw)
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
    paragraphs: list[_Paragraph] = []
    for line in lines:
        if not line.plain:
            continue
        # the paragraph it goes on with: the last, or one of the few before it where PDFium
        # reads the lines of columns side by side in turn
        going = None if _MARK.match(line.text) else next(
            (p for p in reversed(paragraphs[-4:]) if _continues(
                p, line, _column(lines, p.lines[-1], line), leading.get(line.size))), None)
        if going is not None:
            going.lines.append(line)
        else:
            paragraphs.append(_with_mark(_Paragraph([line])))
    for paragraph in paragraphs:
        _measure(paragraph, lines, leading, page.get_mediabox())
    return paragraphs, {o for line in lines if not line.plain for o in line.objects}


def _letterless(paragraph: _Paragraph) -> bool:
    """Whether a paragraph is only numbers and signs (a page number, a leader's dots)."""
    return not any(c.isalpha() for line in paragraph.lines for c in line.text)


def _objects(paragraph: _Paragraph) -> set[int]:
    return {o for line in paragraph.lines for o in line.objects}


def _apart(chosen: list[_Paragraph], kept: set[int]) -> list[_Paragraph]:
    """The paragraphs of ``chosen`` that share no drawing command with text left as it is
    (``kept``: its text objects), nor with a paragraph that shares one."""
    while True:
        shared = [p for p in chosen if _objects(p) & kept]
        if not shared:
            return chosen
        chosen = [p for p in chosen if p not in shared]
        kept = kept.union(*map(_objects, shared))


def _measure(paragraph: _Paragraph, lines: list[_Line], leading: dict[float, float],
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
        rights = sorted(line.right for line in lines if line.plain and not _listing(line))
        edge = min(line.left for line in lines if line.plain)
        end = rights[int(0.9 * (len(rights) - 1))] if rights else last.right
        middle = (edge + end) / 2
        band = [line for line in lines if line is not last and
                line.baseline - line.size < last.baseline + size and
                line.baseline + line.size > last.baseline - 0.3 * size]
        # a line alone across the page is a running head or a title; one beside other text
        # (a table's cell) is set from where it starts
        if not band and last.right > end - 0.5 * size and last.left > middle:
            paragraph.align = "right"
        elif not band and abs((last.left + last.right) / 2 - middle) < 0.5 * size and \
                last.left > edge + 2 * size:
            paragraph.align = "center"
        beside = [line.left for line in band if line.left > last.right]
        paragraph.right = max(paragraph.right, min(beside) - 0.5 * size if beside
                              else max(end, box[2] - (edge - box[0])))
    below = [line.baseline + 0.75 * line.size for line in lines
             if line.baseline < last.baseline - 0.5 * size and line.left < paragraph.right
             and line.right > left]
    paragraph.floor = max(below, default=last.baseline - 2 * paragraph.step - 0.75 * size)


def _with_mark(paragraph: _Paragraph) -> _Paragraph:
    first = paragraph.lines[0]
    paragraph.start = first.left
    match = _MARK.match(first.text)
    if match and first.text[match.end():match.end() + 1].isspace() and \
            first.text[match.end():].strip():
        words = len(first.text) - len(first.text[match.end():].lstrip())
        paragraph.mark, paragraph.start = first.text[:match.end()], first.starts[words]
    return paragraph


def _column(lines: list[_Line], last: _Line, line: _Line) -> float:
    """The right edge of the column of text ``last`` and ``line`` are in: the furthest right
    that lines of their size near them end (within ten of its ems above or below), of those
    starting within three ems of them, but listings (lines mostly monospaced, which run on
    past the column)."""
    size, left = line.size, min(last.left, line.left)
    return max([last.right, line.right] + [
        other.right for other in lines if abs(other.size - size) <= 0.05 * size and
        left - 3 * size <= other.left <= max(last.left, line.left) + 3 * size and
        line.baseline - 10 * size <= other.baseline <= last.baseline + 10 * size and
        (_listing(other) <= _listing(line))])


def _listing(line: _Line) -> bool:
    """Whether a line is mostly monospaced."""
    return 2 * sum(s.kind == "mono" for s in line.styles) > len(line.styles)


def _continues(paragraph: _Paragraph, line: _Line, right: float,
               leading: float | None) -> bool:
    """Whether ``line`` goes on with ``paragraph``: one line below its last (at the
    paragraph's distance between lines, or the page's ``leading`` for its size), in its size,
    at its left edge, after a line that ended because this one's first word would not fit
    before ``right``, its column's edge."""
    last, size = paragraph.lines[-1], paragraph.size
    if abs(line.size - size) > 0.1 * size:
        return False
    step = last.baseline - line.baseline
    steps = [a.baseline - b.baseline for a, b in zip(paragraph.lines, paragraph.lines[1:])]
    expected = statistics.median(steps) if steps else leading
    if not 0.9 * size <= step <= 1.8 * size or \
            expected is not None and abs(step - expected) > 0.15 * size:
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


@dataclass
class _Plan:
    """A paragraph as the translator gets it: its markup, the styles its spans are numbered
    by (the first its own), and the links among them (a span's number: the annotation's)."""

    markup: str
    styles: list[_Style]
    links: dict[int, int]


def _markup(paragraph: _Paragraph) -> _Plan | None:
    """The paragraph as markup for the translator, its lines joined (a word hyphenated at a
    line's end whole again): stretches in another style than most of its text are spans
    (monospaced ones code), and text under a link is a link. None for a listing (mostly
    monospaced) and for text without letters."""
    chars: list[tuple[str, _Style, int]] = []
    for k, line in enumerate(paragraph.lines):
        text, styles, links = line.text, line.styles, line.links
        if k == 0 and paragraph.mark:
            skip = len(text) - len(text[len(paragraph.mark):].lstrip())
            text, styles, links = text[skip:], styles[skip:], links[skip:]
        if chars and chars[-1][0] == "\u00ad":
            chars.pop()  # a word broken over two lines
        elif chars:
            chars.append((" ", chars[-1][1], -1))
        text = text.rstrip()
        chars.extend(zip(text, styles, links))
    chars = [c for c in chars if c[0] != "\u00ad"]
    if not any(c.isalpha() for c, _, _ in chars):
        return None  # numbers, marks, a leader's dots
    keys = [(s.kind, s.bold, s.italic, s.color) for _, s, _ in chars]
    weight: dict[tuple, int] = {}
    for (c, _, _), key in zip(chars, keys):
        if not c.isspace():
            weight[key] = weight.get(key, 0) + 1
    own_key = max(weight, key=lambda k: (weight[k], not (k[1] or k[2])))
    if own_key[0] == "mono":
        return None  # a listing
    plan = _Plan("", [next(s for (_, s, _), key in zip(chars, keys) if key == own_key)], {})
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


def _remove(page, objects: set[int], raw) -> list:
    """Takes the text objects at ``objects``' addresses off the page; returns them, to be
    destroyed once nothing reads them."""
    gone = []
    for k in reversed(range(raw.FPDFPage_CountObjects(page.raw))):
        obj = raw.FPDFPage_GetObject(page.raw, k)
        if ctypes.addressof(obj.contents) in objects and raw.FPDFPage_RemoveObject(page.raw, obj):
            gone.append(obj)
    return gone


class _Writer:
    """Sets translated paragraphs on pages in the standard fonts (or a Unicode font)."""

    def __init__(self, document, raw) -> None:
        self.document, self.raw = document, raw
        self.fonts: dict[tuple[str, bool, bool], Any] = {}
        self.buffers: list[Any] = []
        self.widths: dict[tuple[str, bool, bool, str], float] = {}

    def font(self, kind: str, bold: bool, italic: bool, text: str):
        unicode = not _latin(text)
        key = (kind + ("+" if unicode else ""), bold, italic)
        if key not in self.fonts:
            if unicode:
                data = _unicode_font(kind, bold, italic)
                buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
                font = self.raw.FPDFText_LoadFont(self.document.raw, buffer, len(data),
                                                  self.raw.FPDF_FONT_TRUETYPE, True)
                self.buffers.append(buffer)  # PDFium reads it until the document is saved
            else:
                font = self.raw.FPDFText_LoadStandardFont(
                    self.document.raw, _STANDARD[(kind, bold, italic)].encode())
            self.fonts[key] = font
        return self.fonts[key]

    def text_object(self, font, text: str, size: float):
        obj = self.raw.FPDFPageObj_CreateTextObj(self.document.raw, font, size)
        encoded = (text + "\0").encode("utf-16-le")
        chars = (ctypes.c_ushort * (len(encoded) // 2)).from_buffer_copy(encoded)
        self.raw.FPDFText_SetText(obj, chars)
        return obj

    def width(self, style: _Style, text: str, size: float) -> float:
        key = (style.kind, style.bold, style.italic, text)
        if key not in self.widths:
            font = self.font(style.kind, style.bold, style.italic, text)
            # a word's advance: the right edge of "word|" less that of "|"
            edges = []
            for probe in (text + "|", "|"):
                obj = self.text_object(font, probe, 100.0)
                box = [ctypes.c_float() for _ in range(4)]
                self.raw.FPDFPageObj_GetBounds(obj, *box)
                edges.append(box[2].value)
                self.raw.FPDFPageObj_Destroy(obj)
            self.widths[key] = (edges[0] - edges[1]) / 100.0
        return self.widths[key] * size

    def set(self, page, paragraph: _Paragraph, translated: list[tuple[str, int | None]],
            styles: list[_Style]) -> list[tuple[int | None, _Box]]:
        """Sets a paragraph's translation in its place: from where its text began, wrapped at
        its column's edge, made smaller (to ``_SMALLEST``) until it ends above the next text
        below it. Returns the box of each piece set, by the number of its span."""
        lines = paragraph.lines
        left = lines[1].left if len(lines) > 1 else paragraph.start
        boxes = []
        if paragraph.mark:
            boxes += self.place(page, [(lines[0].left, lines[0].styles[0], paragraph.mark,
                                        None)], lines[0].baseline)
        words, scale = _words(translated, styles), 1.0
        if paragraph.align != "left":  # one line, ending or centred where it was
            return boxes + self.aligned(page, paragraph, words)
        while len(lines) == 1:  # a line stays one while it can
            laid = self.lay(words, scale, paragraph.start, left, paragraph.right)
            if len(laid) <= 1 or scale <= _SMALLEST + 1e-6:
                break
            scale = max(_SMALLEST, scale - 0.05)
        if len(lines) == 1 and len(laid) <= 1:
            return boxes + self.place(page, laid[0] if laid else [], lines[0].baseline, scale)
        scale = 1.0
        while True:
            laid = self.lay(words, scale, paragraph.start, left, paragraph.right)
            step = paragraph.step * scale
            bottom = lines[0].baseline - (len(laid) - 1) * step - 0.2 * paragraph.size * scale
            if bottom >= paragraph.floor - 0.5 or scale <= _SMALLEST + 1e-6:
                break
            scale = max(_SMALLEST, scale - 0.05)
        for k, row in enumerate(laid):
            boxes += self.place(page, row, lines[0].baseline - k * step, scale)
        return boxes

    def again(self, page, paragraph: _Paragraph) -> None:
        """Draws a paragraph's characters again where they were, each in its style."""
        for line in paragraph.lines:
            self.place(page, [(x, style, c, None) for c, style, x in
                              zip(line.text, line.styles, line.origins) if not c.isspace()],
                       line.baseline)

    def aligned(self, page, paragraph: _Paragraph,
                words: list[list[_Piece]]) -> list[tuple[int | None, _Box]]:
        """Sets a right-aligned or centred line on one line, ending or centred where the
        original did, half as wide again at most before it is made smaller."""
        line = paragraph.lines[0]
        laid = self.lay(words, 1.0, 0.0, 0.0, float("inf"))[0] if words else []
        width = max((x + self.width(st, t, st.size) for x, st, t, _ in laid), default=0.0)
        scale = max(_SMALLEST, min(1.0, 1.5 * (line.right - line.left) / max(width, 1e-6)))
        start = line.right - width * scale if paragraph.align == "right" else \
            (line.left + line.right - width * scale) / 2
        return self.place(page, [(start + x * scale, st, t, n) for x, st, t, n in laid],
                          line.baseline, scale)

    def lay(self, words: list[list[_Piece]], scale: float, start: float, left: float,
            right: float) -> list[list[tuple[float, _Style, str, int | None]]]:
        """Words (each a list of its pieces: style, text, span), their sizes times
        ``scale``, broken into lines at ``right``: each line as its pieces' (x, style, text,
        span)."""
        rows: list[list[tuple[float, _Style, str, int | None]]] = [[]]
        x = start
        for word in words:
            widths = [self.width(s, t, s.size * scale) for s, t, _ in word]
            space = self.width(word[0][0], " ", word[0][0].size * scale) if rows[-1] else 0.0
            if rows[-1] and x + space + sum(widths) > right + 0.5:
                rows.append([])
                x, space = left, 0.0
            x += space
            for (style, text, span), w in zip(word, widths):
                rows[-1].append((x, style, text, span))
                x += w
        return [row for row in rows if row]

    def place(self, page, row: list[tuple[float, _Style, str, int | None]], baseline: float,
              scale: float = 1.0) -> list[tuple[int | None, _Box]]:
        boxes = []
        for x, style, text, span in row:
            font = self.font(style.kind, style.bold, style.italic, text)
            size = style.size * scale
            obj = self.text_object(font, text, size)
            self.raw.FPDFPageObj_SetFillColor(obj, *style.color)
            self.raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, baseline)
            self.raw.FPDFPage_InsertObject(page.raw, obj)
            boxes.append((span, (x, baseline - 0.25 * size,
                                 x + self.width(style, text, size), baseline + 0.85 * size)))
        return boxes

    def close(self) -> None:
        for font in self.fonts.values():
            self.raw.FPDFFont_Close(font)


def _words(translated: list[tuple[str, int | None]],
           styles: list[_Style]) -> list[list[_Piece]]:
    """The translation's words, each as its pieces (style, text, the number of its span; a
    word can change style within it: a note's number after it)."""
    words: list[list[_Piece]] = []
    joined = True  # the next piece goes on the last word
    for text, number in translated:
        style = styles[number] if number is not None and number < len(styles) else styles[0]
        for token in re.findall(r"\s+|\S+", text):
            if token.isspace():
                joined = False
            elif joined and words:
                words[-1].append((style, token, number))
            else:
                words.append([(style, token, number)])
                joined = True
    return words


def _relink(page, raw, linked: dict[int, list[_Box]]) -> None:
    """Moves each link (by its annotation's number) over the boxes of its translated words:
    its rectangle around them all, and an area (QuadPoints) for each line they are on."""
    for number, boxes in linked.items():
        annotation = raw.FPDFPage_GetAnnot(page.raw, number)
        rows: dict[float, list[_Box]] = {}
        for box in boxes:
            rows.setdefault(round(box[1], 1), []).append(box)
        areas = [(min(b[0] for b in row), min(b[1] for b in row), max(b[2] for b in row),
                  max(b[3] for b in row)) for row in rows.values()]
        rect = raw.FS_RECTF(min(a[0] for a in areas), max(a[3] for a in areas),
                            max(a[2] for a in areas), min(a[1] for a in areas))
        raw.FPDFAnnot_SetRect(annotation, rect)
        if raw.FPDFAnnot_HasAttachmentPoints(annotation):
            count = raw.FPDFAnnot_CountAttachmentPoints(annotation)
            for k, (left, bottom, right, top) in enumerate(areas):
                quad = raw.FS_QUADPOINTSF(left, top, right, top, left, bottom, right, bottom)
                if k < count:
                    raw.FPDFAnnot_SetAttachmentPoints(annotation, k, quad)
                else:
                    raw.FPDFAnnot_AppendAttachmentPoints(annotation, quad)
        raw.FPDFPage_CloseAnnot(annotation)


def _latin(text: str) -> bool:
    """Whether the standard fonts (WinAnsi's characters) can write ``text``."""
    try:
        text.encode("cp1252")
        return True
    except UnicodeEncodeError:
        return False


def _font_folders() -> list[Path]:
    """Where DejaVu's fonts may be: Debian's fonts-dejavu-core, and matplotlib's copy."""
    import importlib.util
    folders = [Path("/usr/share/fonts/truetype/dejavu")]
    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.origin:
        folders.append(Path(spec.origin).parent / "mpl-data" / "fonts" / "ttf")
    return folders


def _unicode_font(kind: str, bold: bool, italic: bool) -> bytes:
    """DejaVu's font of a kind and shape (or its regular shape), as bytes."""
    for folder in _font_folders():
        for name in (_DEJAVU[kind] + _SHAPES[(bold, italic)], _DEJAVU[kind]):
            if (folder / f"{name}.ttf").is_file():
                return (folder / f"{name}.ttf").read_bytes()
    raise UserError("the translation has letters the PDF standard fonts lack, and no Unicode "
                    "font was found to set them in; install the DejaVu fonts "
                    "(apt-get install fonts-dejavu-core)")
