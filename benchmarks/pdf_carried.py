"""Which paragraphs of a PDF does aiayn's reading carry over into the next column or onto the
next page (translating the parts as one)? For each file: its paragraphs to translate, the
units the model gets, the running heads and feet set aside, and each join as the end of the
first part's last line and the start of the second's first, for reading by hand.

With ``--checkpoint`` and ``--corpus``, for PDFs set from a corpus's dev sentences: each dev
sentence a join cuts, translated whole (as the joined paragraph is) and as its two fragments
translated apart and put together (as each part alone was), BLEU and chrF (sacreBLEU)
against the references.

    python benchmarks/pdf_carried.py FILE.pdf [FILE.pdf ...]
    python benchmarks/pdf_carried.py --checkpoint RUN --corpus DIR --src en --tgt es FILE.pdf
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

from machine import header


class Quiet:
    def warn(self, message: str) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--checkpoint", help="a model to translate the sentences joins cut")
    parser.add_argument("--corpus", type=Path, help="the corpus whose dev sentences the PDFs set")
    parser.add_argument("--src", default="en")
    parser.add_argument("--tgt", default="es")
    args = parser.parse_args()
    print(header())
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from aiayn.documents.pdf import _carried, blocks, read_pages
    cut: list[tuple[str, str]] = []  # (first part, second part) of each join
    for path in args.files:
        document = pdfium.PdfDocument(path)
        pages, aside, words = read_pages([document[k] for k in range(len(document))], raw,
                                         Quiet())  # (the warnings unsaid)
        found = [(number, paragraph, plan) for number, (paragraphs, _) in enumerate(pages)
                 for paragraph in paragraphs
                 if (plan := blocks.markup(paragraph, words)) is not None]
        groups = _carried(found, aside)
        print(f"{path}: {len(document)} pages, {len(found)} paragraphs, {len(groups)} units, "
              f"{len(aside)} running heads and feet")
        for group in groups:
            for a, b in zip(group, group[1:]):
                (one, before, _), (other, after, _) = found[a], found[b]
                print(f"  page {one + 1} -> {other + 1}: {before.lines[-1].text[-40:]!r} | "
                      f"{after.lines[0].text[:40]!r}")
                cut.append((plain(found[a][2].markup), plain(found[b][2].markup)))
        document.close()
    if args.checkpoint and args.corpus:
        sentences_cut(cut, args)


def plain(markup: str) -> str:
    import html
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def sentences_cut(cut: list[tuple[str, str]], args) -> None:
    """Each dev sentence that a join's cut falls inside, translated whole and as its two
    fragments apart, against its reference."""
    import sacrebleu

    from aiayn.translate import load
    src = read(args.corpus / f"dev.{args.src}.gz")
    ref = read(args.corpus / f"dev.{args.tgt}.gz")
    cases = []  # (sentence index, the fragment before the cut, the one after)
    for first, second in cut:
        joint, at_cut = first + " " + second, len(first)
        for k, sentence in enumerate(src):
            at = joint.find(sentence)
            if sentence and at != -1 and at < at_cut < at + len(sentence):
                cases.append((k, sentence[:at_cut - at].strip(), sentence[at_cut - at:].strip()))
                break
    translator = load(args.checkpoint)
    whole = translator.translate([src[k] for k, _, _ in cases])
    parts = translator.translate([piece for _, a, b in cases for piece in (a, b)])
    apart = [f"{parts[2 * n]} {parts[2 * n + 1]}" for n in range(len(cases))]
    refs = [[ref[k] for k, _, _ in cases]]
    print(f"\n{len(cases)} of {len(cut)} joins cut a dev sentence ({args.checkpoint}):")
    for name, out in (("whole, as joined now", whole), ("two fragments apart, as before", apart)):
        print(f"- {name}: BLEU {sacrebleu.corpus_bleu(out, refs).score:.2f}, "
              f"chrF {sacrebleu.corpus_chrf(out, refs).score:.2f}")


def read(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().split("\n")


if __name__ == "__main__":
    main()
