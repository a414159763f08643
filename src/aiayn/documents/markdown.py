"""Markdown (.md; mistletoe, the CommonMark parser translate-toolkit reads Markdown with, as
Weblate does): headings, paragraphs, list items, block quotes' paragraphs and table cells,
each translated whole with its emphasis, strong text, strikethrough and links carried by the
markup path, as a Word paragraph's runs are (``aiayn.documents.word``).

A block's inline content becomes one sentence of markup: ``<b>``, ``<i>``, ``<s>`` and ``<a>``
(each ``data-m=K``, K the token in the block's own list) around their text; inline HTML's
start and end tags a ``<span>`` around what lies between them (a ``<code>``, kept as
written, for ``<kbd>`` and its kind); code spans, autolinks, pictures and a tag without its
other half a ``<code>`` or point kept as written; a hard line break the end of a line.
The translation is turned back into mistletoe's tokens, copies of the source's around the
translated words, and mistletoe's Markdown renderer writes the document again: its
structure, fences, link reference definitions and tables as they were, each paragraph on
one line. HTML blocks go through the HTML path (``aiayn.markup``), as pieces of one page;
pictures' descriptions and titles are translated as plain sentences. Code blocks, a YAML
front matter and what lies between translate-toolkit's ``<!-- translate:off -->`` and
``<!-- translate:on -->`` stay as written.
"""

from __future__ import annotations

import copy
import html
import re
from dataclasses import dataclass

from ..data import charset
from ..errors import UserError, require
from ..markup.document import KEEP
from . import Job

# inline tokens whose text is translated, and the tag each is to the markup path
_AROUND = {"Strong": "b", "Emphasis": "i", "Strikethrough": "s", "Link": "a"}
# blocks whose inline content is a sentence of its own (a table's cells are found apart)
_SENTENCES = {"Paragraph", "Heading", "SetextHeading", "TableCell"}
_FRONT = re.compile(r"\A---[ \t]*\r?\n.*?^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)",
                    re.DOTALL | re.MULTILINE)
# what the renderer would read as formatting in translated text: a backtick, a star, an
# underscore at a word's edge (inside a word it is a letter), a "<" that starts a tag
_SPECIAL = re.compile(r"[`*]|(?<!\w)_|_(?!\w)|<(?=[A-Za-z/!?])")
# the same in a picture's description, and a backslash or a bracket, which would end it
_BRACKET = re.compile(r"[\\\[\]`*]|(?<!\w)_|_(?!\w)|<(?=[A-Za-z/!?])")
# a footnote's reference or label (GitHub's and pandoc's "[^1]"), which CommonMark reads as
# text: kept as written, as a placeholder is
_NOTE = re.compile(r"\[\^[^\]\s]+\]")
_DEFINITION = re.compile(r"\[\^[^\]\s]+\]:[ \t]*")  # a footnote's text starts so
# a code span written in an HTML block's text (which CommonMark leaves as it is, though its
# authors wrote it as Markdown), and as code to the HTML path, which keeps it as written
_CODE = re.compile(r"(?<!`)(`+)(?!`)([^<>\n]+?)(?<!`)\1(?!`)")
_CODED = re.compile(r'<code data-backticks="(\d+)">([^<]*)</code>')
_SAYS = re.compile(r"""\s(?:alt|title|placeholder)\s*=\s*["']?\s*\w""", re.IGNORECASE)
# translate-toolkit's markers of a stretch left as written (Weblate reads Markdown through it)
_MARKER = re.compile(r"<!--\s*translate:(on|off)\s*-->")
_OPEN = re.compile(r"<([A-Za-z][\w-]*)(?:\s[^>]*)?(?<!/)>")  # a start tag, not one closing itself
_VOID = {"br", "img", "hr", "input", "wbr", "area", "col", "embed", "source", "meta", "link"}


