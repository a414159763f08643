"""PowerPoint presentations (.pptx, python-pptx): the paragraphs of every slide (text boxes,
placeholders, shapes in groups, table cells), of its speaker notes, of its charts' titles and
labels and of its SmartArt, and those that slide layouts and masters show on every slide
(their own shapes: a placeholder's prompt is not shown), and comments, translated with
their runs' formatting and links carried by the markup path, as Word documents' runs are
(``aiayn.documents.word``).

A DrawingML paragraph (``a:p``) holds runs (``a:r``: properties and text), line breaks
(``a:br``) and fields (``a:fld``: a slide number or date the viewer fills in). It becomes one
sentence of markup: a run formatted otherwise than most of the paragraph's text is a ``<span
data-r=K>``, adjacent runs formatted alike one span, adjacent runs whose properties hold one
link (``a:hlinkClick``) one ``<a data-h=K>`` (written in the format of most of its text, its
code a ``<code>`` inside it), a field a point between words, and a line break the end of a
line, the words on either side translated apart. The paragraph's runs are written again
from the translation, each with a copy of its span's properties. A paragraph holding
anything else (an equation) is translated run by run in place.

Code stays as written: a run set in a monospaced font where the deck's theme sets its text in
another is a ``<code>`` span, and a paragraph all in such runs (a listing) is left alone. A
chart's data (its categories and series, cached from its workbook) is not translated: the
workbook would say otherwise.
"""

from __future__ import annotations

import copy
import io
import re
from typing import Any

from ..errors import UserError, require
from . import (
    Job,
    code_like,
    direction,
    local_name,
    monospaced,
    package_problem,
    prevailing,
    spanned,
    stretches,
)

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_RELATIONSHIP = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_SIMPLE = {"pPr", "r", "br", "fld", "endParaRPr"}
_POINT = "a point"  # a line break or field, to ``_markup``
# run properties that say nothing of the run's look: its spelling, whether it changed since
# the layout was computed, smart tags, bookmarks
_UNSEEN = ("err", "dirty", "noProof", "smtClean", "smtId", "bmk")
# the parts whose paragraphs are translated (PowerPoint's comments of today among them), those
# whose placeholders are left alone (a layout's or master's placeholder holds the prompt shown
# while editing), and the comments of PowerPoint 2007-2019, plain text
_PARTS = re.compile(r"/ppt/(?:(?P<shown>slides/slide\d+|notesSlides/notesSlide\d+|charts/chart\d+|"
                    r"diagrams/(?:data|drawing)\d+|comments/modernComment_[^/]+)|"
                    r"(?P<layout>slideLayouts/slideLayout\d+|slideMasters/slideMaster\d+)|"
                    r"(?P<plain>comments/comment\d+))\.xml")


def translate_pptx(data: bytes, job: Job) -> bytes:
    pptx = require("pptx", "PowerPoint presentations", "documents")
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        parts = _parts(presentation)
    except Exception as err:  # python-pptx raises zip, XML and package errors alike
        raise UserError(f"not a PowerPoint presentation (.pptx): "
                        f"{package_problem(err, data)}") from None
    font = _body_font(presentation)
    translate_paragraphs([(p, part.rels) for part, root, kind in parts if kind != "plain"
                          for p in root.iter(f"{_A}p")
                          if kind == "shown" or not _in_placeholder(p)], font, job)
    comments = [t for _, root, kind in parts if kind == "plain" for t in root.iter(f"{_P}text")
                if t.text and t.text.strip()]
    for t, translation in zip(comments, job.by_line([t.text for t in comments])):
        t.text = translation
    relabel([presentation.part._element, *(root for _, root, _ in parts)], job)
    if job.right_to_left:  # the masters' text styles, where every paragraph's start
        for master in presentation.slide_masters:
            for styles in master.element.iter(f"{_P}txStyles"):
                for ppr in styles.iter():
                    if re.fullmatch(r"lvl\dpPr", local_name(ppr.tag)):
                        direction.drawingml(ppr, root=True)
    from pptx.opc.oxml import serialize_part_xml
    for part, root, _ in parts:
        if getattr(part, "_element", None) is None:
            part._blob = serialize_part_xml(root)
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def translate_paragraphs(paragraphs: list[tuple[Any, Any]], font: str | None, job: Job
                         ) -> None:
    """DrawingML paragraphs (``a:p``, each with its part's relationships, which name its
    links' targets) translated in place: each whole through the markup path, its runs
    written again; one holding anything else run by run. Listings (all code, where the
    body's ``font`` is not monospaced), a table cell's one code-like token
    (``documents.code_like``) and paragraphs without text stay."""
    owned = [(p, rels) for p, rels in paragraphs if _text(p).strip() and not _listing(p, font)
             and not (code_like(_text(p)) and any(local_name(a.tag) == "tc"
                                                   for a in p.iterancestors()))]
    simple = [_simple(p) for p, _ in owned]
    whole = [p for (p, _), one in zip(owned, simple) if one]
    plans = [_markup(p, font, rels) for (p, rels), one in zip(owned, simple) if one]
    translated = job.markup([markup for markup, _ in plans]) if plans else []
    for paragraph, (_, spans), out in zip(whole, plans, translated):
        _rewrite(paragraph, spans, out)
    texts = [t for (p, _), one in zip(owned, simple) if not one for t in p.iter(f"{_A}t")
             if t.text and t.text.strip() and local_name(t.getparent().tag) == "r"]
    for t, translation in zip(texts, job.lines([t.text.strip() for t in texts])):
        t.text = t.text[:len(t.text) - len(t.text.lstrip())] + translation + \
            t.text[len(t.text.rstrip()):]
    if job.right_to_left:
        for paragraph, _ in owned:
            ppr = paragraph.find(f"{_A}pPr")
            if ppr is None:  # (the first child of a paragraph)
                ppr = paragraph.makeelement(f"{_A}pPr", {})
                paragraph.insert(0, ppr)
            direction.drawingml(ppr)


