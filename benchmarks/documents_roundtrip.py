"""Documents written by pandoc, translated whole and read back by pandoc: is every block, every
bold and italic stretch, every link and every piece of code still there?

    python benchmarks/documents_roundtrip.py --checkpoint RUN DOC.md [DOC.md ...] \
        [FILE.docx FILE.odt ...] [--formats docx odt html epub lo.docx lo.odt]

Each Markdown file (real documentation, e.g. a README under /usr/share/doc) is converted by
pandoc into each format (``lo.docx``, ``lo.odt``: pandoc's HTML page saved by LibreOffice,
whose styles and structure differ from pandoc's own; ``md``: the Markdown file itself); a
.docx, .odt, .html or .epub file given is taken as it is (a file Word wrote, say).
`aiayn.documents.translate_document` (what `aiayn translate --file` and `/translate_file`
run) translates it; pandoc reads the source and the translation back into its syntax tree,
and LibreOffice, where it is installed, opens the translation (converting it to plain text).
Per top-level block, the formatting is compared as a multiset of pandoc's inline and block
elements (Strong, Emph, Link with its URL, Code with its text, ...; words and spaces left
out, as a translation changes them and may reorder the elements), so a row counts:

- blocks: pandoc's top-level blocks, and whether their kinds come back in the same order;
- formatting kept: blocks whose elements come back exactly;
- code kept: inline code and code blocks that come back character for character;
- links kept: link targets that come back (links to headings of the document counted as
  such: pandoc names a heading after its words, which the translation changes);
- translated: blocks with words outside code whose text changed (pandoc reads the lines of
  a code block in an .odt as paragraphs, which count here though they are kept);
- alt and titles translated: pictures' descriptions (``alt``) and links' and pictures'
  titles, in pandoc's elements and in raw HTML, that changed, paired in order.

Needs pandoc on the PATH (Debian: apt-get install pandoc). To measure another checkout, put
its ``src`` first on PYTHONPATH.
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

WORDLESS = {"Str", "Space", "SoftBreak", "LineBreak"}


def pandoc(args: list[str], data: bytes | None = None) -> bytes:
    done = subprocess.run(["pandoc", *args], input=data, capture_output=True, check=False)
    if done.returncode:
        sys.exit(f"pandoc {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def elements(node, out: Counter) -> None:
    """Every pandoc element under ``node`` but words and spaces; code with its text, links
    with their targets."""
    if isinstance(node, list):
        for item in node:
            elements(item, out)
        return
    if not isinstance(node, dict) or "t" not in node:
        return
    kind, content = node["t"], node.get("c")
    if kind in ("Code", "CodeBlock"):
        out[(kind, content[1])] += 1
        return
    if kind == "Link":  # (a link within the document names a heading by its words)
        target = content[2][0]
        out[(kind, "#" if target.startswith("#") else target)] += 1
        elements(content[1], out)
        return
    if kind not in WORDLESS:
        out[(kind,)] += 1
    elements(content, out)


def words(node) -> str:
    """The words of ``node`` outside code."""
    if isinstance(node, list):
        return " ".join(w for w in (words(n) for n in node) if w)
    if not isinstance(node, dict) or "t" not in node:
        return ""
    if node["t"] == "Str":
        return node["c"]
    if node["t"] in ("Code", "CodeBlock", "RawInline", "RawBlock"):
        return ""
    return words(node.get("c"))


_LABEL = re.compile(r"""\b(?:alt|title)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)


def labels(node, out: list[str]) -> None:
    """The pictures' descriptions and the titles under ``node``, in order: an Image's words
    and title, a Link's title, and ``alt``/``title`` attributes in raw HTML."""
    if isinstance(node, list):
        for item in node:
            labels(item, out)
        return
    if not isinstance(node, dict) or "t" not in node:
        return
    kind, content = node["t"], node.get("c")
    if kind in ("RawBlock", "RawInline") and content[0] == "html":
        out += [a or b for a, b in _LABEL.findall(content[1]) if (a or b).strip()]
        return
    if kind == "Image" and words(content[1]).strip():
        out.append(words(content[1]))
    if kind in ("Image", "Link") and content[2][1].strip():
        out.append(content[2][1])
    labels(content, out)


def compare(source: dict, translated: dict) -> dict:
    a, b = source["blocks"], translated["blocks"]
    found_a, found_b = [block_elements(x) for x in a], [block_elements(y) for y in b]

    def only(found: list[Counter], kinds: tuple[str, ...]) -> Counter:
        return sum((Counter({k: n for k, n in c.items() if k[0] in kinds}) for c in found),
                   Counter())
    code_a, code_b = only(found_a, ("Code", "CodeBlock")), only(found_b, ("Code", "CodeBlock"))
    links_a, links_b = only(found_a, ("Link",)), only(found_b, ("Link",))
    worded = [(words(x), words(y)) for x, y in zip(a, b) if words(x).strip()]
    said: tuple[list[str], list[str]] = ([], [])
    labels(a, said[0])
    labels(b, said[1])
    return {"blocks": len(a), "blocks back": len(b),
            "same kinds": [x["t"] for x in a] == [y["t"] for y in b],
            "formatting kept": sum(1 for x, y in zip(found_a, found_b) if x == y),
            "code": sum(code_a.values()), "code kept": sum((code_a & code_b).values()),
            "links": sum(links_a.values()), "links kept": sum((links_a & links_b).values()),
            "worded": len(worded), "translated": sum(1 for x, y in worded if x != y),
            "labels": len(said[0]), "labels back": len(said[1]),
            "labels translated": sum(1 for x, y in zip(*said) if x != y)}


