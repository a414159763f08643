"""A document with inline markup as the sentences a model translates, and back.

Block elements (p, li, td, h1, div, br, ... in HTML and XHTML; in other XML, every element that
holds no text of its own) delimit segments; inline elements (b, i, a, span, code, ...; in XML,
every element inside one that holds text) are taken out of the text as spans
(``aiayn.markup.place``). A segment's text, its whitespace collapsed, is split into sentences
(sentencex, as the server splits paragraphs); sentences that a span joins are translated
together. ``title``, ``alt`` and ``placeholder`` attributes are sentences too. Elements marked
``translate="no"`` (or class ``notranslate``) and code, kbd, samp, pre, script, style, svg and
math are written as they were, inline ones in place of the target words aligned to their text;
so is a link whose text is an address (``<a href=...>https://example.org/</a>``, an e-mail
address), which no language writes otherwise. Entities written in a segment are written again
where their characters come back.

    doc = Document(markup, "html", language="en")
    translations = translate(doc.sources)
    links = {i: align(doc.sources[i], translations[i]) for i in doc.aligned}
    out = doc.render(translations, links)
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from sentencex import segment

from ..placeholders import unbroken
from .parse import Element, Node, Other, Text, parse_html, parse_xml, raw
from .place import Span, place, proportional_links, words

FORMATS = ("html", "xml")
INLINE = frozenset({"a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "del",
                    "dfn", "em", "font", "i", "img", "ins", "kbd", "label", "mark", "q", "s",
                    "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt",
                    "u", "var", "wbr"})
KEEP = frozenset({"code", "kbd", "samp", "pre", "script", "style", "svg", "math"})
# a web address, or an e-mail address: a link's text that is written as it is in every language
ADDRESS = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.|mailto:)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
                     re.IGNORECASE)
ATTRIBUTES = ("title", "alt", "placeholder")  # translated where HTML has them
LANG = ("lang", "xml:lang")  # the language an element is in
_SPACE = re.compile(r"[ \t\n\r\f]+")  # not U+00A0, which an &nbsp; wrote
_ENTITY = re.compile(r"&#?\w+;")
# an attribute in a start tag as written: the space before it, its name, "=" and its value
_ATTRIBUTE = re.compile(r"""(\s)([^\s"'>/=]+)(\s*=\s*)?("[^"]*"|'[^']*'|[^\s"'=<>`]+)?""")


@dataclass
class _Unit:
    """A sentence (or several a span joins), or an attribute's value."""

    text: str
    spans: list[Span] = field(default_factory=list)
    attribute: bool = False


@dataclass
class _Segment:
    """Inline content between block boundaries: its units, joined by a space, between the
    whitespace it had around it; the entities its text was written with, and whether to
    write ">" as one (a ">" in text need not be: where the source has it bare, it stays so);
    the text before its first sentence and after its last (no-break spaces, an indent that
    ``&nbsp;`` wrote), kept."""

    units: list[int]
    lead: str
    trail: str
    entities: dict[str, str]
    greater: bool = True
    before: str = ""
    after: str = ""


@dataclass
class _StartTag:
    """A start tag with translated attributes (attribute name -> unit) and attributes written
    anew (name -> value: a ``lang`` that named the source language names the target's)."""

    element: Element
    units: dict[str, int]
    values: dict[str, str] = field(default_factory=dict)
    added: dict[str, str] = field(default_factory=dict)  # attributes the source lacks


class Document:
    """HTML or XML, as sentences to translate (``sources``) and back (``render``).

    Args:
        markup: the document.
        fmt: "html" or "xml".
        language: the source language's code, for sentence splitting.
        target: the target language's code, where known: a ``lang`` or ``xml:lang``
            attribute that names the source language (``en``, ``en-US``) is written with it,
            as a translated page is in the target language.

    Attributes:
        sources: the texts to translate, in order.
        aligned: the indices of sources whose tags need word alignments to be placed.
        problems: what was malformed in the markup (it is translated best effort).
    """

    def __init__(self, markup: str, fmt: str = "html", *, language: str = "en",
                 target: str | None = None) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"markup format must be html or xml, not {fmt!r}")
        self.xml = fmt == "xml"
        self.language, self.target = language, target
        root, self.problems = parse_xml(markup) if self.xml else parse_html(markup)
        if self.xml and _xhtml(root):
            self.xml = False  # XHTML: read as XML, written as it was, walked as HTML
        self._units: list[_Unit] = []
        self._items: list[str | _Segment | _StartTag] = []
        self._walk(root)

    @property
    def sources(self) -> list[str]:
        return [u.text for u in self._units]

    @property
    def aligned(self) -> list[int]:
        return [i for i, u in enumerate(self._units) if u.spans]

    # ------------------------------------------------------------------ reading
    def _kept(self, node: Element) -> bool:
        classes = (node.attr("class") or "").split()
        return (node.tag in KEEP or node.attr("translate") == "no" or "notranslate" in classes
                or (not self.xml and node.tag == "a"
                    and ADDRESS.fullmatch(node.text().strip()) is not None))

    def _inline(self, node: Node) -> bool:
        if not isinstance(node, Element):
            return True
        if self.xml:
            return True  # (only asked of what an element with text holds)
        return node.tag in INLINE and all(self._inline(c) for c in node.children)

    def _walk(self, element: Element) -> None:
        """Write ``element``'s children."""
        children = element.children
        if self.xml:
            if any(isinstance(c, Text) and c.text.strip() for c in children):
                self._segment(children)
            else:
                for child in children:
                    self._block(child)
            return
        run: list[Node] = []
        for child in children:
            if self._inline(child):
                run.append(child)
                continue
            self._segment(run)
            run = []
            self._block(child)
        self._segment(run)

    def _block(self, node: Node) -> None:
        if isinstance(node, (Text, Other)):
            self._items.append(node.raw)
        elif self._kept(node):
            self._items.append(raw(node))
        else:
            self._items.append(self._start_tag(node))
            self._walk(node)
            self._items.append(node.end)

    def _start_tag(self, element: Element) -> str | _StartTag:
        units, values, added = {}, {}, {}
        if element.tag == "html" and not self.xml and right_to_left(self.target) \
                and not right_to_left(self.language):
            # the page's direction turns with its language (an explicit "auto" stays)
            if element.attr("dir") is None:
                added["dir"] = "rtl"
            elif (element.attr("dir") or "").strip().lower() == "ltr":
                values["dir"] = "rtl"
        for name, value in element.attrs:
            if (name in LANG and value and self.target
                    and primary_subtag(value) == primary_subtag(self.language)):
                values[name] = self.target
            elif name in ATTRIBUTES and value and value.strip() and not self.xml:
                units[name] = len(self._units)
                self._units.append(_Unit(_SPACE.sub(" ", value).strip(), attribute=True))
        return _StartTag(element, units, values, added) if units or values or added \
            else element.start

    def _segment(self, run: list[Node]) -> None:
        """Inline nodes as a segment, or as they are when they hold no text."""
        if not any(isinstance(n, Text) and n.text.strip() or isinstance(n, Element)
                   and not self._kept(n) and n.text().strip() for n in run):
            for node in run:
                self._block(node)
            return
        text: list[str] = []  # the segment's text, whitespace collapsed
        length = 0
        points: list[Span] = []  # spans over no text, the whitespace after them not yet seen
        bare = False  # whether the text writes a ">" bare

        def append(piece: str) -> None:
            nonlocal length
            if piece:
                for point in points:
                    point.spaces = (bool(point.spaces and point.spaces[0]),
                                    piece[0] in " \t\n\r\f")
                points.clear()
            piece = _SPACE.sub(" ", piece)
            if piece.startswith(" ") and (not text or text[-1].endswith(" ")):
                piece = piece[1:]
            text.append(piece)
            length += len(piece)

        def point(span: Span) -> Span:
            span.spaces = (bool(text) and text[-1].endswith(" "), False)
            points.append(span)
            return span

        def add(node: Node, into: list[Span]) -> None:
            nonlocal bare
            if isinstance(node, Text):
                bare = bare or ">" in node.raw
                append(node.text)
            elif isinstance(node, Other):
                into.append(point(Span(length, length, keep=node.raw)))
            elif self._kept(node):
                start = length
                append(node.text())
                into.append(Span(start, length, keep=raw(node)))
            else:
                span = Span(length, length, close=node.end, tag=self._start_tag(node))
                for child in node.children:
                    add(child, span.children)
                span.end = length
                into.append(point(span) if span.end == span.start else span)

        spans: list[Span] = []
        for node in run:
            add(node, spans)
        plain = "".join(text)
        if plain.endswith(" "):
            plain = plain[:-1]
            _clamp(spans, len(plain))
        first, last = run[0], run[-1]
        lead = first.raw[:len(first.raw) - len(first.raw.lstrip())] \
            if isinstance(first, Text) else ""
        trail = last.raw[len(last.raw.rstrip()):] if isinstance(last, Text) else ""
        entities = {}
        for node in run:
            for entity in _ENTITY.findall(raw(node)):
                char = html.unescape(entity)
                if len(char) == 1 and char not in "&<>\"'":
                    entities[char] = entity
        self._items.append(_Segment(self._sentences(plain, spans), lead, trail, entities,
                                    not bare, plain[:len(plain) - len(plain.lstrip())],
                                    plain[len(plain.rstrip()):]))

    def _sentences(self, plain: str, spans: list[Span]) -> list[int]:
        """Units of a segment's text: its sentences, those a span crosses joined."""
        bounds, at = [], 0
        for sentence in unbroken(lambda t: list(segment(self.language, t)), plain):
            sentence = sentence.strip()
            k = plain.find(sentence, at) if sentence else -1
            if k < 0:
                continue
            bounds.append((k, k + len(sentence)))
            at = k + len(sentence)
        if not bounds:
            bounds = [(0, len(plain))]
        joined = [False] * len(bounds)

        def where(pos: int) -> int:
            return max([k for k, (s, _) in enumerate(bounds) if s <= pos], default=0)

        for span in spans:
            if span.end > span.start:
                for k in range(where(span.start), where(span.end - 1)):
                    joined[k] = True
        groups: list[list[int]] = []
        for k in range(len(bounds)):
            if groups and joined[k - 1]:
                groups[-1].append(k)
            else:
                groups.append([k])
        ids: list[int] = []
        starts: list[int] = []
        unit_of: dict[int, int] = {}  # sentence -> its group
        for g, group in enumerate(groups):
            start, end = bounds[group[0]][0], bounds[group[-1]][1]
            ids.append(len(self._units))
            starts.append(start)
            unit_of.update((k, g) for k in group)
            self._units.append(_Unit(plain[start:end]))
        for span in spans:  # each to the unit its start is in
            g = unit_of[where(span.start)]
            self._units[ids[g]].spans.append(span.shifted(starts[g]))
        return ids

    # ------------------------------------------------------------------ writing
    def render(self, translations: list[str],
               links: dict[int, list[tuple[int, int]]] | None = None,
               fallback: dict[int, list[tuple[int, int]]] | None = None) -> str:
        """The document with ``translations`` (one per source) in place of its sources and its
        tags placed through ``links`` (per index of ``aligned``: (source word, target word)
        pairs; missing ones are taken to follow word order) and, for a tag whose words have
        none, ``fallback`` (``aiayn.markup.place``)."""
        if len(translations) != len(self._units):
            raise ValueError(f"{len(translations)} translations for {len(self._units)} "
                             "sources")
        links, fallback = links or {}, fallback or {}

        def opened(spans: list[Span]) -> None:
            for span in spans:
                if isinstance(span.tag, _StartTag):
                    span.open = _write_start_tag(span.tag, translations)
                elif isinstance(span.tag, str):
                    span.open = span.tag
                opened(span.children)

        out = []
        for item in self._items:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, _StartTag):
                out.append(_write_start_tag(item, translations))
            else:
                def write(text: str, entities=item.entities, greater=item.greater) -> str:
                    text = text.replace("&", "&amp;").replace("<", "&lt;")
                    # (XML does not allow "]]>" in text)
                    text = text.replace(">", "&gt;") if greater else \
                        text.replace("]]>", "]]&gt;")
                    for char, entity in entities.items():
                        text = text.replace(char, entity)
                    return text
                parts = []
                for i in item.units:
                    unit, target = self._units[i], translations[i]
                    if not unit.spans:
                        parts.append(write(target.strip()))
                        continue
                    opened(unit.spans)
                    pairs = links.get(i) or proportional_links(len(words(unit.text)),
                                                               len(target.split()))
                    parts.append(place(unit.text, unit.spans, target, pairs, escape_text=write,
                                       fallback=fallback.get(i, [])))
                out.append(item.lead + write(item.before) + " ".join(p for p in parts if p)
                           + write(item.after) + item.trail)
        return "".join(out)


def _xhtml(root: Element) -> bool:
    """Whether a document parsed as XML is XHTML (an EPUB's chapters, an .xhtml page): its
    blocks and inline elements are HTML's, which the XML reading (a block is what holds no
    text) does not know. A list inside a list item was a span of the item's sentence."""
    top = next((c for c in root.children if isinstance(c, Element)), None)
    return top is not None and top.tag == "html" and \
        top.attr("xmlns") == "http://www.w3.org/1999/xhtml"


def primary_subtag(code: str) -> str:
    """A language code's primary subtag, as models, files and pages name languages alike
    (``lang="en-US"``, ``Language: pt_BR``): pt_BR, pt-BR, PT -> pt."""
    return code.strip().replace("_", "-").split("-")[0].lower()


# languages written right to left in their usual script (CLDR's character order), by
# primary subtag: Arabic, Hebrew (and its old code), Persian, Urdu, Pashto, Sindhi, Uyghur,
# Yiddish, Dhivehi, Central Kurdish, Syriac, Kashmiri, Mazanderani, Northern Luri
_RIGHT_TO_LEFT = {"ar", "he", "iw", "fa", "ur", "ps", "sd", "ug", "yi", "ji", "dv", "ckb",
                  "syr", "ks", "mzn", "lrc"}


def right_to_left(code: str | None) -> bool:
    """Whether the language ``code`` names (``ar``, ``he-IL``, ``fa_IR``) is written right to
    left."""
    return bool(code) and primary_subtag(code or "") in _RIGHT_TO_LEFT


def _write_start_tag(tag: _StartTag, translations: list[str]) -> str:
    """The start tag as written, with new values in place of the attributes' it changes;
    its spacing, quotes, case and other attributes as they were."""
    values = {name: translations[k].strip() for name, k in tag.units.items()}
    values.update(tag.values)

    def value(found: re.Match) -> str:
        name = found.group(2)
        if name.lower() not in values or found.group(4) is None:
            return found.group()
        quote = found.group(4)[0] if found.group(4)[0] in "\"'" else '"'
        new = html.escape(values[name.lower()], quote=False)
        new = new.replace(quote, "&quot;" if quote == '"' else "&#x27;")
        return f"{found.group(1)}{name}{found.group(3)}{quote}{new}{quote}"
    start = _ATTRIBUTE.sub(value, tag.element.start)
    if tag.added:
        end = len(start) - (2 if start.endswith("/>") else 1)
        start = start[:end].rstrip() + "".join(
            f' {name}="{html.escape(v)}"' for name, v in tag.added.items()) + start[end:]
    return start


def _clamp(spans: list[Span], limit: int) -> None:
    for span in spans:
        span.start, span.end = min(span.start, limit), min(span.end, limit)
        _clamp(span.children, limit)