def _parts(presentation) -> list[tuple[Any, Any, str]]:
    """The parts holding text to translate, each with its XML root (parsed here where
    python-pptx keeps the part as bytes: SmartArt's, comments') and its kind: "shown",
    "layout" (a layout or master, whose placeholders' text is not shown) or "plain" (old
    comments, their text in ``p:text``)."""
    from pptx.oxml import parse_xml
    found = []
    for part in presentation.part.package.iter_parts():
        match = _PARTS.fullmatch(str(part.partname))
        if match:
            root = getattr(part, "_element", None)
            found.append((part, parse_xml(part.blob) if root is None else root,
                          match.lastgroup or "shown"))
    return found


def _body_font(presentation) -> str | None:
    """The typeface the deck's theme sets its text in (its minor Latin font), where it has
    one."""
    from pptx.opc.constants import RELATIONSHIP_TYPE
    from pptx.oxml import parse_xml
    for master in presentation.slide_masters:
        try:
            theme = parse_xml(master.part.part_related_by(RELATIONSHIP_TYPE.THEME).blob)
        except (KeyError, ValueError, SyntaxError):
            continue
        latin = theme.find(f".//{_A}fontScheme/{_A}minorFont/{_A}latin")
        if latin is not None:
            return latin.get("typeface")
    return None


def _code(rpr, font: str | None) -> bool:
    """Whether a run with properties ``rpr`` is code: set in a monospaced font where the
    theme's (``font``) is not."""
    return monospaced(_font(rpr)) and not monospaced(font)


def _listing(paragraph, font: str | None) -> bool:
    """Whether a paragraph is all code (a line of a listing)."""
    runs = [r for r in paragraph if local_name(r.tag) == "r" and _run_text(r).strip()]
    return bool(runs) and all(_code(r.find(f"{_A}rPr"), font) for r in runs)


def _text(paragraph) -> str:
    """A paragraph's own text: its runs', not the fields' the viewer fills in."""
    return "".join(t.text or "" for t in paragraph.iter(f"{_A}t")
                   if local_name(t.getparent().tag) == "r")


def _in_placeholder(paragraph) -> bool:
    shape = paragraph.getparent()
    while shape is not None and shape.tag != f"{_P}sp":
        shape = shape.getparent()
    return shape is not None and shape.find(f"{_P}nvSpPr/{_P}nvPr/{_P}ph") is not None


def _simple(paragraph) -> bool:
    return all(local_name(child.tag) in _SIMPLE for child in paragraph
               if isinstance(child.tag, str))


def _key(rpr) -> str:
    """What a run's properties say of its look, as a string; "" for none."""
    if rpr is None:
        return ""
    seen = copy.deepcopy(rpr)
    for name in _UNSEEN:
        seen.attrib.pop(name, None)
    if len(seen) == 0 and not seen.attrib:
        return ""
    from lxml import etree
    return etree.tostring(seen, encoding="unicode")


def _font(rpr) -> str | None:
    latin = rpr.find(f"{_A}latin") if rpr is not None else None
    return latin.get("typeface") if latin is not None else None


