"""Word documents (.docx, python-docx): paragraphs of the body, of tables (nested ones too),
of headers and footers, of text boxes, content controls, footnotes, endnotes and comments,
translated with their runs' formatting (bold, italic, fonts...) and their hyperlinks carried
by the markup path. Tracked changes are accepted first: the translation reads as the document
does with them accepted.

A paragraph's runs become one sentence of markup: a run with formatting of its own is a
``<span data-r=K>``, a hyperlink an ``<a data-h=K>``, adjacent runs formatted alike one span;
``Translator.translate_markup`` translates the sentence whole and puts each span around the
words aligned to its text, and the paragraph's runs are written again from the result, each
with a copy of its span's run properties. A paragraph holding more than runs, hyperlinks and
bookmarks (fields, drawings, tabs and breaks inside runs) is translated run by run in place,
the runs inside hyperlinks, smart tags and inline content controls too, so nothing in it is
lost.

Code stays as written, as HTML's ``<code>`` and ``<pre>`` do: a paragraph in a code style
(pandoc's "Source Code", Word's "HTML Preformatted") is left alone, and a run in a code style
("Verbatim Char", "HTML Code") or in a monospaced font its paragraph does not use is a
``<code>`` span, written back where its words went.
"""

from __future__ import annotations

import copy
import io
from typing import Any

from ..errors import UserError, require
from . import (
    Job,
    code_like,
    code_style,
    direction,
    local_name,
    monospaced,
    package_problem,
    prevailing,
    spanned,
    stretches,
)

_SIMPLE_PARAGRAPH = {"pPr", "r", "hyperlink", "proofErr", "bookmarkStart", "bookmarkEnd",
                     "commentRangeStart", "commentRangeEnd"}
_SIMPLE_RUN = {"rPr", "t"}
# what a run may hold instead of text and stay a point of its sentence: a note's reference
# (and, in the note, its number), a tab, a line break, a picture or shape in the line (a text
# box's paragraphs are translated on their own)
_POINT = {"footnoteReference", "endnoteReference", "footnoteRef", "endnoteRef", "annotationRef",
          "tab", "br", "drawing", "pict", "AlternateContent"}  # (a drawing, its VML fallback)
_NOTES = ("/word/footnotes.xml", "/word/endnotes.xml", "/word/comments.xml")
# tracked changes, accepted: what was deleted (or moved away) goes, what was inserted (or moved
# here) stays as plain content, and the records of earlier properties and of moves go
_DELETED = {"del", "moveFrom"}
_INSERTED = {"ins", "moveTo"}
_RECORDS = {"rPrChange", "pPrChange", "sectPrChange", "tblPrChange", "tblPrExChange",
            "trPrChange", "tcPrChange", "tblGridChange", "numberingChange", "cellIns",
            "moveFromRangeStart", "moveFromRangeEnd", "moveToRangeStart", "moveToRangeEnd"}


def translate_docx(data: bytes, job: Job) -> bytes:
    docx = require("docx", "Word documents", "documents")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as err:  # python-docx raises zip, XML and package errors alike
        raise UserError(f"not a Word document (.docx): {package_problem(err, data)}") from None
    notes = _notes(document)
    roots = _roots(document)
    roots += [root for _, root in notes if not any(root is r for r in roots)]
    job.accepted(sum(_accept(root) for root in roots))
    listed = list(_paragraphs(document))
    paragraphs = [p for p in [*listed, *_others(document, listed),
                              *(p for _, root in notes for p in _noted(document, root))]
                  if p.text.strip() and not _code_paragraph(p) and not _code_cell(p)]
    simple = [_simple(p) for p in paragraphs]
    whole = [p for p, one in zip(paragraphs, simple) if one]
    in_place = [p for p, one in zip(paragraphs, simple) if not one]
    plans = [_markup(p) for p in whole]
    translated = job.markup([markup for markup, _ in plans]) if plans else []
    for paragraph, (_, parts), out in zip(whole, plans, translated):
        _rewrite(paragraph, parts, out)
    runs = [r for p in in_place for r in _runs(p) if r.text.strip() and not _code_run(r, p)]
    for run, text in zip(runs, job.lines([r.text.strip() for r in runs])):
        run.text = run.text[:len(run.text) - len(run.text.lstrip())] + text + \
            run.text[len(run.text.rstrip()):]
    _relabel(roots, job)
    if job.right_to_left:
        direction.word([p._p for p in paragraphs], roots)
    from docx.opc.oxml import serialize_part_xml
    for part, root in notes:
        if getattr(part, "_element", None) is None:
            part._blob = serialize_part_xml(root)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _code_cell(paragraph) -> bool:
    """Whether a paragraph is a table cell's one code-like token (``documents.code_like``)."""
    from docx.oxml.ns import qn
    return code_like(paragraph.text) and any(
        a.tag == qn("w:tc") for a in paragraph._p.iterancestors())


