"""Mozilla's Fluent (.ftl) files, the format of Firefox's and Thunderbird's strings, read by
``fluent.syntax`` (Mozilla's own parser, which translate-toolkit and Pontoon use).

A Fluent file holds one language: each message's value and attributes are translated, its
placeables kept where the translation puts them (``{ $count }``, ``{ -brand-short-name }``,
``NUMBER($n)``), and a select expression's variants translated each apart, their keys kept.

    tabs-close =
        .tooltiptext =
            { $tabCount ->
                [one] Close tab
               *[other] Close { $tabCount } tabs
            }

is the texts "{__a0}" (the select itself, kept), "Close tab" and "Close {__a0} tabs" to
translate, each placeable a placeholder the placeholder path keeps. A select over a number
(``$count``, ``NUMBER($count)``) keyed by CLDR's plural categories gets every category the
target language has, each from the "other" variant. A text broken over several lines is one
paragraph to translate; blank lines part paragraphs.

What is not words stays as written: a term's attributes (``.gender``, parameters that
selectors read), the attributes that hold CSS or keys (``.style``, ``.key``, ``.keycode``,
``.commandkey``, ``.modifiers``). An access key (``.accesskey``) is chosen again from the
translated label it belongs to: the same letter where the label still has it, else the
label's first letter or digit. Entries are written as ``fluent.syntax`` serializes them,
and only the entries that changed: blank lines, comments and untouched entries stay byte for
byte. A file the parser cannot read whole is refused with its first error's line.
"""

from __future__ import annotations

import copy
import re

from ..errors import UserError, require
from . import Job, put_back
from .resources import plural_categories, translated_values

_CATEGORIES = {"zero", "one", "two", "few", "many", "other"}
_KEPT = {"style", "key", "keycode", "commandkey", "modifiers"}


def translate_ftl(data: bytes, job: Job) -> bytes:
    """A Fluent file translated into the model's target language."""
    require("fluent.syntax", "Fluent (.ftl) files", "documents")
    from fluent.syntax import FluentParser, ast
    from fluent.syntax.serializer import FluentSerializer
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"not a Fluent (.ftl) file: not UTF-8 ({err.reason} at byte "
                        f"{err.start})") from None
    resource = FluentParser().parse(text)
    for junk in (e for e in resource.body if isinstance(e, ast.Junk)):
        note = junk.annotations[0] if junk.annotations else None
        start = _span(junk)[0]
        at = min(_span(note)[0] if note is not None else start,
                 start + len(str(junk.content).rstrip()))  # (not past its last line)
        raise UserError(f"not a Fluent (.ftl) file: line {text.count(chr(10), 0, at) + 1}: "
                        f"{note.message if note is not None else 'not an entry'}")
    entries = [e for e in resource.body if isinstance(e, (ast.Message, ast.Term))]
    work = [pattern for entry in entries for name, pattern in _patterns(entry)
            if not _kept(entry, name) and not _access_key(name)]
    leaves = [" ".join(re.split(r"(?<!\n)\n(?!\n)", leaf))  # a paragraph broken over lines
              for pattern in work for leaf in _leaves(pattern)]
    tags = plural_categories(job)
    done = iter(translated_values(leaves, job))
    before = {id(entry): copy.deepcopy(entry) for entry in entries}
    for pattern in work:
        _rebuild(pattern, done, tags)
    for entry in entries:
        _choose_access_keys(entry)
    serializer = FluentSerializer()
    newline = "\r\n" if "\r\n" in text else "\n"
    out = text
    for entry in reversed(entries):  # from the end, so earlier spans stay where they were
        if _same(entry, before[id(entry)]):
            continue
        start, end = _span(entry.id if entry.comment is not None else entry)[0], _span(entry)[1]
        written = copy.copy(entry)
        written.comment = None  # the comment above it stays as written
        new = re.sub(r"\n[ \t]+(?=\n)", "\n",  # a blank line without the indentation
                     serializer.serialize_entry(written).rstrip("\n")).replace("\n", newline)
        end = start + len(text[start:end].rstrip())  # (its span holds the blank lines after it)
        out = out[:start] + new + out[end:]
    return out.encode("utf-8")


def _span(node) -> tuple[int, int]:
    """Where a node is in the file (the parser gives each node its span)."""
    span = node.span
    assert span is not None
    return span.start, span.end


def _patterns(entry):
    """An entry's patterns with their names: the value (None), then each attribute's."""
    if entry.value is not None:
        yield None, entry.value
    for attribute in entry.attributes:
        yield attribute.id.name, attribute.value


def _kept(entry, name: str | None) -> bool:
    """Whether a pattern is not words: a term's attribute, or CSS or a key."""
    from fluent.syntax import ast
    return name is not None and (isinstance(entry, ast.Term) or name.lower() in _KEPT)


