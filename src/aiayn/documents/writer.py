"""OpenDocument text, presentations and spreadsheets (.odt, .odp, .ods; odfpy): every paragraph
and heading, in the body, tables, lists, frames, slides and their notes, headers and footers,
translated with its styled spans and links carried by the markup path, as Word documents'
runs are (``aiayn.documents.word``). A table cell that holds a number, a date or another
value that is not text, or a formula, shows it as a paragraph: that paragraph stays as
written (a spreadsheet's formulas give their results again when they are recalculated), and
what names the cells by their text elsewhere follows them (``aiayn.documents.ods_copies``).

A paragraph whose children are text, ``text:span``, ``text:a``, ``text:s`` (spaces) and points
between words (notes, tabs, line breaks, bookmarks) becomes one sentence of markup (``<span
data-r=K>`` per span, ``<a data-h=K>`` per link) and is written again from the translation,
each span and link a copy of its own with the translated words. A paragraph holding anything
else (frames, fields, pictures) is translated text node by text node in place, so nothing in it
is lost. A note's own paragraphs, and a comment's, are translated as paragraphs of their own,
once. Tracked changes are accepted first: the translation reads as the document does with
them accepted.

Code stays as written, as HTML's ``<code>`` and ``<pre>`` do: a paragraph in a code style
("Preformatted Text", and the styles based on it) is left alone, and a span in a code style
("Source Text") or in a monospaced font its paragraph does not use is a ``<code>`` span.

The package is written back member for member: odfpy writes ``content.xml`` and ``styles.xml``
again, with the ODF version the package gives, and every other member (the manifest, meta data,
settings, pictures) is copied as it was. The namespace declarations on a part's root each
follow a plain space before odfpy reads them (it takes a declaration after a line break, as
pandoc writes them, for a missing one); a part that is not well-formed XML is copied as it was,
with a warning, and a ``content.xml`` that is not is one line.
"""

from __future__ import annotations

import contextlib
import copy
import io
import re
import zipfile
from typing import Any
from xml.parsers import expat

from ..errors import UserError, require
from . import (
    Job,
    code_like,
    code_style,
    direction,
    monospaced,
    ods_copies,
    prevailing,
    repack,
    spanned,
    stretches,
)

_TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_INLINE = {(_TEXT_NS, "span"), (_TEXT_NS, "a"), (_TEXT_NS, "s")}
# points between words, put back after the words of the word before them: a footnote or
# endnote (its own paragraphs translated apart), a tab, a line break, bookmarks
_POINTS = {(_TEXT_NS, name) for name in ("note", "tab", "line-break", "soft-page-break",
                                         "bookmark", "bookmark-start", "bookmark-end")}
_LINES = {(_TEXT_NS, "tab"), (_TEXT_NS, "line-break")}  # the points that end a line
_OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
# a comment (its paragraphs translated apart) and the end of the range it covers: a translated
# paragraph is the range whole, the comment before its words and the range's end after them
_ANNOTATION, _ANNOTATION_END = (_OFFICE_NS, "annotation"), (_OFFICE_NS, "annotation-end")
# tracked changes: the record of them, and the marks of where they are in the text
_CHANGES = {(_TEXT_NS, name) for name in ("tracked-changes", "change", "change-start",
                                          "change-end")}


_PARTS = ("content.xml", "styles.xml", "meta.xml", "settings.xml")  # what odfpy parses


