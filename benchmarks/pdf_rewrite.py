"""Does PDFium draw a page the same once it has written the page's content again? Taking
text off a page (as `aiayn.documents.pdf` does) makes PDFium write the page's content anew,
and its writer cannot express everything its reader understands. For each page with text
(the first five of each file), one text object is taken off and put back, the page's
content written again, the file saved and read back, and the page drawn (grey, 36 dots an
inch) against the original drawing: a page differs where more than 0.2% of its dots differ
by more than an eighth of the range, the test `translate_pdf` applies before keeping a
translated page.

    python benchmarks/pdf_rewrite.py FILE.pdf [FILE.pdf ...]
"""

from __future__ import annotations

import argparse
import io

import numpy as np
from machine import header


def drawn(page):
    return page.render(scale=0.5, grayscale=True).to_numpy().astype(np.int16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    print(header())
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    pages = differ = 0
    for name in args.files:
        data = open(name, "rb").read()
        try:
            original, changed = pdfium.PdfDocument(data), pdfium.PdfDocument(data)
            touched = []
            for k in range(min(len(changed), 5)):
                page = changed[k]
                objects = [raw.FPDFPage_GetObject(page.raw, j)
                           for j in range(raw.FPDFPage_CountObjects(page.raw))]
                texts = [o for o in objects if raw.FPDFPageObj_GetType(o) ==
                         raw.FPDF_PAGEOBJ_TEXT]
                if texts:
                    raw.FPDFPage_RemoveObject(page.raw, texts[-1])
                    raw.FPDFPage_InsertObject(page.raw, texts[-1])
                    raw.FPDFPage_GenerateContent(page.raw)
                    touched.append(k)
            buffer = io.BytesIO()
            changed.save(buffer)
            written = pdfium.PdfDocument(buffer.getvalue())
            for k in touched:
                a, b = drawn(original[k]), drawn(written[k])
                pages += 1
                share = float(np.mean(np.abs(a - b) > 32)) if a.shape == b.shape else 1.0
                if share > 0.002:
                    differ += 1
                    print(f"{name} page {k + 1}: {share:.1%} of the dots differ", flush=True)
        except Exception as err:  # a file PDFium cannot read or draw is not counted
            print(f"{name}: skipped ({type(err).__name__})", flush=True)
    print(f"{differ} of {pages} pages with text draw otherwise once written again")


if __name__ == "__main__":
    main()
