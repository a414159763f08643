"""Spreadsheets written elsewhere, translated whole and read back by a library aiayn does not
write them with: is every text cell translated and every other cell, formula, sheet and
package member as it was?

    python benchmarks/workbooks_roundtrip.py --checkpoint RUN BOOK.xlsx [BOOK.xlsm BOOK.ods ...]

Each workbook (e.g. the test files that xlsx2csv, tablib, pyexcel-xlsx and pyexcel-ods ship
in their source packages: written by Excel, LibreOffice and other libraries) goes through
`aiayn.documents.translate_document`, what `aiayn translate --file` and `/translate_file` run.
openpyxl reads an Excel workbook, its source and its translation (formulas as written),
python-calamine (Rust's calamine) an OpenDocument spreadsheet (formulas' last values). Per
workbook:

- reads: openpyxl opens the translation;
- sheets: the same sheet names in the same order, each with the same cells holding values;
- text cells: cells whose value is a string with a letter (not a formula), and how many of
  them changed (a translation may equal its source: names, codes);
- the rest: numbers, dates, booleans, formulas and strings without a letter, and how many
  came back equal;
- LibreOffice: where ``soffice`` is on the PATH, LibreOffice Calc opens the source and the
  translation and writes each sheet as CSV: the same sheets, each with as many rows and as
  many fields in each row, and the fields that hold no letter equal;
- members: package members other than the parts that hold text (an Excel workbook's shared
  strings, sheets, notes, threaded comments, drawings, charts and document properties, and
  its workbook part, whose calculation settings change; an OpenDocument file's content.xml
  and styles.xml), and how many came back byte for byte.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from machine import header

_LETTER = re.compile(r"[^\W\d_]")
_REWRITTEN = re.compile(r"xl/(sharedStrings|workbook|worksheets/.*|comments.*|threadedComments/.*|"
                        r"drawings/drawing\d+|charts/chart\d+|tables/table\d+|"
                        r"pivotTables/pivotTable\d+|pivotCache/pivotCache\w+\d+)\.xml|"
                        r"docProps/core\.xml|content\.xml|styles\.xml")


def cells(data: bytes, suffix: str) -> tuple[list[str], dict[tuple[str, str], object]]:
    """A workbook's sheet names, and each cell that holds a value, by sheet and place."""
    if suffix == ".ods":
        from python_calamine import CalamineWorkbook
        book = CalamineWorkbook.from_filelike(io.BytesIO(data))
        return book.sheet_names, {
            (name, f"{r},{c}"): value for name in book.sheet_names
            for r, row in enumerate(book.get_sheet_by_name(name).to_python())
            for c, value in enumerate(row) if value != ""}
    import openpyxl
    book = openpyxl.load_workbook(io.BytesIO(data))
    return book.sheetnames, {(sheet.title, cell.coordinate): cell.value
                             for sheet in book.worksheets for row in sheet.iter_rows()
                             for cell in row if cell.value is not None}


def tables_named(data: bytes, suffix: str) -> str:
    """For an Excel workbook with tables: how many name each column as its header cell reads,
    each name unique letter case aside (Excel repairs a table that does not); "-" for none."""
    if suffix == ".ods":
        return "-"
    import openpyxl
    from openpyxl.utils import range_boundaries
    book = openpyxl.load_workbook(io.BytesIO(data))
    good = total = 0
    for sheet in book.worksheets:
        for table in sheet.tables.values():
            left, top, _, _ = range_boundaries(table.ref)
            names = [c.name for c in table.tableColumns]
            headers = [sheet.cell(top, left + k).value for k in range(len(names))]
            total += 1
            good += [str(h) for h in headers] == names and \
                len({n.casefold() for n in names}) == len(names)
    return f"{good}/{total}" if total else "-"


