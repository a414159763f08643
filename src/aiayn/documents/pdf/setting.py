"""Translated paragraphs set on a PDF page: in the PDF standard fonts (or DejaVu, embedded, for
letters they lack), wrapped at the paragraph's column, made smaller until they fit, and their
links moved over the words they became. Text with letters written right to left is drawn in
the order it is seen (``visual``), and a paragraph written right to left is set from its
column's right edge."""

from __future__ import annotations

import ctypes
import re
from typing import Any

from . import fonts, visual
from .blocks import Paragraph
from .glyphs import Style

_SMALLEST = 0.7  # the least a paragraph's font is made smaller to fit its translation
Box = tuple[float, float, float, float]  # left, bottom, right, top
Piece = tuple[Style, str, "int | None"]  # a stretch of a word: style, text, its span
Unit = tuple[Style, str, "int | None", int]  # a stretch of a word as drawn, and its level
Placed = tuple[float, Style, str, "int | None"]  # a unit's x, style, text and span


class Writer:
    """Sets translated paragraphs on pages in the standard fonts (or a Unicode font)."""

    def __init__(self, document, raw, right_to_left: bool | None = None) -> None:
        self.document, self.raw = document, raw
        # whether the target language is written right to left (None: its pair is unknown)
        self.right_to_left = right_to_left
        self.fonts: dict[tuple[str, bool, bool] | str, Any] = {}
        self.candidates: dict[tuple[str, bool, bool], list] = {}  # DejaVu's, by kind and shape
        self.buffers: list[Any] = []
        self.widths: dict[tuple[str, bool, bool, str], float] = {}

    def font(self, kind: str, bold: bool, italic: bool, text: str):
        """The font ``text`` is set in: the standard font of its kind and shape, or DejaVu's
        (embedded) where it has letters WinAnsi lacks; loaded once."""
        shape = (kind, bold, italic)
        key: tuple[str, bool, bool] | str = shape
        path = None
        if not fonts.latin(text):
            if shape not in self.candidates:  # (looked for on disk once)
                self.candidates[shape] = fonts.candidates(kind, bold, italic)
            path = fonts.unicode_font(self.candidates[shape], text)
        if path is not None:
            key = str(path)
        if key not in self.fonts:
            if path is not None:
                data = path.read_bytes()
                buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
                font = self.raw.FPDFText_LoadFont(self.document.raw, buffer, len(data),
                                                  self.raw.FPDF_FONT_TRUETYPE, True)
                self.buffers.append(buffer)  # PDFium reads it until the document is saved
            else:
                font = self.raw.FPDFText_LoadStandardFont(
                    self.document.raw, fonts.STANDARD[(kind, bold, italic)].encode())
            self.fonts[key] = font
        return self.fonts[key]

    def text_object(self, font, text: str, size: float):
        """A new text object of ``text`` in ``font`` at ``size``, not yet on a page."""
        obj = self.raw.FPDFPageObj_CreateTextObj(self.document.raw, font, size)
        encoded = (text + "\0").encode("utf-16-le")
        chars = (ctypes.c_ushort * (len(encoded) // 2)).from_buffer_copy(encoded)
        self.raw.FPDFText_SetText(obj, chars)
        return obj

    def width(self, style: Style, text: str, size: float) -> float:
        """How far ``text`` in ``style``'s font at ``size`` advances (measured once at 100
        points)."""
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

    def right_to_left_set(self, translated: list[tuple[str, int | None]]) -> bool:
        """Whether a paragraph's translation is set right to left."""
        return _level("".join(piece for piece, _ in translated), self.right_to_left) == 1

    def set(self, page, paragraph: Paragraph, translated: list[tuple[str, int | None]],
            styles: list[Style], mark: Paragraph | None = None) -> list[tuple[int | None, Box]]:
        """Sets a paragraph's translation in its place: from where its text began, wrapped at
        its column's edge, made smaller (to ``_SMALLEST``) until it ends above the next text
        below it. Returns the box of each piece set, by the number of its span. A ``mark``
        read as a line of its own (``blocks.detached_mark``) is drawn again mirrored with
        the paragraph where that is set right to left."""
        lines = paragraph.lines
        # (the lines of one written right to left start where they end: its room starts at
        # its column's left edge)
        left = lines[1].left if len(lines) > 1 and not paragraph.leftward else paragraph.start
        words, spaces, level = _units(_words(translated, styles), self.right_to_left)
        # a paragraph written right to left is set as its column's mirror image: from the
        # right edge, its indents and list mark on the right
        lefts = [line.left for line in lines + (mark.lines if mark else [])] + \
            [paragraph.start] * paragraph.leftward
        axis = min(lefts) + paragraph.right if level else None
        if mark is not None:
            sign = mark.lines[0]
            self.again(page, mark, 0.0 if axis is None else axis - sign.right - sign.left)
        boxes = []
        if paragraph.mark:
            style = lines[0].styles[0]
            x = lines[0].left if axis is None else \
                axis - lines[0].left - self.width(style, paragraph.mark, style.size)
            boxes += self.place(page, [(x, style, paragraph.mark, None)], lines[0].baseline)
        scale = 1.0
        if paragraph.align != "left":  # one line, ending or centred where it was
            return boxes + self.aligned(page, paragraph, words, spaces)
        while len(lines) == 1:  # a line stays one while it can
            laid = self.lay(words, spaces, scale, paragraph.start, left, paragraph.right, axis)
            if len(laid) <= 1 or scale <= _SMALLEST + 1e-6:
                break
            scale = max(_SMALLEST, scale - 0.05)
        if len(lines) == 1 and len(laid) <= 1:
            return boxes + self.place(page, laid[0] if laid else [], lines[0].baseline, scale)
        scale = 1.0
        while True:
            laid = self.lay(words, spaces, scale, paragraph.start, left, paragraph.right, axis)
            step = paragraph.step * scale
            bottom = lines[0].baseline - (len(laid) - 1) * step - 0.2 * paragraph.size * scale
            if bottom >= paragraph.floor - 0.5 or scale <= _SMALLEST + 1e-6:
                break
            scale = max(_SMALLEST, scale - 0.05)
        for k, row in enumerate(laid):
            boxes += self.place(page, row, lines[0].baseline - k * step, scale,
                                last=k == len(laid) - 1)
        return boxes

    def again(self, page, paragraph: Paragraph, shift: float = 0.0) -> None:
        """Draws a paragraph's characters again where they were (or ``shift`` points to the
        right), each in its style."""
        for line in paragraph.lines:
            self.place(page, [(x + shift, style, c, None) for c, style, x in
                              zip(line.text, line.styles, line.origins) if not c.isspace()],
                       line.baseline, words=False)

    def aligned(self, page, paragraph: Paragraph, words: list[list[Unit]],
                spaces: list[int]) -> list[tuple[int | None, Box]]:
        """Sets a right-aligned or centred line on one line, ending or centred where the
        original did, half as wide again at most before it is made smaller."""
        line = paragraph.lines[0]
        laid = self.lay(words, spaces, 1.0, 0.0, 0.0, float("inf"))[0] if words else []
        width = max((x + self.width(st, t, st.size) for x, st, t, _ in laid), default=0.0)
        scale = max(_SMALLEST, min(1.0, 1.5 * (line.right - line.left) / max(width, 1e-6)))
        start = line.right - width * scale if paragraph.align == "right" else \
            (line.left + line.right - width * scale) / 2
        return self.place(page, [(start + x * scale, st, t, n) for x, st, t, n in laid],
                          line.baseline, scale)

    def lay(self, words: list[list[Unit]], spaces: list[int], scale: float, start: float,
            left: float, right: float, axis: float | None = None) -> list[list[Placed]]:
        """Words (each a list of its units: style, text as drawn, span, level), their sizes
        times ``scale``, broken into lines at ``right``, the first starting at ``start`` and
        the others at ``left``: each line as its units' (x, style, text, span) in the order
        they are seen. With an ``axis``, each line is set as its mirror image about it
        (left + right of the column), right to left. ``spaces`` are the levels of the spaces
        after the words."""
        rows: list[list[int]] = [[]]  # the words of each line
        x = start
        for k, word in enumerate(words):
            width = sum(self.width(s, t, s.size * scale) for s, t, _, _ in word)
            space = self.width(word[0][0], " ", word[0][0].size * scale) if rows[-1] else 0.0
            if rows[-1] and x + space + width > right + 0.5:
                rows.append([])
                x, space = left, 0.0
            x += space + width
            rows[-1].append(k)
        return [self.seen(words, spaces, row, start if n == 0 else left, scale, axis)
                for n, row in enumerate(rows) if row]

    def seen(self, words: list[list[Unit]], spaces: list[int], row: list[int], x: float,
             scale: float, axis: float | None) -> list[Placed]:
        """A line of words (their numbers in ``row``) from ``x``, its units placed in the
        order they are seen: by rule L2 of their levels (``visual.order``)."""
        units: list[Unit] = []
        for n, k in enumerate(row):
            if n:  # the space between two words is drawn as nothing, but has a level
                units.append((words[k][0][0], " ", None, spaces[k - 1]))
            units += words[k]
        widths = [self.width(s, t, s.size * scale) for s, t, _, _ in units]
        if axis is not None:
            x = axis - x - sum(widths)
        placed = []
        for k in visual.order([level for *_, level in units]):
            style, text, span, _ = units[k]
            if text != " ":
                placed.append((x, style, text, span))
            x += widths[k]
        return placed

    def place(self, page, row: list[Placed], baseline: float,
              scale: float = 1.0, last: bool = True,
              words: bool = True) -> list[tuple[int | None, Box]]:
        """Draws a line's pieces (x, style, text, span) on the page at ``baseline``, their
        sizes times ``scale``; returns each piece's span and box. Where the pieces are
        ``words``, the spaces between them are text too, though they draw nothing: a word
        after a space starts with it (set a space's width to the left, where ``lay`` left
        that space), and the line's last piece ends with one where the paragraph goes on
        (``last`` false), as a line set by Writer or Word does. Text read from the content
        alone, as a tagged PDF's structure is read aloud, then has its words apart."""
        boxes = []
        end = None  # where the piece before ended
        for k, (x, style, text, span) in enumerate(row):
            font = self.font(style.kind, style.bold, style.italic, text)
            size = style.size * scale
            spaced = words and end is not None and x > end + 0.01
            shown = (" " if spaced else "") + text + \
                (" " if words and not last and k + 1 == len(row) else "")
            obj = self.text_object(font, shown, size)
            self.raw.FPDFPageObj_SetFillColor(obj, *style.color)
            shift = self.width(style, " ", size) if spaced else 0.0
            self.raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x - shift, baseline)
            end = x + self.width(style, text, size)
            self.raw.FPDFPage_InsertObject(page.raw, obj)
            boxes.append((span, (x, baseline - 0.25 * size,
                                 x + self.width(style, text, size), baseline + 0.85 * size)))
        self.rules(page, row, boxes, baseline, scale)
        return boxes

    def rules(self, page, row: list[Placed],
              boxes: list[tuple[int | None, Box]], baseline: float, scale: float) -> None:
        """Draws the underlines and strike-throughs of a line's pieces: one rule for each
        stretch of pieces next to each other marked alike, across the spaces between their
        words, as the source's was, at its depth and thickness, in the text's colour."""
        stretches: list[tuple[Style, float, float]] = []
        before = None  # the piece before's style, where it has rules
        for (_, style, _, _), (_, (left, _, right, _)) in zip(row, boxes):
            if not style.rules:
                before = None
                continue
            if before is not None and (before.rules, before.color) == (style.rules, style.color):
                stretches[-1] = (stretches[-1][0], stretches[-1][1], right)
            else:
                stretches.append((style, left, right))
            before = style
        for style, left, right in stretches:
            for depth, thick in style.rules:
                rule = self.raw.FPDFPageObj_CreateNewRect(
                    left, baseline - (depth + thick) * scale, right - left, thick * scale)
                self.raw.FPDFPageObj_SetFillColor(rule, *style.color)
                self.raw.FPDFPath_SetDrawMode(rule, self.raw.FPDF_FILLMODE_WINDING, False)
                self.raw.FPDFPage_InsertObject(page.raw, rule)

    def close(self) -> None:
        for font in self.fonts.values():
            self.raw.FPDFFont_Close(font)


def _words(translated: list[tuple[str, int | None]],
           styles: list[Style]) -> list[list[Piece]]:
    """The translation's words, each as its pieces (style, text, the number of its span; a
    word can change style within it: a note's number after it)."""
    words: list[list[Piece]] = []
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


def _level(text: str, right_to_left: bool | None) -> int:
    """The level a paragraph's translation is set at: 1 where it is written right to left
    (``visual.paragraph_level``; a text without such letters only where the target is)."""
    if not right_to_left and not visual.right_to_left_letters(text):
        return 0
    return visual.paragraph_level(text, right_to_left)


def _units(words: list[list[Piece]],
           right_to_left: bool | None) -> tuple[list[list[Unit]], list[int], int]:
    """A paragraph's words as the units they are drawn in, the levels of the spaces after
    them, and the paragraph's level (1: written right to left). A word's piece is one unit
    where the paragraph has no letters written right to left and is not written so; else a
    unit for each stretch of one level, as drawn (``visual.drawn``)."""
    text = " ".join("".join(t for _, t, _ in word) for word in words)
    level = _level(text, right_to_left)
    if not level and not visual.right_to_left_letters(text):
        return [[(s, t, n, 0) for s, t, n in word] for word in words], [0] * len(words), 0
    levels = visual.levels(text, level)
    out: list[list[Unit]] = []
    spaces: list[int] = []
    at = 0
    for word in words:
        units: list[Unit] = []
        for style, piece, span in word:
            start = 0
            for k in range(1, len(piece) + 1):
                if k == len(piece) or levels[at + k] != levels[at + start]:
                    drawn = visual.drawn(piece[start:k], levels[at + start])
                    if drawn:
                        units.append((style, drawn, span, levels[at + start]))
                    start = k
            at += len(piece)
        if units:  # (a word of invisible marks alone is no word)
            out.append(units)
            spaces.append(levels[at] if at < len(levels) else level)
        at += 1
    return out, spaces, level


def relink(page, raw, linked: dict[int, list[Box]]) -> None:
    """Moves each link or highlight (by its annotation's number) over the boxes of its
    translated words: its rectangle around them all, and an area (QuadPoints) for each line
    they are on. A highlight's drawing, made for where it was, goes: viewers (PDFium among
    them) draw it again from its areas."""
    for number, boxes in linked.items():
        annotation = raw.FPDFPage_GetAnnot(page.raw, number)
        rows: dict[float, list[Box]] = {}
        for box in boxes:
            rows.setdefault(round(box[1], 1), []).append(box)
        areas = [(min(b[0] for b in row), min(b[1] for b in row), max(b[2] for b in row),
                  max(b[3] for b in row)) for row in rows.values()]
        rect = raw.FS_RECTF(min(a[0] for a in areas), max(a[3] for a in areas),
                            max(a[2] for a in areas), min(a[1] for a in areas))
        raw.FPDFAnnot_SetRect(annotation, rect)
        if raw.FPDFAnnot_HasAttachmentPoints(annotation):
            count = raw.FPDFAnnot_CountAttachmentPoints(annotation)
            # (an area left over from more lines than now is laid over the last one: PDFium
            # can set and add areas, not take one away)
            for k in range(max(count, len(areas))):
                left, bottom, right, top = areas[min(k, len(areas) - 1)]
                quad = raw.FS_QUADPOINTSF(left, top, right, top, left, bottom, right, bottom)
                if k < count:
                    raw.FPDFAnnot_SetAttachmentPoints(annotation, k, quad)
                else:
                    raw.FPDFAnnot_AppendAttachmentPoints(annotation, quad)
        if raw.FPDFAnnot_GetSubtype(annotation) != raw.FPDF_ANNOT_LINK:
            raw.FPDFAnnot_SetAP(annotation, raw.FPDF_ANNOT_APPEARANCEMODE_NORMAL, None)
        raw.FPDFPage_CloseAnnot(annotation)
