"""Excel workbooks (.xlsx, and .xlsm with macros): the text of every text cell, shared or the
cell's own, of the cells' notes and threaded comments, of text boxes and charts, of headers
and footers translated; a string's runs (bold, italic, fonts, colours) carried by the markup
path, as Word documents' runs are (``aiayn.documents.word``).

The package is read and written at the XML level (lxml), member for member: charts,
pictures, macros and styles come back as they were, where a library that reads
the workbook into its own model would drop what it does not know (openpyxl loses pictures
and charts when it saves). Parts are found by their content type, not their names, which
differ between Excel and other writers.

- A text cell's string (``si`` of the shared strings, a cell's inline ``is``) is translated
  if it holds a letter and is not one token that reads as code (``documents.code_like``:
  "SKU-4471-B", a URL, an address): numbers, dates and codes kept as text stay as written.
  A plain string is translated line by line, its line breaks and edge spaces kept. A string
  of runs becomes one sentence of markup: a run formatted otherwise than most of the string
  is a ``<span data-r=K>``, a run in a monospaced font where most of the string is not is a
  ``<code>`` kept as written, and a line break ends a line, the words on either side
  translated apart. Phonetic guides (``rPh``), which spell the source's words, are dropped.
- A note's text is translated the same way; the author's name that Excel writes first, in
  bold, is kept. A threaded comment's plain text is translated line by line.
- Text boxes and shapes drawn on a sheet, and charts' titles, axis titles and labels, are
  DrawingML paragraphs, translated as a PowerPoint slide's (``aiayn.documents.slides``).
- What the workbook keeps of its cells' text elsewhere follows their translation
  (``aiayn.documents.cell_copies``): Excel tables' column names and the formulas that name
  them, pivot caches and pivot tables, filters, charts' copies of the cells they plot.
- What formulas compute is not text of the workbook: Excel computes it again on opening, as
  the translated workbook asks (``fullCalcOnLoad``), so a formula that joins translated
  cells shows their translation.
- A sheet's headers and footers are translated between their codes (``&P`` the page,
  ``&"Arial,Bold"`` a font...), piece by piece, and the titles and messages of its data
  validations whole.

Not translated: sheet names (formulas name them) and defined names.
"""

from __future__ import annotations

import copy
import io
import re
import zipfile
from typing import Any

from ..errors import UserError, require
from . import (
    Job,
    another_kind,
    cell_copies,
    code_like,
    direction,
    local_name,
    monospaced,
    package_problem,
    prevailing,
    repack,
    slides,
    spanned,
    stretches,
)

_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_THREADED = "{http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments}"
_TYPES = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_DC_LANGUAGE = "{http://purl.org/dc/elements/1.1/}language"
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
# parts by the end of their content type
_OFFICE = "application/vnd.openxmlformats-officedocument."
_KINDS = {_OFFICE + "spreadsheetml.sharedStrings+xml": "strings",
          _OFFICE + "spreadsheetml.worksheet+xml": "sheet",
          _OFFICE + "spreadsheetml.comments+xml": "notes",
          "application/vnd.ms-excel.threadedcomments+xml": "threads",
          _OFFICE + "drawing+xml": "drawing", _OFFICE + "drawingml.chart+xml": "drawing",
          _OFFICE + "theme+xml": "theme",
          _OFFICE + "spreadsheetml.table+xml": "table",
          _OFFICE + "spreadsheetml.pivotTable+xml": "pivot table",
          _OFFICE + "spreadsheetml.pivotCacheDefinition+xml": "pivot cache",
          _OFFICE + "spreadsheetml.pivotCacheRecords+xml": "pivot records",
          _OFFICE + "spreadsheetml.styles+xml": "styles",
          "application/vnd.openxmlformats-package.core-properties+xml": "properties"}
_MAIN = re.compile(r"application/vnd\.(?:openxmlformats-officedocument\.spreadsheetml|"
                   r"ms-excel)\.(?:sheet|template)(?:\.macroEnabled)?\.main\+xml")
_LINE = "a line break"  # what a span number stands for where it ends a line
_LETTER = re.compile(r"[^\W\d_]")