def differences(source: dict, translated: dict) -> list[str]:
    """Each block whose elements did not come back: both as Markdown, and what is missing."""
    out = []
    for x, y in zip(source["blocks"], translated["blocks"]):
        found_x, found_y = block_elements(x), block_elements(y)
        if found_x == found_y:
            continue
        shown = [pandoc(["-f", "json", "-t", "markdown", "--wrap=none"], json.dumps(
            {**source, "blocks": [block]}).encode()).decode().strip() for block in (x, y)]
        out.append(f"- {shown[0]}\n  -> {shown[1]}\n  missing {dict(found_x - found_y)}, "
                   f"added {dict(found_y - found_x)}")
    return out


def block_elements(block) -> Counter:
    out: Counter = Counter()
    elements(block, out)
    return out


def make(document: Path, fmt: str, out: Path) -> None:
    """``document`` (Markdown) as a file of format ``fmt``, written by pandoc or LibreOffice
    (``md``: the Markdown file itself)."""
    if fmt == "md":
        shutil.copyfile(document, out)
        return
    if not fmt.startswith("lo."):
        pandoc([str(document), "-s", "-o", str(out), "--metadata", f"title={document.stem}"])
        return
    page = out.with_suffix(".html")
    pandoc([str(document), "-s", "-o", str(page), "--metadata", f"title={document.stem}"])
    filters = {"docx": "docx:MS Word 2007 XML", "odt": "odt:writer8"}
    subprocess.run(["soffice", "--headless", "--convert-to", filters[out.suffix[1:]], "--outdir",
                    str(out.parent / "lo"), str(page)], capture_output=True, check=True)
    (out.parent / "lo" / f"{page.stem}{out.suffix}").rename(out)


def opens(path: Path) -> str:
    """Whether LibreOffice opens ``path`` (and finds text in it); '-' where it is not
    installed."""
    if shutil.which("soffice") is None or path.suffix in (".epub", ".md"):  # (EPUB: it
        # writes it only; Markdown: it reads it as plain text)
        return "-"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["soffice", "--headless", "--convert-to", "txt:Text", "--outdir", tmp,
                        str(path)], capture_output=True, check=False)
        text = Path(tmp) / f"{path.stem}.txt"
        return "yes" if text.exists() and text.read_text(errors="replace").strip() else "no"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("documents", nargs="+", type=Path)
    parser.add_argument("--differences", action="store_true",
                        help="print each block whose elements did not come back")
    parser.add_argument("--formats", nargs="+", default=["docx", "odt", "html", "epub",
                                                         "lo.docx", "lo.odt"])
    args = parser.parse_args()
    if shutil.which("pandoc") is None:
        sys.exit("pandoc is not on the PATH; install it (Debian: apt-get install pandoc)")
    from aiayn.translate import load
    print(header())
    print(pandoc(["--version"]).decode().splitlines()[0])
    translator = load(args.checkpoint)
    print(f"{args.checkpoint}: {translator.languages}")
    print("| document | format | blocks (back) | kinds in order | formatting kept | code kept "
          "| links kept | translated | alt and titles translated (back) | LibreOffice opens it "
          "| seconds |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for document, fmt, path, out, seconds, printed in translations(
                translator, args.documents, args.formats, (".docx", ".odt", ".html", ".epub"),
                make, tmp, 10):
            if printed:
                print(f"({fmt}: {len(printed)} characters printed to stdout)")
            translated = Path(tmp) / f"{document.stem}.out{path.suffix}"
            translated.write_bytes(out)
            try:
                trees = [json.loads(pandoc([str(p), "-t", "json"]))
                         for p in (path, translated)]
            except SystemExit as err:  # (pandoc fails on a file given as it is)
                print(f"| {document} | {fmt} | read back failed: {str(err)[:100]} "
                      f"||||||||||", flush=True)
                continue
            r = compare(*trees)
            print(f"| {document} | {fmt} | {r['blocks']} ({r['blocks back']}) | "
                  f"{'yes' if r['same kinds'] else 'no'} | "
                  f"{r['formatting kept']}/{r['blocks']} | {r['code kept']}/{r['code']} | "
                  f"{r['links kept']}/{r['links']} | {r['translated']}/{r['worded']} | "
                  f"{r['labels translated']}/{r['labels']} ({r['labels back']}) | "
                  f"{opens(translated)} | {seconds:.1f} |", flush=True)
            if args.differences:
                print("\n".join(differences(*trees)))


if __name__ == "__main__":
    main()
