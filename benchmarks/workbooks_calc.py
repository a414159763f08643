"""Workbooks that LibreOffice Calc writes, with an Excel table, formulas that name its columns
and a pivot table, translated by aiayn and opened again in Calc: do the pivot tables still
find their fields when refreshed, do the formulas give the same numbers, does a formula
that joins texts show on opening what it computes (Calc shows a stored result as stored),
and does each table name its columns as its header cells read (Excel repairs a table whose
names differ)?

    /usr/bin/python3 benchmarks/workbooks_calc.py --translate ".venv/bin/aiayn translate \\
        --checkpoint RUN" [--keep DIR]

It runs with the Python that has LibreOffice's UNO bridge (Debian's ``python3-uno``), not in
aiayn's environment: aiayn is the command given, run once per workbook with ``--file IN -o
OUT``. Calc builds the workbooks itself (as .xlsx and .ods), so they are what Calc writes:
a table of bug counts by package with a database range ("Bugs", an Excel table in .xlsx),
per-row and whole-column formulas that name its columns, and a pivot table of counts by
category and status over another range, whose status cells may hold only "Fixed" or "Open"
(a validity's list) and which a formula counts by value (``COUNTIF(...;"Open")``).
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

from machine import header

BUGS = [("Package name", "Open bugs", "Fixed bugs", "All bugs"),
        ("Text editor", 3, 5, None), ("Image viewer", 2, 7, None), ("Web browser", 9, 4, None)]
REPORTS = [("Category", "Status", "Reports"),
           ("Printing", "Fixed", 4), ("Printing", "Open", 2), ("Network", "Open", 7),
           ("Network", "Fixed", 1), ("Sound", "Open", 3), ("Printing", "Fixed", 5)]
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def connect(folder: Path):
    """A hidden Calc of its own (its own profile and pipe): the UNO desktop, and the process."""
    import uno
    pipe = f"aiayn{int(time.time() * 1000)}"
    office = subprocess.Popen(["soffice", "--headless", "--invisible", "--norestore",
                               f"-env:UserInstallation=file://{folder}/profile",
                               f"--accept=pipe,name={pipe};urp;"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext(
        "com.sun.star.bridge.UnoUrlResolver", local)
    for _ in range(240):
        try:
            ctx = resolver.resolve(f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext")
            break
        except Exception:  # noqa: BLE001 (not listening yet)
            time.sleep(0.5)
    else:
        office.kill()
        sys.exit("LibreOffice did not start")
    return ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx), office


def prop(name: str, value):
    from com.sun.star.beans import PropertyValue
    p = PropertyValue()
    p.Name, p.Value = name, value
    return p


def build(desktop, folder: Path) -> list[Path]:
    """The two workbooks (.xlsx and .ods) as Calc writes them."""
    import uno
    from com.sun.star.table import CellAddress, CellRangeAddress
    doc = desktop.loadComponentFromURL("private:factory/scalc", "_blank", 0,
                                       (prop("Hidden", True),))
    sheet = doc.Sheets.getByIndex(0)
    for top, rows in ((0, BUGS), (10, REPORTS)):
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                if isinstance(value, str):
                    sheet.getCellByPosition(c, top + r).setString(value)
                elif value is not None:
                    sheet.getCellByPosition(c, top + r).setValue(value)
    doc.DatabaseRanges.addNewByName("Bugs", CellRangeAddress(0, 0, 0, 3, len(BUGS) - 1))
    bugs = doc.DatabaseRanges.getByName("Bugs")
    bugs.AutoFilter, bugs.ContainsHeader = True, True
    for r in range(1, len(BUGS)):
        sheet.getCellByPosition(3, r).setFormula(
            "=Bugs[[#This Row];[Open bugs]]+Bugs[[#This Row];[Fixed bugs]]")
    sheet.getCellByPosition(5, 0).setString("Open in all")
    sheet.getCellByPosition(6, 0).setFormula("=SUM(Bugs[Open bugs])")
    sheet.getCellByPosition(5, 1).setString("Most fixed")
    sheet.getCellByPosition(6, 1).setFormula("=MAX(Bugs[Fixed bugs])")
    sheet.getCellByPosition(5, 2).setString("Open reports")
    sheet.getCellByPosition(6, 2).setFormula(f'=COUNTIF(B12:B{10 + len(REPORTS)};"Open")')
    sheet.getCellByPosition(5, 3).setString("Latest report")  # texts joined by a formula
    sheet.getCellByPosition(6, 3).setFormula('=A12&": "&B12')
    sheet.getCellByPosition(6, 4).setFormula('=A2&" ("&B2&" open)"')
    statuses = sheet.getCellRangeByName(f"B12:B{10 + len(REPORTS)}")
    validity = statuses.Validation
    validity.Type = uno.Enum("com.sun.star.sheet.ValidationType", "LIST")
    validity.ShowErrorMessage = True
    validity.setFormula1('"Fixed";"Open"')
    statuses.Validation = validity
    tables = sheet.getDataPilotTables()
    pilot = tables.createDataPilotDescriptor()
    pilot.setSourceRange(CellRangeAddress(0, 0, 10, 2, 10 + len(REPORTS) - 1))
    fields = pilot.getDataPilotFields()
    orient = lambda name: uno.Enum("com.sun.star.sheet.DataPilotFieldOrientation", name)  # noqa: E731
    fields.getByIndex(0).Orientation = orient("ROW")
    fields.getByIndex(1).Orientation = orient("COLUMN")
    fields.getByIndex(2).Orientation = orient("DATA")
    fields.getByIndex(2).Function = uno.Enum("com.sun.star.sheet.GeneralFunction", "SUM")
    tables.insertNewByName("Reports", CellAddress(0, 5, 10), pilot)
    paths = [folder / "calc.xlsx", folder / "calc.ods"]
    for path, name in zip(paths, ("Calc Office Open XML", "calc8")):
        doc.storeToURL(path.as_uri(), (prop("FilterName", name),))
    doc.close(True)
    return paths


def opened(desktop, path: Path) -> dict:
    """What Calc shows of a workbook once computed again and its pivot tables refreshed: each
    pivot table's fields in use and the numbers it shows, each formula's result, whether
    a cell holds a value its validity does not allow."""
    doc = desktop.loadComponentFromURL(path.as_uri(), "_blank", 0, (prop("Hidden", True),))
    opening = {cell.AbsoluteName: cell.getString() for cell in formula_cells(doc)}
    doc.calculateAll()
    seen: dict = {"pivots": [], "formulas": [], "invalid": False,
                  "as opened": sum(opening[cell.AbsoluteName] == cell.getString()
                                   for cell in formula_cells(doc))}
    for s in range(doc.Sheets.Count):
        sheet = doc.Sheets.getByIndex(s)
        seen["invalid"] |= sheet.showInvalid()
        tables = sheet.getDataPilotTables()
        for name in tables.ElementNames:
            table = tables.getByName(name)
            table.refresh()
            used = [f.Name for f in table.getDataPilotFields()
                    if f.Orientation.value != "HIDDEN"]
            area = table.OutputRange
            shown = sheet.getCellRangeByPosition(area.StartColumn, area.StartRow,
                                                 area.EndColumn, area.EndRow).getDataArray()
            numbers = sorted(v for row in shown for v in row if isinstance(v, float))
            seen["pivots"].append((used, numbers))
    seen["formulas"] = [(cell.AbsoluteName, cell.getError(), cell.getValue(), cell.getString())
                        for cell in formula_cells(doc)]
    doc.close(True)
    return seen


def formula_cells(doc) -> list:
    """Every cell of the workbook that holds a formula, sheet by sheet."""
    cells = []
    for s in range(doc.Sheets.Count):
        found = doc.Sheets.getByIndex(s).queryContentCells(16).Cells.createEnumeration()
        while found.hasMoreElements():  # (16: CellFlags.FORMULA)
            cells.append(found.nextElement())
    return cells


def tables_named_as_headers(path: Path) -> str:
    """For an .xlsx: how many of its Excel tables name every column as its header cell reads,
    each name unique (letter case aside), as Excel asks."""
    if path.suffix != ".xlsx":
        return "-"
    with zipfile.ZipFile(path) as package:
        names = package.namelist()
        strings = [("".join(t.text or "" for t in si.iter(f"{_S}t")))
                   for si in ET.fromstring(package.read("xl/sharedStrings.xml")).iter(f"{_S}si")
                   ] if "xl/sharedStrings.xml" in names else []
        shown = {}
        for name in (n for n in names if re.fullmatch(r"xl/worksheets/sheet\d+\.xml", n)):
            for c in ET.fromstring(package.read(name)).iter(f"{_S}c"):
                v, inline = c.find(f"{_S}v"), c.find(f"{_S}is")
                if c.get("t") == "s" and v is not None:
                    shown[c.get("r")] = strings[int(v.text)]
                elif c.get("t") == "inlineStr" and inline is not None:
                    shown[c.get("r")] = "".join(t.text or "" for t in inline.iter(f"{_S}t"))
        good = total = 0
        for name in (n for n in names if re.fullmatch(r"xl/tables/table\d+\.xml", n)):
            table = ET.fromstring(package.read(name))
            first = re.match(r"([A-Z]+)(\d+)", table.get("ref", ""))
            columns = [c.get("name") for c in table.iter(f"{_S}tableColumn")]
            letters = [chr(ord(first.group(1)) + k) for k in range(len(columns))]  # A..Z
            headers = [shown.get(f"{x}{first.group(2)}") for x in letters]
            total += 1
            good += headers == columns and len({c.casefold() for c in columns}) == len(columns)
        return f"{good}/{total}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--translate", required=True,
                   help="the aiayn command that translates a file (--file and -o are added)")
    p.add_argument("--keep", type=Path, help="a folder to keep the workbooks in")
    args = p.parse_args()
    print(header(), flush=True)
    print("LibreOffice:", subprocess.run(["soffice", "--version"], capture_output=True,
                                         text=True, check=False).stdout.strip())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        desktop, office = connect(folder)
        try:
            print("| workbook | pivot fields in use after a refresh | pivot numbers as the "
                  "source's | formulas without an error | formula results as the source's | "
                  "formula results shown on opening as computed | "
                  "tables named as their header cells | values its validity refuses |")
            print("|---|---|---|---:|---:|---:|---|---|")
            for source in build(desktop, folder):
                target = source.with_name(f"{source.stem}.translated{source.suffix}")
                subprocess.run([*shlex.split(args.translate), "--file", str(source), "-o",
                                str(target)], check=True, stdout=subprocess.DEVNULL)
                before, after = opened(desktop, source), opened(desktop, target)
                for path, seen in ((source, before), (target, after)):
                    fields = "; ".join(", ".join(used) for used, _ in seen["pivots"])
                    pivots_same = all(b[1] == a[1] for b, a in zip(before["pivots"],
                                                                   seen["pivots"]))
                    fine = sum(not f[1] for f in seen["formulas"])
                    same = sum(b[2] == a[2] and not a[1] for b, a in zip(before["formulas"],
                                                                          seen["formulas"]))
                    print(f"| {path.name} | {fields} | {'yes' if pivots_same else 'NO'} | "
                          f"{fine}/{len(seen['formulas'])} | {same}/{len(before['formulas'])} | "
                          f"{seen['as opened']}/{len(seen['formulas'])} | "
                          f"{tables_named_as_headers(path)} | "
                          f"{'SOME' if seen['invalid'] else 'none'} |", flush=True)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    for path in (source, target):
                        shutil.copy(path, args.keep / path.name)
        finally:
            office.terminate()


if __name__ == "__main__":
    main()
