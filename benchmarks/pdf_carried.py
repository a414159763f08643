"""Which paragraphs of a PDF does aiayn's reading carry over into the next column or onto the
next page (translating the parts as one)? For each file: its paragraphs to translate, the
units the model gets, the running heads and feet set aside, and each join as the end of the
first part's last line and the start of the second's first, for reading by hand.

    python benchmarks/pdf_carried.py FILE.pdf [FILE.pdf ...]
"""

from __future__ import annotations

import argparse

from machine import header


class Quiet:
    def warn(self, message: str) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    print(header())
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from aiayn.documents.pdf import _carried, blocks
    for path in args.files:
        document = pdfium.PdfDocument(path)
        pages = []
        for number in range(len(document)):
            page = document[number]
            textpage = page.get_textpage()
            pages.append(blocks.page_paragraphs(textpage, page, raw, Quiet(), number + 1)[0])
            textpage.close()
        aside = blocks.furniture(pages)
        for paragraphs in pages:
            blocks.place_in_columns(paragraphs, aside)
        found = [(number, paragraph, plan) for number, paragraphs in enumerate(pages)
                 for paragraph in paragraphs if (plan := blocks.markup(paragraph)) is not None]
        groups = _carried(found, aside)
        print(f"{path}: {len(document)} pages, {len(found)} paragraphs, {len(groups)} units, "
              f"{len(aside)} running heads and feet")
        for group in groups:
            for a, b in zip(group, group[1:]):
                (one, before, _), (other, after, _) = found[a], found[b]
                print(f"  page {one + 1} -> {other + 1}: {before.lines[-1].text[-40:]!r} | "
                      f"{after.lines[0].text[:40]!r}")
        document.close()


if __name__ == "__main__":
    main()