def translate_md(data: bytes, job: Job) -> bytes:
    require("mistletoe", "Markdown files", "documents")
    from mistletoe import block_token
    from mistletoe.markdown_renderer import MarkdownRenderer
    from mistletoe.span_token import RawText
    text, encoding = charset.read(data, "Markdown file")
    front = _FRONT.match(text)
    head, body = (front.group(), text[front.end():]) if front else ("", text)
    with MarkdownRenderer() as renderer:
        try:
            document = block_token.Document(body.splitlines(keepends=True))
        except Exception as err:  # (mistletoe raises what its parser meets)
            raise UserError(f"not a Markdown file mistletoe reads: {err}") from None
        parts = list(_parts(document))
        blocks = [t for t in parts if type(t).__name__ in _SENTENCES]
        inline = [t for b in blocks for t in _inline(b.children)]
        # HTML blocks, and inline HTML's tags whose attributes say something
        pages = [t for t in parts if type(t).__name__ == "HtmlBlock" and t.content.strip()] + \
            [t for t in inline if type(t).__name__ == "HtmlSpan" and _SAYS.search(t.content)]
        titled = [t for t in inline + parts if _titled(t)]
        pictures = [t for t in inline if type(t).__name__ == "Image" and _plain(t.children)]
        sentences = [b for b in blocks if _words(b.children)]
        labels = [_label(b) for b in sentences]
        plans = [_markup(b.children) for b in sentences]
        translated = job.markup([markup for markup, _ in plans]) if plans else []
        pieces = [_CODE.sub(_coded, b.content) for b in pages]
        for page, out in zip(pages, job.markup(pieces, fragments=True) if pages else []):
            out = _CODED.sub(_uncoded, out)
            if type(page).__name__ == "HtmlSpan":
                page.content = out
            else:
                page.children = (RawText(out),)
        _short(job, titled, pictures)
        read = {id(t) for t in titled}  # (a definition's other titles are as written)
        for token in _titles(document):
            if not _defines(token) or id(token) in read:
                token.title = _quoted(token.title, token.title_delimiter)
        for block, label, (_, tokens), out in zip(sentences, labels, plans, translated):
            block.children = label + _tokens(out, tokens, renderer)
        return encoding.write(head + renderer.render(document))


def _short(job: Job, titled: list, pictures: list) -> None:
    """Titles and pictures' descriptions translated as plain sentences."""
    from mistletoe.span_token import EscapeSequence, RawText
    # a definition's title is kept as written, an inline one with its escapes read
    texts = [EscapeSequence.strip(t.title) if _defines(t) else t.title for t in titled] + \
        [_plain(p.children) for p in pictures]
    done = iter(job.lines(texts) if texts else [])
    for token in titled:
        token.title = next(done)
    for picture in pictures:
        picture.children = [RawText(_BRACKET.sub(lambda m: "\\" + m.group(), next(done)))]


def _coded(span: re.Match) -> str:
    return f'<code data-backticks="{len(span.group(1))}">{span.group(2)}</code>'


def _uncoded(code: re.Match) -> str:
    return "`" * int(code.group(1)) + code.group(2) + "`" * int(code.group(1))


def _parts(document):
    """The tokens whose text is translated, in order: blocks of inline content (a table's
    cells apart), HTML blocks and link reference definitions (their titles); none between
    ``<!-- translate:off -->`` and ``<!-- translate:on -->``, translate-toolkit's markers."""
    on = True

    def walk(token):
        nonlocal on
        name = type(token).__name__
        if name == "HtmlBlock":
            marker = _MARKER.fullmatch(token.content.strip())
            if marker:
                on = marker.group(1) == "on"
            elif on:
                yield token
            return
        if name in _SENTENCES or name == "LinkReferenceDefinition":
            if on:
                yield token
            return
        if name == "Table":
            rows = ([token.header] if getattr(token, "header", None) is not None else []) + \
                list(token.children)
            for row in rows if on else []:
                yield from row.children
            return
        if name in ("CodeFence", "BlockCode"):
            return
        for child in getattr(token, "children", None) or []:
            yield from walk(child)
    return walk(document)