def translate_odt(data: bytes, job: Job, kind: str = "text (.odt)") -> bytes:
    """An OpenDocument file translated: a text, or (``kind``) a presentation, whose slides'
    frames and notes hold paragraphs as a text's body does."""
    require("odf", "OpenDocument files", "documents")
    from odf import teletype, text
    from odf.opendocument import load
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        readable, parsed = _readable(archive, job, kind)
        with contextlib.redirect_stdout(io.StringIO()):  # (odfpy prints what it can't parse)
            document = load(io.BytesIO(readable))
    except UserError:
        raise
    except Exception as err:  # zipfile and odfpy raise zip, XML and key errors alike
        raise UserError(f"not an OpenDocument {kind}: {err}") from None
    job.accepted(_accept(document))
    styles = _Styles(document)
    paragraphs = [p for kind in (text.P, text.H) for p in document.getElementsByType(kind)
                  if teletype.extractText(p).strip() and not styles.code_paragraph(p)
                  and _within(p, document.topnode) and not _a_cell_value(p)]
    cells = ods_copies.cell_texts(document)
    whole = [p for p in paragraphs if _simple(p)]
    plans = [_markup(p, styles) for p in whole]
    translated = job.markup([markup for markup, _ in plans]) if plans else []
    for paragraph, (_, parts), out in zip(whole, plans, translated):
        _rewrite(paragraph, parts, out)
    nodes = [n for p in paragraphs if not _simple(p) for n in _text_nodes(p, styles)
             if str(n).strip()]
    for node, translation in zip(nodes, job.lines([str(n).strip() for n in nodes])):
        value = str(node)
        node.data = value[:len(value) - len(value.lstrip())] + translation + \
            value[len(value.rstrip()):]
    ods_copies.follow(document, cells)
    _relabel(document, job)
    if job.right_to_left:
        direction.opendocument(document)
    written = {"content.xml": _named(_versioned(document.contentxml(),
                                                archive.read("content.xml")),
                                     archive.read("content.xml"))}
    if "styles.xml" in parsed:
        written["styles.xml"] = _named(_versioned(document.stylesxml(),
                                                  archive.read("styles.xml")),
                                       archive.read("styles.xml"))
    return repack(archive, written)


_DRAW_NAME = re.compile(rb'\bdraw:name="([^"]*)"')


def _named(written: bytes, original: bytes) -> bytes:
    """``written`` with each ``draw:name`` (a slide's, a frame's) as ``original`` gives it, in
    order. odfpy makes a name an XML name ("Building Node.js" -> "Building_20_Node.js"), and a
    link to a slide by its name then leads nowhere."""
    names, found = _DRAW_NAME.findall(original), _DRAW_NAME.findall(written)
    if len(names) != len(found):
        return written
    given = iter(names)
    return _DRAW_NAME.sub(lambda m: b'draw:name="' + next(given) + b'"', written)


def _readable(archive: zipfile.ZipFile, job: Job, kind: str) -> tuple[bytes, set[str]]:
    """The package as odfpy can read it, and which of its XML parts it reads
    (``_declarations_spaced``); a part that is not well-formed XML left out (a content.xml so
    is a UserError)."""
    if "content.xml" not in archive.namelist():
        raise UserError(f"not an OpenDocument {kind}: it has no content.xml")
    parsed, buffer = set(), io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for info in archive.infolist():
            member = archive.read(info)
            if info.filename in _PARTS:
                member = _declarations_spaced(member)
                try:
                    expat.ParserCreate(namespace_separator=" ").Parse(member, True)
                except expat.ExpatError as err:
                    if info.filename == "content.xml":
                        raise UserError(f"not an OpenDocument {kind}: its content.xml "
                                        f"is not well-formed XML ({err})") from None
                    job.warn(f"the document's {info.filename} is not well-formed XML "
                             f"({err}); it is copied as it was")
                    continue
                parsed.add(info.filename)
            out.writestr(info.filename, member)
    return buffer.getvalue(), parsed


_VERSION = re.compile(rb"""\soffice:version\s*=\s*("[^"]*"|'[^']*')""")


def _versioned(written: bytes | str, original: bytes) -> bytes:
    """A part odfpy wrote (its styles as text), its root saying the ODF version the original
    part said: odfpy writes 1.2, and LibreOffice refuses a package whose parts' versions
    differ from its manifest's (1.3 in what it saves)."""
    if isinstance(written, str):
        written = written.encode("utf-8")
    was, now = _ROOT.search(original), _ROOT.search(written)
    if was is None or now is None:
        return written
    version = _VERSION.search(was.group())
    tag = _VERSION.sub(b"", now.group())
    if version is not None:
        tag = tag[:-2] + version.group() + b"/>" if tag.endswith(b"/>") \
            else tag[:-1] + version.group() + b">"
    return written[:now.start()] + tag + written[now.end():]


