"""Tagged PDFs (the accessible kind, whose structure tree screen readers read) translated: does
the structure tree still hold the page's text, now the translation's?

    python benchmarks/pdf_tagged.py --checkpoint RUN DOC.md [DOC.md ...]

Each Markdown file (real documentation, e.g. a README under /usr/share/doc) is written as .odt
by pandoc and exported by LibreOffice Writer as a tagged PDF (``UseTaggedPDF``). aiayn
translates it (`aiayn.documents.translate_document`); poppler, a reader aiayn does not use,
reads source and translation: ``pdfinfo -struct-text`` the text each structure element holds,
``pdftotext`` the text on the pages. Per file: the structure tree's leaves that hold text, and
the words on the pages that the tree holds (as many times as the pages show them).

Needs pandoc, LibreOffice Writer and poppler-utils (Debian: pandoc, libreoffice-writer-nogui,
poppler-utils).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from machine import header

_LEAF = re.compile(r'^\s*"(.*)"\s*$')


def tagged(document: Path, folder: Path) -> Path:
    """``document`` as a tagged PDF, by pandoc and LibreOffice Writer."""
    odt = folder / f"{document.parent.name}.odt"
    subprocess.run(["pandoc", str(document), "-o", str(odt)], check=True,
                   stderr=subprocess.DEVNULL)
    subprocess.run(["soffice", f"-env:UserInstallation=file://{folder}/profile", "--headless",
                    "--convert-to", 'pdf:writer_pdf_Export:{"UseTaggedPDF":{"type":"boolean",'
                    '"value":"true"}}', "--outdir", str(folder), str(odt)],
                   check=True, capture_output=True)
    return odt.with_suffix(".pdf")


def structure(path: Path) -> list[str]:
    """The text of each leaf of the structure tree, as poppler reads it."""
    out = subprocess.run(["pdfinfo", "-struct-text", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return [m.group(1) for line in out.splitlines() if (m := _LEAF.match(line))]


def words(text: str) -> Counter:
    return Counter(re.findall(r"\w+", text.lower()))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("documents", nargs="+", type=Path)
    args = p.parse_args()

    import aiayn
    from aiayn.documents import translate_document
    print(header(), flush=True)
    print(subprocess.run(["pdfinfo", "-v"], capture_output=True, text=True).stderr.split("\n")[0])
    translator = aiayn.load(args.checkpoint)
    print("\n| document | pages | tree leaves with text: source | translation | "
          "page words the tree holds: source | translation | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for document in args.documents:
            source = tagged(document, folder)
            target = source.with_name(source.stem + ".translated.pdf")
            t0 = time.perf_counter()
            target.write_bytes(translate_document(translator, source.read_bytes(), ".pdf"))
            seconds = time.perf_counter() - t0
            row = []
            for path in (source, target):
                leaves = structure(path)
                shown = words(subprocess.run(["pdftotext", str(path), "-"], capture_output=True,
                                             text=True, check=True).stdout)
                held = words(" ".join(leaves))
                row.append((sum(bool(leaf.strip()) for leaf in leaves), len(leaves),
                            sum((shown & held).values()), sum(shown.values())))
            pages = subprocess.run(["pdfinfo", str(source)], capture_output=True, text=True,
                                   check=True).stdout
            count = re.search(r"Pages:\s+(\d+)", pages).group(1)  # type: ignore[union-attr]
            (a, n, c, w), (b, m, d, v) = row
            print(f"| {document.parent.name}/{document.name} | {count} | {a}/{n} | {b}/{m} | "
                  f"{100 * c / max(w, 1):.1f}% | {100 * d / max(v, 1):.1f}% | {seconds:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
