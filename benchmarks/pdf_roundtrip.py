"""PDF files translated in place and read back by another reader: does every paragraph's
translation come back in order, is the source's text gone, and does the new text stay on
the page without running into other text?

    python benchmarks/pdf_roundtrip.py --checkpoint RUN FILE.pdf [FILE.pdf ...] [DOC.md ...]

A PDF is translated as it is; a Markdown file (real documentation, e.g. a README under
/usr/share/doc) is written as .docx by pandoc and printed to PDF by LibreOffice Writer first
(``lo.pdf``). `aiayn.documents.translate_document` (what `aiayn translate --file` and
`/translate_file` run) translates each. pypdf, a second PDF reader, reads the source and the
translation (or, reading text set right to left back in its logical order, poppler's
``pdftotext`` or PDFium's text page, Chrome's, with ``--reader pdftotext`` or ``pdfium``;
then Arabic letters' joined forms are read as the letters,
short vowels and other combining marks are left out, and a bracket is read as either side: a
reader gives the glyph drawn, the mirror image); per file:

- pages, and whether pypdf reads every page of the translation;
- paragraphs: those aiayn sends to the model (its own reading; a paragraph carried over
  into the next column or onto the next page is one), and how many of their translations
  pypdf finds, whole and in order (spaces aside; one carried onto the next page may have
  that page's running head or number between its parts);
- source left: of those paragraphs of three words or more, how many pypdf still finds on
  the translated page as they were;
- lines left as they are (rotated, invisible, in a reused drawing or in a font that does
  not say which letters it draws) and pages left as they were (PDFium could not write
  their drawings again as it drew them), from the translator's warnings;
- collisions: pairs of PDFium's text rectangles on a page that overlap by more than a third
  of the smaller, in the source and in the translation (text set over other text);
- off the page: text rectangles reaching outside the page's media box;
- seconds to translate.

Needs pypdf (the ``test`` extra), and pandoc and LibreOffice Writer for Markdown inputs. To
measure another checkout, put its ``src`` first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import io
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from machine import header
from round_trip import translations


def make(document: Path, fmt: str, out: Path) -> None:
    """``document`` (Markdown) as a PDF that LibreOffice Writer prints from pandoc's .docx."""
    docx = out.with_suffix(".docx")
    subprocess.run(["pandoc", "-f", "gfm", str(document), "-o", str(docx)], check=True,
                   capture_output=True)
    subprocess.run(["soffice", "--headless", "--convert-to", "pdf", "--outdir",
                    str(out.parent), str(docx)], check=True, capture_output=True)


def squeezed(text: str) -> str:
    return re.sub(r"\s+|\u00ad", "", text)


def pages_text(data: bytes, reader: str = "pypdf") -> list[str] | None:
    if reader == "pdfium":
        import pypdfium2 as pdfium
        return [read_logically(page.get_textpage().get_text_range())
                for page in pdfium.PdfDocument(data)]
    if reader == "pdftotext":
        with tempfile.NamedTemporaryFile(suffix=".pdf") as f:
            f.write(data)
            f.flush()
            done = subprocess.run(["pdftotext", f.name, "-"], capture_output=True, text=True)
        return None if done.returncode else [read_logically(page)
                                             for page in done.stdout.split("\f")[:-1]]
    from pypdf import PdfReader
    try:
        return [squeezed(page.extract_text() or "") for page in PdfReader(io.BytesIO(data)).pages]
    except Exception:  # a reader's failure is what this counts
        return None


def read_logically(text: str) -> str:
    """Text as compared with ``--reader pdftotext``: joined forms as their letters (NFKC),
    combining marks out (a reader may give a short vowel before or after its letter),
    directional marks out, brackets without their side, spaces out."""
    import unicodedata
    text = "".join(c for c in unicodedata.normalize("NFKC", text)
                   if unicodedata.category(c) != "Mn")
    text = re.sub("[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]", "", text)
    return squeezed(text.translate(str.maketrans("()[]{}", "((((((")))


def found(text: str, whole: str, pages: list[str]) -> bool:
    """Whether a translation is read back whole and in order: in the text, or begun at a
    page and ended on the next (a paragraph carried over: the next page's running head or
    its number may be read between)."""
    return text in whole or any(text[:k] in page and text[k:] in following
                                for page, following in zip(pages, pages[1:])
                                for k in range(1, len(text)))