_ROOT = re.compile(rb"<(?![?!])[^>]*>")
_BEFORE_DECLARATION = re.compile(rb"\s+(?=xmlns[:=\s])")


def _declarations_spaced(xml: bytes) -> bytes:
    """``xml`` with each namespace declaration of its root element after a plain space.
    odfpy declares ``style``, ``fo``, ``svg``... itself (with other names) where it finds no
    " xmlns:style": after a line break, as in pandoc's styles.xml, they were declared twice
    and the part was dropped."""
    root = _ROOT.search(xml)
    if root is None:
        return xml
    return xml[:root.start()] + _BEFORE_DECLARATION.sub(b" ", root.group()) + xml[root.end():]


class _Styles:
    """The document's named styles (common and automatic) and fonts: which paragraph styles
    and spans are code."""

    def __init__(self, document) -> None:
        from odf.style import FontFace, Style
        self.by_name: dict[str, Any] = {}
        for container in (document.styles, document.automaticstyles):
            for style in container.getElementsByType(Style):
                self.by_name.setdefault(style.getAttribute("name"), style)
        self.fixed = {face.getAttribute("name") for face in
                      document.getElementsByType(FontFace)
                      if face.getAttribute("fontpitch") == "fixed"
                      or monospaced(face.getAttribute("fontfamily"))}

    def chain(self, name: str | None):
        """The style named ``name`` and its parents."""
        for _ in range(32):  # (a loop of parents ends)
            style = self.by_name.get(name) if name else None
            if style is None:
                return
            yield style
            name = style.getAttribute("parentstylename")

    def coded(self, name: str | None) -> bool:
        return any(code_style(s.getAttribute("name")) or code_style(s.getAttribute("displayname"))
                   for s in self.chain(name))

    def font(self, name: str | None) -> str | None:
        from odf.style import TextProperties
        for style in self.chain(name):
            for properties in style.getElementsByType(TextProperties):
                font = properties.getAttribute("fontname") or properties.getAttribute("fontfamily")
                if font:
                    return font
        return None

    def code_paragraph(self, paragraph) -> bool:
        return self.coded(paragraph.getAttribute("stylename"))

    def code_span(self, span, paragraph) -> bool:
        """A span in a code style, or in a monospaced font that its paragraph's is not (a
        document set all in Courier is prose)."""
        name = span.getAttribute("stylename")
        if self.coded(name):
            return True
        own, around = self.font(name), self.font(paragraph.getAttribute("stylename"))
        return self.fixed_font(own) and not self.fixed_font(around)

    def fixed_font(self, font: str | None) -> bool:
        return bool(font) and (font in self.fixed or monospaced(font))


_FO_NS = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
_STYLE_NS = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
# a style's language and country, for Latin, Asian and complex scripts
_LANGUAGES = (((_FO_NS, "language"), (_FO_NS, "country"), (_STYLE_NS, "rfc-language-tag")),
              ((_STYLE_NS, "language-asian"), (_STYLE_NS, "country-asian"),
               (_STYLE_NS, "rfc-language-tag-asian")),
              ((_STYLE_NS, "language-complex"), (_STYLE_NS, "country-complex"),
               (_STYLE_NS, "rfc-language-tag-complex")))


def _accept(document) -> int:
    """The tracked changes accepted, as LibreOffice's "Accept All" does; how many there were.
    A document's text is already as its changes left it (what they deleted is kept in the
    record of them), so the record and the marks go."""
    found: list = []

    def walk(node) -> None:
        for child in node.childNodes:
            if child.nodeType == child.ELEMENT_NODE:
                if child.qname in _CHANGES:
                    found.append(child)
                else:
                    walk(child)
    walk(document.body)
    walk(document.masterstyles)  # (headers and footers keep their own record)
    regions = 0
    for element in found:
        if element.qname == (_TEXT_NS, "tracked-changes"):
            regions += sum(c.nodeType == c.ELEMENT_NODE for c in element.childNodes)
        _detach(element)
    return regions


def _within(node, root) -> bool:
    """Whether ``node`` is still in ``root``'s tree (odfpy's lists of elements by type keep
    those taken out: the paragraphs of deleted text)."""
    while node is not None:
        if node is root:
            return True
        node = node.parentNode
    return False