def translate_xlsx(data: bytes, job: Job, suffix: str = ".xlsx") -> bytes:
    """An Excel workbook translated; ``suffix``: its extension, as the errors name it."""
    etree = require("lxml.etree", "Excel workbooks", "documents")
    what = f"not an Excel workbook ({suffix})"
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        types = _content_types(archive, etree)
    except zipfile.BadZipFile as err:
        raise UserError(f"{what}: {package_problem(err, data)}") from None
    except UserError as err:
        raise UserError(f"{what}: {err}") from None
    workbook = next((name for name, ctype in types.items() if _MAIN.fullmatch(ctype)), None)
    if workbook is None:
        main = next((t for t in types.values() if t.endswith(".main+xml")), None)
        raise UserError(f"{what}: " + (another_kind(main) if main else "it has no workbook part"))
    roots = {name: (_KINDS[ctype], _parse(archive, name, etree, what))
             for name, ctype in types.items() if ctype in _KINDS
             and (_KINDS[ctype] != "styles" or job.right_to_left)}  # (read for direction)
    roots[workbook] = ("workbook", _parse(archive, workbook, etree, what))
    # 1) the cells' strings and the notes, and the copies of the cells' text elsewhere;
    # 2) what a sheet says besides its cells; 3) text boxes and charts; 4) threaded
    # comments; 5) the language the properties name
    shown = cell_copies.shown_texts(roots)
    changed, cells, translated = _translate_strings(roots, job)
    if job.right_to_left:
        changed |= direction.spreadsheet(roots, translated)
    changed |= cell_copies.follow(archive, roots, cells,
                                  lambda name: _parse(archive, name, etree, what), shown)
    changed |= _translate_sheet_texts(roots, job)
    drawn = {name: root for name, (kind, root) in roots.items() if kind == "drawing"
             and any(t.text and t.text.strip() for t in root.iter(f"{_A}t"))}
    slides.translate_paragraphs([(p, {}) for root in drawn.values() for p in root.iter(f"{_A}p")],
                                _body_font(roots), job)
    slides.relabel(list(drawn.values()), job)
    changed.update(drawn)
    threads = [(name, t) for name, (kind, root) in roots.items() if kind == "threads"
               for t in root.iter(f"{_THREADED}text") if t.text and _LETTER.search(t.text)]
    for (name, t), translation in zip(threads, job.by_line([t.text for _, t in threads])):
        t.text = translation
        changed.add(name)
    for name, (kind, root) in roots.items():
        for language in root.iter(_DC_LANGUAGE) if kind == "properties" else []:
            if job.relabeled(language.text) is not None:
                language.text = job.relabeled(language.text)
                changed.add(name)
    if any(root.find(f".//{_S}f") is not None for kind, root in roots.values()
           if kind == "sheet"):
        _calculated_on_load(roots[workbook][1])
        changed.add(workbook)
    written = {name: etree.tostring(roots[name][1], xml_declaration=True, encoding="UTF-8",
                                    standalone=True) for name in changed}
    try:
        return repack(archive, written)
    except (zipfile.BadZipFile, OSError) as err:  # a damaged member copied as it was
        raise UserError(f"{what}: {err}") from None


def _translate_strings(roots: dict, job: Job) -> tuple[set[str], dict[str, str], list]:
    """The text cells' strings (those with a letter) and the notes translated in place, plain
    ones line by line and those of runs through the markup path; the names of the parts
    changed, each cell's text with its translation, and the strings translated."""
    changed: set[str] = set()
    strings, sources, authors = [], [], {}
    for name, (kind, root) in roots.items():
        for item in _strings(root, kind) if kind in ("strings", "sheet", "notes") else []:
            author = _author_run(item, root) if kind == "notes" else None
            said = _text(item, author)
            if _LETTER.search(said) and (kind == "notes" or not code_like(said)):
                strings.append(item)
                sources.append(said)
                authors[id(item)] = author
                changed.add(name)
    plain = [(item, said) for item, said in zip(strings, sources) if item.find(f"{_S}r") is None]
    for (item, _), translation in zip(plain, job.by_line([said for _, said in plain])):
        _write(item, [(None, translation)])
    rich = [item for item in strings if item.find(f"{_S}r") is not None]
    plans = [_markup(item, authors[id(item)]) for item in rich]
    for item, (_, spans), out in zip(rich, plans, job.markup([m for m, _ in plans])):
        _write(item, _runs(spans, out), authors[id(item)])
    cells = {source: _text(item) for source, item in zip(sources, strings)
             if authors[id(item)] is None and local_name(item.tag) in ("si", "is")}
    return changed, cells, strings


# a header's or footer's codes: a literal "&", a font ("&\"Arial,Bold\""), a colour, a size,
# a section (&L, &C, &R), a field (&P page, &D date, &A sheet...) or a style (&B, &I, &U...)
_CODE = re.compile(r'(&(?:&|"[^"]*"|K[0-9A-Fa-f]{6}|K\d\d[+-]\d{3}|\d+|[A-Za-z]))')
_HEADERS = ("oddHeader", "oddFooter", "evenHeader", "evenFooter", "firstHeader", "firstFooter")
_VALIDATION = ("promptTitle", "prompt", "errorTitle", "error")