def _roots(document) -> list:
    """The XML roots of the parts python-docx parses: the body, headers and footers, styles,
    numbering, settings."""
    return [element for part in document.part.package.iter_parts()
            if (element := getattr(part, "_element", None)) is not None]


def _accept(root) -> int:
    """The tracked changes under ``root`` accepted, as Word's "Accept All Changes" does; how
    many there were. A deleted paragraph mark joins its paragraph's content to the next
    paragraph (which keeps its own properties, as in Word), a deleted table row goes."""
    from docx.oxml.ns import qn
    count = 0
    for element in list(root.iter()):
        if not isinstance(element.tag, str) or not _under(element, root):
            continue  # (a comment, or inside what an earlier change took away)
        name, parent = local_name(element.tag), element.getparent()
        if name in _RECORDS:
            parent.remove(element)
            count += name.endswith("Change") or name == "cellIns"
        elif name not in _DELETED and name not in _INSERTED:
            continue
        elif local_name(parent.tag) == "trPr":  # a table row inserted or deleted
            count += 1
            row = parent.getparent()
            if name in _DELETED and row is not None and row.getparent() is not None:
                row.getparent().remove(row)
            else:
                parent.remove(element)
        elif local_name(parent.tag) == "rPr" and parent.getparent() is not None \
                and local_name(parent.getparent().tag) == "pPr":  # a paragraph mark
            count += 1
            parent.remove(element)
            paragraph = parent.getparent().getparent()
            following = paragraph.getnext() if paragraph is not None else None
            if name in _DELETED and following is not None and following.tag == qn("w:p"):
                at = 1 if len(following) and following[0].tag == qn("w:pPr") else 0
                for child in [c for c in paragraph if c.tag != qn("w:pPr")][::-1]:
                    following.insert(at, child)
                paragraph.getparent().remove(paragraph)
        else:  # content deleted goes; content inserted takes the place of its wrapper
            count += 1
            if name in _INSERTED:
                at = parent.index(element)
                for child in list(element)[::-1]:
                    parent.insert(at, child)
            parent.remove(element)
    return count


def _under(element, root) -> bool:
    while element is not None:
        if element is root:
            return True
        element = element.getparent()
    return False


def _relabel(roots: list, job: Job) -> None:
    """Every ``w:lang`` (styles' defaults, runs' own) under ``roots`` that names the source
    language names the target (``Job.relabeled``): the Latin, East Asian and complex-script
    values alike."""
    from docx.oxml.ns import qn
    for element in roots:
        for lang in element.iter(qn("w:lang")):
            for key in (qn("w:val"), qn("w:eastAsia"), qn("w:bidi")):
                target = job.relabeled(lang.get(key))
                if target is not None:
                    lang.set(key, target)


def _paragraphs(document):
    """Every paragraph once: the body's, its tables' (and theirs), headers' and footers'. (A
    merged cell is in python-docx's rows once for each grid cell it spans, and its
    paragraphs were translated that many times.)"""
    seen: set[int] = set()
    for paragraph in _listed(document):
        if id(paragraph._p) not in seen:
            seen.add(id(paragraph._p))
            yield paragraph


def _listed(document):
    def of(container):
        yield from container.paragraphs
        for table in getattr(container, "tables", []):
            for row in table.rows:
                for cell in row.cells:
                    yield from of(cell)
    yield from of(document)
    for section in document.sections:
        for part in (section.header, section.footer):
            if not part.is_linked_to_previous:
                yield from of(part)


