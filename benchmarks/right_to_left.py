"""Documents translated into a language written right to left: do their lines now run from the
right margin, as readers lay them out?

    python benchmarks/right_to_left.py --checkpoint RUN [--rtl he] DOC.md [DOC.md ...]

Each Markdown file (real documentation, e.g. a README under /usr/share/doc) is written by
pandoc as .docx, .odt, .pptx and a web page (.html), and as a PDF (the .docx as LibreOffice
lays it out). aiayn translates each twice with the same
model: once into the model's own target and once told that the target is ``--rtl`` (a language
written right to left; the words are the model's either way, so only the layout differs).
LibreOffice, which aiayn does not use, lays each file out as PDF (Chromium the web page; a PDF
is measured as aiayn wrote it), and poppler's ``pdftotext -bbox-layout`` gives every line's
left and right edge. In each block of two lines or more, a line that reaches one edge of the
block and not the other is ragged on the other side: a paragraph set left to right has
ragged lines that reach the left edge, one set right to left ragged lines that reach the
right. Per file: the ragged lines that reach the right edge, of all ragged lines outside code
blocks (code stays as written, left to right).

Needs pandoc, LibreOffice (Writer and Impress), Chromium and poppler-utils (Debian: pandoc,
libreoffice-writer-nogui, libreoffice-impress-nogui, chromium, poppler-utils).
"""

from __future__ import annotations

import argparse
import html
import re
import subprocess
import tempfile
import time
from collections.abc import Set as AbstractSet
from pathlib import Path

from machine import header

_LINE = re.compile(r'<line xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)"[^>]*>(.*?)</line>',
                   re.S)
_WORD = re.compile(r"<word [^>]*>([^<]*)</word>")
_BLOCK = re.compile(r"<block .*?</block>", re.S)
_PICTURE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
EDGE = 2.0  # points: a line within this of a block's edge reaches it


def laid_out(path: Path, folder: Path) -> Path:
    """``path`` as LibreOffice (or, for a web page, Chromium) lays it out, in PDF."""
    if path.suffix == ".html":
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        f"--user-data-dir={folder}/chromium", "--no-pdf-header-footer",
                        f"--print-to-pdf={path.with_suffix('.pdf')}", path.as_uri()],
                       check=True, capture_output=True)
        return path.with_suffix(".pdf")
    subprocess.run(["soffice", f"-env:UserInstallation=file://{folder}/profile", "--headless",
                    "--convert-to", "pdf", "--outdir", str(path.parent), str(path)],
                   check=True, capture_output=True)
    return path.with_suffix(".pdf")


def code_lines(markdown: str) -> set[str]:
    """The lines of a Markdown file's code blocks (fenced or indented), spaces collapsed:
    code stays as written, left to right, so its lines are not counted."""
    found, fenced = set(), False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif fenced or line.startswith(("    ", "\t")):
            found.add(" ".join(line.split()))
    return found - {""}


def ragged(pdf: Path, code: AbstractSet[str] = frozenset()) -> tuple[int, int]:
    """(ragged lines that reach their block's right edge, ragged lines) in ``pdf``; lines
    whose text is a line of ``code`` are left out."""
    xml = subprocess.run(["pdftotext", "-bbox-layout", str(pdf), "-"], capture_output=True,
                         text=True, check=True).stdout
    right = count = 0
    for block in _BLOCK.findall(xml):
        lines = [(float(a), float(b), " ".join(html.unescape(w) for w in _WORD.findall(text)))
                 for a, b, text in _LINE.findall(block)]
        # (a list's bullet or number, set apart from its item's lines, is no line of text)
        lines = [line for line in lines if len(line[2]) > 3]
        if len(lines) < 2:
            continue
        left_edge, right_edge = min(a for a, _, _ in lines), max(b for _, b, _ in lines)
        for a, b, text in lines:
            at_left, at_right = a <= left_edge + EDGE, b >= right_edge - EDGE
            if at_left != at_right and not any(text in line for line in code):
                count += 1
                right += at_right
    return right, count


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--rtl", default="he", help="the right-to-left target the model is told of")
    p.add_argument("--formats", nargs="+", default=["docx", "odt", "pptx", "html", "pdf"])
    p.add_argument("documents", nargs="+", type=Path)
    args = p.parse_args()

    import aiayn
    from aiayn.documents import translate_document
    print(header(), flush=True)
    print(subprocess.run(["soffice", "--version"], capture_output=True, text=True).stdout.strip())
    translator = aiayn.load(args.checkpoint)
    own = translator.languages or {"source": "en", "target": "de"}
    print(f"\nmodel pair {own['source']}-{own['target']}; told target {args.rtl} for the "
          "right-to-left rows\n")
    print("| document | format | as written (pandoc) | translated, target "
          f"{own['target']} | translated, target {args.rtl} | seconds ({args.rtl}) |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for document in args.documents:
            name = document.parent.name
            # (pictures left out: pandoc would fetch remote ones, and nothing here can)
            text = folder / f"{name}.md"
            markdown = document.read_text(encoding="utf-8")
            text.write_text(_PICTURE.sub("", markdown))
            code = code_lines(markdown)
            for fmt in args.formats:
                (folder / fmt).mkdir(exist_ok=True)  # (each file's PDF beside it, by its stem)
                source = folder / fmt / f"{name}.{'docx' if fmt == 'pdf' else fmt}"
                subprocess.run(["pandoc", str(text), "-s", "-o", str(source)], check=True,
                               stderr=subprocess.DEVNULL)
                if fmt == "pdf":
                    source = laid_out(source, folder)
                cells, seconds = [ragged(laid_out(source, folder)
                                         if fmt != "pdf" else source, code)], 0.0
                for target in (own["target"], args.rtl):
                    translator.languages = {"source": own["source"], "target": target}
                    out = folder / fmt / f"{name}.{target}.{fmt}"
                    t0 = time.perf_counter()
                    out.write_bytes(translate_document(translator, source.read_bytes(),
                                                       f".{fmt}"))
                    seconds = time.perf_counter() - t0
                    cells.append(ragged(laid_out(out, folder) if fmt != "pdf" else out, code))
                shares = [f"{r}/{n} ({100 * r / max(n, 1):.0f}%)" for r, n in cells]
                print(f"| {name}/{document.name} | .{fmt} | {' | '.join(shares)} | "
                      f"{seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