def _inline(children):
    """Inline tokens under ``children``, at every depth (a picture inside a link)."""
    for token in children:
        yield token
        yield from _inline(getattr(token, "children", None) or [])


def _titled(token) -> bool:
    """Whether ``token`` is a link, picture or link reference definition that writes a title
    (a reference link takes its definition's, not written with it)."""
    return bool(getattr(token, "title", None) and getattr(token, "title_delimiter", None))


def _titles(document):
    """Every link, picture and link reference definition that writes a title."""
    return (token for token in _inline([document]) if _titled(token))


def _defines(token) -> bool:
    """Whether ``token`` is a link reference definition, whose title mistletoe keeps as
    written (an inline link's it keeps with its escapes read)."""
    return type(token).__name__ == "LinkReferenceDefinition"


def _plain(children) -> str:
    """Inline tokens' text without their formatting: a picture's description, as HTML's
    ``alt`` gives it."""
    out = ""
    for token in children:
        name = type(token).__name__
        if name == "RawText":
            out += token.content
        elif name in ("InlineCode", "EscapeSequence"):
            out += token.children[0].content
        elif name == "LineBreak":
            out += " "
        else:
            out += _plain(getattr(token, "children", None) or [])
    return " ".join(out.split())


def _quoted(title: str, delimiter: str) -> str:
    """A title as written between its delimiters, its backslashes and closing delimiters
    escaped (mistletoe's renderer writes the title as it is)."""
    closing = ")" if delimiter == "(" else delimiter
    escaped = title.replace("\\", "\\\\")
    for mark in {delimiter, closing}:
        escaped = escaped.replace(mark, "\\" + mark)
    return escaped


def _label(block) -> list:
    """A footnote's label ("[^1]: ") taken off the start of its text, as a token to put
    back before the translation (CommonMark reads a footnote as a paragraph); [] for none."""
    from mistletoe.span_token import RawText
    if not block.children or type(block.children[0]).__name__ != "RawText":
        return []
    first = block.children[0]
    found = _DEFINITION.match(first.content)
    if found is None:
        return []
    first.content = first.content[found.end():]
    return [RawText(found.group())]


def _words(tokens) -> bool:
    """Whether inline ``tokens`` hold text to translate, outside code."""
    for token in tokens:
        name = type(token).__name__
        if name == "RawText" and token.content.strip():
            return True
        if name in _AROUND and _words(token.children):
            return True
    return False


def _markup(children) -> tuple[str, list]:
    """A block's inline tokens as one sentence of markup, and the tokens its spans number."""
    from mistletoe.span_token import RawText
    tokens: list = []

    def walk(children) -> str:
        out = ""
        children = _paired(list(children))
        for token in children:
            if isinstance(token, _Pair):  # inline HTML's element: its tags around its words
                tokens.append(token)
                k = len(tokens) - 1
                if token.kept:
                    shown = html.escape(_plain(token.inner), quote=False)
                    out += f'<code data-m="{k}">{shown}</code>'
                else:
                    out += f'<span data-m="{k}">{walk(token.inner)}</span>'
                continue
            name = type(token).__name__
            if name == "RawText":  # its notes' references kept as written, as code is
                at = 0
                for note in _NOTE.finditer(token.content):
                    out += html.escape(token.content[at:note.start()], quote=False)
                    tokens.append(RawText(note.group()))
                    out += f'<code data-m="{len(tokens) - 1}">{html.escape(note.group())}</code>'
                    at = note.end()
                out += html.escape(token.content[at:], quote=False)
            elif name == "EscapeSequence":  # (an escaped character: plain text)
                out += html.escape(token.children[0].content, quote=False)
            elif name == "LineBreak" and token.soft:
                out += " "
            else:
                tokens.append(token)
                k = len(tokens) - 1
                if name in _AROUND:
                    tag = _AROUND[name]
                    out += f'<{tag} data-m="{k}">{walk(token.children)}</{tag}>'
                elif name == "LineBreak":  # a hard break: the end of a line
                    out += f'<br data-m="{k}">'
                elif name in ("InlineCode", "AutoLink"):  # words kept as written
                    shown = token.children[0].content if token.children else ""
                    out += f'<code data-m="{k}">{html.escape(shown, quote=False)}</code>'
                else:  # a picture, inline HTML: a point between words
                    out += f'<img data-m="{k}">'
        return out
    return walk(children), tokens