def _translate_sheet_texts(roots: dict, job: Job) -> set[str]:
    """Each sheet's headers and footers (their text between codes, piece by piece) and the
    titles and messages its data validations show, translated in place; the names of the
    parts changed."""
    changed: set[str] = set()
    # (part, element, its attribute or None for its text, that text split at its codes)
    pieces: list[tuple[str, Any, str | None, list[str]]] = []
    for name, (kind, root) in roots.items():
        if kind != "sheet":
            continue
        for header in (e for tag in _HEADERS for e in root.iter(f"{_S}{tag}") if e.text):
            pieces.append((name, header, None, _CODE.split(header.text)))
        for check in root.iter(f"{_S}dataValidation"):
            pieces += [(name, check, key, [check.get(key)]) for key in _VALIDATION
                       if check.get(key)]
    todo = [(k, i) for k, (_, _, _, parts) in enumerate(pieces) for i, text in enumerate(parts)
            if i % 2 == 0 and _LETTER.search(text)]
    done = job.by_line([pieces[k][3][i].strip() for k, i in todo])
    for (k, i), translation in zip(todo, done):
        text = pieces[k][3][i]
        pieces[k][3][i] = text[:len(text) - len(text.lstrip())] + translation + \
            text[len(text.rstrip()):]
    for name, element, key, parts in (pieces[k] for k in sorted({k for k, _ in todo})):
        if key is None:
            element.text = "".join(parts)
        else:
            element.set(key, parts[0])
        changed.add(name)
    return changed


def _content_types(archive: zipfile.ZipFile, etree) -> dict[str, str]:
    """Each member's content type, by ``[Content_Types].xml``'s overrides and defaults."""
    if "[Content_Types].xml" not in archive.namelist():
        raise UserError("it has no [Content_Types].xml")
    root = _parse(archive, "[Content_Types].xml", etree)
    defaults = {d.get("Extension", "").lower(): d.get("ContentType", "")
                for d in root.iter(f"{_TYPES}Default")}
    overrides = {o.get("PartName", "").lstrip("/"): o.get("ContentType", "")
                 for o in root.iter(f"{_TYPES}Override")}
    return {name: overrides.get(name, defaults.get(name.rsplit(".", 1)[-1].lower(), ""))
            for name in archive.namelist() if not name.endswith("/")}


def _body_font(roots: dict) -> str | None:
    """The typeface the workbook's theme sets text in (its minor Latin font), where it has
    one: a text box's run in a monospaced font where this is not is code."""
    for kind, root in roots.values():
        latin = root.find(f".//{_A}fontScheme/{_A}minorFont/{_A}latin") if kind == "theme" \
            else None
        if latin is not None:
            return latin.get("typeface")
    return None


def _parse(archive: zipfile.ZipFile, name: str, etree, what: str = ""):
    try:
        return etree.fromstring(archive.read(name), etree.XMLParser(resolve_entities=False))
    except etree.XMLSyntaxError:
        raise UserError(f"{what + ': ' if what else ''}its {name} is not well-formed XML") \
            from None
    except (zipfile.BadZipFile, OSError) as err:  # a damaged member (zlib's errors are OSError)
        raise UserError(f"{what + ': ' if what else ''}{err}") from None


def _strings(root, kind: str) -> list:
    """The rich-text strings of a part: shared strings, a sheet's inline strings (those of
    formulas are their cached results), a note's text."""
    if kind == "strings":
        return root.findall(f"{_S}si")
    if kind == "sheet":
        return [c.find(f"{_S}is") for c in root.iter(f"{_S}c")
                if c.get("t") == "inlineStr" and c.find(f"{_S}is") is not None
                and c.find(f"{_S}f") is None]
    return [c.find(f"{_S}text") for c in root.iter(f"{_S}comment")
            if c.find(f"{_S}text") is not None]


def _text(item, author=None) -> str:
    """A string's text: its own ``t`` or its runs' (but a note's ``author`` run), not its
    phonetic guides'."""
    return "".join(t.text or "" for t in item.iter(f"{_S}t")
                   if local_name(t.getparent().tag) in ("si", "is", "text", "r")
                   and t.getparent() is not author)


def _author_run(item, root):
    """The run of a note that names its author (Excel writes "Name:" in bold first), or None."""
    authors = {a.text.strip() for a in root.iter(f"{_S}author") if a.text and a.text.strip()}
    runs = item.findall(f"{_S}r")
    if runs and "".join(t.text or "" for t in runs[0].iter(f"{_S}t")).strip().rstrip(":") \
            in authors:
        return runs[0]
    return None


