"""What an Excel workbook keeps of its cells' text elsewhere, made to follow their translation.

A workbook names things by the text of their cells, and Excel checks the names against the
cells: translating a cell and not its copies leaves a file Excel repairs on opening, or a
formula that no longer finds its column.

- An Excel table (Insert > Table) names each column after its header cell, and Excel
  "repairs" (drops) a table whose names differ from its header cells or repeat one another,
  letter case aside. Each column takes its header's translation; where two would be named
  alike, the later one gets a number, as Excel numbers a repeated header ("Menge2"), and
  its header cell says so.
- Formulas name a table's columns (structured references: ``Sales[Amount]``,
  ``Sales[[#This Row],[Unit price]]``): each renamed column is renamed in every formula of
  the workbook (cells, tables' calculated columns and totals, defined names, data
  validations, conditional formats). Text in quotes is not a reference.
- A pivot table's cache over cells of the workbook holds its fields' names (the header
  cells) and its items (the cells' values); the pivot table names its data fields and
  captions as the cells it wrote show them. Each copy of a translated cell's text takes the
  translation, and the cache is marked to be read again from its cells when Excel opens it.
  A cache over another source (a database, another workbook) is left as it is.
- A chart keeps a copy of the text of the cells it plots (categories, series' names), a
  formula its last result (a lookup's, ``=A1``'s), a filter the values it shows, a formula
  the texts it compares cells with or looks up (``COUNTIF(C2:C9,"Open")``), a data
  validation's list the values a cell may take, a conditional format the text it looks
  for: each takes its cell's translation. A quoted text that names a sheet or a defined
  name stays (sheets keep their names).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from typing import Any

from . import formulas, local_name

_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
# what a pivot table names as its cells show it
_PIVOT_NAMES = {"pivotTableDefinition": ("dataCaption", "grandTotalCaption", "rowHeaderCaption",
                                         "colHeaderCaption", "errorCaption", "missingCaption"),
                "pivotField": ("name", "subtotalCaption"), "item": ("n",),
                "dataField": ("name",)}
# where a workbook's formulas are: elements' text, and attributes
_FORMULAS = ("f", "formula", "formula1", "formula2", "calculatedColumnFormula",
             "totalsRowFormula", "definedName")
_ESCAPED = re.compile(r"_x([0-9A-Fa-f]{4})_")


def shown_texts(roots: dict) -> dict[tuple[str, int, int], str]:
    """Every text a sheet's cell shows, by (sheet part, row, column): what ``follow`` joins
    formulas' results from, read before the cells are translated. A number counts as
    written (a join that read it formatted is not its join, and is left to compute)."""
    strings: list = next((root.findall(f"{_S}si") for kind, root in roots.values()
                          if kind == "strings"), [])

    def text(cell) -> str | None:
        said = _shown(cell, strings)
        number = cell.find(f"{_S}v") if cell.get("t", "n") == "n" else None
        return said if said is not None else number.text if number is not None else None
    return {(name, row, column): said for name, (kind, root) in roots.items() if kind == "sheet"
            for (row, column), cell in _grid(root).items() if (said := text(cell)) is not None}


def follow(archive: zipfile.ZipFile, roots: dict, cells: dict[str, str], parse,
           shown: dict[tuple[str, int, int], str]) -> set[str]:
    """The copies of translated cells' texts in ``roots`` (part name -> (kind, root), kinds
    as ``aiayn.documents.sheets`` reads them) made to follow ``cells`` (a cell's text -> its
    translation), in place; the names of the parts changed. ``parse(name)``: a member's root,
    for the relationships of a part; ``shown``: the cells' texts before the translation
    (``shown_texts``)."""
    changed: set[str] = set()
    changed |= _joined_results_follow(roots, shown, cells)
    related = _Relations(archive, parse)
    renamed = _name_columns(roots, cells, related, changed)
    # a quoted text that names a sheet or a defined name is not a cell's copy
    names = {e.get("name") for kind, root in roots.values() if kind == "workbook"
             for tag in ("sheet", "definedName") for e in root.iter(f"{_S}{tag}")}
    keys = {k: v for k, v in cells.items() if k not in names}
    for name, (kind, root) in roots.items():
        if kind in ("sheet", "table", "workbook") and _follow_formulas(root, renamed, keys):
            changed.add(name)
    worksheet_caches = set()
    for name, (kind, root) in roots.items():
        if kind == "pivot cache" and _follow_cache(root, cells, renamed):
            worksheet_caches.add(name)
            changed.add(name)
            for records in (r for r in related.of(name).values() if r in roots):
                if _follow_values(roots[records][1].iter(f"{_S}s"), "v", cells=cells):
                    changed.add(records)
    for name, (kind, root) in roots.items():
        if kind == "pivot table" and set(related.of(name).values()) & worksheet_caches:
            for element in root.iter():
                if _follow_values([element], *_PIVOT_NAMES.get(local_name(element.tag), ()),
                                  cells=cells):
                    changed.add(name)
        elif kind == "drawing":
            values = (v for cache in root.iter(f"{_C}strCache") for v in cache.iter(f"{_C}v"))
            if _follow_text(values, cells):
                changed.add(name)
        elif kind in ("sheet", "table"):
            filters = (f for tag in ("filter", "customFilter") for f in root.iter(f"{_S}{tag}"))
            if _follow_values(filters, "val", cells=cells):
                changed.add(name)
            # a formula's last text result that is a cell's text (a lookup, "=A1"), for
            # readers that show it without computing (Excel computes it again on opening)
            results = (c.find(f"{_S}v") for c in root.iter(f"{_S}c")
                       if c.get("t") == "str" and c.find(f"{_S}f") is not None)
            if _follow_text((v for v in results if v is not None), cells):
                changed.add(name)
    return changed


def _joined_results_follow(roots: dict, before: dict[tuple[str, int, int], str],
                           cells: dict[str, str]) -> set[str]:
    """Each formula that joins cells of its sheet and quoted texts with ``&`` (``A2&"!"``)
    keeps as its last result the join of their translations, where it was the join of their
    texts, for readers that show it without computing: LibreOffice shows it as stored,
    though ``fullCalcOnLoad`` asks Excel to compute it again. The sheets' parts changed."""
    after = shown_texts(roots)
    changed = set()
    for name, (kind, root) in roots.items():
        if kind != "sheet":
            continue
        for cell in root.iter(f"{_S}c"):
            formula, value = cell.find(f"{_S}f"), cell.find(f"{_S}v")
            pieces = formulas.joined(formula.text or "") if formula is not None else None
            if not pieces or value is None or cell.get("t") != "str":
                continue
            old = [p if isinstance(p, str) else before.get((name, p[1], p[0])) for p in pieces]
            new = [cells.get(p, p) if isinstance(p, str) else after.get((name, p[1], p[0]))
                   for p in pieces]
            if None in old or None in new:  # an empty cell, an error: left to compute
                continue
            was, now = "".join(x or "" for x in old), "".join(x or "" for x in new)
            if was == (value.text or "") and now != was:
                value.text = now
                changed.add(name)
    return changed