def _others(document, listed: list) -> list:
    """The paragraphs python-docx's lists (``listed``) leave out, under the body and the
    headers and footers: those of text boxes (``w:txbxContent``, in a shape of a run; Word
    writes a box twice, for new readers and old, and both are translated) and of content
    controls (``w:sdt``: Word's table of contents, a template's title and cover page)."""
    from docx.oxml.ns import qn
    from docx.text.paragraph import Paragraph
    roots = [document.element.body] + [
        part._element for section in document.sections
        for part in (section.header, section.footer) if not part.is_linked_to_previous]
    seen = {id(p._p) for p in listed}
    found = []
    for root in roots:
        for p in root.iter(qn("w:p")):
            if id(p) not in seen:
                seen.add(id(p))
                found.append(Paragraph(p, document._body))
    return found


def _notes(document) -> list[tuple[Any, Any]]:
    """The footnotes', endnotes' and comments' parts, each with its XML root: parsed here
    where python-docx reads the part as bytes only (the notes')."""
    from docx.oxml import parse_xml
    found = []
    for part in document.part.package.iter_parts():
        if str(part.partname) in _NOTES:
            root = getattr(part, "_element", None)
            found.append((part, parse_xml(part.blob) if root is None else root))
    return found


def _noted(document, root) -> list:
    """The paragraphs of the notes (or comments) under ``root``, the separators Word keeps
    among the notes left out."""
    from docx.oxml.ns import qn
    from docx.text.paragraph import Paragraph
    return [Paragraph(p, document._body) for note in root
            if note.get(qn("w:type")) in (None, "normal") for p in note.iter(qn("w:p"))]


def _runs(paragraph) -> list:
    """A paragraph's runs, those inside what wraps runs included (hyperlinks, fields, smart
    tags, inline content controls: python-docx's ``runs`` lists only the paragraph's own
    children), but not those of a text box's paragraphs, which are translated on their own."""
    from docx.oxml.ns import qn
    from docx.text.run import Run
    found = []
    for r in paragraph._p.iter(qn("w:r")):
        owner = r.getparent()
        while owner is not None and owner.tag != qn("w:p"):
            owner = owner.getparent()
        if owner is paragraph._p:
            found.append(Run(r, paragraph))
    return found


def _styles(style):
    """A python-docx style and the styles it is based on."""
    for _ in range(32):  # (a loop of bases ends)
        if style is None:
            return
        yield style
        style = style.base_style


def _code_paragraph(paragraph) -> bool:
    return any(code_style(s.name) for s in _styles(paragraph.style))


def _code_run(run, paragraph) -> bool:
    """Whether a run is code: in a code style, or in a monospaced font that is not its
    paragraph's (a document set all in Courier is prose)."""
    if any(code_style(s.name) for s in _styles(run.style)):
        return True
    font = run.font.name or next((s.font.name for s in _styles(run.style) if s.font.name),
                                 None)
    paragraph_font = next((s.font.name for s in _styles(paragraph.style) if s.font.name),
                          None)
    return monospaced(font) and not monospaced(paragraph_font)


def _simple(paragraph) -> bool:
    element = paragraph._p
    if any(local_name(child.tag) not in _SIMPLE_PARAGRAPH for child in element):
        return False
    for run in element.iter():
        if local_name(run.tag) == "r" and not _point(run) and not _anchor(run) and \
                any(local_name(c.tag) not in _SIMPLE_RUN for c in run):
            return False
    return True


def _point(r) -> bool:
    """Whether a run (w:r) holds a note's reference, a tab, a break or a picture and nothing
    else: a point between words, put back where the words around it went."""
    inner = [c for c in r if local_name(c.tag) != "rPr"]
    return len(inner) == 1 and local_name(inner[0].tag) in _POINT


def _line(r) -> bool:
    """Whether a point run (``_point``) ends a line: a tab or a line break (a page break too)."""
    return any(local_name(c.tag) in ("tab", "br") for c in r)


def _anchor(element) -> bool:
    """Whether a paragraph's child ends a comment's range there: the range's end, or the run
    holding the comment's reference (its mark). A translated paragraph is a comment's range
    whole: its start stays before the words (as bookmarks do), its end and mark go after."""
    name = local_name(element.tag)
    if name == "commentRangeEnd":
        return True
    inner = [c for c in element if local_name(c.tag) != "rPr"]
    return name == "r" and len(inner) == 1 and local_name(inner[0].tag) == "commentReference"


