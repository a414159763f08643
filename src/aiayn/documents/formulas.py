"""What a spreadsheet formula names by text: an Excel table's columns (structured references,
``Sales[Amount]``) and cells' values (quoted text, ``COUNTIF(C2:C9,"Open")``), renamed or
translated in a formula's text as the cells were (``aiayn.documents.cell_copies`` for Excel,
``aiayn.documents.writer`` for OpenDocument). Formulas are not parsed whole: a bracket after a
table's name, or in a table's own formulas, is a column; quoted text is text.
"""

from __future__ import annotations

import re

_TABLE_NAME = re.compile(r"([A-Za-z_\\][\w.\\]*)$")
_LITERAL = re.compile(r'"((?:[^"]|"")*)"')


def follow_literals(formula: str, cells: dict[str, str], listed: bool = False) -> str:
    """``formula`` with each quoted text that is a translated cell's text translated as that
    cell is: what a formula compares cells with, counts or looks up
    (``COUNTIF(C2:C9,"Open")``) is their text. ``listed``: a quoted text is a list of values
    split by commas (a data validation's list of allowed values), each followed alone."""
    def follow(match: re.Match) -> str:
        text = match.group(1).replace('""', '"')
        if text in cells:
            text = cells[text]
        elif listed and "," in text:
            text = ",".join(_spaced(item, cells) for item in text.split(","))
        else:
            return match.group(0)
        return '"' + text.replace('"', '""') + '"'
    return _LITERAL.sub(follow, formula)


# a quoted text, or a cell of the formula's own sheet (OpenDocument's [.A1], Excel's A1),
# then "&" or the end
_JOINED = re.compile(r'\s*(?:"((?:[^"]|"")*)"|\[\.\$?([A-Z]{1,3})\$?(\d+)\]'
                     r'|\$?([A-Z]{1,3})\$?(\d+)(?![\w(!.:\[]))\s*(&|$)')


def joined(formula: str) -> list[str | tuple[int, int]] | None:
    """A formula that only joins texts with ``&`` (``of:=[.A1]&"!"`` in OpenDocument,
    ``A1&"!"`` in Excel: cells of its own sheet and quoted texts), as its pieces: a quoted
    text, or a cell's (column, row), from 1; None for any other formula."""
    body = formula.split("=", 1)[1] if formula.startswith(("of:=", "=")) else formula
    pieces: list[str | tuple[int, int]] = []
    at, joiner = 0, "&"
    while at < len(body) and joiner:
        match = _JOINED.match(body, at)
        if match is None or match.end() == at:
            return None
        text, letters, digits, excel_letters, excel_digits, joiner = match.groups()
        letters, digits = letters or excel_letters, digits or excel_digits
        if text is not None:
            pieces.append(text.replace('""', '"'))
        else:
            column = 0
            for letter in letters:
                column = column * 26 + ord(letter) - ord("A") + 1
            pieces.append((column, int(digits)))
        at = match.end()
    return pieces if at == len(body) and pieces and not joiner else None


def _spaced(item: str, cells: dict[str, str]) -> str:
    """A list's item followed, the spaces around it kept."""
    core = item.strip()
    if core not in cells:
        return item
    return item[:len(item) - len(item.lstrip())] + cells[core] + item[len(item.rstrip()):]


def rename_columns(formula: str, renamed: dict[str, dict[str, str]]) -> str:
    """``formula`` with its structured references to renamed columns renamed: ``renamed``
    maps a table's name to {old column name: new}. A reference without a table's name (inside
    a table's own formulas) takes the column's one new name, where every table gives it the
    same; text in double quotes is left alone."""
    lowered = {table.casefold(): columns for table, columns in renamed.items()}
    anywhere: dict[str, str] = {}
    for columns in renamed.values():
        for old, new in columns.items():
            anywhere[old] = new if anywhere.get(old, new) == new else ""
    out, at, n = [], 0, len(formula)
    while at < n:
        char = formula[at]
        if char == '"':  # a string: up to its closing quote ("" is a quote inside)
            end = at + 1
            while end < n and not (formula[end] == '"' and formula[end + 1:end + 2] != '"'):
                end += 2 if formula[end] == '"' else 1
            out.append(formula[at:end + 1])
            at = end + 1
        elif char == "[":
            end = _closing(formula, at)
            if end < 0:
                out.append(formula[at:])
                break
            table = _TABLE_NAME.search("".join(out))
            columns = lowered.get(table.group(1).casefold(), {}) if table else anywhere
            out.append(_renamed_spec(formula[at:end + 1], columns))
            at = end + 1
        else:
            out.append(char)
            at += 1
    return "".join(out)


def _closing(formula: str, start: int) -> int:
    """Where the bracket opened at ``start`` closes (an apostrophe escapes the next
    character), or -1."""
    depth, at = 0, start
    while at < len(formula):
        char = formula[at]
        if char == "'":
            at += 2
            continue
        depth += (char == "[") - (char == "]")
        if depth == 0:
            return at
        at += 1
    return -1


def _renamed_spec(spec: str, columns: dict[str, str]) -> str:
    """A bracketed specifier (``[Amount]``, ``[@Amount]``, ``[[#This Row],[Amount]]``) with
    its column names renamed."""
    inner = spec[1:-1]
    if "[" not in inner.replace("'[", ""):
        at = 1 if inner.startswith("@") else 0
        name = re.sub(r"'(.)", r"\1", inner[at:])
        new = columns.get(name)
        return f"[{inner[:at]}{_escaped(new)}]" if new and not name.startswith("#") else spec
    out, at = [], 1
    while at < len(spec) - 1:
        if spec[at] == "[":
            end = _closing(spec, at)
            if end < 0:
                return spec
            out.append(_renamed_spec(spec[at:end + 1], columns))
            at = end + 1
        else:
            out.append(spec[at])
            at += 1
    return "[" + "".join(out) + "]"


def _escaped(name: str) -> str:
    """A column name as a structured reference writes it: ``[``, ``]``, ``#`` and ``'``
    after an apostrophe."""
    return re.sub(r"([\[\]#'])", r"'\1", name)