class _Relations:
    """Each part's relationships, read once: id -> the member it targets (internal ones)."""

    def __init__(self, archive: zipfile.ZipFile, parse) -> None:
        self.names, self.parse = set(archive.namelist()), parse
        self.read: dict[str, dict[str, str]] = {}

    def of(self, part: str) -> dict[str, str]:
        if part not in self.read:
            folder, base = posixpath.split(part)
            rels = posixpath.join(folder, "_rels", base + ".rels")
            found = {}
            for r in self.parse(rels).iter(f"{_RELS}Relationship") if rels in self.names \
                    else ():
                target = r.get("Target", "")
                if r.get("TargetMode") != "External" and target:
                    found[r.get("Id")] = target.lstrip("/") if target.startswith("/") else \
                        posixpath.normpath(posixpath.join(folder, target))
            self.read[part] = found
        return self.read[part]


def _name_columns(roots: dict, cells: dict[str, str], related: _Relations,
                  changed: set[str]) -> dict[str, dict[str, str]]:
    """Each table's columns named by their header cells' translation, unique within the
    table as Excel asks; a header cell whose column had to take a number says it too. The
    renamed columns, by table name: {table: {old name: new name}}."""
    renamed: dict[str, dict[str, str]] = {}
    strings: list = next((root.findall(f"{_S}si") for kind, root in roots.values()
                          if kind == "strings"), [])
    for sheet_name, (kind, sheet) in roots.items():
        if kind != "sheet":
            continue
        parts = [related.of(sheet_name).get(t.get(f"{_R}id"))
                 for t in sheet.iter(f"{_S}tablePart")]
        tables = [(p, roots[p][1]) for p in parts
                  if p is not None and p in roots and roots[p][0] == "table"]
        if not tables:
            continue
        grid = _grid(sheet)
        for part, table in tables:
            columns = table.findall(f"{_S}tableColumns/{_S}tableColumn")
            top_left = (table.get("ref") or "").split(":")[0]
            if table.get("headerRowCount", "1") == "0" or not _CELL.fullmatch(top_left):
                continue
            column, row = _position(top_left)
            olds = [_decoded(c.get("name", "")) for c in columns]
            news = []
            for k, old in enumerate(olds):
                cell = grid.get((row, column + k))
                shown = _shown(cell, strings) if cell is not None else None
                news.append(shown if old in cells and shown == cells[old] and shown.strip()
                            else old)
            news = _unique(news)
            for k, (old, new, element) in enumerate(zip(olds, news, columns)):
                if new == old:
                    continue
                cell = grid.get((row, column + k))
                if cell is not None and _shown(cell, strings) != new:
                    _write_inline(cell, new)
                    changed.add(sheet_name)
                element.set("name", _encoded(new))
                for key in {table.get("name"), table.get("displayName")} - {None, ""}:
                    renamed.setdefault(key, {})[old] = new
                changed.add(part)
    return renamed