_TABLE_NS = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_CELLS = {(_TABLE_NS, "table-cell"), (_TABLE_NS, "covered-table-cell")}


def _a_cell_value(paragraph) -> bool:
    """Whether a paragraph is what a table cell shows of a value that is not prose: a number,
    a date, a percentage, a truth value ("1,234.50", formatted from ``office:value``), a
    formula's last result (which the formula gives again), or one token that reads as code
    (``documents.code_like``). A note on such a cell is text."""
    from odf import teletype
    node = paragraph.parentNode
    while node is not None and getattr(node, "qname", None) != _ANNOTATION:
        if getattr(node, "qname", None) in _CELLS:
            kind = node.attributes.get((_OFFICE_NS, "value-type"))
            return kind not in (None, "string") or (_TABLE_NS, "formula") in node.attributes \
                or code_like(teletype.extractText(paragraph))
        node = node.parentNode
    return False


def _detach(element) -> None:
    """``element`` taken off its parent's list by hand (odfpy's removeChild also takes an
    element's descendants out of its caches, which still hold the paragraphs kept)."""
    parent = element.parentNode
    parent.childNodes = [c for c in parent.childNodes if c is not element]
    element.parentNode = None


def _attach(parent, element) -> None:
    """``element``, taken off its old parent by hand (``_detach``, ``_rewrite``), put at the
    end of ``parent``'s list the same way, odfpy's caches of elements left as they are."""
    parent.childNodes.append(element)
    element.parentNode = parent


def _relabel(document, job: Job) -> None:
    """Every style's language that is the source language becomes the target
    (``Job.relabeled``); its country, which belonged to the source language, is dropped."""
    from odf.style import TextProperties
    for properties in document.getElementsByType(TextProperties):
        attributes = properties.attributes
        for language, country, tag in _LANGUAGES:
            target = job.relabeled(attributes.get(language))
            if target is None:
                continue
            attributes[language] = target
            attributes.pop(country, None)
            if tag in attributes:
                attributes[tag] = target


def _simple(paragraph) -> bool:
    for child in paragraph.childNodes:
        if child.nodeType == child.TEXT_NODE:
            continue
        if child.qname in _POINTS or child.qname in (_ANNOTATION, _ANNOTATION_END):
            continue
        if child.qname not in _INLINE:
            return False
        if child.qname != (_TEXT_NS, "s") and _nested(child) is None:
            return False
    return True


def _nested(element) -> list | None:
    """An inline element, the one inline element it holds, and so on down to one that holds
    only text (a link around a styled span, as pandoc writes links); None where one holds
    anything else."""
    chain = [element]
    while True:
        inner = [c for c in element.childNodes
                 if c.nodeType != c.TEXT_NODE and c.qname != (_TEXT_NS, "s")]
        if not inner:
            return chain
        if len(inner) > 1 or len(element.childNodes) > 1 or inner[0].qname not in _INLINE:
            return None
        element = inner[0]
        chain.append(element)


def _text(node) -> str:
    """A node's text, ``text:s`` read as its spaces."""
    if node.nodeType == node.TEXT_NODE:
        return str(node)
    if node.qname == (_TEXT_NS, "s"):
        return " " * int(node.getAttribute("c") or 1)
    return "".join(_text(c) for c in node.childNodes)


