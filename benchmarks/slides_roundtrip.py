"""Presentations written by pandoc and LibreOffice, translated whole and read back: is every
slide and paragraph, every bold and italic stretch, every link and every piece of code still
there, and does LibreOffice open the translation?

    python benchmarks/slides_roundtrip.py --checkpoint RUN DOC.md [DOC.md ...] \
        [DECK.pptx DECK.odp ...] [--formats pptx lo.pptx lo.odp]

Each Markdown file (real documentation, e.g. a README under /usr/share/doc) becomes a deck:
pandoc writes it as .pptx (a slide per section; its pictures, which pandoc would fetch, are
left out), and LibreOffice Impress opens that deck and saves it as .pptx again (``lo.pptx``,
its own way of writing DrawingML) and as .odp (``lo.odp``).
`aiayn.documents.translate_document` (what `aiayn translate --file` and `/translate_file` run)
translates it; a deck given as .pptx or .odp is translated as it is. python-pptx reads the
source and the translation (an .odp through LibreOffice's conversion of each to .pptx) and
compares them paragraph by paragraph, in order:

- slides (those shown; a hidden one is not printed) and paragraphs: how many, and how many
  come back;
- formatting kept: paragraphs whose bold and italic stretches and links (with their targets)
  come back as many, in any order (a translation moves words);
- code kept: runs in a monospaced font (pandoc sets code in Courier) that come back
  character for character, and listings (paragraphs all code) left as they were;
- translated: paragraphs with words outside code whose text changed;
- LibreOffice opens it: Impress converts the translation to PDF, with as many pages as the
  deck has slides.

Needs pandoc and LibreOffice Impress (Debian: apt-get install pandoc
libreoffice-impress-nogui). To measure another checkout, put its ``src`` first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from machine import header
from round_trip import translations

MONOSPACED = re.compile(r"courier|mono|consolas", re.IGNORECASE)


def run(command: list[str], data: bytes | None = None) -> bytes:
    done = subprocess.run(command, input=data, capture_output=True, check=False)
    if done.returncode:
        sys.exit(f"{' '.join(command)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def without_pictures(node):
    """A pandoc syntax tree with each Image replaced by its description."""
    if isinstance(node, list):
        out = []
        for item in node:
            if isinstance(item, dict) and item.get("t") == "Image":
                out.extend(without_pictures(item["c"][1]))
            else:
                out.append(without_pictures(item))
        return out
    if isinstance(node, dict):
        return {key: without_pictures(value) for key, value in node.items()}
    return node


def soffice(path: Path, target: str, outdir: Path) -> Path:
    subprocess.run(["soffice", "--headless", "--convert-to", target, "--outdir", str(outdir),
                    str(path)], capture_output=True, check=False)
    return outdir / f"{path.stem}.{target.split(':')[0]}"


def make(document: Path, fmt: str, out: Path) -> None:
    """``document`` (Markdown) as a deck of format ``fmt``, written by pandoc or LibreOffice."""
    tree = json.loads(run(["pandoc", str(document), "-t", "json"]))
    tree["blocks"] = without_pictures(tree["blocks"])
    deck = out.with_name(f"{out.stem}.pandoc.pptx")
    run(["pandoc", "-f", "json", "-o", str(deck)], json.dumps(tree).encode())
    if fmt == "pptx":
        deck.rename(out)
        return
    target = {"lo.pptx": "pptx:Impress MS PowerPoint 2007 XML", "lo.odp": "odp:impress8"}[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        soffice(deck, target, Path(tmp)).rename(out)


def paragraphs(path: Path) -> tuple[int, list[tuple[str, Counter, list[str], bool]]]:
    """A deck's slides shown (not hidden), and its paragraphs with text in order (shapes and
    tables, then the notes): each as (its text, its elements: bold and italic stretches and
    links, its code runs' texts, whether it is all code)."""
    from pptx import Presentation
    if path.suffix == ".odp":
        with tempfile.TemporaryDirectory() as tmp:
            converted = soffice(path, "pptx:Impress MS PowerPoint 2007 XML", Path(tmp))
            return paragraphs(converted)
    from pptx.oxml.ns import qn
    deck = Presentation(str(path))
    out = []
    roots = [(slide, slide.shapes._spTree) for slide in deck.slides]
    roots += [(slide.notes_slide, slide.notes_slide.shapes._spTree) for slide in deck.slides
              if slide.has_notes_slide]
    from pptx.text.text import _Paragraph
    for owner, root in roots:  # (the owner's part resolves a link's target)
        for p in root.iter(qn("a:p")):
            paragraph = _Paragraph(p, owner)
            runs = [r for r in paragraph.runs if r.text]
            if not "".join(r.text for r in runs).strip():
                continue
            found: Counter = Counter()
            for name, on in (("bold", lambda r: r.font.bold), ("italic", lambda r: r.font.italic)):
                stretch = False
                for r in runs:
                    if not r.text.strip():
                        continue
                    if on(r) and not stretch:
                        found[(name,)] += 1
                    stretch = bool(on(r))
            link = None
            for r in runs:
                try:
                    address = r.hyperlink.address
                except KeyError:  # (an action with no target: a macro, "next slide")
                    address = r.hyperlink._hlinkClick.action
                if address and address != link:
                    found[("link", address)] += 1
                link = address
            code = [r.text for r in runs if MONOSPACED.search(r.font.name or "")]
            listing = all(MONOSPACED.search(r.font.name or "") for r in runs if r.text.strip())
            out.append(("".join(r.text for r in runs), found, code, listing))
    return sum(1 for slide in deck.slides if slide._element.get("show") != "0"), out


def compare(source: Path, translated: Path) -> dict:
    slides, a = paragraphs(source)
    slides_back, b = paragraphs(translated)
    pairs = list(zip(a, b))
    code_a = Counter(c for _, _, code, _ in a for c in code)
    code_b = Counter(c for _, _, code, _ in b for c in code)
    worded = [(x, y) for x, y in pairs if not x[3]]
    return {"slides": slides, "slides back": slides_back, "paragraphs": len(a),
            "paragraphs back": len(b),
            "formatting kept": sum(1 for x, y in pairs if x[1] == y[1]),
            "code": sum(code_a.values()), "code kept": sum((code_a & code_b).values()),
            "worded": len(worded), "translated": sum(1 for x, y in worded if x[0] != y[0])}


def differences(source: Path, translated: Path) -> list[str]:
    """Each paragraph whose elements did not come back, both texts, what is missing and
    added."""
    out = []
    for x, y in zip(paragraphs(source)[1], paragraphs(translated)[1]):
        if x[1] != y[1]:
            out.append(f"- {x[0]!r}\n  -> {y[0]!r}\n  missing {dict(x[1] - y[1])}, "
                       f"added {dict(y[1] - x[1])}")
    return out


def opens(path: Path, slides: int) -> str:
    """Whether LibreOffice converts ``path`` to a PDF of as many pages as it has slides."""
    with tempfile.TemporaryDirectory() as tmp:
        pdf = soffice(path, "pdf", Path(tmp))
        if not pdf.exists():
            return "no"
        pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf.read_bytes()))
        return "yes" if pages == slides else f"{pages} pages"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("documents", nargs="+", type=Path)
    parser.add_argument("--formats", nargs="+", default=["pptx", "lo.pptx", "lo.odp"])
    parser.add_argument("--differences", action="store_true",
                        help="print each paragraph whose elements did not come back")
    args = parser.parse_args()
    for tool in ("pandoc", "soffice"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not on the PATH; install it (Debian: apt-get install pandoc "
                     f"libreoffice-impress-nogui)")
    from aiayn.translate import load
    print(header())
    print(run(["pandoc", "--version"]).decode().splitlines()[0])
    print(run(["soffice", "--version"]).decode().strip())
    translator = load(args.checkpoint)
    print(f"{args.checkpoint}: {translator.languages}")
    print("| document | format | slides (back) | paragraphs (back) | formatting kept | "
          "code kept | translated | LibreOffice opens it | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for document, fmt, path, out, seconds, _ in translations(
                translator, args.documents, args.formats, (".pptx", ".odp"), make, tmp, 9):
            translated = Path(tmp) / f"{document.stem}.out{path.suffix}"
            translated.write_bytes(out)
            try:
                r = compare(path, translated)
            except Exception as err:  # (python-pptx on what LibreOffice made of it)
                print(f"| {document} | {fmt} | read back failed: {type(err).__name__}: "
                      f"{str(err)[:80]} |||||||", flush=True)
                continue
            print(f"| {document} | {fmt} | {r['slides']} ({r['slides back']}) | "
                  f"{r['paragraphs']} ({r['paragraphs back']}) | "
                  f"{r['formatting kept']}/{r['paragraphs']} | {r['code kept']}/{r['code']} "
                  f"| {r['translated']}/{r['worded']} | {opens(translated, r['slides'])} | "
                  f"{seconds:.1f} |", flush=True)
            if args.differences:
                print("\n".join(differences(path, translated)))


if __name__ == "__main__":
    main()