_CELL = re.compile(r"\$?([A-Z]{1,3})\$?(\d+)")


def _position(ref: str) -> tuple[int, int]:
    """A cell reference's column and row, from 1: "B3" -> (2, 3)."""
    letters, digits = _CELL.fullmatch(ref).groups()  # type: ignore[union-attr]
    column = 0
    for letter in letters:
        column = column * 26 + ord(letter) - ord("A") + 1
    return column, int(digits)


def _grid(sheet) -> dict[tuple[int, int], Any]:
    """A sheet's cells by (row, column); a row or cell without its reference follows the one
    before, as the format allows."""
    grid, row = {}, 0
    for r in sheet.iter(f"{_S}row"):
        row = int(r.get("r")) if (r.get("r") or "").isdigit() else row + 1
        column = 0
        for c in r.findall(f"{_S}c"):
            column = _position(c.get("r"))[0] if c.get("r") and _CELL.fullmatch(c.get("r")) \
                else column + 1
            grid[(row, column)] = c
    return grid


def _shown(cell, strings: list) -> str | None:
    """The text a cell holds (shared, its own, or its formula's result), or None for a value
    that is not text."""
    kind = cell.get("t")
    if kind == "s":
        value = cell.find(f"{_S}v")
        index = int(value.text) if value is not None and (value.text or "").isdigit() else -1
        return _string(strings[index]) if 0 <= index < len(strings) else None
    if kind == "inlineStr":
        item = cell.find(f"{_S}is")
        return _string(item) if item is not None else None
    if kind == "str":
        value = cell.find(f"{_S}v")
        return value.text or "" if value is not None else None
    return None


