"""Writes the OpenDocument text the PDF logs print with LibreOffice: 300 Bible dev verses in
50 justified paragraphs of six, with a running head and a "Page N" foot on every A4 page,
in one column or in two.

    python docs/runs/odt-bible-header-footer.py ../shared/data/bible-en-es OUT.odt [--columns 2]
    soffice --headless --convert-to pdf OUT.odt
"""

import argparse
import gzip
from pathlib import Path

from odf.opendocument import OpenDocumentText
from odf.style import (
    Columns,
    Footer,
    Header,
    MasterPage,
    PageLayout,
    PageLayoutProperties,
    ParagraphProperties,
    Style,
    TextProperties,
)
from odf.text import P, PageNumber

parser = argparse.ArgumentParser()
parser.add_argument("corpus", type=Path)
parser.add_argument("out")
parser.add_argument("--columns", type=int, default=1)
args = parser.parse_args()
doc = OpenDocumentText()
page = PageLayoutProperties(pagewidth="21cm", pageheight="29.7cm", margintop="2cm",
                            marginbottom="2cm", marginleft="2cm", marginright="2cm")
if args.columns > 1:
    page.addElement(Columns(columncount=str(args.columns), columngap="0.8cm"))
layout = PageLayout(name="pl")
layout.addElement(page)
doc.automaticstyles.addElement(layout)
master = MasterPage(name="Standard", pagelayoutname=layout)
head, foot = Header(), Footer()
head.addElement(P(text="Bible verses, a test document"))
number = P(text="Page ")
number.addElement(PageNumber(selectpage="current"))
foot.addElement(number)
master.addElement(head)
master.addElement(foot)
doc.masterstyles.addElement(master)
body = Style(name="Body", family="paragraph")
body.addElement(ParagraphProperties(textalign="justify", marginbottom="0.3cm"))
body.addElement(TextProperties(fontsize="11pt"))
doc.styles.addElement(body)
verses = gzip.open(args.corpus / "dev.en.gz", "rt", encoding="utf-8").read().split("\n")
for k in range(0, 300, 6):
    doc.text.addElement(P(stylename=body, text=" ".join(verses[k:k + 6])))
doc.save(args.out)