def _markup(paragraph, font: str | None, rels) -> tuple[str, list]:
    """The paragraph as one sentence of markup, and what each span number stands for: run
    properties (an ``a:rPr``, or None for none) or a point (the break or field itself). Span 0
    is the properties of most of the paragraph's text, whose runs are plain text. A link is
    one ``<a>``, in the properties of most of its text, its code a ``<code>`` inside it.
    ``rels``: the part's relationships, which name each link's target."""
    import html
    runs = [c for c in paragraph if local_name(c.tag) == "r"]
    base_key, base = _prevailing([r for r in runs if _link(r, rels) is None], font)
    spans: list = [base if base_key else None]
    # runs grouped: (the key of their properties, None for plain text and "link ..." for a
    # link's runs, or _POINT; whether they are code; the elements)
    groups: list[tuple[str | None, bool, list]] = []
    for child in paragraph:
        name = local_name(child.tag)
        if name in ("br", "fld"):
            groups.append((_POINT, False, [child]))
            continue
        if name != "r":
            continue
        rpr, link = child.find(f"{_A}rPr"), _link(child, rels)
        code = link is None and _code(rpr, font)
        key = f"link {link}" if link is not None else \
            None if _key(rpr) == base_key and not code else _key(rpr)
        if groups and groups[-1][0] == key != _POINT and groups[-1][1] == code:
            groups[-1][2].append(child)  # formatted alike, or the same link: one span
        else:
            groups.append((key, code, [child]))
    pieces = []
    for key, code, elements in groups:
        text = "".join(_run_text(r) for r in elements)
        if key is _POINT:
            spans.append(elements[0])
            pieces.append(spanned("", len(spans) - 1, point=True,
                                  line=local_name(elements[0].tag) == "br"))
        elif key is None:
            pieces.append(spanned(text, None))
        elif not key.startswith("link "):
            spans.append(elements[0].find(f"{_A}rPr"))
            pieces.append(spanned(text, len(spans) - 1, code=code))
        else:
            found, rpr = _prevailing(elements, font)
            spans.append(rpr if found is not None else elements[0].find(f"{_A}rPr"))
            number = len(spans) - 1
            if found is None:  # a link on code: the link placed, its code kept
                pieces.append(spanned(text, number, link=True, code=True))
                continue
            inner = ""
            for r in elements:
                if _code(r.find(f"{_A}rPr"), font):
                    spans.append(r.find(f"{_A}rPr"))
                    inner += f'<code data-r="{len(spans) - 1}">{html.escape(_run_text(r))}</code>'
                else:
                    inner += html.escape(_run_text(r))
            pieces.append(f'<a data-h="{number}">{inner}</a>')
    return "".join(pieces), spans


def _link(r, rels) -> str | None:
    """The link a run's properties hold (its target, by the part's relationships, and its
    action: pandoc gives each run of a link a relationship of its own), or None."""
    link = r.find(f"{_A}rPr/{_A}hlinkClick")
    if link is None:
        return None
    rel = link.get(_RELATIONSHIP)
    target = rels[rel].target_ref if rel in rels else rel
    return f"{target} {link.get('action', '')}"


def _prevailing(runs: list, font: str | None) -> tuple[str | None, object]:
    """The key and properties of most of the text of ``runs``, code left out (a link to
    "`Intl` (ECMA-402) support" is not all code); none preferred on a tie; (None, None) where
    every run is code."""
    found = prevailing((_key(r.find(f"{_A}rPr")), len(_run_text(r)), r.find(f"{_A}rPr"))
                       for r in runs if not _code(r.find(f"{_A}rPr"), font))
    return found if found is not None else (None, None)


def _run_text(r) -> str:
    t = r.find(f"{_A}t")
    return t.text or "" if t is not None else ""


def _rewrite(paragraph, spans: list, translated: str) -> None:
    """The paragraph's runs, breaks and fields replaced by the translation's, before its
    end-of-paragraph properties."""
    for child in list(paragraph):
        if local_name(child.tag) in ("r", "br", "fld"):
            paragraph.remove(child)
    end = paragraph.find(f"{_A}endParaRPr")
    at = paragraph.index(end) if end is not None else len(paragraph)
    for text, number in stretches(translated):
        span = spans[0 if number is None else number]
        if span is not None and local_name(span.tag) in ("br", "fld"):
            element = span  # a point: itself
        else:
            element = paragraph.makeelement(f"{_A}r", {})
            if span is not None:
                rpr = copy.deepcopy(span)
                rpr.attrib.pop("err", None)  # (a misspelling of the source's)
                element.append(rpr)
            t = element.makeelement(f"{_A}t", {})
            t.text = text
            element.append(t)
        paragraph.insert(at, element)
        at += 1


def relabel(roots: list, job: Job) -> None:
    """Every language a run, paragraph end or default text style gives (``lang``,
    ``altLang``) that names the source language names the target (``Job.relabeled``)."""
    for root in roots:
        for element in root.iter(f"{_A}rPr", f"{_A}endParaRPr", f"{_A}defRPr"):
            for key in ("lang", "altLang"):
                target = job.relabeled(element.get(key))
                if target is not None:
                    element.set(key, target)