def libreoffice(data: bytes, suffix: str) -> list[list[list[str]]] | None:
    """Each sheet as LibreOffice Calc writes it in CSV (rows of fields), in the order of the
    sheets' names; None where LibreOffice did not write them."""
    import csv
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"book{suffix}"
        path.write_bytes(data)
        subprocess.run(["soffice", "--headless", f"-env:UserInstallation=file://{folder}/lo",
                        "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,"
                        "true,false,false,false,-1", "--outdir", folder, str(path)],
                       capture_output=True, timeout=300, check=False)
        sheets = sorted(Path(folder).glob("book*.csv"))
        if not sheets:
            return None
        return [list(csv.reader(sheet.read_text(encoding="utf-8").splitlines()))
                for sheet in sheets]


def same_shape(before: list[list[list[str]]] | None, after: list[list[list[str]]] | None
               ) -> str:
    """Whether LibreOffice's sheets of the translation have the source's shape, and its
    fields without a letter the source's values."""
    if before is None:
        return "cannot read the source"
    if after is None:
        return "NO"
    alike = len(before) == len(after) and all(
        len(a) == len(b) and all(len(x) == len(y) for x, y in zip(a, b))
        for a, b in zip(before, after))
    kept = all(x == y for a, b in zip(before, after) for r, q in zip(a, b)
               for x, y in zip(r, q) if not _LETTER.search(x))
    return "yes" if alike and kept else "NO: shape" if not alike else "NO: values"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("books", nargs="+", type=Path)
    args = p.parse_args()

    import aiayn
    from aiayn.documents import translate_document
    from aiayn.errors import UserError
    print(header(), flush=True)
    translator = aiayn.load(args.checkpoint)
    office = shutil.which("soffice") is not None
    print("| workbook | reads | sheets alike | text cells changed | the rest equal | "
          "members byte for byte | tables named as their header cells | seconds |" +
          (" LibreOffice reads it alike |" if office else ""))
    print("|---|---|---|---:|---:|---:|---|---:|" + ("---|" if office else ""))
    totals = [0, 0, 0, 0]
    for path in args.books:
        data = path.read_bytes()
        t0 = time.perf_counter()
        try:
            out = translate_document(translator, data, path.suffix.lower())
        except UserError as err:
            print(f"| {path.name} | refused: {err} | | | | | | |")
            continue
        seconds = time.perf_counter() - t0
        calc = f" {same_shape(libreoffice(data, path.suffix), libreoffice(out, path.suffix))} |" \
            if office else ""
        try:
            names_before, before = cells(data, path.suffix.lower())
        except Exception as err:  # noqa: BLE001 (the reader cannot read the source either)
            print(f"| {path.name} | the source neither: {err} | | | | | | {seconds:.1f} |{calc}")
            continue
        try:
            names_after, after = cells(out, path.suffix.lower())
            reads = "yes"
        except Exception as err:  # noqa: BLE001 (what the reader says of it is the result)
            print(f"| {path.name} | NO: {err} | | | | | | {seconds:.1f} |")
            continue
        alike = names_before == names_after and before.keys() == after.keys()
        text = [k for k, v in before.items() if isinstance(v, str) and _LETTER.search(v)
                and not v.startswith("=")]
        rest = [k for k in before if k not in text]
        changed = sum(before[k] != after.get(k) for k in text)
        equal = sum(before[k] == after.get(k) for k in rest)
        with zipfile.ZipFile(io.BytesIO(data)) as a, zipfile.ZipFile(io.BytesIO(out)) as b:
            kept = [n for n in a.namelist() if not _REWRITTEN.fullmatch(n)]
            same = sum(n in b.namelist() and a.read(n) == b.read(n) for n in kept)
        totals = [totals[0] + changed, totals[1] + len(text), totals[2] + equal,
                  totals[3] + len(rest)]
        print(f"| {path.name} | {reads} | {'yes' if alike else 'NO'} | {changed}/{len(text)} | "
              f"{equal}/{len(rest)} | {same}/{len(kept)} | {tables_named(out, path.suffix)} | "
              f"{seconds:.1f} |{calc}", flush=True)
    print(f"\ntext cells changed {totals[0]}/{totals[1]}, the rest equal {totals[2]}/{totals[3]}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
