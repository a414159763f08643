"""Files translated whole: plain text, HTML, XML and Markdown, SubRip subtitles, gettext catalogs,
Word and OpenDocument documents, PowerPoint and OpenDocument presentations, Excel and
OpenDocument spreadsheets, EPUB books and XLIFF, each written back in its own format.

    out = translate_document(translator, data, ".po", options)   # bytes in, bytes out

A format is a function from the file's bytes to the translated file's bytes; every format's
text goes through the translator (``Translator.translate``, or ``translate_markup`` for inline
formatting), so placeholders, glossaries and length limits work as they do on the command
line. A file that is not what its extension says is one ``UserError`` naming the problem.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, cast

from ..errors import UserError
from ..markup import primary_subtag, right_to_left

if TYPE_CHECKING:
    import zipfile

    from ..decode.options import DecodeOptions
    from ..glossary import Glossary
    from ..translate import Translator


@dataclass(frozen=True)
class Job:
    """What a format needs besides the file: the translator and how to decode."""

    translator: "Translator"
    options: "DecodeOptions | None" = None
    glossary: "Glossary | None" = None
    overwrite: bool = False  # gettext: translate entries that already have a translation

    def lines(self, texts: list[str]) -> list[str]:
        """Paragraphs translated sentence by sentence, as the server translates them."""
        return cast("list[str]", self.translator.translate(
            texts, self.options, split_sentences=True, glossary=self.glossary))

    def by_line(self, texts: list[str]) -> list[str]:
        """Texts translated line by line, their line breaks and each line's edge whitespace
        kept: gettext's strings (msgfmt --check refuses a translation that does not begin
        and end with a newline where its msgid does) and XLIFF units that preserve space."""
        lines = [line for t in texts for line in t.split("\n")]
        todo = [k for k, line in enumerate(lines) if line.strip()]
        done = self.lines([lines[k].strip() for k in todo])
        for k, translation in zip(todo, done):
            line = lines[k]
            lines[k] = line[:len(line) - len(line.lstrip())] + translation + \
                line[len(line.rstrip()):]
        out, at = [], 0
        for t in texts:
            n = t.count("\n") + 1
            out.append("\n".join(lines[at:at + n]))
            at += n
        return out

    def markup(self, documents: list[str], fmt: str = "html", *,
               fragments: bool = False) -> list[str]:
        return self.translator.translate_markup(documents, fmt, self.options,
                                                glossary=self.glossary, fragments=fragments)

    def warn(self, message: str) -> None:
        self.translator.codec.warn(message)

    def accepted(self, changes: int) -> None:
        """Says that a document's ``changes`` tracked changes (any) were accepted."""
        if changes:
            self.warn(f"{changes} tracked change(s) accepted: the translation reads as the "
                      f"document does with its changes accepted")

    def check_languages(self, what: str, source: str | None = None,
                        target: str | None = None) -> None:
        """A UserError when the file names a source or target language (``de``, ``de_DE``,
        ``de-AT``) other than the model's pair, which would fill it with another language."""
        pair = self.translator.languages
        if not pair:
            return
        for side, named in (("source", source), ("target", target)):
            code = primary_subtag(named or "")
            if code and code != primary_subtag(pair[side]):
                raise UserError(f"{what} names {named} as its {side} language; this model "
                                f"translates {pair['source']} to {pair['target']}; give a "
                                f"model of the file's pair")

    @property
    def right_to_left(self) -> bool:
        """Whether the translation is into a language written right to left while its source
        is not (``markup.right_to_left``): what a document's direction must then say."""
        pair = self.translator.languages
        if not pair:
            return False
        return right_to_left(pair["target"]) and not right_to_left(pair["source"])

    @property
    def target_right_to_left(self) -> bool | None:
        """Whether the target language is written right to left, whatever the source's (what
        drawing the text needs: a PDF's, a subtitle's); None where the model's pair is
        unknown."""
        pair = self.translator.languages
        return right_to_left(pair["target"]) if pair else None

    def relabeled(self, named: str | None) -> str | None:
        """The target language's code where ``named``, a language a file gives its text in
        (``en``, ``en-US``, ``en_GB``), is the model's source language; None otherwise, and
        where the model's pair is unknown. A translated file says it is in the target
        language, so that spell checkers and screen readers take it as such."""
        pair = self.translator.languages
        if not (pair and named and primary_subtag(named) == primary_subtag(pair["source"])):
            return None
        return pair["target"]


