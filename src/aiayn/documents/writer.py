"""OpenDocument text (.odt, odfpy): every paragraph and heading, in the body, tables, lists,
headers and footers, translated with its styled spans and links carried by the markup path, as
Word documents' runs are (``aiayn.documents.word``).

A paragraph whose children are text, ``text:span``, ``text:a`` and ``text:s`` (spaces) becomes
one sentence of markup (``<span data-r=K>`` per span, ``<a data-h=K>`` per link) and is written
again from the translation, each span and link a copy of its own with the translated words.
A paragraph holding anything else (frames, notes, fields, tabs) is translated text node by
text node in place, so nothing in it is lost.
"""

from __future__ import annotations

import copy
import io

from ..errors import UserError, require
from . import Job, spanned, stretches

_TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_INLINE = {(_TEXT_NS, "span"), (_TEXT_NS, "a"), (_TEXT_NS, "s")}


def translate_odt(data: bytes, job: Job) -> bytes:
    require("odf", "OpenDocument files", "documents")
    from odf import teletype, text
    from odf.opendocument import load
    try:
        document = load(io.BytesIO(data))
    except Exception as err:  # odfpy raises zip, XML and key errors alike
        raise UserError(f"not an OpenDocument text (.odt): {err}") from None
    paragraphs = [p for kind in (text.P, text.H) for p in document.getElementsByType(kind)
                  if teletype.extractText(p).strip()]
    whole = [p for p in paragraphs if _simple(p)]
    plans = [_markup(p) for p in whole]
    translated = job.markup([markup for markup, _ in plans]) if plans else []
    for paragraph, (_, parts), out in zip(whole, plans, translated):
        _rewrite(paragraph, parts, out)
    nodes = [n for p in paragraphs if not _simple(p) for n in _text_nodes(p)
             if str(n).strip()]
    for node, translation in zip(nodes, job.lines([str(n).strip() for n in nodes])):
        value = str(node)
        node.data = value[:len(value) - len(value.lstrip())] + translation + \
            value[len(value.rstrip()):]
    _relabel(document, job)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


_FO_NS = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
_STYLE_NS = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
# a style's language and country, for Latin, Asian and complex scripts
_LANGUAGES = (((_FO_NS, "language"), (_FO_NS, "country"), (_STYLE_NS, "rfc-language-tag")),
              ((_STYLE_NS, "language-asian"), (_STYLE_NS, "country-asian"),
               (_STYLE_NS, "rfc-language-tag-asian")),
              ((_STYLE_NS, "language-complex"), (_STYLE_NS, "country-complex"),
               (_STYLE_NS, "rfc-language-tag-complex")))


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
        if child.qname not in _INLINE:
            return False
        if child.qname != (_TEXT_NS, "s") and any(
                c.nodeType != c.TEXT_NODE and c.qname != (_TEXT_NS, "s")
                for c in child.childNodes):
            return False
    return True


def _text(node) -> str:
    """A node's text, ``text:s`` read as its spaces."""
    if node.nodeType == node.TEXT_NODE:
        return str(node)
    if node.qname == (_TEXT_NS, "s"):
        return " " * int(node.getAttribute("c") or 1)
    return "".join(_text(c) for c in node.childNodes)


def _markup(paragraph) -> tuple[str, list]:
    parts: list = []
    pieces = []
    for child in paragraph.childNodes:
        if child.nodeType == child.TEXT_NODE or child.qname == (_TEXT_NS, "s"):
            pieces.append(spanned(_text(child), None))
        else:
            parts.append(child)
            pieces.append(spanned(_text(child), len(parts) - 1,
                                  link=child.qname == (_TEXT_NS, "a")))
    return "".join(pieces), parts


def _rewrite(paragraph, parts: list, translated: str) -> None:
    for child in list(paragraph.childNodes):
        if child.nodeType == child.TEXT_NODE:  # (odfpy's removeChild takes elements only)
            paragraph.childNodes.remove(child)
        else:
            paragraph.removeChild(child)
    for text, number in stretches(translated):
        if number is None:
            paragraph.addText(text)
            continue
        element = copy.copy(parts[number])  # its name and attributes
        element.childNodes, element.parentNode = [], None
        element.addText(text)
        paragraph.appendChild(element)


def _text_nodes(node):
    for child in node.childNodes:
        if child.nodeType == child.TEXT_NODE:
            yield child
        else:
            yield from _text_nodes(child)