def _string(item) -> str:
    return "".join(t.text or "" for t in item.iter(f"{_S}t")
                   if local_name(t.getparent().tag) in ("si", "is", "r"))


def _write_inline(cell, text: str) -> None:
    """A cell made to hold ``text`` as its own string, its style kept."""
    for child in list(cell):
        if local_name(child.tag) in ("v", "is", "f"):
            cell.remove(child)
    cell.set("t", "inlineStr")
    item = cell.makeelement(f"{_S}is", {})
    t = item.makeelement(f"{_S}t", {})
    t.text = text
    if text != text.strip():
        t.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
    item.append(t)
    cell.append(item)


def _unique(names: list[str]) -> list[str]:
    """Names made unique, letter case aside, as Excel numbers a repeated header: the first
    keeps its name, a later one takes the smallest number from 2 that makes it new."""
    taken: set[str] = set()
    out = []
    for name in names:
        new, number = name, 2
        while new.casefold() in taken:
            new, number = f"{name}{number}", number + 1
        taken.add(new.casefold())
        out.append(new)
    return out


def _decoded(name: str) -> str:
    """A name as the part escapes it ("_x000a_" for a line break) read back."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), name)


def _encoded(name: str) -> str:
    return re.sub(r"[\x00-\x1f]", lambda m: f"_x{ord(m.group()):04X}_", name)


def _follow_formulas(root, renamed: dict[str, dict[str, str]], cells: dict[str, str]) -> bool:
    """Every formula of a part with the renamed columns renamed and its quoted texts that are
    cells' texts translated as the cells are; a conditional format's text to look for too.
    Whether one changed."""
    changed = False
    for element in root.iter():
        tag = local_name(element.tag) if isinstance(element.tag, str) else ""
        if tag in _FORMULAS and element.text:
            listed = any(local_name(a.tag) == "dataValidation" and a.get("type") == "list"
                         for a in element.iterancestors())
            text = formulas.follow_literals(formulas.rename_columns(element.text, renamed),
                                            cells, listed)
            if text != element.text:
                element.text, changed = text, True
        elif tag == "cfRule":
            changed |= _follow_values([element], "text", cells=cells)
    return changed


def _follow_cache(cache, cells: dict[str, str], renamed: dict[str, dict[str, str]]) -> bool:
    """A pivot cache over the workbook's cells: its fields' names and its items take their
    cells' translation, and it asks to be read again when the workbook opens. Whether it is
    one (a cache over another source is left alone)."""
    source = cache.find(f"{_S}cacheSource")
    if source is None or source.get("type", "worksheet") != "worksheet" \
            or source.find(f"{_S}worksheetSource") is None:
        return False
    table = source.find(f"{_S}worksheetSource").get("name") or ""
    columns = {k.casefold(): v for k, v in renamed.items()}.get(table.casefold(), {})
    fields = cache.findall(f"{_S}cacheFields/{_S}cacheField")
    olds = [_decoded(f.get("name", "")) for f in fields]
    news = _unique([columns.get(old) or cells.get(old) or old for old in olds])
    for field, old, new in zip(fields, olds, news):
        if new != old:
            field.set("name", _encoded(new))
    _follow_values((s for f in fields for s in f.iter(f"{_S}s")), "v", cells=cells)
    cache.set("refreshOnLoad", "1")
    return True


def _follow_values(elements, *keys: str, cells: dict[str, str]) -> bool:
    """Each of ``keys`` of each element whose value is a translated cell's text takes the
    translation; whether one did."""
    changed = False
    for element in elements:
        for key in keys:
            value = element.get(key)
            if value is not None and value in cells and cells[value] != value:
                element.set(key, cells[value])
                changed = True
    return changed


def _follow_text(elements, cells: dict[str, str]) -> bool:
    changed = False
    for element in elements:
        if element.text in cells and cells[element.text] != element.text:
            element.text = cells[element.text]
            changed = True
    return changed
