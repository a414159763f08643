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
would not have fitted on it; a paragraph carried over into the next column or onto the next
page is translated as one, its translation shared out between the two places. A list mark
(a bullet, "1.", "a)") stays where it was. A paragraph mostly in a monospaced font (a
listing) is left as it is; so are rotated text, invisible text (a scanned page's recognised
words, under its picture), text inside a reused drawing (a form XObject) and text in a font
that does not say which letters it draws (they would be read as other letters), with
everything sharing a drawing command with them.
Numbers and signs (page numbers, a leader's dots) sharing one with translated text are drawn
again where they were.

The translation is set in the PDF standard fonts (Helvetica, Times, Courier, in their bold
and italic) that every reader has, chosen by the original font's kind. They hold the Latin
letters of Western European languages; a translation with other letters needs a Unicode font
(DejaVu), embedded where found. Letters written right to left are drawn in the order they are
seen, and a paragraph written so is set from its column's right edge (``pdf.visual``).
Pictures, drawings, links and form fields stay as they are. A tagged PDF's structure tree reads
the translation (``pdf.marks``). A page whose content PDFium cannot write again as it drew it
is left as it was.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

from ...errors import UserError, require
from .. import Job, stretches
from . import blocks, marks, setting
from .glyphs import Style


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
    # 1) each page's paragraphs, but those sharing a drawing command with text left alone
    found: list[tuple[Any, blocks.Paragraph, blocks.Plan]] = []
    signs: dict[int, list[blocks.Paragraph]] = {}  # by page: text without letters
    read, aside, words = read_pages(pages, raw, job)
    numbers = {id(page): k for k, page in enumerate(pages)}
    for number, (page, (paragraphs, kept)) in enumerate(zip(pages, read), start=1):
        plans = {id(p): blocks.markup(p, words) for p in paragraphs}
        signs[number] = [p for p in paragraphs if blocks.letterless(p)]
        kept = kept.union(*(blocks.objects(p) for p in paragraphs
                            if plans[id(p)] is None and not blocks.letterless(p)))
        for paragraph in blocks.apart([p for p in paragraphs if plans[id(p)] is not None], kept):
            found.append((page, paragraph, plans[id(paragraph)]))  # type: ignore[arg-type]
    if not found:
        job.warn("the PDF has no text that can be translated: no page holds lines of visible, "
                 "upright text (a scanned page is a picture)")
    # 2) all of them translated at once, a paragraph carried over into the next column or
    # onto the next page as one, its translation shared out between its parts
    groups = _carried([(numbers[id(page)], p, plan) for page, p, plan in found], aside)
    joined = [_joined([found[k][2] for k in group]) for group in groups]
    translated = job.markup([markup for markup, _, _ in joined]) if found else []
    pieces_of: dict[int, list[tuple[str, int | None]]] = {}
    for group, (_, styles, links), whole in zip(groups, joined, translated):
        if len(group) == 1:
            pieces_of[group[0]] = stretches(whole)
            continue
        lengths = [len(_plain(found[k][2].markup)) for k in group]
        parts = _shared_out(stretches(whole), [n / max(1, sum(lengths)) for n in lengths])
        for k, part, linked_spans in zip(group, parts, links):
            pieces_of[k] = part
            on, paragraph, plan = found[k]
            found[k] = (on, paragraph, blocks.Plan(plan.markup, styles, linked_spans))
    # 3) each page's text taken off and its translation set, links moved
    writer = setting.Writer(document, raw, job.target_right_to_left)
    drawn: dict[int, Any] = {}  # by page index: the changed page as PDFium draws it
    for number, page in enumerate(pages, start=1):
        mine = [(paragraph, pieces_of[k], plan)
                for k, (on, paragraph, plan) in enumerate(found) if on is page]
        # a list mark read apart from its item goes with it where the item is set right to
        # left, to its right
        detached = {id(p): mark for p, pieces, _ in mine if writer.right_to_left_set(pieces)
                    and (mark := blocks.detached_mark(p, signs[number])) is not None}
        taken: set[int] = set().union(*(blocks.objects(p) for p, _, _ in mine),
                                      *map(blocks.objects, detached.values()))
        # numbers and dots drawn by the same commands as translated text: drawn again as
        # they were (a contents line's leader and page number)
        moved = {id(mark) for mark in detached.values()}
        redrawn = [p for p in signs[number] if blocks.objects(p) & taken and id(p) not in moved]
        # a tagged PDF's marks, which tie the text to its structure tree's elements
        marked = {id(p): marks.prevailing(_objects(page, blocks.objects(p), raw), raw)
                  for p, _, _ in mine}
        gone = _remove(page, taken.union(*map(blocks.objects, redrawn)), raw)
        linked: dict[int, list[setting.Box]] = {}
        for paragraph, pieces, plan in mine:
            first = raw.FPDFPage_CountObjects(page.raw)
            for span, box in writer.set(page, paragraph, pieces, plan.styles,
                                        detached.get(id(paragraph))):
                if span in plan.links:
                    linked.setdefault(plan.links[span], []).append(box)
            for k in range(first, raw.FPDFPage_CountObjects(page.raw)):
                marks.put(document.raw, raw.FPDFPage_GetObject(page.raw, k),
                          marked[id(paragraph)], raw)
        for paragraph in redrawn:
            writer.again(page, paragraph)
        setting.relink(page, raw, linked)
        if gone:
            drawn[number - 1] = _picture(page)
            raw.FPDFPage_GenerateContent(page.raw)
        for obj in gone:
            raw.FPDFPageObj_Destroy(obj)
        page.close()
    if found:
        _relabel(document, raw, job)
    out = _saved(document)
    writer.close()
    # 4) PDFium writes a changed page's content again, and cannot write everything it reads
    # (a calibrated colour space's fills come out black): a page whose written content draws
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


def read_pages(pages: list, raw, job: Job) -> tuple[
        list[tuple[list[blocks.Paragraph], set[int]]], set[int], set[str]]:
    """Each page's paragraphs (``blocks.page_paragraphs``: with the text objects of its lines
    left as they are), each placed in its column; the ids of the running heads and feet; the
    document's words (``blocks.vocabulary``)."""
    read = []
    for number, page in enumerate(pages, start=1):
        textpage = page.get_textpage()
        read.append(blocks.page_paragraphs(textpage, page, raw, job, number))
        textpage.close()
    aside = blocks.furniture([paragraphs for paragraphs, _ in read])
    for paragraphs, _ in read:
        blocks.place_in_columns(paragraphs, aside)
    return read, aside, blocks.vocabulary([p for paragraphs, _ in read for p in paragraphs])


def _carried(found: list[tuple[int, blocks.Paragraph, blocks.Plan]],
             aside: set[int]) -> list[list[int]]:
    """The paragraphs to translate (page number, paragraph, plan; in reading order) as
    groups of their indexes: each a paragraph alone, or one carried over into the next
    column or onto the next page (``blocks.carried_over``), in its parts. Running heads and
    feet (``aside``) may come between two parts."""
    groups: list[list[int]] = []
    body: list[int] | None = None  # the group of the last paragraph not a running head
    for k, (number, paragraph, plan) in enumerate(found):
        if id(paragraph) in aside:
            groups.append([k])
            continue
        if body is not None:
            on, before, had = found[body[-1]]
            if number - on in (0, 1) and _alike(had.styles[0], plan.styles[0]) and \
                    blocks.carried_over(before, paragraph, number > on):
                body.append(k)
                continue
        groups.append([k])
        body = groups[-1]
    return groups


def _alike(one: Style, other: Style) -> bool:
    """Whether two paragraphs' own formats are one: kind, weight, slant, colour and size."""
    return (one.kind, one.bold, one.italic, one.color) == \
        (other.kind, other.bold, other.italic, other.color) and \
        abs(one.size - other.size) <= 0.05 * one.size


def _joined(plans: list[blocks.Plan]) -> tuple[str, list[Style], list[dict[int, int]]]:
    """The plans of one paragraph's parts as one: their markups joined, the spans of each
    numbered on after the ones before (the first part's own format stands for all), and each
    part's links by those numbers."""
    markups, styles, links = [], [plans[0].styles[0]], []
    for plan in plans:
        offset = len(styles) - 1
        markups.append(re.sub(r'data-([rh])="(\d+)"',
                              lambda m: f'data-{m[1]}="{int(m[2]) + offset}"', plan.markup))
        styles += plan.styles[1:]
        links.append({number + offset: link for number, link in plan.links.items()})
    return " ".join(markups), styles, links


def _plain(markup: str) -> str:
    return "".join(text for text, _ in stretches(markup))


def _shared_out(pieces: list[tuple[str, int | None]],
                shares: list[float]) -> list[list[tuple[str, int | None]]]:
    """A translation's pieces (``stretches``) cut into one part for each share (of the
    source's characters): each cut at the space nearest its share of the translation's
    characters; a part's first piece without the space it would begin with."""
    text = "".join(t for t, _ in pieces)
    spaces = [k for k, c in enumerate(text) if c.isspace()]
    cuts: list[int] = []
    done = 0.0
    for share in shares[:-1]:
        done += share
        nearest = min(spaces, key=lambda k: abs(k - done * len(text))) if spaces else len(text)
        cuts.append(max([nearest, *cuts[-1:]]))
    bounds = [0, *cuts, len(text) + 1]
    parts: list[list[tuple[str, int | None]]] = [[] for _ in shares]
    at = 0
    for piece, number in pieces:
        for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
            if piece == "" and a <= at < b:
                parts[k].append((piece, number))
            elif at < b and at + len(piece) > a:
                parts[k].append((piece[max(a - at, 0):b - at], number))
        at += len(piece)
    for part in parts[1:]:
        if part:
            part[0] = (part[0][0].lstrip(), part[0][1])
    return parts


def _relabel(document, raw, job: Job) -> None:
    """The document's language (its catalog's ``/Lang``, which screen readers read the text
    in), where it names the source language, names the target (``Job.relabeled``)."""
    size = raw.FPDFCatalog_GetLanguage(document.raw, None, 0)  # bytes, UTF-16, with a NUL
    if size <= 2:
        return
    buffer = (ctypes.c_ushort * (size // 2))()
    raw.FPDFCatalog_GetLanguage(document.raw, buffer, size)
    target = job.relabeled(bytes(buffer)[:size - 2].decode("utf-16-le", "replace"))
    if target:
        raw.FPDFCatalog_SetLanguage(document.raw, (ctypes.c_ushort * (len(target) + 1))(
            *map(ord, target), 0))


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


def _objects(page, addresses: set[int], raw) -> list:
    """The page's objects at ``addresses``, in the page's order."""
    found = (raw.FPDFPage_GetObject(page.raw, k)
             for k in range(raw.FPDFPage_CountObjects(page.raw)))
    return [obj for obj in found if ctypes.addressof(obj.contents) in addresses]


def _remove(page, objects: set[int], raw) -> list:
    """Takes the objects at ``objects``' addresses (text, and the rules underlining it) off
    the page; returns them, to be destroyed once nothing reads them."""
    return [obj for obj in reversed(_objects(page, objects, raw))
            if raw.FPDFPage_RemoveObject(page.raw, obj)]