def _formats() -> dict[str, Callable[[bytes, Job], bytes]]:
    from . import (
        apple,
        epub,
        fluent,
        gettext,
        markdown,
        pdf,
        php,
        resources,
        sheets,
        slides,
        subtitles,
        text,
        word,
        writer,
        xliff,
    )

    def resource(suffix: str) -> Callable[[bytes, Job], bytes]:
        return lambda data, job: resources.translate_resource(data, job, suffix)

    def xml(data: bytes, job: Job) -> bytes:  # Android's string resources, or any XML
        return resource(".xml")(data, job) if resources.android(data) else \
            text.translate_xml(data, job)
    return {".txt": text.translate_text, ".epub": epub.translate_epub, ".html": text.translate_html,
            ".htm": text.translate_html, ".xhtml": text.translate_xml,
            ".xml": xml, ".md": markdown.translate_md,
            ".markdown": markdown.translate_md, ".srt": subtitles.translate_srt,
            ".vtt": subtitles.translate_vtt,
            ".po": gettext.translate_po, ".pot": gettext.translate_po,
            ".docx": word.translate_docx, ".odt": writer.translate_odt,
            ".odp": lambda data, job: writer.translate_odt(data, job, "presentation (.odp)"),
            ".ods": lambda data, job: writer.translate_odt(data, job, "spreadsheet (.ods)"),
            ".pptx": slides.translate_pptx, ".pdf": pdf.translate_pdf,
            ".xlsx": sheets.translate_xlsx,
            ".xlsm": lambda data, job: sheets.translate_xlsx(data, job, ".xlsm"),
            ".xlf": xliff.translate_xliff, ".xliff": xliff.translate_xliff,
            ".xcstrings": apple.translate_xcstrings, ".stringsdict": apple.translate_stringsdict,
            ".ftl": fluent.translate_ftl, ".php": php.translate_php,
            **{suffix: resource(suffix) for suffix in resources.KINDS if suffix != ".xml"}}


FORMATS = (".txt", ".html", ".htm", ".xhtml", ".xml", ".md", ".markdown", ".srt", ".vtt", ".po",
           ".pot", ".docx", ".odt", ".odp", ".ods", ".pptx", ".xlsx", ".xlsm", ".epub", ".pdf",
           ".xlf", ".xliff", ".json", ".arb", ".yml", ".yaml", ".properties", ".strings", ".resx",
           ".ts", ".xcstrings", ".stringsdict", ".ftl", ".php")


def extension(name: str | Path) -> str:
    """A file's format by its extension; a UserError for one no format reads."""
    suffix = Path(name).suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"{Path(name).name}: files of type {suffix or '(no extension)'} are "
                        f"not translated; give one of {', '.join(FORMATS)}")
    return suffix


def translate_document(translator: "Translator", data: bytes, suffix: str,
                       options: "DecodeOptions | None" = None, *,
                       glossary: "Glossary | None" = None, overwrite: bool = False) -> bytes:
    """The file ``data`` of format ``suffix`` (".po", ...) translated, in the same format."""
    if not data.strip():
        raise UserError("the file is empty; there is nothing to translate")
    return _formats()[suffix](data, Job(translator, options, glossary, overwrite))


# an Office Open XML package's kind, by its main part's content type
_OFFICE_KINDS = {"wordprocessingml": "a Word document (.docx)",
                 "presentationml": "a PowerPoint presentation (.pptx)",
                 "spreadsheetml": "an Excel workbook (.xlsx)"}


def another_kind(content_type: str) -> str:
    """What a package whose main part has ``content_type`` is, where a format expected
    another: "it is a Word document (.docx); give it that extension"."""
    kind = next((name for key, name in _OFFICE_KINDS.items() if key in content_type), None)
    return f"it is {kind}; give it that extension" if kind else \
        f"its main part is of type {content_type}"


_COMPOUND = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # an OLE compound file's first bytes


def package_problem(err: Exception, data: bytes = b"") -> str:
    """What python-docx's or python-pptx's error on a file (``data``) says, the kind of
    package it is in place of the stream's repr where its main part is another kind's. Office
    keeps a file saved with a password, and the formats of Office 97-2003, in an OLE compound
    file, not a zip archive."""
    if data.startswith(_COMPOUND):
        return ("it is encrypted with a password, or in the format of Office 97-2003; save it "
                "without a password, in the current format")
    match = re.search(r"content type is '([^']*)'", str(err))
    if not match:
        return str(err)
    return another_kind(match.group(1))


def repack(archive: "zipfile.ZipFile", written: dict[str, bytes]) -> bytes:
    """A zip package (.odt, .epub) written again member for member, in its order and each
    compressed as it was (a mimetype first and stored stays so), ``written``'s members in
    place of the originals'."""
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        for info in archive.infolist():
            # a new entry: writing one takes it over, and the original's is still read
            entry = zipfile.ZipInfo(info.filename, info.date_time)
            entry.compress_type, entry.external_attr = info.compress_type, info.external_attr
            member = written[info.filename] if info.filename in written else archive.read(info)
            package.writestr(entry, member)
    return buffer.getvalue()


def spanned(text: str, number: int | None, link: bool = False, code: bool = False,
            point: bool = False, line: bool = False) -> str:
    """A stretch of a formatted paragraph as markup for ``Job.markup``: plain text, or span
    (a link) ``number`` of the paragraph's own list of formats; a ``code`` span (a link's
    text all code) is kept as written, as HTML's ``<code>`` is; a ``point`` stands between
    words (an image, to the markup path); a ``line`` ends one (a line break, a tab), and the
    words on either side are translated apart, as around HTML's ``<br>``, not run together."""
    import html
    if number is None:
        return html.escape(text)
    if line:  # between lines: a line break, a tab
        return f'<br data-r="{number}">'
    if point:  # between words: a note's reference, a picture
        return f'<img data-r="{number}">'
    if link and code:  # a link on code: the link placed, its code kept
        return f'<a data-h="{number}"><code>{html.escape(text)}</code></a>'
    if link:
        return f'<a data-h="{number}">{html.escape(text)}</a>'
    if code:
        return f'<code data-r="{number}">{html.escape(text)}</code>'
    return f'<span data-r="{number}">{html.escape(text)}</span>'


