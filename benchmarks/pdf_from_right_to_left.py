"""PDFs written right to left, read for translation: are their lines read whole and joined into
paragraphs, and does a translation into a language written left to right start at the column's
left edge, without running into other text?

    python benchmarks/pdf_from_right_to_left.py --checkpoint RUN DOC.md [DOC.md ...]

Each Markdown file (real documentation, e.g. a README under /usr/share/doc) is written as .docx
by pandoc, translated by RUN (a model into Arabic or Hebrew) and laid out as PDF by
LibreOffice, which aiayn does not use: a PDF written right to left by a program that writes
them. That PDF is then translated "back" by a stand-in that answers each paragraph with as
many placeholder words ("word0 word1 ...") as it has words, into English, so only the reading
and the layout are measured, not a model. Per file: the paragraphs read (a line cut into
pieces, or lines not joined, make more), of those the one-word ones, text collisions (PDFium's
text rectangles overlapping by more than a third of the smaller) in the right-to-left PDF and
in the translation, the translation's lines that start at their page's text's left edge
(set left to right from the column's edge, not from where the Arabic's ragged lines began),
and the .docx's paragraphs with letters written right to left that aiayn reads whole as one
of the PDF's paragraphs (spaces aside): in their order, words, marks and brackets as written.

Needs pandoc and LibreOffice Writer (Debian: pandoc, libreoffice-writer-nogui).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

from machine import header
from pdf_roundtrip import rectangles


class Placeholders:
    """A stand-in translator into English: each paragraph's words as word0, word1, ..."""

    def __init__(self, source: str) -> None:
        self.languages = {"source": source, "target": "en"}
        self.read: list[str] = []

    def translate_markup(self, documents, fmt, options=None, glossary=None, fragments=False):
        words = [re.sub(r"<[^>]+>", " ", d).split() for d in documents]
        self.read += [" ".join(w) for w in words]
        return [" ".join(f"word{k}" for k in range(len(w))) for w in words]


def at_left(data: bytes) -> tuple[int, int]:
    """(lines of the translation that start within two points of their page's text's left
    edge, lines of the translation), read by aiayn's own reader: the stand-in's words."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from aiayn.documents.pdf.glyphs import read_lines
    found = [0, 0]
    for page in pdfium.PdfDocument(data):
        textpage = page.get_textpage()  # (held while its lines are read)
        lines = [line for line in read_lines(textpage.raw, page, raw) if line.plain]
        if not lines:
            continue
        edge = min(line.left for line in lines)
        for line in lines:
            if line.text.startswith("word"):
                found[0] += line.left < edge + 2
                found[1] += 1
    return found[0], found[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("documents", nargs="+", type=Path)
    args = p.parse_args()
    import docx

    import aiayn
    from aiayn.documents import Job, translate_document
    from aiayn.documents.direction import right_to_left_letters
    from aiayn.documents.pdf import translate_pdf
    print(header(), flush=True)
    translator = aiayn.load(args.checkpoint)
    source = (translator.languages or {"target": "ar"})["target"]
    print(f"written right to left by {args.checkpoint} ({source}), laid out by LibreOffice\n")
    print("| document | paragraphs read | of one word | collisions, right to left → "
          "translation | translated lines starting at the text's left edge | paragraphs "
          "read whole |")
    print("|---|---:|---:|---:|---:|---:|")
    totals = [0] * 8
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for document in args.documents:
            name = document.parent.name
            english = folder / f"{name}.docx"
            subprocess.run(["pandoc", str(document), "-s", "-o", str(english)], check=True,
                           stderr=subprocess.DEVNULL)
            rtl = folder / f"{name}.{source}.docx"
            rtl.write_bytes(translate_document(translator, english.read_bytes(), ".docx"))
            subprocess.run(["soffice", f"-env:UserInstallation=file://{folder}/profile",
                            "--headless", "--convert-to", "pdf", "--outdir", str(folder),
                            str(rtl)], check=True, capture_output=True)
            data = rtl.with_suffix(".pdf").read_bytes()
            written = [" ".join(p.text.split()) for p in docx.Document(str(rtl)).paragraphs
                       if right_to_left_letters(p.text)]
            back = Placeholders(source)
            out = translate_pdf(data, Job(back))
            single = sum(len(r.split()) == 1 for r in back.read)
            (before, _), (after, _) = rectangles(data), rectangles(out)
            even, several = at_left(out)
            read = {" ".join(r.split()) for r in back.read}
            same = sum(w in read for w in written)
            print(f"| {name}/{document.name} | {len(back.read)} | {single} | {before} → "
                  f"{after} | {even}/{several} | {same}/{len(written)} |", flush=True)
            for k, v in enumerate((len(back.read), single, before, after, even, several,
                                   same, len(written))):
                totals[k] += v
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} → {totals[3]} | "
          f"{totals[4]}/{totals[5]} | {totals[6]}/{totals[7]} |")


if __name__ == "__main__":
    main()