def _markup(paragraph) -> tuple[str, list]:
    """The paragraph as one sentence of markup, and what each span number stands for: a run's
    properties (an rPr element) or a hyperlink element. Part 0 is the paragraph's own run
    properties, those of most of its text (None for none): its runs are plain text, not
    spans. LibreOffice gives every run properties, empty ones included, and Word often a
    language on each; spans over every stretch between two links would only be placed worse."""
    from docx.oxml.ns import qn
    from docx.text.hyperlink import Hyperlink
    items = [i for i in paragraph.iter_inner_content()
             if isinstance(i, Hyperlink) or not _anchor(i._r)]

    def key(item) -> str:
        return _key(item._r.rPr)
    code = [not isinstance(item, Hyperlink) and _code_run(item, paragraph) for item in items]
    base = _prevailing([i for i in items if not isinstance(i, Hyperlink) and not _point(i._r)],
                       paragraph)
    base_key, base_rpr = base if base else ("", None)
    parts: list = [base_rpr if base_key else None]  # (none, or empty ones: written as none)
    # (text, format number, link, code, point, line)
    pieces: list[tuple[str, int | None, bool, bool, bool, bool]] = []
    for item, coded in zip(items, code):
        if isinstance(item, Hyperlink):
            parts.append(item._hyperlink)
            pieces.append((item.text, len(parts) - 1, True,
                           bool(item.runs) and all(_code_run(r, paragraph) for r in item.runs),
                           False, False))
            continue
        if _point(item._r):
            parts.append(item._r)
            pieces.append(("", len(parts) - 1, False, False, True, _line(item._r)))
            continue
        if key(item) == base_key and not coded:
            pieces.append((item.text, None, False, False, False, False))
        elif pieces and not pieces[-1][2] and (last := pieces[-1][1]) is not None \
                and local_name(parts[last].tag) == "rPr" \
                and key(item) == _key(parts[last]):  # formatted alike: one span
            pieces[-1] = (pieces[-1][0] + item.text, *pieces[-1][1:])
        else:
            rpr = item._r.rPr
            parts.append(rpr if rpr is not None else paragraph._p.makeelement(qn("w:rPr"), {}))
            pieces.append((item.text, len(parts) - 1, False, coded, False, False))
    return "".join(spanned(*piece) for piece in pieces), parts


def _key(rpr) -> str:
    return "" if rpr is None or (len(rpr) == 0 and not rpr.attrib) else str(rpr.xml)


def _rewrite(paragraph, parts: list, translated: str) -> None:
    """The paragraph's runs and hyperlinks replaced by the translation's."""
    from docx.oxml.ns import qn
    from docx.text.run import Run
    element = paragraph._p
    anchors = [child for child in element if _anchor(child)]
    for child in list(element):
        if local_name(child.tag) in ("r", "hyperlink", "proofErr") or child in anchors:
            element.remove(child)

    def run(text: str, rpr) -> object:
        r = element.makeelement(qn("w:r"), {})
        if rpr is not None:
            r.append(copy.deepcopy(rpr))
        t = r.makeelement(qn("w:t"), {})
        t.text = text
        t.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
        r.append(t)
        return r

    for text, number in stretches(translated):
        part = parts[0 if number is None else number]
        if part is not None and local_name(part.tag) == "r":  # a point: the run itself (a text
            element.append(part)  # box in it is translated apart, before or after this)
            continue
        if part is None or local_name(part.tag) == "rPr":
            element.append(run(text, part))
            continue
        link = copy.deepcopy(part)  # a hyperlink: its runs become one, formatted as most
        runs = [c for c in link if local_name(c.tag) == "r"]  # of its text
        prevailing = _prevailing([Run(r, paragraph) for r in runs], paragraph)
        rpr = prevailing[1] if prevailing else runs[0].rPr if runs else None
        for child in runs:
            link.remove(child)
        link.append(run(text, rpr))
        element.append(link)
    element.extend(anchors)


def _prevailing(runs: list, paragraph) -> tuple[str, Any] | None:
    """The run properties of most of the text of ``runs`` (python-docx runs), code left out
    (a link to "`Intl` (ECMA-402) support" is not all code), as (their key, an rPr element or
    None); none properties preferred on a tie; None where every run is code."""
    return prevailing((_key(run._r.rPr), len(run.text), run._r.rPr) for run in runs
                      if not _code_run(run, paragraph))