def _access_key(name: str | None) -> bool:
    return name is not None and "accesskey" in name.lower()


def _flat(pattern) -> tuple[str, list]:
    """A pattern as one text, each placeable a ``{__aK}`` token, and its select expressions."""
    from fluent.syntax import ast
    parts, selects, number = [], [], 0
    for element in pattern.elements:
        if isinstance(element, ast.TextElement):
            parts.append(element.value)
            continue
        parts.append(f"{{__a{number}}}")
        number += 1
        if isinstance(element.expression, ast.SelectExpression):
            selects.append(element.expression)
    return "".join(parts), selects


def _leaves(pattern) -> list[str]:
    """The texts of a pattern to translate, in order: its own, then each variant's."""
    text, selects = _flat(pattern)
    return [text] + [leaf for select in selects for variant in select.variants
                     for leaf in _leaves(variant.value)]


def _rebuild(pattern, done, tags: list[str] | None) -> None:
    """``pattern`` built again from its translations (``done``, in ``_leaves``' order), each
    placeable where its token landed; one the translation lost goes at its end."""
    from fluent.syntax import ast
    translated = next(done)
    placeables = [e for e in pattern.elements if isinstance(e, ast.Placeable)]
    _, selects = _flat(pattern)
    for select in selects:
        for variant in select.variants:
            _rebuild(variant.value, done, tags)
        if tags and _plural(select):
            _fill(select, tags)
    elements = [e for piece in put_back(translated, len(placeables))
                for e in ([placeables[piece]] if isinstance(piece, int) else _text(piece))]
    pattern.elements = elements


def _text(text: str) -> list:
    """Text as pattern elements; a brace, which Fluent reads as a placeable, as a literal."""
    from fluent.syntax import ast
    out: list = []
    for piece in re.split(r"([{}])", text):
        if piece in ("{", "}"):
            out.append(ast.Placeable(ast.StringLiteral(piece)))
        elif piece:
            out.append(ast.TextElement(piece))
    return out


def _plural(select) -> bool:
    """Whether a select expression chooses by a number's plural category."""
    from fluent.syntax import ast
    keys = [v.key for v in select.variants]
    by_number = isinstance(select.selector, ast.VariableReference) or (
        isinstance(select.selector, ast.FunctionReference)
        and select.selector.id.name == "NUMBER")
    return by_number and any(isinstance(k, ast.Identifier) for k in keys) and all(
        isinstance(k, ast.NumberLiteral) or k.name in _CATEGORIES for k in keys)


def _fill(select, tags: list[str]) -> None:
    """The target language's categories a plural select lacks, each a copy of its "other"
    variant (its default where it has none), placed before the default."""
    from fluent.syntax import ast
    have = {v.key.name for v in select.variants if isinstance(v.key, ast.Identifier)}
    default = next(v for v in select.variants if v.default)
    model = next((v for v in select.variants if isinstance(v.key, ast.Identifier)
                  and v.key.name == "other"), default)
    at = select.variants.index(default)
    for tag in tags:
        if tag not in have:
            variant = copy.deepcopy(model)
            variant.key, variant.default = ast.Identifier(tag), False
            select.variants.insert(at, variant)
            at += 1


def _choose_access_keys(entry) -> None:
    """Each access key a letter of its translated label: ``.accesskey`` goes with ``.label``
    (else the value), ``.buttonaccesskey`` with ``.buttonlabel``."""
    from fluent.syntax import ast
    named = {a.id.name.lower(): a.value for a in entry.attributes}
    for attribute in entry.attributes:
        name = attribute.id.name.lower()
        elements = attribute.value.elements
        if not _access_key(name) or len(elements) != 1 or \
                not isinstance(elements[0], ast.TextElement):
            continue
        label = named.get(name.replace("accesskey", "label")) or entry.value or named.get("label")
        words = _words(label) if label is not None else ""
        key = elements[0].value.strip()
        if not words or len(key) != 1:
            continue
        at = words.lower().find(key.lower())
        if at < 0:
            at = next((k for k, c in enumerate(words) if c.isalnum()), -1)
        if at >= 0:
            elements[0].value = words[at]


def _words(pattern) -> str:
    """A pattern's text, its selects read by their default variants."""
    from fluent.syntax import ast
    out = []
    for element in pattern.elements:
        if isinstance(element, ast.TextElement):
            out.append(element.value)
        elif isinstance(element.expression, ast.SelectExpression):
            out.append(_words(next(v for v in element.expression.variants if v.default).value))
    return "".join(out)


def _same(entry, before) -> bool:
    """Whether an entry still says what it said (spans aside)."""
    return entry.equals(before, ignored_fields=["span"])
