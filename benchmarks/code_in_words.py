"""Code over part of a word in real HTML (``<code>Buffer</code>s``, ``<code>printf</code>-like``,
``<code>config</code>.yml``): does the translation keep the word it is part of?

    python benchmarks/code_in_words.py --checkpoint RUN /usr/share/doc/nodejs/api/*.html \\
        [--limit 200]

Every paragraph (``<p>``, ``<li>``) of the pages that holds a ``<code>``, ``<tt>`` or
``<kbd>`` glued to letters or digits of its word is translated through the markup path
(``Translator.translate_markup``), and its sentences' plain text through ``translate``
(sentences split as the markup path splits them). Counts: code elements kept character for
character; code elements glued to a letter or digit of their word (``s``, ``-like``,
``.yml``) that are still glued to one in the translation (the word around them kept, not
written over); paragraphs whose translation, tags taken out, reads as the plain translation
(what the model wrote, none of it written over by code); characters of the plain
translation missing from the tag-stripped one. To measure another checkout, put its
``src`` first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import difflib
import html
import re
import time
from pathlib import Path

from machine import header

GLUED = re.compile(r"<(code|tt|kbd)\b[^>]*>[^<]{1,60}</\1>[.,;:'’-]?[A-Za-z0-9]")
# a code element with a letter or digit of its word glued before or after it
IN_WORD = re.compile(r"(?<=[A-Za-z0-9])(<(code|tt|kbd)\b[^>]*>[^<]*?</\2>)|"
                     r"(<(code|tt|kbd)\b[^>]*>[^<]*?</\4>)(?=[.,;:'’-]?[A-Za-zÀ-ÿ0-9])")
BLOCK = re.compile(r"<(p|li)\b[^>]*>(.*?)</\1>", re.S)
CODE = re.compile(r"<(code|tt|kbd)\b[^>]*>.*?</\1>", re.S)
TAG = re.compile(r"<[^>]+>")


def text(markup: str) -> str:
    return " ".join(html.unescape(TAG.sub("", markup)).split())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("pages", nargs="+", type=Path)
    p.add_argument("--limit", type=int, default=200)
    args = p.parse_args()

    import aiayn
    print(header(), flush=True)
    paragraphs = []
    for page in args.pages:
        for match in BLOCK.finditer(page.read_text(encoding="utf-8", errors="replace")):
            inner = match.group(2)
            if GLUED.search(inner) and "<p" not in inner and "<li" not in inner:
                paragraphs.append(f"<p>{inner.strip()}</p>")
    paragraphs = list(dict.fromkeys(paragraphs))[:args.limit]
    translator = aiayn.load(args.checkpoint)
    t0 = time.perf_counter()
    marked = translator.translate_markup(paragraphs, "html")
    seconds = time.perf_counter() - t0
    plain = translator.translate([text(p) for p in paragraphs], split_sentences=True)
    codes = kept = same = glued = still = 0
    lost = total = 0
    for source, out, reference in zip(paragraphs, marked, plain):
        wanted = CODE.findall(source)
        found = [m.group(0) for m in CODE.finditer(out)]
        codes += len(wanted)
        source_codes = [m.group(0) for m in CODE.finditer(source)]
        kept += sum(min(source_codes.count(c), found.count(c)) for c in set(source_codes))
        inside = [m.group(1) or m.group(3) for m in IN_WORD.finditer(source)]
        out_inside = [m.group(1) or m.group(3) for m in IN_WORD.finditer(out)]
        glued += len(inside)
        still += sum(min(inside.count(c), out_inside.count(c)) for c in set(inside))
        stripped = text(out)
        same += stripped == " ".join(reference.split())
        matcher = difflib.SequenceMatcher(None, " ".join(reference.split()), stripped,
                                          autojunk=False)
        total += len(" ".join(reference.split()))
        lost += sum(i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes()
                    if tag in ("delete", "replace"))
    print(f"\n{len(paragraphs)} paragraphs with code glued to its word, from "
          f"{len(args.pages)} pages; {codes} code elements\n")
    print("| measure | result |\n|---|---:|")
    print(f"| code elements kept character for character | {kept}/{codes} |")
    print(f"| code elements part of a word that are part of a word in the translation | "
          f"{still}/{glued} |")
    print(f"| paragraphs whose tag-stripped translation is the plain translation | "
          f"{same}/{len(paragraphs)} |")
    print(f"| characters of the plain translation missing from the tag-stripped one | "
          f"{lost}/{total} = {100 * lost / max(1, total):.2f}% |")
    print(f"| seconds (markup path) | {seconds:.1f} |")


if __name__ == "__main__":
    main()