def rectangles(data: bytes) -> tuple[int, int]:
    """Text rectangles overlapping others by more than a third of the smaller, and those
    reaching off the page, summed over pages."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    document = pdfium.PdfDocument(data)
    overlaps = outside = 0
    box = [ctypes.c_double() for _ in range(4)]
    for page in document:
        left_edge, bottom_edge, right_edge, top_edge = page.get_mediabox()
        textpage = page.get_textpage()
        rects = []
        for k in range(raw.FPDFText_CountRects(textpage.raw, 0, -1)):
            raw.FPDFText_GetRect(textpage.raw, k, *box)
            left, top, right, bottom = (v.value for v in box)
            rects.append((left, bottom, right, top))
            outside += left < left_edge - 1 or bottom < bottom_edge - 1 or \
                right > right_edge + 1 or top > top_edge + 1
        for a, r in enumerate(rects):
            for s in rects[a + 1:]:
                w = min(r[2], s[2]) - max(r[0], s[0])
                h = min(r[3], s[3]) - max(r[1], s[1])
                smaller = min((r[2] - r[0]) * (r[3] - r[1]), (s[2] - s[0]) * (s[3] - s[1]))
                overlaps += w > 0 and h > 0 and w * h > smaller / 3
    return overlaps, outside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("documents", nargs="+", type=Path)
    parser.add_argument("--reader", choices=["pypdf", "pdftotext", "pdfium"], default="pypdf",
                        help="the reader the translation is read back with")
    parser.add_argument("--target", help="the target language the model is told of (he: set "
                        "its own words right to left, as into Hebrew)")
    parser.add_argument("--keep", type=Path, help="a folder to write each translation in")
    parser.add_argument("--notable", action="store_true",
                        help="a row only for a file with something short of perfect (for a "
                             "corpus of many files); the totals count every file")
    args = parser.parse_args()
    print(header())
    from aiayn.translate import load
    translator = load(args.checkpoint)
    if args.target:
        own = translator.languages or {"source": "en"}
        translator.languages = {"source": own["source"], "target": args.target}
        print(f"told target: {args.target}")
    sent: list[tuple[list[str], list[str]]] = []
    plain = translator.translate_markup

    def recorded(documents, *rest, **named):
        out = plain(documents, *rest, **named)
        sent.append((list(documents), list(out)))
        return out
    translator.translate_markup = recorded  # type: ignore[method-assign]
    print(f"reader: {args.reader}")
    print("| file | as | pages | the reader reads all | paragraphs "
          "| translations read back in order | source left | lines left as they are "
          "| pages left as they were "
          "| collisions, source → translation | off the page, source → translation | seconds |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals, files = [0] * 8, 0
    one_script = [0, 0]  # translations without Latin letters: read back, all
    warned = io.StringIO()  # the translator's warnings, counted by file
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stderr(warned):
        for document, fmt, path, out, seconds, _ in translations(
                translator, args.documents, ["lo.pdf"], (".pdf",), make, folder, 12):
            said = warned.getvalue()
            warned.seek(0)
            warned.truncate()
            lines_kept = sum(int(m.group(1)) for m in
                             re.finditer(r"(\d+) line\(s\) left as they are", said))
            pages_kept = sum(len(m.group(1).split(",")) for m in
                             re.finditer(r"page\(s\) ([\d, ]+) left as they were", said))
            source = path.read_bytes()
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"{document.stem}.{fmt}").write_bytes(source)
                (args.keep / f"{document.stem}.translated.{fmt}").write_bytes(out)
            markups, outs = sent.pop() if sent else ([], [])
            sent.clear()  # (a file that failed may have left its own)
            before, after = pages_text(source, args.reader), pages_text(out, args.reader)
            whole = " ".join(after or [])
            strip = re.compile(r"<[^>]+>")
            words = [(strip.sub("", m), strip.sub("", o)) for m, o in zip(markups, outs)]
            read = squeezed if args.reader == "pypdf" else read_logically
            back = sum(found(read(_unescape(o)), whole, after or []) for _, o in words)
            alone = [o for _, o in words if not re.search("[A-Za-z]", o)]
            one_script[0] += sum(found(read(_unescape(o)), whole, after or []) for o in alone)
            one_script[1] += len(alone)
            left = sum(read(_unescape(m)) in whole for m, o in words
                       if len(m.split()) >= 3 and squeezed(m) != squeezed(o))
            (c_before, off_before), (c_after, off) = rectangles(source), rectangles(out)
            pages = len(before or [])
            perfect = back == len(words) and not left and not lines_kept and not pages_kept \
                and c_after <= c_before and off <= off_before
            if not (args.notable and perfect):
                print(f"| {document.parent.name}/{document.name} | {fmt} | {pages} | "
                      f"{'yes' if after is not None and len(after) == pages else 'no'} | "
                      f"{len(words)} | {back}/{len(words)} | {left} | {lines_kept} | "
                      f"{pages_kept} | {c_before} → {c_after} | {off_before} → {off} | "
                      f"{seconds:.1f} |", file=sys.stdout, flush=True)
            for k, value in enumerate((pages, len(words), back, left, lines_kept, pages_kept,
                                       c_after - c_before, off - off_before)):
                totals[k] += value
            files += 1
    print(f"| all {files} translated | | {totals[0]} | | {totals[1]} | "
          f"{totals[2]}/{totals[1]} | {totals[3]} | {totals[4]} | {totals[5]} | "
          f"{totals[6]:+d} | {totals[7]:+d} | |")
    print(f"\ntranslations without a Latin letter read back: {one_script[0]}/{one_script[1]}; "
          f"with one: {totals[2] - one_script[0]}/{totals[1] - one_script[1]} (text of both "
          f"directions in one line is read back by the reader's own guess at its order)")


def _unescape(text: str) -> str:
    import html
    return html.unescape(text)


if __name__ == "__main__":
    main()