@dataclass
class _Pair:
    """Inline HTML's start tag and end tag in a paragraph (mistletoe reads each as a token of
    its own) and the tokens between them; ``kept``: an element whose words are written as
    they are (``<kbd>``, ``<code>``)."""

    start: object
    inner: list
    end: object
    kept: bool


def _paired(children: list) -> list:
    """``children`` with each inline HTML start tag and its end tag among them taken
    together with what lies between (a tag without its other half stays a point)."""
    out, at = [], 0
    while at < len(children):
        token = children[at]
        opened = _OPEN.fullmatch(token.content) if type(token).__name__ == "HtmlSpan" else None
        name = opened.group(1).lower() if opened else ""
        end = _end_tag(children, at, name) if opened and name not in _VOID else None
        if end is None:
            out.append(token)
            at += 1
        else:
            out.append(_Pair(token, children[at + 1:end], children[end], name in KEEP))
            at = end + 1
    return out


def _end_tag(children: list, at: int, name: str) -> int | None:
    """Where among ``children`` the start tag at ``at`` (of element ``name``) ends: the
    index of its end tag, others of its name opened and closed between; None for none."""
    depth = 0
    for k in range(at + 1, len(children)):
        if type(children[k]).__name__ != "HtmlSpan":
            continue
        opened = _OPEN.fullmatch(children[k].content)
        if opened and opened.group(1).lower() == name:
            depth += 1
        elif re.fullmatch(rf"</{re.escape(name)}\s*>", children[k].content, re.IGNORECASE):
            if depth == 0:
                return k
            depth -= 1
    return None


def _tokens(translated: str, tokens: list, renderer) -> list:
    """A block's translated markup as mistletoe's inline tokens: the source's tokens (copies,
    for those around words) with the translated words in them. A reference link named by its
    own text (``[INSTALL][]``, ``[INSTALL]``) names its reference outright, since its text is
    translated (``[Installation][INSTALL]``); formatting left around no words goes."""
    from mistletoe.span_token import RawText

    from ..markup.parse import Element, Text, parse_html

    def build(nodes) -> list:
        out: list = []
        for node in nodes:
            if isinstance(node, Text):
                out.append(RawText(_SPECIAL.sub(lambda m: "\\" + m.group(), node.text)))
            elif isinstance(node, Element):
                k = node.attr("data-m")
                if k is None:
                    out += build(node.children)
                    continue
                token = tokens[int(k)]
                if isinstance(token, _Pair):  # its tags around its words, or kept
                    inner = token.inner if token.kept else build(node.children)
                    if inner:
                        out += [token.start, *inner, token.end]
                    continue
                if type(token).__name__ in _AROUND:
                    inner = build(node.children)
                    if not inner:
                        continue
                    if getattr(token, "dest_type", None) in ("collapsed", "shortcut"):
                        label = "".join(f.text for f in renderer.make_fragments(token.children))
                        if label != "".join(f.text for f in renderer.make_fragments(inner)):
                            token = copy.copy(token)
                            token.dest_type, token.label = "full", label
                    token = copy.copy(token)
                    token.children = inner
                out.append(token)
        return out
    return build(parse_html(translated)[0].children)