def _key(rpr) -> str:
    """What a run's properties say of its look, as a string; "" for none."""
    if rpr is None or (len(rpr) == 0 and not rpr.attrib):
        return ""
    from lxml import etree
    return etree.tostring(rpr, encoding="unicode")


def _font(rpr) -> str | None:
    font = rpr.find(f"{_S}rFont") if rpr is not None else None
    return font.get("val") if font is not None else None


def _markup(item, author) -> tuple[str, list]:
    """A string of runs as one sentence of markup, and what each span number stands for: run
    properties (an ``rPr``, or None) or a line's end. Span 0 is the properties of most of the
    string's text, whose runs are plain text. ``author``: a note's run naming its author,
    left out."""
    runs = [r for r in item.findall(f"{_S}r") if r is not author]
    base_key, base = prevailing((_key(r.find(f"{_S}rPr")), len(_run_text(r)), r.find(f"{_S}rPr"))
                                for r in runs) or ("", None)
    base_font = _font(base)
    spans: list = [base if base_key else None]
    groups: list[tuple[str | None, bool, str, object]] = []  # key, code, text, properties
    for run in runs:
        rpr = run.find(f"{_S}rPr")
        code = monospaced(_font(rpr)) and not monospaced(base_font)
        key = None if _key(rpr) == base_key and not code else _key(rpr)
        if groups and groups[-1][0] == key and groups[-1][1] == code:
            groups[-1] = (key, code, groups[-1][2] + _run_text(run), groups[-1][3])
        else:
            groups.append((key, code, _run_text(run), rpr))
    pieces = []
    for key, code, text, rpr in groups:
        number = None
        if key is not None:
            spans.append(rpr)
            number = len(spans) - 1
        for k, line in enumerate(text.split("\n")):
            if k:
                spans.append(_LINE)
                pieces.append(spanned("", len(spans) - 1, line=True))
            if line:
                pieces.append(spanned(line, number, code=code))
    return "".join(pieces), spans


def _run_text(run) -> str:
    t = run.find(f"{_S}t")
    return t.text or "" if t is not None else ""


def _runs(spans: list, translated: str) -> list[tuple[object, str]]:
    """The translation's runs as (properties, text), adjacent ones of the same properties
    joined, a line's end a line break at the end of the run before it."""
    out: list[tuple[object, str]] = []
    for text, number in stretches(translated):
        span = spans[0 if number is None else number]
        if span is _LINE:  # the spaces the markup path writes around it go
            props, before = out.pop() if out else (spans[0], "")
            out.append((props, before.rstrip(" ") + "\n"))
            continue
        if out and out[-1][1].endswith("\n"):
            text = text.lstrip(" ")
        if out and out[-1][0] is span:
            out[-1] = (span, out[-1][1] + text)
        elif text:
            out.append((span, text))
    return out


def _write(item, runs: list[tuple[object, str]], author=None) -> None:
    """A string's text, runs and phonetic guides replaced by ``runs`` (after a note's
    ``author`` run), before what else it holds (its phonetic properties)."""
    for child in list(item):
        if local_name(child.tag) in ("t", "r", "rPh"):
            item.remove(child)
    at = 0
    if author is not None:
        item.insert(at, author)
        at += 1
    # one plain text is a ``t`` of its own; else runs
    in_runs = author is not None or len(runs) != 1 or runs[0][0] is not None
    for props, text in runs:
        t = item.makeelement(f"{_S}t", {})
        t.text = text
        if text != text.strip():
            t.set(_XML_SPACE, "preserve")
        element = t
        if in_runs:
            element = item.makeelement(f"{_S}r", {})
            if props is not None:
                element.append(copy.deepcopy(props))
            element.append(t)
        item.insert(at, element)
        at += 1


def _calculated_on_load(workbook) -> None:
    """The workbook part asking Excel to compute every formula again when it opens, so that
    cached results made of the source's strings are not shown."""
    calc = workbook.find(f"{_S}calcPr")
    if calc is None:
        calc = workbook.makeelement(f"{_S}calcPr", {})
        # calcPr follows the sheets and names and comes before the rest (the schema's order)
        after = [c for c in workbook if local_name(c.tag) in
                 ("fileVersion", "fileSharing", "workbookPr", "workbookProtection",
                  "bookViews", "sheets", "functionGroups", "externalReferences",
                  "definedNames")]
        workbook.insert(workbook.index(after[-1]) + 1 if after else 0, calc)
    calc.set("fullCalcOnLoad", "1")
