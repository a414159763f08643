"""HTML and XML as a tree that writes back byte for byte: elements, text and other markup.

Every node keeps the source text it came from (``raw``), so whatever is not translated is
written back as it was: tags with their attributes and quoting, entities, comments,
declarations, processing instructions and whitespace. HTML is read by the standard library's
lenient ``html.parser`` (unclosed and stray tags are kept, with a warning); XML by expat, which
refuses what is not well-formed (read then as HTML, best effort, with a warning).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import cast
from xml.parsers import expat

# elements HTML writes without an end tag
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                  "param", "source", "track", "wbr"})
# elements whose end tag HTML lets a document leave out
OPTIONAL_END = frozenset({"body", "colgroup", "dd", "dt", "head", "html", "li", "optgroup",
                          "option", "p", "rb", "rp", "rt", "rtc", "tbody", "td", "tfoot", "th",
                          "thead", "tr"})


@dataclass
class Text:
    """Character data: ``raw`` as written (entities and all), ``text`` as read."""

    raw: str
    text: str


@dataclass
class Other:
    """A comment, declaration, processing instruction or stray end tag, kept as written."""

    raw: str


@dataclass
class Element:
    """An element: its start tag and end tag as written ("" where the source has none: a void
    element, an end tag left out) and its children."""

    tag: str
    attrs: list[tuple[str, str | None]]
    start: str
    end: str = ""
    children: list["Node"] = field(default_factory=list)

    def attr(self, name: str) -> str | None:
        """The value of attribute ``name`` (or of ``prefix:name``), None when absent."""
        for key, value in self.attrs:
            if key == name or key.endswith(":" + name):
                return value
        return None

    def text(self) -> str:
        """The text of the element and its descendants, as read."""
        return "".join(c.text if isinstance(c, Text) else c.text() if isinstance(c, Element)
                       else "" for c in self.children)


Node = Text | Other | Element


def raw(node: Node) -> str:
    """A node and its descendants as written in the source."""
    if isinstance(node, Element):
        return node.start + "".join(raw(c) for c in node.children) + node.end
    return node.raw


def _append_text(parent: Element, raw_text: str, text: str) -> None:
    last = parent.children[-1] if parent.children else None
    if isinstance(last, Text):  # one node per run of character data
        last.raw += raw_text
        last.text += text
    else:
        parent.children.append(Text(raw_text, text))


class _HtmlTree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.root = Element("", [], "")
        self.stack = [self.root]
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, self.get_starttag_text() or f"<{tag}>")
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Element(tag, attrs, self.get_starttag_text() or ""))

    def handle_endtag(self, tag):
        names = [e.tag for e in self.stack[1:]]
        if tag not in names:
            if tag not in VOID:
                self.problems.append(f"an end tag </{tag}> closes nothing")
            self.stack[-1].children.append(Other(f"</{tag}>"))
            return
        while self.stack[-1].tag != tag:
            self._left_open(self.stack.pop())
        self.stack.pop().end = f"</{tag}>"

    def _left_open(self, element: Element) -> None:
        if element.tag not in OPTIONAL_END:
            self.problems.append(f"<{element.tag}> is never closed")

    def handle_data(self, data):
        _append_text(self.stack[-1], data, data)

    def handle_entityref(self, name):
        _append_text(self.stack[-1], f"&{name};", html.unescape(f"&{name};"))

    def handle_charref(self, name):
        _append_text(self.stack[-1], f"&#{name};", html.unescape(f"&#{name};"))

    def handle_comment(self, data):
        self.stack[-1].children.append(Other(f"<!--{data}-->"))

    def handle_decl(self, decl):
        self.stack[-1].children.append(Other(f"<!{decl}>"))

    def handle_pi(self, data):
        self.stack[-1].children.append(Other(f"<?{data}>"))

    def unknown_decl(self, data):
        self.stack[-1].children.append(Other(f"<![{data}]>"))

    def finish(self) -> Element:
        self.close()
        while len(self.stack) > 1:
            self._left_open(self.stack.pop())
        return self.root


def parse_html(markup: str) -> tuple[Element, list[str]]:
    """The document as children of a root element with no tags, and what was malformed."""
    parser = _HtmlTree()
    parser.feed(markup)
    return parser.finish(), parser.problems


def parse_xml(markup: str) -> tuple[Element, list[str]]:
    """XML as ``parse_html`` gives HTML; not well-formed XML is read as HTML, best effort."""
    data = markup.encode("utf-8")
    parser = expat.ParserCreate()
    parser.ordered_attributes = True
    events: list[tuple[int, str, object]] = []

    def start(name, attrs):
        events.append((parser.CurrentByteIndex, "start",
                       (name, list(zip(attrs[::2], attrs[1::2])))))

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda name: events.append((parser.CurrentByteIndex, "end", name))
    parser.CharacterDataHandler = lambda d: events.append((parser.CurrentByteIndex, "text", d))
    parser.DefaultHandler = lambda d: events.append((parser.CurrentByteIndex, "other", d))
    try:
        parser.Parse(data, True)
    except expat.ExpatError as err:
        root, problems = parse_html(markup)
        return root, [f"not well-formed XML ({err}); read as HTML"] + problems
    root = Element("", [], "")
    stack = [root]
    ends = [index for index, _, _ in events[1:]] + [len(data)]
    for (index, kind, payload), end in zip(events, ends):
        written = data[index:end].decode("utf-8")
        if kind == "start":
            name, attrs = cast("tuple[str, list[tuple[str, str | None]]]", payload)
            element = Element(name, attrs, written)
            stack[-1].children.append(element)
            stack.append(element)
        elif kind == "end":
            stack.pop().end = written  # an empty element's whole tag (its start is "")
        elif kind == "text":
            _append_text(stack[-1], written, str(payload))
        else:
            stack[-1].children.append(Other(written))
    return root, []