def _markup(paragraph, styles: _Styles) -> tuple[str, list]:
    """The paragraph as one sentence of markup, and what each span number stands for. Where
    most of its text is in spans of one style (LibreOffice Impress writes every stretch of a
    slide's text in a span), those spans' text is plain text and part 0 is one of them, which
    the translation's plain text is written in; otherwise part 0 is None, and text outside
    spans is plain. (Placed as spans, they had pushed the rest of the paragraph's spans,
    code among them, out of their words.)"""
    base = _prevailing(paragraph, styles)
    parts: list = [base]
    pieces = []
    for child in paragraph.childNodes:
        if child.nodeType == child.TEXT_NODE or child.qname == (_TEXT_NS, "s"):
            if base is None:
                pieces.append(spanned(_text(child), None))
            else:  # bare text among spans of one style: a span of its own
                parts.append(_BARE)
                pieces.append(spanned(_text(child), len(parts) - 1))
        elif base is not None and _plain_span(child, styles, paragraph) \
                and _span_key(child) == _span_key(base):
            pieces.append(spanned(_text(child), None))
        elif child.qname in (_ANNOTATION, _ANNOTATION_END):
            continue  # (put back by _rewrite)
        elif child.qname in _POINTS:
            parts.append(child)
            pieces.append(spanned("", len(parts) - 1, point=True, line=child.qname in _LINES))
        else:
            parts.append(child)
            link = child.qname == (_TEXT_NS, "a")
            code = any(styles.code_span(e, paragraph) for e in _nested(child) or []
                       if e.qname == (_TEXT_NS, "span"))
            pieces.append(spanned(_text(child), len(parts) - 1, link=link, code=code))
    return "".join(pieces), parts


_BARE = "text outside spans"  # a part: text written straight into the paragraph


def _span_key(span) -> tuple:
    return tuple(sorted((str(k), v) for k, v in span.attributes.items()))


def _plain_span(child, styles: _Styles, paragraph) -> bool:
    """Whether a paragraph's child is a span holding only text, not code."""
    return child.nodeType == child.ELEMENT_NODE and child.qname == (_TEXT_NS, "span") \
        and _nested(child) == [child] and not styles.code_span(child, paragraph)


def _prevailing(paragraph, styles: _Styles):
    """The first of the paragraph's spans of the style that holds most of its text, where
    spans of one style hold more of it than the text outside spans; else None."""
    texts: list[tuple[Any, int, Any]] = []  # (key, length, span); bare text: key None
    for child in paragraph.childNodes:
        if child.nodeType == child.TEXT_NODE or child.qname == (_TEXT_NS, "s"):
            texts.append((None, len(_text(child)), None))
        elif _plain_span(child, styles, paragraph):
            texts.append((_span_key(child), len(_text(child)), child))
    found = prevailing(texts)
    return found[1] if found is not None else None


def _rewrite(paragraph, parts: list, translated: str) -> None:
    # The children are taken off the list by hand: odfpy's removeChild also takes an
    # element's descendants out of its caches, and a note's paragraphs, still to be
    # rewritten themselves, are among them.
    comments = [c for c in paragraph.childNodes
                if c.nodeType == c.ELEMENT_NODE and c.qname == _ANNOTATION]
    ends = [c for c in paragraph.childNodes
            if c.nodeType == c.ELEMENT_NODE and c.qname == _ANNOTATION_END]
    for child in paragraph.childNodes:
        child.parentNode = None
    paragraph.childNodes = []
    for comment in comments:
        _attach(paragraph, comment)
    for text, number in stretches(translated):
        part = parts[0 if number is None else number]
        if part is None or part is _BARE:
            paragraph.addText(text)
            continue
        if part.qname in _POINTS:  # itself: a note's paragraphs are translated apart
            _attach(paragraph, part)
            continue
        parent = paragraph
        for element in _nested(part) or [part]:
            element = copy.copy(element)  # its name and attributes
            element.childNodes, element.parentNode = [], None
            parent.appendChild(element)
            parent = element
        parent.addText(text)
    for end in ends:
        _attach(paragraph, end)


def _text_nodes(node, styles: _Styles, paragraph=None):
    """The text nodes of a paragraph, but those of its code spans, its notes and the
    paragraphs inside it (``_OWN``), which are translated as paragraphs of their own."""
    paragraph = paragraph or node
    for child in node.childNodes:
        if child.nodeType == child.TEXT_NODE:
            yield child
        elif not (child.qname == (_TEXT_NS, "span") and styles.code_span(child, paragraph)
                  or child.qname in _OWN):
            yield from _text_nodes(child, styles, paragraph)


# what a paragraph may hold that is translated on its own: a note (its paragraphs, not its
# number), a paragraph or heading in a frame's text box, a comment (its paragraphs, not its
# author and date)
_OWN = {(_TEXT_NS, "note"), (_TEXT_NS, "p"), (_TEXT_NS, "h"), _ANNOTATION}
