"""What names an OpenDocument spreadsheet's cells by their text, made to follow their
translation, as ``aiayn.documents.cell_copies`` does for Excel's workbooks.

A pivot table over the cells names its fields by their header cells and its members by the
cells' values: each name that is a translated cell's text takes the translation, so that the
table finds its fields when it is refreshed (LibreOffice empties a table whose fields it
cannot find); one over a database is left alone. A formula's quoted text that is a cell's
text (what it counts, compares or looks up, a validity's list of values) is translated as
the cell is, unless it names a sheet or a named range, and so are a filter's value and a
formula's last result. OpenDocument has no flag that asks for the formulas to be computed
again on opening, as Excel's ``fullCalcOnLoad`` does, and LibreOffice shows the last result
as stored: one that is a cell's text (a lookup, ``=A1``) takes its translation, and one that
joins cells' texts and quoted texts (``=A1&"!"``) is joined again from the translations.
"""

from __future__ import annotations

from typing import Any

_OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_TABLE_NS = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_CALCEXT_NS = "urn:org:documentfoundation:names:experimental:calc:xmlns:calcext:1.0"
_CELLS = {(_TABLE_NS, "table-cell"), (_TABLE_NS, "covered-table-cell")}
# where a pivot table (a "data pilot") names its fields and their members by the cells' text
_PILOT_NAMES = ("source-field-name", "name", "member-name", "field-name", "data-field")
# formulas: a cell's, a validity's condition (its list of values), a conditional format's
_FORMULAS = ((_TABLE_NS, "formula"), (_TABLE_NS, "condition"), (_CALCEXT_NS, "value"))


def cell_texts(document) -> list[tuple[Any, str]]:
    """Each spreadsheet cell and its text, its paragraphs' on lines of their own."""
    from odf import table, teletype
    if getattr(document, "spreadsheet", None) is None:
        return []
    return [(cell, "\n".join(teletype.extractText(p) for p in cell.childNodes
                             if getattr(p, "qname", None) == (_TEXT_NS, "p")))
            for cell in document.spreadsheet.getElementsByType(table.TableCell)]


def follow(document, before: list[tuple[Any, str]]) -> None:
    """The copies of the cells' texts made to follow their translation; ``before``: each
    cell and its text as ``cell_texts`` read them before the translation."""
    from odf import table

    from .formulas import follow_literals
    after = {id(cell): text for cell, text in cell_texts(document)}
    texts = {id(cell): (text, after[id(cell)]) for cell, text in before}
    cells = {old: new for old, new in texts.values() if old != new and old.strip()}
    if not cells:
        return
    _joined_results_follow(document, texts, cells)
    for pilot in document.spreadsheet.getElementsByType(table.DataPilotTable):
        if not pilot.getElementsByType(table.SourceCellRange):
            continue
        for node in (n for n in _descendants(pilot) if n is not pilot):
            for key in _PILOT_NAMES:
                value = node.attributes.get((_TABLE_NS, key))
                if value is not None and value in cells:
                    node.attributes[(_TABLE_NS, key)] = cells[value]
    nodes = list(_descendants(document.spreadsheet))
    names = {n.attributes.get((_TABLE_NS, "name")) for n in nodes
             if getattr(n, "qname", None) in ((_TABLE_NS, "table"), (_TABLE_NS, "named-range"),
                                              (_TABLE_NS, "named-expression"))}
    keys = {k: v for k, v in cells.items() if k not in names}
    for node in nodes:
        for attribute in _FORMULAS:
            value = node.attributes.get(attribute)
            if value and '"' in value:
                node.attributes[attribute] = follow_literals(value, keys)
        value = node.attributes.get((_TABLE_NS, "value"))  # a filter's value: a cell's text
        if getattr(node, "qname", None) == (_TABLE_NS, "filter-condition") and value in cells:
            node.attributes[(_TABLE_NS, "value")] = cells[value]
        if getattr(node, "qname", None) in _CELLS and (_TABLE_NS, "formula") in node.attributes:
            result = _result(node)
            if result in cells:
                _show(node, cells[result])


def _joined_results_follow(document, texts: dict[int, tuple[str, str]],
                           cells: dict[str, str]) -> None:
    """Each formula that joins cells of its sheet and quoted texts with ``&`` shows the
    join of their translations, where its last result was the join of their texts as shown
    (a number's text is its formatted value, which the join may not use: then the result
    differs and stays); a quoted text that is a cell's text counts translated, as the
    formula's will be."""
    from odf import table

    from .formulas import joined
    for sheet in document.spreadsheet.getElementsByType(table.Table):
        grid = _grid(sheet)
        for cell in dict.fromkeys(grid.values()):
            pieces = joined(cell.attributes.get((_TABLE_NS, "formula")) or "")
            if not pieces or cell.attributes.get((_OFFICE_NS, "value-type")) != "string":
                continue
            old, new = [], []
            for piece in pieces:
                if isinstance(piece, str):
                    old.append(piece)
                    new.append(cells.get(piece, piece))
                elif id(grid.get(piece)) in texts:
                    old.append(texts[id(grid[piece])][0])
                    new.append(texts[id(grid[piece])][1])
                else:  # a cell the sheet does not hold
                    break
            else:
                if "".join(old) == _result(cell) and old != new:
                    _show(cell, "".join(new))


def _grid(sheet) -> dict[tuple[int, int], Any]:
    """A sheet's cells by (column, row), from 1; a repeated cell or row at its first place."""
    grid: dict[tuple[int, int], Any] = {}
    row = 1
    for node in _descendants(sheet):
        if getattr(node, "qname", None) != (_TABLE_NS, "table-row"):
            continue
        column = 1
        for cell in node.childNodes:
            if getattr(cell, "qname", None) in _CELLS:
                grid[(column, row)] = cell
                column += int(cell.attributes.get((_TABLE_NS, "number-columns-repeated"), 1))
        row += int(node.attributes.get((_TABLE_NS, "number-rows-repeated"), 1))
    return grid


def _result(cell) -> str:
    """A formula cell's last result as LibreOffice shows it."""
    from odf import teletype
    stored = cell.attributes.get((_OFFICE_NS, "string-value"))
    if stored is not None:
        return stored
    return "\n".join(teletype.extractText(p) for p in cell.childNodes
                     if getattr(p, "qname", None) == (_TEXT_NS, "p"))


def _show(cell, text: str) -> None:
    """A formula cell's last result made ``text``, where a single plain paragraph holds it."""
    from odf.element import Text
    if (_OFFICE_NS, "string-value") in cell.attributes:
        cell.attributes[(_OFFICE_NS, "string-value")] = text
    paragraphs = [c for c in cell.childNodes if getattr(c, "qname", None) == (_TEXT_NS, "p")]
    if len(paragraphs) == 1 and len(paragraphs[0].childNodes) == 1 \
            and isinstance(paragraphs[0].childNodes[0], Text) and "\n" not in text:
        paragraphs[0].childNodes[0].data = text


def _descendants(node):
    yield node
    for child in getattr(node, "childNodes", []):
        if getattr(child, "qname", None) is not None:
            yield from _descendants(child)