def local_name(tag) -> str:
    """An lxml element's name without its namespace; "" for a comment, a processing
    instruction or an entity's reference (lxml gives those a function as their tag)."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def prevailing(stretches: Iterable[tuple[Any, int, Any]]) -> tuple[Any, Any] | None:
    """The format holding most of a paragraph's text, from its stretches as (the format's key,
    the stretch's length, the format): its key and the first format with it. A key that says
    "no format of its own" ("" or None) wins a tie; None where there are no stretches. The
    paragraph's own format, written as plain text: Word's run properties, DrawingML's,
    OpenDocument's spans."""
    weight: dict[Any, int] = {}
    first: dict[Any, Any] = {}
    for key, length, found in stretches:
        weight[key] = weight.get(key, 0) + length
        first.setdefault(key, found)
    if not weight:
        return None
    key = max(weight, key=lambda k: (weight[k], not k))
    return key, first[key]


# Styles that word processors and converters give code: Word's "HTML Code" and "HTML
# Preformatted", pandoc's "Verbatim Char" and "Source Code", LibreOffice's "Source Text" and
# "Preformatted Text", docutils' "inlineliteral" and "codeblock". Words of a style's name.
_CODE_WORDS = {"code", "verbatim", "preformatted", "teletype", "typewriter", "keyboard",
               "literal", "inlineliteral", "codeblock", "sourcecode", "monospace"}
_MONOSPACED = re.compile(r"\bmono\b|monospace|courier|consolas|menlo|monaco|lucida console|"
                         r"lucida sans typewriter|inconsolata|\bcode\b", re.IGNORECASE)


def code_style(name: str | None) -> bool:
    """Whether a style's name says it is for code (kept as written, not translated)."""
    if not name:
        return False
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)]
    return bool(_CODE_WORDS.intersection(words)) or any(
        a == "source" and b == "text" for a, b in zip(words, words[1:]))


def monospaced(font: str | None) -> bool:
    """Whether a font family is monospaced, as code is set (Consolas, Courier New, Liberation
    Mono, Menlo, Source Code Pro...)."""
    return bool(font and _MONOSPACED.search(font))


# a sign that words do not hold but identifiers, addresses, paths and numbers do
_PLACEHOLDER = re.compile(r"\{__a(\d+)\}")


def put_back(translation: str, count: int) -> list[str | int]:
    """A translation whose source had ``count`` pieces hidden as ``{__a0}``, ``{__a1}``...
    (code, a placeable, a tag: what the placeholder path keeps), as its texts and the
    numbers of those pieces in their places: each once (a repeat dropped), one the
    translation lost at its end, after a space."""
    out: list[str | int] = []
    used: set[int] = set()
    for k, piece in enumerate(_PLACEHOLDER.split(translation)):
        if k % 2 == 0:
            if piece:
                out.append(piece)
        elif int(piece) < count and int(piece) not in used:
            used.add(int(piece))
            out.append(int(piece))
    for number in range(count):
        if number not in used:
            out += [" ", number] if out else [number]
    return out


_CODE_SIGN = re.compile(r"[\d@/\\_#=+<>{}\[\]|~$%^*]")


def code_like(text: str) -> bool:
    """Whether a table cell's text is one token with a digit or a sign words do not hold:
    a part number, a URL or an address, a path, a key ("SKU-4471-B", "user_name",
    "https://example.org", "N/A"). A model writes such a token wrong more often than right
    ("SKU-471-B"), so a cell of one is written as it is; a cell of words is translated."""
    token = text.strip()
    return bool(token) and not any(c.isspace() for c in token) and \
        _CODE_SIGN.search(token) is not None


def stretches(translated: str) -> list[tuple[str, int | None]]:
    """A paragraph's translated markup (``spanned`` pieces, tags placed) as (text, number of
    its format, None for plain text), in order: a text's format is that of the innermost
    numbered element around it (code in a link: the code's), and a numbered element with no
    content (a point, or a span left without words) is ("", its number)."""
    from ..markup.parse import Element, Text, parse_html
    out: list[tuple[str, int | None]] = []

    def walk(nodes: list, number: int | None) -> None:
        for node in nodes:
            if isinstance(node, Text):
                out.append((node.text, number))
            elif isinstance(node, Element):
                own = node.attr("data-r") or node.attr("data-h")
                inner = int(own) if own is not None else number
                if node.children:
                    walk(node.children, inner)
                elif own is not None:
                    out.append(("", inner))
    walk(parse_html(translated)[0].children, None)
    return out

