"""Files translated whole, in their own format, through the command line and through
LibreTranslate's /translate_file with a real client; every bad file is one line and writes
nothing."""

import codecs
import io
import re

import pytest

from aiayn.cli import main
from aiayn.errors import UserError
from aiayn.translate import load
from tests.conftest import toy_pairs
from tests.test_cli import fails

SENTENCES = [s for s, _ in toy_pairs(8, seed=40)]


@pytest.fixture(scope="module")
def translator(toy_model):
    return load(toy_model, compile=False)


def run(toy_model, path, out, *extra):
    assert main(["translate", "--checkpoint", str(toy_model), "--no-compile", "--file",
                 str(path), "-o", str(out), *extra]) == 0
    return out.read_bytes()


def test_text_keeps_its_lines(toy_model, translator, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text(f"{SENTENCES[0]}\n\n  {SENTENCES[1]}\r\n{SENTENCES[2]}", encoding="utf-8")
    out = run(toy_model, path, tmp_path / "out.txt").decode()
    a, b, c = translator.translate(SENTENCES[:3])
    assert out == f"{a}\n\n  {b}\r\n{c}"


def test_subtitles_keep_numbers_timings_and_line_counts(toy_model, translator, tmp_path):
    path = tmp_path / "in.srt"
    path.write_text(f"1\n00:00:01,000 --> 00:00:02,500\n{SENTENCES[3]}\n{SENTENCES[4]}\n\n"
                    f"2\n00:00:03,000 --> 00:00:04,000\n{SENTENCES[5]}\n", encoding="utf-8")
    out = run(toy_model, path, tmp_path / "out.srt").decode().split("\n\n")
    first = out[0].split("\n")
    assert first[:2] == ["1", "00:00:01,000 --> 00:00:02,500"] and len(first) == 4
    assert " ".join(first[2:]) == translator.translate([f"{SENTENCES[3]} {SENTENCES[4]}"])[0]
    assert out[1].strip() == f"2\n00:00:03,000 --> 00:00:04,000\n" \
                             f"{translator.translate([SENTENCES[5]])[0]}"


@pytest.mark.parametrize("encoding,mark", [
    ("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-32-le", codecs.BOM_UTF32_LE), ("utf-8", codecs.BOM_UTF8)])
def test_a_file_is_written_back_in_its_own_encoding_and_line_ends(toy_model, translator,
                                                                 tmp_path, encoding, mark):
    """Windows tools save "Unicode" subtitles as UTF-16 with a byte order mark and CRLF."""
    text = (f"1\r\n00:00:01,000 --> 00:00:02,500\r\n{SENTENCES[3]}\r\n\r\n"
            f"2\r\n00:00:03,000 --> 00:00:04,000\r\n{SENTENCES[5]}\r\n")
    path = tmp_path / "in.srt"
    path.write_bytes(mark + text.encode(encoding))
    out = run(toy_model, path, tmp_path / "out.srt")
    assert out.startswith(mark)
    a, b = translator.translate([SENTENCES[3], SENTENCES[5]])
    assert out[len(mark):].decode(encoding) == (
        f"1\r\n00:00:01,000 --> 00:00:02,500\r\n{a}\r\n\r\n"
        f"2\r\n00:00:03,000 --> 00:00:04,000\r\n{b}\r\n")
    path = tmp_path / "in.txt"
    path.write_bytes(mark + f"{SENTENCES[0]}\n".encode(encoding))
    assert run(toy_model, path, tmp_path / "out.txt") == \
        mark + f"{translator.translate([SENTENCES[0]])[0]}\n".encode(encoding)


def test_markup_and_catalogs_in_the_encoding_they_declare(toy_model, translator, tmp_path):
    """A page or catalog that says it is in Latin-1 is read and written in it; a page's
    characters that its encoding lacks become character references."""
    page = (f'<html><head><meta charset="ISO-8859-1"></head><body><p title="caf\xe9">'
            f'{SENTENCES[1]}</p><p translate="no">na\xefve \u201cquoted\u201d</p></body></html>')
    path = tmp_path / "in.html"
    path.write_bytes(page.encode("cp1252"))  # browsers read ISO-8859-1 as windows-1252
    out = run(toy_model, path, tmp_path / "out.html")
    expected = translator.translate_markup([page], "html")[0].encode("cp1252")
    assert out == expected and b"na\xefve \x93quoted\x94" in out
    xml = f'<?xml version="1.0" encoding="ISO-8859-1"?>\n<doc><p>{SENTENCES[2]}</p>' \
          '<p translate="no">\xe9t\xe9</p></doc>'
    path = tmp_path / "in.xml"
    path.write_bytes(xml.encode("latin-1"))
    out = run(toy_model, path, tmp_path / "out.xml")
    assert out == translator.translate_markup([xml], "xml")[0].encode("latin-1")
    from aiayn.data.charset import Charset
    assert Charset("iso8859-1", markup=True).write("\u0151 \xe9") == b"&#337; \xe9"
    with pytest.raises(UserError, match="holds '\u0151'.*cannot hold; convert the file to UTF-8"):
        Charset("iso8859-1").write("\u0151")
    import polib
    po = polib.POFile(encoding="iso-8859-1")
    po.metadata = {"Content-Type": "text/plain; charset=ISO-8859-1"}
    po.append(polib.POEntry(msgid=SENTENCES[0], msgstr=""))
    po.append(polib.POEntry(msgid=SENTENCES[1], msgstr="d\xe9j\xe0 traduit"))
    path = tmp_path / "in.po"
    po.save(str(path))
    assert b"d\xe9j\xe0" in path.read_bytes()  # written in Latin-1
    out = polib.pofile(run(toy_model, path, tmp_path / "out.po").decode("latin-1"))
    assert out.find(SENTENCES[0]).msgstr == translator.translate([SENTENCES[0]])[0]
    assert out.find(SENTENCES[1]).msgstr == "d\xe9j\xe0 traduit"


def catalog(tmp_path):
    import polib
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8",
                   "Plural-Forms": "nplurals=3; plural=(n==1 ? 0 : 1);"}
    po.append(polib.POEntry(msgid=SENTENCES[0], msgstr="", occurrences=[("a.c", "3")]))
    po.append(polib.POEntry(msgid=SENTENCES[1], msgid_plural=SENTENCES[2],
                            msgstr_plural={0: "", 1: "", 2: ""}, flags=["c-format"]))
    po.append(polib.POEntry(msgid=SENTENCES[3], msgstr="KEPT AS IT WAS"))
    po.append(polib.POEntry(msgid=SENTENCES[4], msgctxt="menu", msgstr=""))
    path = tmp_path / "in.po"
    po.save(str(path))
    return path


def test_gettext_entries_plurals_context_and_existing_translations(toy_model, translator,
                                                                    tmp_path):
    import polib
    path = catalog(tmp_path)
    out = polib.pofile(run(toy_model, path, tmp_path / "out.po").decode())
    t = translator.translate(SENTENCES[:5])
    first, plural, kept, menu = list(out)
    assert first.msgstr == t[0] and "fuzzy" in first.flags and first.occurrences == [("a.c", "3")]
    assert plural.msgstr_plural == {0: t[1], 1: t[2], 2: t[2]}
    assert plural.flags == ["fuzzy", "c-format"]
    assert kept.msgstr == "KEPT AS IT WAS" and "fuzzy" not in kept.flags
    assert menu.msgctxt == "menu" and menu.msgstr == t[4]
    again = polib.pofile(run(toy_model, path, tmp_path / "again.po", "--overwrite").decode())
    assert list(again)[2].msgstr == t[3]


@pytest.mark.parametrize("header,singular", [
    # Arabic: form 0 is for none, 1 for one, 2 for two, 3-5 for the rest
    ("nplurals=6; plural=n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 : "
     "n%100>=11 ? 4 : 5;", 1),
    ("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n != 0 ? 1 : 2);", 0),  # Latvian
    ("nplurals=2; plural=(n > 1);", 0),  # French: 0 and 1 take the first
    ("nplurals=2; plural=n ==== 1;", 0),  # unreadable: the first
])
def test_a_catalog_s_singular_goes_to_the_form_its_plural_rule_gives_one(
        toy_model, translator, tmp_path, header, singular):
    """The singular's translation goes to the form the catalog's Plural-Forms gives a count
    of one, every other form gets the plural's: msgstr[0] is Arabic's form for none."""
    import polib
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Plural-Forms": header}
    count = int(header.split("=")[1].split(";")[0])
    po.append(polib.POEntry(msgid=SENTENCES[1], msgid_plural=SENTENCES[2],
                            msgstr_plural={k: "" for k in range(count)}))
    po.save(str(tmp_path / "in.po"))
    out = polib.pofile(run(toy_model, tmp_path / "in.po", tmp_path / "out.po").decode())
    one, other = translator.translate(SENTENCES[1:3])
    assert out[0].msgstr_plural == {k: one if k == singular else other for k in range(count)}


def test_word_documents_keep_bold_italic_and_tables(toy_model, translator, tmp_path):
    import docx
    words = SENTENCES[6].split()
    document = docx.Document()
    paragraph = document.add_paragraph(words[0] + " ")
    paragraph.add_run(words[1]).bold = True
    paragraph.add_run(" " + " ".join(words[2:-1]) + " ")
    paragraph.add_run(words[-1]).italic = True
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = SENTENCES[7]
    table.cell(0, 1).text = "SKU-4471-B"  # a cell's one code-like token: as written
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / "out.docx")))
    runs = out.paragraphs[0].runs
    text = "".join(r.text for r in runs)
    assert " ".join(text.split()) == translator.translate([SENTENCES[6]])[0]
    bold = [r.text for r in runs if r.bold]
    italic = [r.text for r in runs if r.italic]
    assert len(bold) == 1 and len(italic) == 1  # each formatting carried onto one stretch
    assert out.tables[0].cell(0, 0).text == translator.translate([SENTENCES[7]])[0]
    assert out.tables[0].cell(0, 1).text == "SKU-4471-B"
    # the document says it is in the target language now (python-docx's template: en-US,
    # with ar-SA for complex scripts, which stays)
    from docx.oxml.ns import qn
    lang = out.styles.element.find(f".//{qn('w:lang')}")
    assert [lang.get(qn(k)) for k in ("w:val", "w:eastAsia", "w:bidi")] == ["es", "es", "ar-SA"]


@pytest.fixture
def into_hebrew(translator):
    """The toy model, as if it translated into Hebrew (a language written right to left)."""
    import copy
    hebrew = copy.copy(translator)
    hebrew.languages = {"source": "en", "target": "he"}
    return hebrew


def test_word_documents_translated_right_to_left_read_right_to_left(into_hebrew):
    import docx
    from docx.oxml.ns import qn

    from aiayn.documents import translate_document
    words = SENTENCES[6].split()
    document = docx.Document()
    paragraph = document.add_paragraph(words[0] + " ", style="Heading 1")
    paragraph.add_run(" ".join(words[1:-1]) + " ").bold = True
    paragraph.add_run(words[-1]).font.size = docx.shared.Pt(14)
    document.add_paragraph("print(x)", style="Normal").runs[0].font.name = "Courier New"
    code = document.add_paragraph("SKU-4471-B")  # (code-like: as written, left to right)
    code.style = document.styles.add_style("Source Code", docx.enum.style.WD_STYLE_TYPE.PARAGRAPH)
    buffer = io.BytesIO()
    document.save(buffer)
    out = docx.Document(io.BytesIO(translate_document(into_hebrew, buffer.getvalue(), ".docx")))
    heading = out.paragraphs[0]._p
    assert heading.pPr.find(qn("w:bidi")) is not None
    runs = heading.findall(qn("w:r"))
    assert runs and all(r.rPr.find(qn("w:rtl")) is not None for r in runs)
    bold = [r for r in runs if r.rPr.find(qn("w:b")) is not None]
    assert bold and all(r.rPr.find(qn("w:bCs")) is not None for r in bold)
    sized = [r for r in runs if r.rPr.find(qn("w:sz")) is not None]
    assert sized and all(r.rPr.find(qn("w:szCs")).get(qn("w:val")) == "28" for r in sized)
    assert out.paragraphs[2]._p.pPr.find(qn("w:bidi")) is None  # the code paragraph
    # the styles' bold (Heading 1's, python-docx's template) holds for complex scripts too
    style = out.styles["Heading 1"].element.rPr
    assert (style.find(qn("w:b")) is None) == (style.find(qn("w:bCs")) is None)
    # every property in the schema's order, as Word requires: python-docx reads each back
    for run in runs:
        order = [child.tag.split("}")[1] for child in run.rPr]
        from aiayn.documents.direction import _RUN_ORDER
        assert order == sorted(order, key=_RUN_ORDER.index)


def test_powerpoint_slides_translated_right_to_left_read_right_to_left(into_hebrew):
    import pptx
    from pptx.enum.text import PP_ALIGN
    from pptx.util import Inches

    from aiayn.documents import translate_document
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = SENTENCES[0]
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame
    box.text = SENTENCES[1]
    box.paragraphs[0].alignment = PP_ALIGN.LEFT
    centred = box.add_paragraph()
    centred.text, centred.alignment = SENTENCES[2], PP_ALIGN.CENTER
    buffer = io.BytesIO()
    deck.save(buffer)
    out = pptx.Presentation(io.BytesIO(translate_document(into_hebrew, buffer.getvalue(),
                                                          ".pptx")))
    shapes = out.slides[0].shapes
    title = shapes.title.text_frame.paragraphs[0]._p.pPr
    assert title.get("rtl") == "1" and title.get("algn") is None  # the master's, inherited
    left, centre = (p._p.pPr for p in shapes[-1].text_frame.paragraphs)
    assert (left.get("rtl"), left.get("algn")) == ("1", "r")  # left, mirrored
    assert (centre.get("rtl"), centre.get("algn")) == ("1", "ctr")
    # the master's text styles: right to left, left alignment (stated or by default) mirrored
    from pptx.oxml.ns import qn
    styles = out.slide_masters[0].element.find(qn("p:txStyles"))
    levels = [e for e in styles.iter() if e.tag.endswith("pPr") and "lvl" in e.tag]
    assert levels and all(e.get("rtl") == "1" and e.get("algn") != "l" for e in levels)
    assert {e.get("algn") for e in levels} <= {"r", "ctr", "just", "dist"}


def test_excel_text_cells_translated_right_to_left_read_right_to_left(into_hebrew):
    import openpyxl
    from openpyxl.styles import Alignment

    from aiayn.documents import translate_document
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"], sheet["A2"], sheet["A3"] = SENTENCES[0], SENTENCES[1], 42
    sheet["A2"].alignment = Alignment(horizontal="left", wrap_text=True)
    sheet["A4"] = SENTENCES[0]  # (a second cell of the same format: one copy for both)
    sheet["B1"] = "SKU-4471-B"  # a code, as written
    sheet["A3"].alignment = Alignment(horizontal="left")
    buffer = io.BytesIO()
    book.save(buffer)
    out = openpyxl.load_workbook(io.BytesIO(translate_document(into_hebrew, buffer.getvalue(),
                                                               ".xlsx"))).active
    assert out["A1"].value != SENTENCES[0]
    assert out["A1"].alignment.readingOrder == 2 and out["A1"].alignment.horizontal is None
    assert (out["A2"].alignment.readingOrder, out["A2"].alignment.horizontal,
            out["A2"].alignment.wrap_text) == (2, "right", True)  # left mirrored, the rest kept
    assert out["A4"].style_id == out["A1"].style_id
    # a number and a code stay as they were, in their own formats
    assert (out["A3"].alignment.readingOrder, out["A3"].alignment.horizontal) == (0, "left")
    assert out["B1"].value == "SKU-4471-B" and out["B1"].alignment.readingOrder == 0


def test_word_runs_formatted_as_their_paragraph_are_plain_text(toy_model, translator,
                                                               tmp_path):
    """Runs that carry the paragraph's own properties (LibreOffice writes an empty rPr on
    every run, Word often a language) are plain text, written back with those properties:
    only the bold run is a span to place, not every stretch between two spans."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn
    words = SENTENCES[3].split()
    document = docx.Document()
    paragraph = document.add_paragraph()
    for k, text in enumerate([words[0] + " ", words[1], " " + " ".join(words[2:-1]) + " ",
                              words[-1]]):
        run = paragraph.add_run(text)
        lang = OxmlElement("w:lang")
        lang.set(qn("w:val"), "en-US")
        run._r.get_or_add_rPr().append(lang)
        run.bold = k == 1 or None
    empty = document.add_paragraph()
    empty.add_run(SENTENCES[4])._r.get_or_add_rPr()  # <w:rPr/>, as LibreOffice writes it
    path = tmp_path / "in.docx"
    document.save(str(path))
    spans = []
    original = translator.translate_markup
    translator.translate_markup = lambda docs, *a, **k: spans.extend(docs) or \
        original(docs, *a, **k)
    from aiayn.documents import translate_document
    try:
        out = docx.Document(io.BytesIO(translate_document(translator, path.read_bytes(),
                                                          ".docx")))
    finally:
        del translator.translate_markup  # (the class's method again, not a copy bound here)
    assert spans[0].count("<span") == 1 and "<span" not in spans[1]  # only the bold run
    runs = out.paragraphs[0].runs
    assert [r.text for r in runs if r.bold] and len([r for r in runs if r.bold]) == 1
    assert all(r._r.rPr is not None and r._r.rPr.find(qn("w:lang")) is not None for r in runs)
    assert " ".join(out.paragraphs[0].text.split()) == translator.translate([SENTENCES[3]])[0]
    assert out.paragraphs[1].text == translator.translate([SENTENCES[4]])[0]


W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def with_footnote(docx_bytes: bytes, note: str) -> bytes:
    """A .docx given a footnotes part holding ``note``, referenced after the first
    paragraph's second word, as Word and pandoc write footnotes (python-docx writes none)."""
    import re
    import zipfile
    source = zipfile.ZipFile(io.BytesIO(docx_bytes))
    footnotes = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                 f'<w:footnotes xmlns:w="{W_NS}">'
                 '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r>'
                 '</w:p></w:footnote>'
                 '<w:footnote w:id="1"><w:p><w:r><w:rPr><w:vertAlign w:val="superscript"/>'
                 '</w:rPr><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> </w:t></w:r>'
                 f'<w:r><w:t>{note}</w:t></w:r></w:p></w:footnote></w:footnotes>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "[Content_Types].xml":
                data = data.replace(b"</Types>", (
                    b'<Override PartName="/word/footnotes.xml" ContentType="application/'
                    b'vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"/>'
                    b"</Types>"))
            elif info.filename == "word/_rels/document.xml.rels":
                data = data.replace(b"</Relationships>", (
                    b'<Relationship Id="rIdNotes" Type="http://schemas.openxmlformats.org/'
                    b'officeDocument/2006/relationships/footnotes" Target="footnotes.xml"/>'
                    b"</Relationships>"))
            elif info.filename == "word/document.xml":
                data = re.sub(rb"(<w:r>(?:(?!</w:r>).)*</w:r>)", rb"\1<w:r><w:rPr><w:vertAlign "
                              rb'w:val="superscript"/></w:rPr><w:footnoteReference w:id="1"/>'
                              rb"</w:r>", data, count=1, flags=re.S)
            target.writestr(info, data)
        target.writestr("word/footnotes.xml", footnotes)
    return out.getvalue()


def test_word_footnotes_are_translated_and_their_references_kept(toy_model, translator,
                                                                 tmp_path):
    """Footnotes (python-docx reads them as bytes only) are translated; the body's reference
    to one is a point between words: its sentence is still translated whole."""
    import docx
    from docx.oxml.ns import qn
    words = SENTENCES[3].split()
    document = docx.Document()
    paragraph = document.add_paragraph()
    paragraph.add_run(" ".join(words[:2]))
    paragraph.add_run(" " + " ".join(words[2:]))
    buffer = io.BytesIO()
    document.save(buffer)
    path = tmp_path / "in.docx"
    path.write_bytes(with_footnote(buffer.getvalue(), SENTENCES[4]))
    out = run(toy_model, path, tmp_path / "out.docx")
    translated = docx.Document(io.BytesIO(out))
    body = translated.paragraphs[0]
    assert " ".join(body.text.split()) == translator.translate([SENTENCES[3]])[0]  # whole
    assert len(body._p.findall(f".//{qn('w:footnoteReference')}")) == 1
    import zipfile
    notes = zipfile.ZipFile(io.BytesIO(out)).read("word/footnotes.xml").decode()
    assert translator.translate([SENTENCES[4]])[0] in notes and SENTENCES[4] not in notes
    assert "<w:footnoteRef/>" in notes and "<w:separator/>" in notes


def png() -> bytes:
    """A one-pixel PNG."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def test_a_picture_in_a_word_paragraph_is_a_point_of_its_sentence(toy_model, translator,
                                                                  tmp_path):
    """A picture in the line (an icon, a screenshot) stays in its paragraph, which is
    translated whole, not run by run."""
    import docx
    from docx.oxml.ns import qn
    words = SENTENCES[4].split()
    document = docx.Document()
    paragraph = document.add_paragraph(" ".join(words[:2]) + " ")
    paragraph.add_run().add_picture(io.BytesIO(png()))
    paragraph.add_run(" " + " ".join(words[2:]))
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / "out.docx")))
    translated = out.paragraphs[0]
    assert " ".join(translated.text.split()) == translator.translate([SENTENCES[4]])[0]
    assert len(translated._p.findall(f".//{qn('w:drawing')}")) == 1


def test_line_breaks_and_tabs_end_lines_in_word_and_opendocument(toy_model, translator,
                                                                 tmp_path):
    """Word and LibreOffice write a line break or a tab between two lines' words without a
    space: the lines are translated apart and the break or tab stays between them, not run
    together into one word ("rho" + "omega" as "rhoomega")."""
    import docx
    from odf import teletype, text
    from odf.opendocument import OpenDocumentText, load
    words = SENTENCES[2].split()
    lines = [" ".join(words[:2]), " ".join(words[2:])]
    expected = translator.translate(lines)
    for kind in ("break", "tab"):
        document = docx.Document()
        paragraph = document.add_paragraph(lines[0])
        point = paragraph.add_run()
        point.add_break() if kind == "break" else point.add_tab()
        paragraph.add_run(lines[1])
        path = tmp_path / f"{kind}.docx"
        document.save(str(path))
        out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / f"out-{kind}.docx")))
        assert out.paragraphs[0].text == ("\n" if kind == "break" else "\t").join(expected)
    document = OpenDocumentText()
    paragraph = text.P(text=lines[0])
    paragraph.addElement(text.LineBreak())
    paragraph.addText(lines[1])
    paragraph.addElement(text.Tab())
    paragraph.addText(lines[0])
    document.text.addElement(paragraph)
    path = tmp_path / "in.odt"
    saved(document, path)
    out = load(io.BytesIO(run(toy_model, path, tmp_path / "out.odt")))
    said = teletype.extractText(out.getElementsByType(text.P)[0])
    assert said == f"{expected[0]}\n{expected[1]}\t{expected[0]}"


def test_xml_comments_and_entity_references_in_a_word_paragraph(toy_model, translator,
                                                                tmp_path):
    """A paragraph holding an XML comment (or an unresolved entity's reference, as in a file
    built to test parsers) is translated run by run around it; it was a traceback."""
    import docx
    from lxml import etree
    document = docx.Document()
    paragraph = document.add_paragraph(SENTENCES[2])
    paragraph._p.append(etree.Comment(" kept "))
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = run(toy_model, path, tmp_path / "out.docx")
    assert docx.Document(io.BytesIO(out)).paragraphs[0].text == \
        translator.translate([SENTENCES[2]])[0]
    assert b"<!-- kept -->" in zipfile_member(out, "word/document.xml")


def zipfile_member(data: bytes, name: str) -> bytes:
    import zipfile
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        return package.read(name)


def test_a_merged_word_cell_is_translated_once(toy_model):
    """python-docx lists a merged cell once for each grid cell it spans; its paragraphs are
    translated once."""
    import docx

    from aiayn.documents import word
    document = docx.Document()
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).merge(table.cell(1, 1)).text = SENTENCES[0]
    assert len([c for row in table.rows for c in row.cells]) == 4  # (the same cell, 4 times)
    assert [p.text for p in word._paragraphs(document)] == [SENTENCES[0]]


def test_word_comments_are_translated_and_cover_their_paragraph(toy_model, translator,
                                                                tmp_path):
    """A comment (python-docx writes it as Word does) no longer makes its paragraph go run by
    run: the paragraph is translated whole and is the comment's range, its start before the
    words, its end and the comment's mark after them; the comment's own text is translated."""
    import docx
    from docx.oxml.ns import qn
    words = SENTENCES[2].split()
    document = docx.Document()
    paragraph = document.add_paragraph(words[0] + " ")
    commented = paragraph.add_run(" ".join(words[1:3]))
    paragraph.add_run(" " + " ".join(words[3:]))
    document.add_comment(commented, text=SENTENCES[5], author="Ann Author", initials="AA")
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / "out.docx")))
    translated = out.paragraphs[0]
    assert translated.text == translator.translate([SENTENCES[2]])[0]
    names = [c.tag.rsplit("}", 1)[1] for c in translated._p if c.tag != qn("w:pPr")]
    assert names[0] == "commentRangeStart" and names[-2] == "commentRangeEnd"
    assert translated._p[-1].find(qn("w:commentReference")) is not None
    comment = next(iter(out.comments))
    assert comment.text == translator.translate([SENTENCES[5]])[0]
    assert comment.author == "Ann Author"


def tracked(xml: str) -> str:
    """Word's markup of tracked changes around ``xml`` (runs): inserted and deleted."""
    return xml.replace("<ins>", '<w:ins w:id="1" w:author="R" w:date="2026-01-01T00:00:00Z">'
                       ).replace("</ins>", "</w:ins>").replace(
        "<del>", '<w:del w:id="2" w:author="R" w:date="2026-01-01T00:00:00Z">').replace(
        "</del>", "</w:del>")


def test_word_tracked_changes_are_accepted(toy_model, translator, tmp_path, capsys):
    """The translation reads as the document does with its tracked changes accepted: text
    inserted is translated with its sentence, text deleted goes, a deleted paragraph mark
    joins two paragraphs, a deleted table row goes, earlier formatting's records go; one
    warning says so."""
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls
    one, two, three = (s.split() for s in SENTENCES[:3])
    document = docx.Document()
    body = document.element.body

    def r(text: str, deleted: bool = False) -> str:
        tag = "w:delText" if deleted else "w:t"
        return f'<w:r><{tag} xml:space="preserve">{text}</{tag}></w:r>'
    paragraphs = [
        # words inserted, words deleted, and bold that was not bold before
        f'<w:p {nsdecls("w")}>{r(one[0] + " ")}<ins>{r(" ".join(one[1:3]) + " ")}</ins>'
        f'<del>{r("gone words ", True)}</del><w:r><w:rPr><w:b/><w:rPrChange w:id="3" '
        f'w:author="R" w:date="2026-01-01T00:00:00Z"><w:rPr/></w:rPrChange></w:rPr>'
        f'<w:t>{" ".join(one[3:])}</w:t></w:r></w:p>',
        # a paragraph whose mark is deleted: its words join the next paragraph's
        f'<w:p {nsdecls("w")}><w:pPr><w:rPr><del></del></w:rPr></w:pPr>'
        f'{r(" ".join(two[:2]) + " ")}</w:p>',
        f'<w:p {nsdecls("w")}><w:pPr><w:jc w:val="center"/></w:pPr>{r(" ".join(two[2:]))}'
        f'</w:p>',
    ]
    for xml in paragraphs:
        body.insert(len(body) - 1, parse_xml(tracked(xml)))
    table = document.add_table(rows=2, cols=1)
    table.cell(0, 0).text = " ".join(three)
    table.cell(1, 0).text = "row deleted"
    table.rows[1]._tr.get_or_add_trPr().append(parse_xml(
        f'<w:del {nsdecls("w")} w:id="5" w:author="R" w:date="2026-01-01T00:00:00Z"/>'))
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / "out.docx")))
    first, second, third = translator.translate(
        [" ".join(one), " ".join(two), " ".join(three)])
    assert [p.text for p in out.paragraphs] == [first, second]
    assert out.paragraphs[1].alignment is not None  # the next paragraph's properties
    assert [c.text for row in out.tables[0].rows for c in row.cells] == [third]
    xml = out.element.xml
    assert not any(name in xml for name in ("<w:ins ", "<w:del ", "w:delText", "rPrChange"))
    assert [bool(r.bold) for r in out.paragraphs[0].runs].count(True) == 1
    assert "5 tracked change(s) accepted" in capsys.readouterr().err


def test_word_runs_inside_wrappers_are_translated(toy_model, translator, tmp_path):
    """A paragraph translated run by run (it holds a field) has its runs inside a hyperlink,
    a smart tag and an inline content control translated too; the field's instruction is
    kept."""
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls
    document = docx.Document()
    r = '<w:r><w:t xml:space="preserve">{}</w:t></w:r>'.format
    words = SENTENCES[4].split()
    xml = (f'<w:p {nsdecls("w", "r")}>{r(words[0] + " ")}'
           '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
           '<w:r><w:instrText xml:space="preserve"> PAGE </w:instrText></w:r>'
           '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>1</w:t></w:r>'
           '<w:r><w:fldChar w:fldCharType="end"/></w:r>'
           f'<w:hyperlink r:id="rIdLink">{r(SENTENCES[5])}</w:hyperlink>'
           f'<w:smartTag w:uri="urn:x" w:element="place">{r(SENTENCES[6])}</w:smartTag>'
           f'<w:sdt><w:sdtContent>{r(SENTENCES[7])}</w:sdtContent></w:sdt></w:p>')
    document.element.body.insert(0, parse_xml(xml))
    document.part.relate_to("https://example.org/", docx.opc.constants.RELATIONSHIP_TYPE
                            .HYPERLINK, is_external=True)
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / "out.docx")))
    texts = [t.text for t in out.element.body[0].iter(
        "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}t")]
    assert texts == [translator.translate([words[0]])[0] + " ", translator.translate(["1"])[0],
                     *translator.translate(SENTENCES[5:8])]  # (a field's result, as before)
    assert " PAGE " in out.element.body[0].xml


def test_word_text_boxes_and_content_controls_are_translated(toy_model, translator,
                                                             tmp_path):
    """A text box's paragraphs (in a shape of a run) and a content control's (Word's table
    of contents, a template's cover page), which python-docx's paragraphs leave out, are
    translated; the paragraph holding the box keeps its own words and the box."""
    import docx
    from docx.oxml.ns import qn
    from lxml import etree
    document = docx.Document()
    paragraph = document.add_paragraph(SENTENCES[0])
    v = "urn:schemas-microsoft-com:vml"
    pict = etree.SubElement(paragraph.add_run()._r, qn("w:pict"))
    box = etree.SubElement(etree.SubElement(etree.SubElement(pict, f"{{{v}}}shape"),
                                            f"{{{v}}}textbox"), qn("w:txbxContent"))
    inner = etree.SubElement(etree.SubElement(box, qn("w:p")), qn("w:r"))
    etree.SubElement(inner, qn("w:t")).text = SENTENCES[1]
    footer = document.sections[0].footer
    footer.is_linked_to_previous = False  # (a footer of its own is looked in too)
    footer.paragraphs[0].text = SENTENCES[2]
    control = etree.SubElement(document.element.body, qn("w:sdt"))  # a content control,
    controlled = etree.SubElement(etree.SubElement(control, qn("w:sdtContent")), qn("w:p"))
    etree.SubElement(etree.SubElement(controlled, qn("w:r")), qn("w:t")).text = SENTENCES[3]
    document.element.body.append(document.element.body.sectPr)  # (before the section's end)
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / "out.docx")))
    first, boxed, controlled = translator.translate([SENTENCES[0], SENTENCES[1], SENTENCES[3]])
    outer = out.element.body[0]  # its words translated whole, the shape among them
    assert " ".join("".join(t.text for t in r.iter(qn("w:t")) if r.find(qn("w:pict")) is None)
                    for r in outer.findall(qn("w:r"))).split() == first.split()
    box_out = next(out.element.body.iter(qn("w:txbxContent")))
    assert [t.text for t in box_out.iter(qn("w:t"))] == [boxed]
    assert controlled in [t.text for t in out.element.body.iter(qn("w:t"))]
    assert len(list(out.element.body.iter(qn("w:txbxContent")))) == 1
    assert out.sections[0].footer.paragraphs[0].text == translator.translate([SENTENCES[2]])[0]


def test_word_documents_keep_code_as_written(toy_model, translator, tmp_path):
    """Code stays as written: a paragraph in a code style (pandoc's "Source Code"), and runs
    in a code style ("Verbatim Char") or in a monospaced font their paragraph does not use; a
    paragraph all in Courier is prose, translated."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    document = docx.Document()
    document.styles.add_style("Source Code", WD_STYLE_TYPE.PARAGRAPH)
    document.styles.add_style("Verbatim Char", WD_STYLE_TYPE.CHARACTER)
    typed = document.styles.add_style("Typed", WD_STYLE_TYPE.PARAGRAPH)
    typed.font.name = "Courier New"
    document.add_paragraph(SENTENCES[0], style="Source Code")
    words = SENTENCES[1].split()
    paragraph = document.add_paragraph(" ".join(words[:2]) + " ")
    paragraph.add_run("make install", style="Verbatim Char")
    paragraph.add_run(" " + " ".join(words[2:]) + " ")
    paragraph.add_run("/etc/hosts").font.name = "Consolas"
    document.add_paragraph(style="Typed").add_run(SENTENCES[2]).font.name = "Courier New"
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / "out.docx")))
    assert out.paragraphs[0].text == SENTENCES[0]
    runs = out.paragraphs[1].runs
    assert [r.text for r in runs if r.style.name == "Verbatim Char"] == ["make install"]
    assert [r.text for r in runs if r.font.name == "Consolas"] == ["/etc/hosts"]
    words = [w for w in out.paragraphs[1].text.split() if w not in ("make", "install",
                                                                     "/etc/hosts")]
    assert words and not set(words) & set(SENTENCES[1].split())  # the rest translated
    assert out.paragraphs[2].text == translator.translate([SENTENCES[2]])[0]



def test_a_word_link_holding_code_takes_the_format_of_most_of_its_text(toy_model, tmp_path):
    """pandoc writes [`Intl` (ECMA-402) support](#intl) as a link of a code run and a plain
    one; the translated link is one run, formatted as most of its text, not as code. A link
    that is all code keeps its code as written."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn
    document = docx.Document()
    document.styles.add_style("Verbatim Char", WD_STYLE_TYPE.CHARACTER)
    paragraph = document.add_paragraph(SENTENCES[5] + " ")
    link = OxmlElement("w:hyperlink")
    link.set(qn("w:anchor"), "intl")
    paragraph._p.append(link)
    for text, style in (("alpha", "Verbatim Char"), (" beta gamma", None)):
        link.append(paragraph.add_run(text, style=style)._r)  # (moved into the link)
    paragraph.add_run(" delta ")
    code_link = OxmlElement("w:hyperlink")  # [`ensurepip`](#ensurepip): all code
    code_link.set(qn("w:anchor"), "ensurepip")
    paragraph._p.append(code_link)
    code_link.append(paragraph.add_run("alpha_beta", style="Verbatim Char")._r)
    path = tmp_path / "in.docx"
    document.save(str(path))
    out = docx.Document(io.BytesIO(run(toy_model, path, tmp_path / "out.docx")))
    links = out.paragraphs[0].hyperlinks
    assert len(links) == 2 and links[0].runs and links[1].runs
    assert all(r.style.name != "Verbatim Char" for r in links[0].runs)
    assert [(r.text, r.style.name) for r in links[1].runs] == [("alpha_beta", "Verbatim Char")]


def odt_document(words: list[str]) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.style import Style, TextProperties
    from odf.text import A, P, Span
    document = OpenDocumentText()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    document.automaticstyles.addElement(bold)
    for name, language, country in (("Body", "en", "US"), ("Quote", "fr", "FR")):
        style = Style(name=name, family="paragraph")
        style.addElement(TextProperties(language=language, country=country))
        document.styles.addElement(style)
    paragraph = P(text=words[0] + " ")
    paragraph.addElement(Span(stylename=bold, text=words[1]))
    paragraph.addText(" " + " ".join(words[2:-1]) + " ")
    paragraph.addElement(A(href="https://example.org/", text=words[-1]))
    document.text.addElement(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_opendocument_translated_right_to_left_reads_right_to_left(into_hebrew):
    from odf.opendocument import OpenDocumentText, load
    from odf.style import DefaultStyle, ParagraphProperties, Style
    from odf.text import P

    from aiayn.documents import translate_document
    document = OpenDocumentText()
    for name, parent, properties in (
            ("Left", None, dict(textalign="left", writingmode="lr-tb")),
            ("Centre", None, dict(textalign="center")),
            ("Start", None, dict(textalign="start", writingmode="page")),
            ("End", None, dict(textalign="end")),
            ("Plain", None, {}),  # the default: the side it starts on
            ("UnderCentre", "Centre", {}), ("UnderLeft", "Left", {})):
        style = Style(name=name, family="paragraph", **({"parentstylename": parent}
                                                       if parent else {}))
        if properties:
            style.addElement(ParagraphProperties(**properties))
        document.styles.addElement(style)
        document.text.addElement(P(stylename=style, text=SENTENCES[len(name) % 8]))
    buffer = io.BytesIO()
    document.save(buffer)
    out = load(io.BytesIO(translate_document(into_hebrew, buffer.getvalue(), ".odt")))
    found = {s.getAttribute("name"): (s.getElementsByType(ParagraphProperties) or [None])[0]
             for s in out.getElementsByType(Style) if s.getAttribute("family") == "paragraph"}
    # written as "right" and "left", which LibreOffice reads as other readers do (it sets a
    # right-to-left paragraph's "start" at the left)
    assert {name: p and (p.getAttribute("textalign"), p.getAttribute("writingmode"))
            for name, p in found.items()} == {"Left": ("right", "rl-tb"),
                                              "Centre": ("center", None),
                                              "Start": ("right", "rl-tb"),
                                              "End": ("left", None),
                                              "Plain": ("right", None),
                                              "UnderCentre": None,
                                              "UnderLeft": ("right", None)}
    # the default every paragraph style starts from (odfpy's documents have none: made)
    default, = [d for d in out.getElementsByType(DefaultStyle)
                if d.getAttribute("family") == "paragraph"]
    assert default.getElementsByType(ParagraphProperties)[0].getAttribute("writingmode") == \
        "rl-tb"


def test_opendocument_keeps_styled_spans_and_links(toy_model, translator, tmp_path):
    from odf import teletype, text
    from odf.opendocument import load
    words = SENTENCES[6].split() + ["alpha"]
    path = tmp_path / "in.odt"
    path.write_bytes(odt_document(words))
    out = load(io.BytesIO(run(toy_model, path, tmp_path / "out.odt")))
    paragraph = out.getElementsByType(text.P)[0]
    assert " ".join(teletype.extractText(paragraph).split()) == \
        translator.translate([" ".join(words)])[0]
    inner = [c for c in paragraph.childNodes if c.nodeType == c.ELEMENT_NODE]
    assert [c.qname[1] for c in inner] in (["span", "a"], ["a", "span"])
    link = next(c for c in inner if c.qname[1] == "a")
    assert link.getAttribute("href") == "https://example.org/"
    from odf.style import TextProperties
    languages = {(p.getAttribute("language"), p.getAttribute("country"))
                 for p in out.getElementsByType(TextProperties)} - {(None, None)}
    assert languages == {("es", None), ("fr", "FR")}  # the source's style is the target's


def test_opendocument_keeps_code_links_in_spans_and_every_member(toy_model, translator,
                                                                 tmp_path, capsys):
    """An .odt as pandoc writes it: namespace declarations on lines of their own, meta data
    odfpy could not write again, links around styled spans, code in LibreOffice's code
    styles. Code stays as written, the links keep their spans, and every member comes back:
    content and styles written again, the rest byte for byte."""
    import zipfile

    from odf import teletype, text
    from odf.opendocument import OpenDocumentText, load
    from odf.style import Style, TextProperties
    document = OpenDocumentText()
    source_text = Style(name="Source_20_Text", displayname="Source Text", family="text")
    document.styles.addElement(source_text)
    preformatted = Style(name="Preformatted_20_Text", displayname="Preformatted Text",
                         family="paragraph")
    preformatted.addElement(TextProperties(fontname="Courier New"))
    document.styles.addElement(preformatted)
    block = Style(name="P2", family="paragraph", parentstylename=preformatted)
    document.automaticstyles.addElement(block)
    definition = Style(name="Definition", family="text")
    definition.addElement(TextProperties(fontweight="bold"))
    document.styles.addElement(definition)
    document.text.addElement(text.P(stylename=block, text=SENTENCES[0]))
    words = SENTENCES[1].split()
    paragraph = text.P(text=" ".join(words[:2]) + " ")
    paragraph.addElement(text.Span(stylename=source_text, text="make install"))
    paragraph.addText(" " + " ".join(words[2:-1]) + " ")
    link = text.A(href="https://example.org/")
    link.addElement(text.Span(stylename=definition, text=words[-1]))
    paragraph.addElement(link)
    document.text.addElement(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    meta = (b'<?xml version="1.0" encoding="utf-8"?>\n<office:document-meta '
            b'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"\n'
            b'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" office:version="1.2">'
            b"\n  <office:meta>\n    <meta:generator>Pandoc/2.17.1.1</meta:generator>\n"
            b"  </office:meta>\n</office:document-meta>\n")
    members = {}
    with zipfile.ZipFile(buffer) as odt:
        for info in odt.infolist():
            data = odt.read(info)
            if info.filename in ("content.xml", "styles.xml"):
                data = data.replace(b" xmlns:", b"\nxmlns:")  # as pandoc writes them
            if info.filename in ("content.xml", "styles.xml", "META-INF/manifest.xml"):
                data = data.replace(b'version="1.2"', b'version="1.3"')  # as LibreOffice
            members[info.filename] = (info.compress_type, meta if info.filename == "meta.xml"
                                      else data)
    members["Thumbnails/thumbnail.png"] = (zipfile.ZIP_DEFLATED, b"\x89PNG not read")
    path = tmp_path / "in.odt"
    with zipfile.ZipFile(path, "w") as odt:
        for name, (compression, data) in members.items():
            odt.writestr(name, data, compress_type=compression)
    out = run(toy_model, path, tmp_path / "out.odt")
    assert not capsys.readouterr().out  # (odfpy prints the parts it cannot read)
    with zipfile.ZipFile(io.BytesIO(out)) as odt:
        infos = odt.infolist()
        assert [i.filename for i in infos] == list(members)
        assert infos[0].filename == "mimetype" and infos[0].compress_type == zipfile.ZIP_STORED
        for name in ("meta.xml", "Thumbnails/thumbnail.png", "META-INF/manifest.xml"):
            assert odt.read(name) == members[name][1]
        assert b"Preformatted_20_Text" in odt.read("styles.xml")  # read, and written again
        for name in ("content.xml", "styles.xml"):  # the manifest's version: LibreOffice
            assert b'office:version="1.3"' in odt.read(name)  # refuses a package without
    translated = load(io.BytesIO(out))
    block_out, paragraph_out = translated.getElementsByType(text.P)
    assert teletype.extractText(block_out) == SENTENCES[0]
    spans = [c for c in paragraph_out.childNodes if c.nodeType == c.ELEMENT_NODE]
    code = [s for s in spans if s.getAttribute("stylename") == "Source_20_Text"]
    assert [teletype.extractText(s) for s in code] == ["make install"]
    links = [s for s in spans if s.qname[1] == "a"]
    assert len(links) == 1 and links[0].getAttribute("href") == "https://example.org/"
    inner = [c for c in links[0].childNodes if c.nodeType == c.ELEMENT_NODE]
    assert [c.getAttribute("stylename") for c in inner] == ["Definition"]
    rest = teletype.extractText(paragraph_out).replace("make install", " ").split()
    assert rest and not set(rest) & set(words)  # translated whole


def text_frame(words: str, **size):
    """An OpenDocument frame holding a text box of one paragraph."""
    from odf import text
    from odf.draw import Frame, TextBox
    frame = Frame(**size)
    box = TextBox()
    box.addElement(text.P(text=words))
    frame.addElement(box)
    return frame


def saved(document, path) -> bytes:
    """An odfpy document written to ``path``; its bytes."""
    buffer = io.BytesIO()
    document.save(buffer)
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


def test_opendocument_notes_and_text_boxes_are_translated_once(toy_model, translator,
                                                               tmp_path):
    """A footnote is a point of its paragraph, which is translated whole; the note's own
    paragraph, and a text box's, are translated once, as paragraphs of their own."""
    from odf import teletype, text
    from odf.opendocument import OpenDocumentText, load
    document = OpenDocumentText()
    words = SENTENCES[3].split()
    paragraph = text.P(text=" ".join(words[:2]))
    note = text.Note(id="ftn1", noteclass="footnote")
    note.addElement(text.NoteCitation(text="1"))
    body = text.NoteBody()
    note_words = SENTENCES[4].split()
    in_note = text.P(text=note_words[0] + " ")
    in_note.addElement(text.Span(text=" ".join(note_words[1:])))  # an element, rewritten too
    body.addElement(in_note)
    note.addElement(body)
    paragraph.addElement(note)
    paragraph.addText(" " + " ".join(words[2:]))
    document.text.addElement(paragraph)
    framed = text.P(text=SENTENCES[5] + " ")
    framed.addElement(text_frame(SENTENCES[6], width="3cm", height="1cm", anchortype="as-char"))
    document.text.addElement(framed)
    path = tmp_path / "in.odt"
    saved(document, path)
    out = load(io.BytesIO(run(toy_model, path, tmp_path / "out.odt")))
    first, note_paragraph, second, boxed = out.getElementsByType(text.P)
    assert " ".join(teletype.extractText(note_paragraph).split()) == \
        translator.translate([SENTENCES[4]])[0]
    assert teletype.extractText(boxed) == translator.translate([SENTENCES[6]])[0]
    notes = first.getElementsByType(text.Note)
    assert len(notes) == 1 and teletype.extractText(
        notes[0].getElementsByType(text.NoteCitation)[0]) == "1"
    outside = "".join(str(n) for n in first.childNodes if n.nodeType == n.TEXT_NODE)
    assert " ".join(outside.split()) == translator.translate([SENTENCES[3]])[0]  # whole


def test_opendocument_comments_and_tracked_changes(toy_model, translator, tmp_path, capsys):
    """A comment no longer makes its paragraph go text node by text node: the paragraph is
    translated whole and is the comment's range; the comment's paragraph is translated, its
    author and date are not. Tracked changes are accepted: the text is already as they left
    it, the record of them (deleted text among it) and their marks go; one warning."""
    from odf import dc, office, teletype, text
    from odf.namespaces import TEXTNS as TEXT_NS
    from odf.opendocument import OpenDocumentText, load
    document = OpenDocumentText()
    changes = text.TrackedChanges()
    for name, kind in (("ct1", text.Insertion), ("ct2", text.Deletion)):
        # (odfpy asks for an xml:id and refuses to set one)
        region = text.ChangedRegion(check_grammar=False, qattributes={(TEXT_NS, "id"): name})
        change = kind()
        info = office.ChangeInfo()
        info.addElement(dc.Creator(text="Reviewer"))
        info.addElement(dc.Date(text="2026-01-01T10:00:00"))
        change.addElement(info)
        if kind is text.Deletion:
            change.addElement(text.P(text="words deleted"))
        region.addElement(change)
        changes.addElement(region)
    document.text.addElement(changes)
    one, two = SENTENCES[2].split(), SENTENCES[3].split()
    commented = text.P(text=one[0] + " ")
    comment = office.Annotation(name="c1")
    comment.addElement(dc.Creator(text="Ann Author"))
    comment.addElement(dc.Date(text="2026-01-01T09:00:00"))
    comment.addElement(text.P(text=SENTENCES[5]))
    commented.addElement(comment)
    commented.addText(" ".join(one[1:3]))
    commented.addElement(office.AnnotationEnd(name="c1"))
    commented.addText(" " + " ".join(one[3:]))
    changed = text.P(text=two[0] + " ")
    changed.addElement(text.ChangeStart(changeid="ct1"))
    changed.addText(" ".join(two[1:3]) + " ")
    changed.addElement(text.ChangeEnd(changeid="ct1"))
    changed.addElement(text.Change(changeid="ct2"))
    changed.addText(" ".join(two[3:]))
    document.text.addElement(commented)
    document.text.addElement(changed)
    from odf.style import Header, MasterPage, PageLayout
    layout = PageLayout(name="Page")
    document.automaticstyles.addElement(layout)
    page = MasterPage(name="Standard", pagelayoutname=layout)
    header = Header()
    header_changes = text.TrackedChanges()  # (a header keeps its own record)
    region = text.ChangedRegion(check_grammar=False, qattributes={(TEXT_NS, "id"): "ct3"})
    deletion = text.Deletion()
    deletion.addElement(text.P(text="header words deleted"))
    region.addElement(deletion)
    header_changes.addElement(region)
    header.addElement(header_changes)
    header.addElement(text.P(text=SENTENCES[6]))
    page.addElement(header)
    document.masterstyles.addElement(page)
    path = tmp_path / "in.odt"
    saved(document, path)
    out = load(io.BytesIO(run(toy_model, path, tmp_path / "out.odt")))
    first, in_comment, second, in_header = out.getElementsByType(text.P)
    assert teletype.extractText(in_header) == translator.translate([SENTENCES[6]])[0]
    outside = [n for n in first.childNodes if n.nodeType == n.TEXT_NODE]
    assert " ".join("".join(map(str, outside)).split()) == \
        translator.translate([SENTENCES[2]])[0]
    kinds = [n.qname[1] for n in first.childNodes if n.nodeType == n.ELEMENT_NODE]
    assert kinds == ["annotation", "annotation-end"] and first.childNodes[0].qname[1] == \
        "annotation" and first.childNodes[-1].qname[1] == "annotation-end"
    assert teletype.extractText(in_comment) == translator.translate([SENTENCES[5]])[0]
    assert [teletype.extractText(e) for e in out.getElementsByType(dc.Creator)] == \
        ["Ann Author"]
    assert teletype.extractText(second) == translator.translate([SENTENCES[3]])[0]
    xml = out.contentxml().decode() + out.stylesxml()  # (bytes, and str)
    assert "tracked-changes" not in xml and "change-start" not in xml and \
        "words deleted" not in xml and "WORDS" not in xml
    assert "3 tracked change(s) accepted" in capsys.readouterr().err


def epub_book(chapter: str) -> dict[str, bytes]:
    """The members of a small EPUB 3 book with an EPUB 2 table of contents, in order."""
    return {
        "mimetype": b"application/epub+zip",
        "META-INF/container.xml": (
            b'<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
            b'opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/book.opf" '
            b'media-type="application/oebps-package+xml"/></rootfiles></container>'),
        "OEBPS/book.opf": (
            b'<?xml version="1.0" encoding="UTF-8"?><package version="3.0" '
            b'xmlns="http://www.idpf.org/2007/opf" unique-identifier="id"><metadata '
            b'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">x'
            b'</dc:identifier><dc:title>alpha beta</dc:title><dc:language>en-GB</dc:language>'
            b'</metadata><manifest><item id="ncx" href="toc.ncx" media-type="application/'
            b'x-dtbncx+xml"/><item id="c1" href="text/chapter%201.xhtml" media-type="'
            b'application/xhtml+xml"/><item id="css" href="style.css" media-type="text/css"/>'
            b'</manifest><spine toc="ncx"><itemref idref="c1"/></spine></package>'),
        "OEBPS/toc.ncx": (
            f'<?xml version="1.0" encoding="UTF-8"?><ncx version="2005-1" xmlns="http://www.'
            f'daisy.org/z3986/2005/ncx/"><docTitle><text>{SENTENCES[0]}</text></docTitle>'
            f'<navMap><navPoint id="n1"><navLabel><text>{SENTENCES[1]}</text></navLabel>'
            f'<content src="text/chapter%201.xhtml"/></navPoint></navMap></ncx>').encode(),
        "OEBPS/text/chapter 1.xhtml": chapter.encode(),
        "OEBPS/style.css": b"code { font-family: monospace; }\n",
    }


def test_epub_books_translated_right_to_left_turn_their_pages_so(into_hebrew):
    import zipfile

    from aiayn.documents import translate_document
    chapter = ('<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/'
               f'xhtml" xml:lang="en-GB"><body><p>{SENTENCES[3]}</p></body></html>')
    out = zipfile.ZipFile(io.BytesIO(translate_document(into_hebrew, _zip(epub_book(chapter)),
                                                        ".epub")))
    assert b'<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="he" dir="rtl">' in \
        out.read("OEBPS/text/chapter 1.xhtml")
    assert b'<spine toc="ncx" page-progression-direction="rtl">' in out.read("OEBPS/book.opf")


def test_epub_books_keep_every_member_and_code(toy_model, translator, tmp_path):
    """An EPUB's chapters are translated as XHTML (code kept), its table of contents'
    labels too, its language relabeled; every other member comes back byte for byte, the
    mimetype first and stored."""
    import zipfile
    words = SENTENCES[2].split()
    chapter = ('<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/'
               'xhtml" xml:lang="en-GB"><head><title>t</title></head><body><h1>'
               f'{SENTENCES[3]}</h1><p>{" ".join(words[:2])} <code>make install</code> '
               f'{" ".join(words[2:])}</p></body></html>')
    members = epub_book(chapter)
    path = tmp_path / "in.epub"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        for name, data in members.items():
            book.writestr(name, data, compress_type=zipfile.ZIP_STORED
                          if name == "mimetype" else zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(io.BytesIO(run(toy_model, path, tmp_path / "out.epub"))) as book:
        infos = book.infolist()
        assert [i.filename for i in infos] == list(members)
        assert infos[0].compress_type == zipfile.ZIP_STORED
        for name in ("META-INF/container.xml", "OEBPS/style.css"):
            assert book.read(name) == members[name]
        out = book.read("OEBPS/text/chapter 1.xhtml").decode()
        toc = book.read("OEBPS/toc.ncx").decode()
        opf = book.read("OEBPS/book.opf").decode()
    import xml.etree.ElementTree as ET
    ET.fromstring(out.split("\n", 1)[1])  # well-formed
    assert "<code>make install</code>" in out and 'xml:lang="es"' in out
    assert f"<h1>{translator.translate([SENTENCES[3]])[0]}</h1>" in out
    first, second = translator.translate(SENTENCES[:2])
    assert f"<text>{first}</text>" in toc and f"<text>{second}</text>" in toc
    assert "<dc:language>es</dc:language>" in opf
    assert f"<dc:title>{translator.translate(['alpha beta'])[0]}</dc:title>" in opf


def test_opendocument_presentations_are_translated(toy_model, translator, tmp_path):
    """An .odp: each slide's text boxes, and the speaker's notes, are translated as an
    .odt's paragraphs are; the slides and their frames stay, and keep their names as written
    (LibreOffice links to a slide by its name: "#Slide 1")."""
    import zipfile

    from odf import teletype, text
    from odf.draw import Page
    from odf.opendocument import OpenDocumentPresentation, load
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout
    document = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for k in range(2):
        page = Page(name=f"slide{k}", masterpagename=master)
        size = {"width": "20cm", "height": "3cm", "x": "1cm", "y": "1cm"}
        page.addElement(text_frame(SENTENCES[k], **size))
        notes = Notes()
        notes.addElement(text_frame(SENTENCES[k + 2], **size))
        page.addElement(notes)
        document.presentation.addElement(page)
    path = tmp_path / "in.odp"
    with zipfile.ZipFile(io.BytesIO(saved(document, path))) as package:
        members = {i.filename: package.read(i) for i in package.infolist()}
    # (odfpy writes a name as an XML name; LibreOffice as given)
    members["content.xml"] = members["content.xml"].replace(b"slide0", b"Slide one")
    path.write_bytes(_zip(members))
    written = run(toy_model, path, tmp_path / "out.odp")
    with zipfile.ZipFile(io.BytesIO(written)) as package:
        assert b'draw:name="Slide one"' in package.read("content.xml")
    out = load(io.BytesIO(written))
    assert out.mimetype == "application/vnd.oasis.opendocument.presentation"
    assert len(out.getElementsByType(Page)) == 2
    said = [teletype.extractText(p) for p in out.getElementsByType(text.P)]
    assert sorted(said) == sorted(translator.translate(SENTENCES[:4]))


def test_opendocument_spreadsheets_translate_text_cells_and_notes(toy_model, translator,
                                                                  tmp_path):
    """An .ods: text cells and notes are translated as an .odt's paragraphs are; what a cell
    shows of a number or a date stays as written, and so do a cell of one code-like token
    and the sheets' names; a formula's result is its formula's."""
    from odf import teletype
    from odf.office import Annotation
    from odf.opendocument import OpenDocumentSpreadsheet, load
    from odf.table import Table, TableCell, TableRow
    from odf.text import P
    document = OpenDocumentSpreadsheet()
    sheet = Table(name="Sheet one")
    cells = [TableCell(valuetype="string"), TableCell(valuetype="float", value="42"),
             TableCell(valuetype="date", datevalue="2026-11-29"),
             TableCell(valuetype="string", formula='of:=[.A1]&"!"'), TableCell(),
             TableCell(valuetype="percentage", value="0.5"), TableCell(valuetype="string")]
    shown = [SENTENCES[0], "42", "29 November 2026", f"{SENTENCES[0]}!", SENTENCES[2],
             "50 %", "user_name"]
    row = TableRow()
    for cell, text in zip(cells, shown):
        cell.addElement(P(text=text))
        row.addElement(cell)
    note = Annotation()
    note.addElement(P(text=SENTENCES[1]))
    cells[1].addElement(note)  # a note on a number: text
    sheet.addElement(row)
    document.spreadsheet.addElement(sheet)
    path = tmp_path / "in.ods"
    saved(document, path)
    out = load(io.BytesIO(run(toy_model, path, tmp_path / "out.ods")))
    assert out.mimetype == "application/vnd.oasis.opendocument.spreadsheet"
    table = out.getElementsByType(Table)[0]
    assert table.getAttribute("name") == "Sheet one"
    said = [teletype.extractText(c.getElementsByType(P)[0])
            for c in table.getElementsByType(TableCell)]
    t = translator.translate([SENTENCES[0], SENTENCES[2]])
    # the formula joins A1 and "!": its last result is joined again from the translation,
    # as LibreOffice shows what is stored
    assert said == [t[0], "42", "29 November 2026", f"{t[0]}!", t[1], "50 %", "user_name"]
    notes = out.getElementsByType(Annotation)
    assert [teletype.extractText(n.getElementsByType(P)[0]) for n in notes] == \
        translator.translate([SENTENCES[1]])


def test_opendocument_joined_text_results_are_joined_again(toy_model, translator, tmp_path):
    """A formula that joins cells' texts and quoted texts shows the join of their
    translations (a number's as shown); one whose stored result is not that join stays."""
    from odf import teletype
    from odf.opendocument import OpenDocumentSpreadsheet, load
    from odf.table import Table, TableCell, TableRow
    from odf.text import P
    document = OpenDocumentSpreadsheet()
    sheet, row = Table(name="one"), TableRow()
    cells = [(TableCell(valuetype="string"), SENTENCES[0]),
             (TableCell(valuetype="string"), SENTENCES[2]),
             (TableCell(valuetype="float", value="7"), "7"),
             (TableCell(valuetype="string", formula='of:=[.A1]&" - "&[.$B$1]'),
              f"{SENTENCES[0]} - {SENTENCES[2]}"),
             (TableCell(valuetype="string", formula="of:=[.A1]&[.C1]"), f"{SENTENCES[0]}7"),
             (TableCell(valuetype="string", formula='of:=[.A1]&"x"'), "stale")]
    for cell, text in cells:
        cell.addElement(P(text=text))
        row.addElement(cell)
    sheet.addElement(row)
    document.spreadsheet.addElement(sheet)
    saved(document, tmp_path / "in.ods")
    out = load(io.BytesIO(run(toy_model, tmp_path / "in.ods", tmp_path / "out.ods")))
    said = [teletype.extractText(c.getElementsByType(P)[0])
            for c in out.getElementsByType(Table)[0].getElementsByType(TableCell)]
    t = translator.translate([SENTENCES[0], SENTENCES[2]])
    assert said == [t[0], t[1], "7", f"{t[0]} - {t[1]}", f"{t[0]}7", "stale"]


def test_opendocument_pivot_tables_and_formulas_name_cells_as_translated(
        toy_model, translator, tmp_path):
    """A pivot table over the cells names its field by the header cell and a member by its
    cell: both take the cells' translation, or LibreOffice, refreshing it, finds no field
    and empties it. One over a database keeps its names. A formula's quoted cell text, a
    validity's list of values and a filter's value follow the cells too."""
    from odf.opendocument import OpenDocumentSpreadsheet, load
    from odf.table import (
        ContentValidation,
        ContentValidations,
        DatabaseRange,
        DatabaseRanges,
        DatabaseSourceTable,
        DataPilotField,
        DataPilotLevel,
        DataPilotMember,
        DataPilotMembers,
        DataPilotTable,
        DataPilotTables,
        Filter,
        FilterAnd,
        FilterCondition,
        SourceCellRange,
        Table,
        TableCell,
        TableRow,
    )
    from odf.text import P
    document = OpenDocumentSpreadsheet()
    sheet = Table(name="Sheet1")
    for text in SENTENCES[:2]:
        row, cell = TableRow(), TableCell(valuetype="string")
        cell.addElement(P(text=text))
        row.addElement(cell)
        sheet.addElement(row)
    count = f'of:=COUNTIF([.A1:.A2];"{SENTENCES[1]}")&"Sheet1"'
    row, cell = TableRow(), TableCell(valuetype="float", value="1", formula=count)
    row.addElement(cell)
    looked_up = TableCell(valuetype="string", stringvalue=SENTENCES[1], formula="of:=[.A2]")
    looked_up.addElement(P(text=SENTENCES[1]))  # its last result: A2's text
    row.addElement(looked_up)
    sheet.addElement(row)
    ranges = DatabaseRanges()
    found = DatabaseRange(name="Rows", targetrangeaddress="Sheet1.A1:Sheet1.A2")
    conditions = FilterAnd()
    conditions.addElement(FilterCondition(fieldnumber="0", operator="=", value=SENTENCES[1]))
    shown = Filter()
    shown.addElement(conditions)
    found.addElement(shown)
    ranges.addElement(found)
    validities = ContentValidations()
    listed = f'of:cell-content-is-in-list("{SENTENCES[1]}";"SKU-1")'
    validities.addElement(ContentValidation(name="val1", condition=listed))
    document.spreadsheet.addElement(validities)
    document.spreadsheet.addElement(sheet)
    document.spreadsheet.addElement(ranges)
    pilots = DataPilotTables()
    for name, source in (("Cells", SourceCellRange(cellrangeaddress="Sheet1.A1:Sheet1.A2")),
                         ("Database", DatabaseSourceTable(databasename="db",
                                                          databasetablename="t"))):
        pilot = DataPilotTable(name=name, targetrangeaddress="Sheet1.C1:Sheet1.D3")
        pilot.addElement(source)
        field, level, members = (DataPilotField(sourcefieldname=SENTENCES[0], orientation="row"),
                                 DataPilotLevel(), DataPilotMembers())
        members.addElement(DataPilotMember(name=SENTENCES[1], display="true"))
        level.addElement(members)
        field.addElement(level)
        pilot.addElement(field)
        pilots.addElement(pilot)
    document.spreadsheet.addElement(pilots)
    path = tmp_path / "in.ods"
    saved(document, path)
    out = load(io.BytesIO(run(toy_model, path, tmp_path / "out.ods")))
    named = {p.getAttribute("name"): (p.getElementsByType(DataPilotField)[0]
                                      .getAttribute("sourcefieldname"),
                                      p.getElementsByType(DataPilotMember)[0].getAttribute("name"))
             for p in out.getElementsByType(DataPilotTable)}
    t = translator.translate(SENTENCES[:2])
    assert named == {"Cells": tuple(t), "Database": tuple(SENTENCES[:2])}
    # what a formula counts and a validity's list are cells' text; a sheet's name is not
    assert [c.getAttribute("formula") for c in out.getElementsByType(TableCell)
            if c.getAttribute("formula")] == [f'of:=COUNTIF([.A1:.A2];"{t[1]}")&"Sheet1"',
                                              "of:=[.A2]"]
    from odf import teletype
    result = [c for c in out.getElementsByType(TableCell) if c.getAttribute("formula")][1]
    assert (result.getAttribute("stringvalue"), teletype.extractText(result)) == (t[1], t[1])
    assert [v.getAttribute("condition") for v in out.getElementsByType(ContentValidation)] \
        == [f'of:cell-content-is-in-list("{t[1]}";"SKU-1")']
    assert [c.getAttribute("value") for c in out.getElementsByType(FilterCondition)] == [t[1]]


def word_document() -> bytes:
    import docx
    document = docx.Document()
    document.add_paragraph(SENTENCES[0])
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def pptx_deck() -> bytes:
    """A PowerPoint deck written by python-pptx: a title, a text box of bold, italic, linked
    and monospaced runs, a slide-number field and a line break, a table, a group, a chart's
    title and speaker notes."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.oxml.ns import qn
    from pptx.util import Inches
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # "Title Only"
    slide.shapes.title.text = SENTENCES[0]
    words = SENTENCES[1].split()
    frame = slide.shapes.add_textbox(0, 0, Inches(4), Inches(1)).text_frame
    for k, text in enumerate([" ".join(words[:3]) + " ", words[3], f" {words[4]}",
                              f" {words[5]}", " ", words[6]]):
        run = frame.paragraphs[0].add_run()
        run.text = text
        run.font.bold = k == 1 or None
        run.font.italic = k == 5 or None
        run.font.underline = k == 3 or None
        if k in (2, 3):  # one link over two runs formatted apart
            run.hyperlink.address = "https://example.org/"
    code = frame.add_paragraph().add_run()
    code.text, code.font.name = "x = 1", "Courier New"
    field = code._r.makeelement(qn("a:fld"), {"id": "{1}", "type": "slidenum"})
    field.append(field.makeelement(qn("a:t"), {}))
    field[0].text = "7"
    code._r.addnext(field)
    second = slide.shapes.add_textbox(0, Inches(1), Inches(4), Inches(1)).text_frame
    half = SENTENCES[2].split()
    second.text = f"{' '.join(half[:2])}\v{' '.join(half[2:])}"  # (\v: python-pptx's a:br)
    table = slide.shapes.add_table(1, 2, 0, Inches(2), Inches(4), Inches(1)).table
    table.cell(0, 0).text = SENTENCES[4]
    table.cell(0, 1).text = "user_name"  # a cell's one code-like token: as written
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(0, Inches(3), Inches(4), Inches(1)).text_frame.text = SENTENCES[5]
    data = CategoryChartData()
    data.categories = ["alpha", "beta"]
    data.add_series("gamma", (1, 2))
    chart = slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, 0, Inches(4), Inches(4),
                                   Inches(2), data).chart
    chart.chart_title.text_frame.text = SENTENCES[6]
    slide.notes_slide.notes_text_frame.text = SENTENCES[7]
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def test_powerpoint_presentations_keep_formatting_links_and_every_frame(toy_model, translator,
                                                                          tmp_path):
    """A .pptx: every slide's title, text boxes, table cells, grouped shapes, chart title and
    notes translated; a run's bold, italic and link carried onto its words; code, fields and
    breaks kept; the layouts' prompts and the chart's data left alone; the deck says it is
    in the target language. python-pptx reads it back."""
    from pptx import Presentation
    from pptx.oxml.ns import qn
    path = tmp_path / "in.pptx"
    path.write_bytes(pptx_deck())
    out = Presentation(io.BytesIO(run(toy_model, path, tmp_path / "out.pptx")))
    t = translator.translate(SENTENCES)
    slide = out.slides[0]
    title, box, second, table, group, chart = slide.shapes
    assert title.text_frame.text == t[0]
    first, code = box.text_frame.paragraphs
    runs = first.runs
    assert " ".join(first.text.split()) == t[1]
    assert len([r for r in runs if r.font.bold]) == 1
    assert len([r for r in runs if r.font.italic]) == 1
    linked = [k for k, r in enumerate(runs) if r.hyperlink.address == "https://example.org/"]
    assert linked == [linked[0]]  # one run: the link's, formatted as most of its text
    assert [(r.text, r.font.name) for r in code.runs] == [("x = 1", "Courier New")]  # as written
    assert code._p.find(qn("a:fld")).find(qn("a:t")).text == "7"
    lines = second.text_frame.paragraphs[0]
    assert lines._p.find(qn("a:br")) is not None
    half = SENTENCES[2].split()  # each line translated apart, not run together
    assert lines.text.split("\v") == translator.translate([" ".join(half[:2]),
                                                            " ".join(half[2:])])
    assert table.table.cell(0, 0).text == t[4]
    assert table.table.cell(0, 1).text == "user_name"
    assert group.shapes[0].text_frame.text == t[5]
    assert chart.chart.chart_title.text_frame.text == t[6]
    assert list(chart.chart.plots[0].categories) == ["alpha", "beta"]  # data, as the workbook
    assert slide.notes_slide.notes_text_frame.text == t[7]
    prompts = [p.text_frame.text for p in out.slide_layouts[0].placeholders]
    assert "Click to edit Master title style" in prompts  # a placeholder's prompt, kept
    languages = {r.get("lang") for r in slide.shapes._spTree.iter(qn("a:rPr"))} - {None}
    assert languages <= {"es"}


_SPREADSHEET = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
CHART_TITLE, HEADER, PROMPT = (s for s, _ in toy_pairs(3, seed=41))


def xlsx_workbook() -> bytes:
    """An Excel workbook written by openpyxl (inline strings, a note, a formula, rich text,
    a chart, a header and a footer, a data validation's prompt, a second sheet), then given
    what Excel writes and openpyxl does not: shared strings with a phonetic guide, a note
    that starts with its author's name in bold, a threaded comment, and a picture."""
    import zipfile

    import openpyxl
    from openpyxl.cell.rich_text import CellRichText, TextBlock
    from openpyxl.cell.text import InlineFont
    from openpyxl.comments import Comment
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Data"
    sheet["A1"] = SENTENCES[0]
    sheet["A1"].comment = Comment(SENTENCES[1], "Ann")
    sheet["A2"] = 42
    sheet["A3"] = '=A1&"!"'
    words = SENTENCES[2].split()
    sheet["A4"] = CellRichText([f"{words[0]} ", TextBlock(InlineFont(b=True),
                                                          " ".join(words[1:]))])
    half = SENTENCES[3].split()
    sheet["A5"] = f"{' '.join(half[:2])}\n{' '.join(half[2:])}"
    sheet["A6"] = "12-34"
    sheet["A7"] = CellRichText([TextBlock(InlineFont(rFont="Courier New"), "x = 1"),
                                f" {SENTENCES[4]}"])
    sheet["B1"] = "shared"
    sheet["C1"], sheet["C2"] = "SKU-4471-B", "https://example.org/a"  # codes, as written
    from openpyxl.chart import BarChart, Reference
    chart = BarChart()
    chart.title = CHART_TITLE
    chart.add_data(Reference(sheet, min_col=1, min_row=2, max_row=2))
    sheet.add_chart(chart, "D2")
    sheet.oddHeader.center.text = HEADER
    sheet.oddFooter.right.text = "&P / &N"  # codes alone: the page, the number of pages
    from openpyxl.worksheet.datavalidation import DataValidation
    check = DataValidation(type="whole", prompt=PROMPT, showInputMessage=True)
    check.add("A2")
    sheet.add_data_validation(check)
    book.create_sheet("Other")["B2"] = SENTENCES[5]
    book.properties.language = "en-US"
    buffer = io.BytesIO()
    book.save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as package:
        members = {name: package.read(name) for name in package.namelist()}
    sheet_xml = members["xl/worksheets/sheet1.xml"].decode()
    members["xl/worksheets/sheet1.xml"] = sheet_xml.replace(
        '<c r="B1" t="inlineStr"><is><t>shared</t></is></c>', '<c r="B1" t="s"><v>0</v></c>'
    ).encode()
    members["xl/sharedStrings.xml"] = (
        f'<sst xmlns="{_SPREADSHEET}" count="1" uniqueCount="1"><si><t>{SENTENCES[6]}</t>'
        f'<rPh sb="0" eb="1"><t>fu</t></rPh><phoneticPr fontId="1"/></si></sst>').encode()
    note = members["xl/comments/comment1.xml"].decode()
    members["xl/comments/comment1.xml"] = note.replace(
        f"<text><t>{SENTENCES[1]}</t></text>",
        f'<text><r><rPr><b/></rPr><t>Ann:</t></r><r><t xml:space="preserve">\n{SENTENCES[1]}'
        f"</t></r></text>").encode()
    threads = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"
    members["xl/threadedComments/threadedComment1.xml"] = (
        f'<ThreadedComments xmlns="{threads}"><threadedComment ref="A2" id="{{1}}">'
        f"<text>{SENTENCES[7]}</text></threadedComment></ThreadedComments>").encode()
    members["xl/media/image1.png"] = png()
    chart_xml = members["xl/charts/chart1.xml"].decode()  # the cached text Excel writes
    members["xl/charts/chart1.xml"] = chart_xml.replace("<val>", (
        "<cat><strRef><f>'Data'!$A$1</f><strCache><ptCount val=\"1\"/><pt idx=\"0\">"
        f"<v>{SENTENCES[0]}</v></pt></strCache></strRef></cat><val>"), 1).encode()
    types = members["[Content_Types].xml"].decode()
    members["[Content_Types].xml"] = types.replace("</Types>", (
        '<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
        '<Override PartName="/xl/threadedComments/threadedComment1.xml" '
        'ContentType="application/vnd.ms-excel.threadedcomments+xml"/>'
        '<Default Extension="png" ContentType="image/png"/></Types>')).encode()
    rels = members["xl/_rels/workbook.xml.rels"].decode()
    members["xl/_rels/workbook.xml.rels"] = rels.replace("</Relationships>", (
        '<Relationship Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/sharedStrings" Target="sharedStrings.xml" Id="rId9"/>'
        "</Relationships>")).encode()
    return _zip(members)


def test_excel_workbooks_keep_rich_text_notes_formulas_and_every_member(toy_model, translator,
                                                                        tmp_path):
    """A .xlsx: shared and inline strings, notes, threaded comments, a chart's title, a
    header and a data validation's prompt translated; a run's
    bold carried onto its words, code kept, lines translated apart; numbers, text without
    letters and formulas left alone, formulas computed again on opening; every other member
    as it was; the workbook says it is in the target language. openpyxl reads it back."""
    import zipfile

    import openpyxl
    from openpyxl.cell.rich_text import CellRichText
    path = tmp_path / "in.xlsx"
    path.write_bytes(xlsx_workbook())
    data = run(toy_model, path, tmp_path / "out.xlsx")
    book = openpyxl.load_workbook(io.BytesIO(data), rich_text=True)
    t = translator.translate(SENTENCES)
    sheet = book["Data"]
    assert sheet["A1"].value == t[0]
    assert sheet["A1"].comment.text == f"Ann:\n{t[1]}"  # the author's name as written
    assert sheet["A2"].value == 42
    assert sheet["A3"].value == '=A1&"!"'
    rich = sheet["A4"].value
    assert isinstance(rich, CellRichText)
    assert " ".join(str(rich).split()) == t[2]
    assert len([b for b in rich if getattr(getattr(b, "font", None), "b", False)]) == 1
    half = SENTENCES[3].split()
    assert sheet["A5"].value.split("\n") == translator.translate([" ".join(half[:2]),
                                                                  " ".join(half[2:])])
    assert sheet["A6"].value == "12-34"
    code = sheet["A7"].value  # where its sentence put it, as written
    assert [(b.text, b.font.rFont) for b in code if not isinstance(b, str)] == \
        [("x = 1", "Courier New")]
    # its sentence translated (the toy model writes its source's words in capitals), not
    # compared with t[4]: the code's placeholder is part of what the model reads, and a toy
    # model's output moves with it
    rest = " ".join(str(code).replace("x = 1", " ").split())
    assert SENTENCES[4].islower() and rest.isupper() and len(rest.split()) >= 2
    assert sheet["B1"].value == t[6]
    assert (sheet["C1"].value, sheet["C2"].value) == ("SKU-4471-B", "https://example.org/a")
    assert sheet.oddHeader.center.text == translator.translate([HEADER])[0]
    assert sheet.oddFooter.right.text == "&P / &N"
    assert [c.prompt for c in sheet.data_validations.dataValidation] == \
        translator.translate([PROMPT])
    assert book["Other"]["B2"].value == t[5]
    assert book.properties.language == "es"
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        strings = package.read("xl/sharedStrings.xml").decode()
        assert "<rPh" not in strings and "<phoneticPr" in strings  # the source's guide gone
        assert f"<text>{t[7]}</text>" in package.read(
            "xl/threadedComments/threadedComment1.xml").decode()
        assert package.read("xl/media/image1.png") == png()
        chart = package.read("xl/charts/chart1.xml").decode()
        assert re.findall(r"<a:t>([^<]*)</a:t>", chart) == translator.translate([CHART_TITLE])
        assert re.findall(r"<v>([^<]*)</v>", chart) == [t[0]]  # its copy of A1, as A1
        assert 'fullCalcOnLoad="1"' in package.read("xl/workbook.xml").decode()


def table_workbook(headers: list[str], item: str, caption: str) -> bytes:
    """A workbook written by openpyxl with an Excel table "Orders" (``headers``, then a row
    of ``item`` and 2, a row of "SKU-1" and 3), formulas that name its columns, a filter on
    ``item``, and a pivot table over it by hand (openpyxl keeps pivot tables but cannot make
    one): its cache holds the headers and ``item``, its data field is named ``caption``, as
    the cell it writes that name in."""
    import zipfile

    import openpyxl
    from openpyxl.worksheet.filters import FilterColumn, Filters
    from openpyxl.worksheet.table import Table
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Orders"
    for row in (headers, [item, 2], ["SKU-1", 3]):
        sheet.append(row)
    sheet["D1"] = f"=SUM(Orders[{headers[1]}])"
    sheet["D2"] = f'=Orders[[#This Row],[{headers[0]}]]&"[{headers[1]}]"'
    sheet["D3"] = f'=COUNTIF(A2:A3,"{item}")+COUNTIF(A2:A3,"{caption} x")'
    sheet["E1"] = '=INDIRECT("Orders"&"!B2")'  # a sheet's name, not a cell's text
    sheet["E2"] = "Orders"
    sheet["E3"] = "=A2"  # its last result, written below as Excel writes it: A2's text
    sheet["F1"] = caption
    sheet["F2"] = '=A2&": "&B2'  # texts joined: last results written below, as Excel would,
    sheet["F3"] = '=A2&"!"'  # and one that is not the join (stale): it stays
    from openpyxl.formatting.rule import Rule
    from openpyxl.worksheet.datavalidation import DataValidation
    check = DataValidation(type="list", formula1=f'"{item}, SKU-1"')
    check.add("A2:A3")
    sheet.add_data_validation(check)
    sheet.conditional_formatting.add("A2:A3", Rule(
        type="containsText", operator="containsText", text=item,
        formula=[f'NOT(ISERROR(SEARCH("{item}",A2)))']))
    table = Table(displayName="Orders", ref="A1:B3")
    table._initialise_columns()
    for column, name in zip(table.tableColumns, headers):
        column.name = name
    table.autoFilter.filterColumn.append(FilterColumn(colId=0, filters=Filters(filter=[item])))
    sheet.add_table(table)
    buffer = io.BytesIO()
    book.save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as package:
        members = {name: package.read(name) for name in package.namelist()}
    relations = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    package_relations = "http://schemas.openxmlformats.org/package/2006/relationships"
    members["xl/pivotCache/pivotCacheDefinition1.xml"] = (
        f'<pivotCacheDefinition xmlns="{_SPREADSHEET}" xmlns:r="{relations}" r:id="rId1" '
        f'recordCount="2"><cacheSource type="worksheet"><worksheetSource ref="A1:B3" '
        f'sheet="Orders"/></cacheSource><cacheFields count="2"><cacheField name="{headers[0]}" '
        f'numFmtId="0"><sharedItems count="2"><s v="{item}"/><s v="SKU-1"/></sharedItems>'
        f'</cacheField><cacheField name="{headers[1]}" numFmtId="0"><sharedItems '
        f'containsSemiMixedTypes="0" containsString="0" containsNumber="1" '
        f'containsInteger="1" minValue="2" maxValue="3"/></cacheField></cacheFields>'
        f"</pivotCacheDefinition>").encode()
    members["xl/pivotCache/pivotCacheRecords1.xml"] = (
        f'<pivotCacheRecords xmlns="{_SPREADSHEET}" count="2"><r><s v="{item}"/><n v="2"/>'
        f'</r><r><x v="1"/><n v="3"/></r></pivotCacheRecords>').encode()
    members["xl/pivotTables/pivotTable1.xml"] = (
        f'<pivotTableDefinition xmlns="{_SPREADSHEET}" name="Pivot" cacheId="1" '
        f'dataCaption="Values"><location ref="F1:G4" firstHeaderRow="1" firstDataRow="1" '
        f'firstDataCol="1"/><pivotFields count="2"><pivotField axis="axisRow" showAll="0">'
        f'<items count="2"><item x="0"/><item x="1"/></items></pivotField>'
        f'<pivotField dataField="1" showAll="0"/></pivotFields><rowFields count="1">'
        f'<field x="0"/></rowFields><dataFields count="1"><dataField name="{caption}" '
        f'fld="1"/></dataFields></pivotTableDefinition>').encode()
    for part, target, kind in (
            ("xl/pivotCache/_rels/pivotCacheDefinition1.xml.rels",
             "pivotCacheRecords1.xml", "pivotCacheRecords"),
            ("xl/pivotTables/_rels/pivotTable1.xml.rels",
             "../pivotCache/pivotCacheDefinition1.xml", "pivotCacheDefinition")):
        members[part] = (f'<Relationships xmlns="{package_relations}"><Relationship Id="rId1" '
                         f'Type="{relations}/{kind}" Target="{target}"/></Relationships>'
                         ).encode()
    for part, line in (
            ("xl/worksheets/_rels/sheet1.xml.rels",
             f'<Relationship Id="rId9" Type="{relations}/pivotTable" '
             f'Target="../pivotTables/pivotTable1.xml"/>'),
            ("xl/_rels/workbook.xml.rels",
             f'<Relationship Id="rId9" Type="{relations}/pivotCacheDefinition" '
             f'Target="pivotCache/pivotCacheDefinition1.xml"/>'),
            ("[Content_Types].xml", "".join(
                f'<Override PartName="/xl/{name}.xml" ContentType="application/vnd.openxml'
                f'formats-officedocument.spreadsheetml.{kind}+xml"/>' for name, kind in (
                    ("pivotCache/pivotCacheDefinition1", "pivotCacheDefinition"),
                    ("pivotCache/pivotCacheRecords1", "pivotCacheRecords"),
                    ("pivotTables/pivotTable1", "pivotTable"))))):
        end = "</Types>" if part.startswith("[") else "</Relationships>"
        members[part] = members[part].decode().replace(end, line + end).encode()
    worksheet = members["xl/worksheets/sheet1.xml"].decode()
    for cell, result in (("E3", item), ("F2", f"{item}: 2"), ("F3", "stale")):
        worksheet = re.sub(rf'<c r="{cell}"><f>(.*?)</f><v\s*/?>(?:</v>)?</c>',
                           lambda m: f'<c r="{cell}" t="str"><f>{m.group(1)}</f>'
                                     f'<v>{result}</v></c>', worksheet)
    members["xl/worksheets/sheet1.xml"] = worksheet.encode()
    workbook = members["xl/workbook.xml"].decode()
    members["xl/workbook.xml"] = re.sub(
        r"(<calcPr[^>]*/>)", rf'\1<pivotCaches><pivotCache xmlns:r="{relations}" cacheId="1" '
        r'r:id="rId9"/></pivotCaches>', workbook).encode()
    return _zip(members)


def test_excel_tables_formulas_pivot_tables_and_filters_follow_their_cells(
        toy_model, translator, tmp_path):
    """An Excel table's columns are named by their header cells, as Excel demands: each
    takes its header's translation, in the table and in the formulas that name it (not in
    quoted text); a pivot table's cache, its data field's name and a filter's value follow
    their cells; a code-like cell and its copies stay. openpyxl reads the workbook back."""
    import openpyxl
    headers, item, caption = [SENTENCES[0], SENTENCES[3]], SENTENCES[1], SENTENCES[2]
    path = tmp_path / "in.xlsx"
    path.write_bytes(table_workbook(headers, item, caption))
    data = run(toy_model, path, tmp_path / "out.xlsx")
    book = openpyxl.load_workbook(io.BytesIO(data))
    h0, h1, t_item, t_caption = translator.translate([*headers, item, caption])
    sheet = book["Orders"]
    assert [sheet["A1"].value, sheet["B1"].value, sheet["A2"].value] == [h0, h1, t_item]
    table = sheet.tables["Orders"]
    assert [c.name for c in table.tableColumns] == [h0, h1]
    assert [c.filters.filter for c in table.autoFilter.filterColumn] == [[t_item]]
    assert sheet["D1"].value == f"=SUM(Orders[{h1}])"
    assert sheet["D2"].value == f'=Orders[[#This Row],[{h0}]]&"[{headers[1]}]"'
    # what a formula counts, a list of allowed values, what a format looks for: cells' text
    assert sheet["D3"].value == f'=COUNTIF(A2:A3,"{t_item}")+COUNTIF(A2:A3,"{caption} x")'
    assert sheet["E1"].value == '=INDIRECT("Orders"&"!B2")'
    shown = openpyxl.load_workbook(io.BytesIO(data), data_only=True)["Orders"]
    assert shown["E3"].value == t_item  # a formula's last result, as the cell it shows
    assert (shown["F2"].value, shown["F3"].value) == (f"{t_item}: 2", "stale")  # joined again
    assert [c.formula1 for c in sheet.data_validations.dataValidation] == [f'"{t_item}, SKU-1"']
    rule = next(iter(sheet.conditional_formatting)).rules[0]
    assert (rule.text, rule.formula) == (t_item, [f'NOT(ISERROR(SEARCH("{t_item}",A2)))'])
    pivot = sheet._pivots[0]
    assert [f.name for f in pivot.cache.cacheFields] == [h0, h1]
    assert [s.v for s in pivot.cache.cacheFields[0].sharedItems._fields] == [t_item, "SKU-1"]
    assert pivot.cache.refreshOnLoad
    assert [d.name for d in pivot.dataFields] == [t_caption]
    assert pivot.dataCaption == "Values"  # not a cell's text: as written
    assert [r._fields[0].v for r in pivot.cache.records.r] == [t_item, 1]  # a string, an index


class _Dictionary:
    """A translator that looks each text up (for names a model would not make alike)."""

    languages = None

    def __init__(self, words: dict[str, str]) -> None:
        self.words = words

    def translate(self, texts, *_, **__):
        return [self.words.get(t, t) for t in texts]

    def translate_markup(self, documents, *_, **__):
        assert not documents  # (the workbook has no runs)
        return []


def test_excel_table_columns_translated_alike_are_numbered_as_excel_numbers_them():
    """Two headers translated to one name, letter case aside: the later column takes the
    next number ("preis2"), its header cell and the formulas that name it too, so that the
    table's names stay unique and equal to its header cells."""
    import openpyxl

    from aiayn.documents import translate_document
    data = table_workbook(["Price", "Cost"], "Unit", "Total")
    words = {"Price": "Preis", "Cost": "preis", "Unit": "Einheit", "Total": "Summe"}
    book = openpyxl.load_workbook(io.BytesIO(translate_document(_Dictionary(words), data,
                                                                ".xlsx")))
    sheet = book["Orders"]
    assert [c.name for c in sheet.tables["Orders"].tableColumns] == ["Preis", "preis2"]
    assert [sheet["A1"].value, sheet["B1"].value] == ["Preis", "preis2"]
    assert sheet["D1"].value == "=SUM(Orders[preis2])"
    assert [f.name for f in sheet._pivots[0].cache.cacheFields] == ["Preis", "preis2"]


def test_structured_references_are_renamed_where_they_name_a_renamed_column():
    from aiayn.documents.formulas import rename_columns
    renamed = {"Sales": {"Amount": "Betrag", "Unit price": "Stückpreis", "Qty #": "Menge [St]"}}
    for formula, want in [
            ("SUM(Sales[Amount])", "SUM(Sales[Betrag])"),
            ("sales[@Amount]", "sales[@Betrag]"),  # table names: letter case aside
            ("Sales[[#This Row],[Unit price]]*2", "Sales[[#This Row],[Stückpreis]]*2"),
            ("SUM(Sales[[#Headers],[Amount]:[Unit price]])",
             "SUM(Sales[[#Headers],[Betrag]:[Stückpreis]])"),
            ("[@Amount]+[@[Unit price]]", "[@Betrag]+[@[Stückpreis]]"),  # in the table
            ("Sales[Qty '#]", "Sales[Menge '[St']]"),  # escaped as Excel escapes them
            ('"Sales[Amount]"&Sales[Amount]', '"Sales[Amount]"&Sales[Betrag]'),
            ('"a""[Amount]"&Other[Amount]', '"a""[Amount]"&Other[Amount]'),
            ("[1]Sheet1!A1+Sales[#All]", "[1]Sheet1!A1+Sales[#All]")]:
        assert rename_columns(formula, renamed) == want, formula


def test_powerpoint_comments_are_translated(toy_model, translator, tmp_path):
    """A deck's comments: PowerPoint 2007-2019's (``p:text``, plain, its lines kept) and
    today's (``p188:txBody``, paragraphs as a slide's); their authors and dates stay."""
    from pptx import Presentation
    from pptx.opc.constants import RELATIONSHIP_TYPE
    from pptx.opc.package import Part
    from pptx.opc.packuri import PackURI
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    p = "http://schemas.openxmlformats.org/presentationml/2006/main"
    old = (f'<p:cmLst xmlns:p="{p}"><p:cm authorId="0" dt="2026-01-02T03:04:05.000" idx="1">'
           f'<p:pos x="10" y="10"/><p:text>{SENTENCES[0]}\n{SENTENCES[1]}</p:text></p:cm>'
           f'</p:cmLst>').encode()
    new = (f'<p188:cmLst xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
           f'xmlns:p188="http://schemas.microsoft.com/office/powerpoint/2018/8/main">'
           f'<p188:cm id="{{1}}" authorId="{{2}}" created="2026-01-02T03:04:05.000">'
           f'<p188:txBody><a:bodyPr/><a:p><a:r><a:t>{SENTENCES[2]}</a:t></a:r></a:p>'
           f'</p188:txBody></p188:cm></p188:cmLst>').encode()
    for name, blob, kind in (("comment1", old, "comments"),
                             ("modernComment_100_1", new, "modernComment")):
        part = Part(PackURI(f"/ppt/comments/{name}.xml"),
                    f"application/vnd.openxmlformats-officedocument.presentationml.{kind}+xml"
                    if kind == "comments" else "application/vnd.ms-powerpoint.comments+xml",
                    deck.part.package, blob)
        slide.part.relate_to(part, RELATIONSHIP_TYPE.COMMENTS if kind == "comments" else
                             "http://schemas.microsoft.com/office/2018/10/relationships/comments")
    path = tmp_path / "in.pptx"
    deck.save(str(path))
    out = Presentation(io.BytesIO(run(toy_model, path, tmp_path / "out.pptx")))
    parts = {str(part.partname): part.blob for part in out.part.package.iter_parts()}
    t = translator.translate(SENTENCES[:3])
    assert f"<p:text>{t[0]}\n{t[1]}</p:text>".encode() in parts["/ppt/comments/comment1.xml"]
    assert b'dt="2026-01-02T03:04:05.000"' in parts["/ppt/comments/comment1.xml"]
    assert f"<a:t>{t[2]}</a:t>".encode() in parts["/ppt/comments/modernComment_100_1.xml"]


def test_opendocument_spans_of_the_paragraph_s_own_style_are_plain_text(toy_model, translator,
                                                                         tmp_path):
    """LibreOffice Impress writes every stretch of a slide's text in a span (its size and
    font): the spans of the style most of the text is in are plain text to the markup path,
    and the translation is written back in one of them; only the code is a span to place."""
    from odf import text
    from odf.opendocument import OpenDocumentText, load
    from odf.style import Style, TextProperties

    from aiayn.documents import translate_document
    document = OpenDocumentText()
    body = Style(name="T1", family="text")
    body.addElement(TextProperties(fontsize="32pt"))
    document.automaticstyles.addElement(body)
    code = Style(name="T2", family="text")
    code.addElement(TextProperties(fontname="Courier New", fontfamily="Courier New"))
    document.automaticstyles.addElement(code)
    words = SENTENCES[3].split()
    paragraph = text.P()
    paragraph.addElement(text.Span(stylename=body, text=" ".join(words[:2]) + " "))
    paragraph.addElement(text.Span(stylename=code, text="make"))
    paragraph.addElement(text.Span(stylename=body, text=" " + " ".join(words[2:])))
    document.text.addElement(paragraph)
    path = tmp_path / "in.odt"
    saved(document, path)
    sent = []
    original = translator.translate_markup
    translator.translate_markup = lambda docs, *a, **k: sent.extend(docs) or \
        original(docs, *a, **k)
    try:
        out = load(io.BytesIO(translate_document(translator, path.read_bytes(), ".odt")))
    finally:
        del translator.translate_markup  # (the class's method again, not a copy bound here)
    assert sent == [f"{' '.join(words[:2])} <code data-r=\"1\">make</code> "
                    f"{' '.join(words[2:])}"]
    spans = out.getElementsByType(text.P)[0].childNodes
    assert all(s.qname == (text.Span().qname) for s in spans)  # no text left unstyled
    styles = [s.getAttribute("stylename") for s in spans]
    assert styles.count("T2") == 1 and set(styles) == {"T1", "T2"}
    assert [str(s) for s in spans if s.getAttribute("stylename") == "T2"] == ["make"]


def _zip(members: dict[str, bytes], damaged: str | None = None) -> bytes:
    """A zip of ``members``, stored; ``damaged``: a member whose bytes no longer match its
    checksum."""
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    data = buffer.getvalue()
    if damaged is not None:
        at = data.index(members[damaged])
        data = data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]
    return data


_TYPES = "http://schemas.openxmlformats.org/package/2006/content-types"


XLIFF = f"""<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file original="app" source-language="en" datatype="plaintext">
    <body>
      <trans-unit id="1"><source>{SENTENCES[0]}</source></trans-unit>
      <trans-unit id="2"><source>{SENTENCES[1]}</source><target>KEPT</target></trans-unit>
      <trans-unit id="3" translate="no"><source>{SENTENCES[2]}</source></trans-unit>
      <trans-unit id="4"><source>alpha <g id="1" ctype="bold">beta gamma</g> delta<x id="2"/>\
</source></trans-unit>
    </body>
  </file>
</xliff>
"""


def test_markdown_keeps_its_structure_formatting_links_and_code(toy_model, translator,
                                                                tmp_path):
    """A Markdown page: headings, paragraphs, list items, quotes and table cells translated
    whole; strong, emphasis and links carried onto their words; HTML blocks through the HTML
    path; pictures' descriptions and links' titles translated; code spans, code blocks,
    footnote references, the front matter and what translate-toolkit's markers leave out kept
    as written; a reference link named by its own text still finds its reference. mistletoe's
    HTML renderer reads it back."""
    import html
    import re

    import mistletoe
    words = SENTENCES[1].split()
    page = (f"---\ntitle: {SENTENCES[7]}\n---\n"
            f"# {SENTENCES[0]}\n\n"
            f"{' '.join(words[:3])} **{words[3]}** [{words[4]}](https://example.org/ "
            f"\"{SENTENCES[5]} \\\"{words[0]}\\\"\") *{words[5]}* {words[6]}\n\n"
            f"![{SENTENCES[4]}](picture.png)\n\n"
            f"- {SENTENCES[2]}\n- `make install` [{SENTENCES[3]}][][^1]\n\n"
            f"> {SENTENCES[4]}\n\n"
            f"| a |\n|---|\n| {SENTENCES[5]} |\n\n"
            f"```sh\n{SENTENCES[6]}\n```\n\n"
            f"<div>{SENTENCES[6]}</div>\n\n"
            f"<!-- translate:off -->\n\n{SENTENCES[7]}\n\n<!-- translate:on -->\n\n"
            f"[{SENTENCES[3]}]: https://example.org/install \"{SENTENCES[0]}\"\n"
            f"[^1]: {SENTENCES[2]}\n")
    path = tmp_path / "in.md"
    path.write_text(page, encoding="utf-8")
    out = run(toy_model, path, tmp_path / "out.md").decode()
    t = translator.translate(SENTENCES)
    assert out.startswith(f"---\ntitle: {SENTENCES[7]}\n---\n")  # front matter, as it was
    rendered = mistletoe.markdown(out.split("---\n", 2)[2])

    def text(fragment: str) -> str:
        return " ".join(re.sub(r"<[^>]+>", " ", fragment).split())
    assert re.search(r"<h1>(.*?)</h1>", rendered).group(1) == t[0]
    paragraph = re.search(r"<p>(.*?)</p>", rendered).group(1)
    assert text(paragraph) == t[1]
    assert paragraph.count("<strong>") == paragraph.count("<em>") == 1
    quoted = SENTENCES[5] + ' "' + words[0] + '"'  # its quotes escaped in the title
    title = html.escape(translator.translate([quoted])[0])
    assert f'<a href="https://example.org/" title="{title}">' in paragraph
    assert f'<img src="picture.png" alt="{t[4]}" />' in rendered
    items = re.findall(r"<li>(.*?)</li>", rendered, re.DOTALL)
    assert text(items[0]) == t[2]
    assert "<code>make install</code>" in items[1] and "[^1]" in items[1]
    assert f'<a href="https://example.org/install" title="{t[0]}">' in items[1]  # its reference
    assert f"][{SENTENCES[3]}]" in out  # by its name, as its text is translated
    assert text(re.search(r"<blockquote>(.*?)</blockquote>", rendered, re.DOTALL)
                .group(1)) == t[4]
    assert text(re.findall(r"<td.*?>(.*?)</td>", rendered)[0]) == t[5]
    assert f"```sh\n{SENTENCES[6]}\n```" in out and f"<div>{t[6]}</div>" in out
    assert f"\n\n{SENTENCES[7]}\n\n" in out and t[7] not in out
    assert f'install "{t[0]}"' in out
    assert f"[^1]: {t[2]}" in out


def test_markdown_html_blocks_are_pieces_of_one_page(toy_model, translator, tmp_path, capsys):
    """CommonMark ends an HTML block at a blank line, so ``<details>`` and ``</details>`` come
    in different blocks: each is translated, with its attributes, and neither is warned
    about as malformed. A code span written in an HTML block stays as written. A
    picture's description in inline HTML is translated too, and inline HTML's start and end
    tags stay around their words."""
    import re
    page = (f"<details>\n<summary>{SENTENCES[0]}</summary>\n\n{SENTENCES[1]}\n\n</details>\n\n"
            f'<p align="center"><img src="a.png" alt="{SENTENCES[2]}"></p>\n\n'
            f"<div>{SENTENCES[3]} `make install`.</div>\n\n"
            f'{SENTENCES[4]} <img src="b.png" alt="{SENTENCES[5]}">\n\n'
            f'{SENTENCES[6]} <kbd>Ctrl</kbd> <span title="{SENTENCES[0]}">{SENTENCES[7]}</span>\n')
    path = tmp_path / "in.md"
    path.write_text(page, encoding="utf-8")
    capsys.readouterr()
    out = run(toy_model, path, tmp_path / "out.md").decode()
    t = translator.translate(SENTENCES[:6])
    assert f'<img src="b.png" alt="{t[5]}">' in out  # inline HTML's too
    # inline HTML's elements: a <kbd>'s words kept, a <span>'s around its translated words
    assert "<kbd>Ctrl</kbd>" in out
    assert re.search(rf'<span title="{t[0]}">[^<\s][^<]*</span>', out), out
    assert out.startswith(f"<details>\n<summary>{t[0]}</summary>\n\n{t[1]}\n\n</details>\n\n"
                          f'<p align="center"><img src="a.png" alt="{t[2]}"></p>\n\n<div>')
    last = out.split("<div>")[1].split("</div>")[0]
    assert "`make install`" in last and "<code" not in last
    assert "warning" not in capsys.readouterr().err


def test_xliff_units(toy_model, translator, tmp_path):
    from translate.storage import xliff
    path = tmp_path / "in.xlf"
    path.write_text(XLIFF, encoding="utf-8")
    out = xliff.xlifffile.parsestring(run(toy_model, path, tmp_path / "out.xlf"))
    first, kept, no, inline = out.units
    assert str(first.target) == translator.translate([SENTENCES[0]])[0] and first.isfuzzy()
    assert str(kept.target) == "KEPT" and no.target is None
    # inline elements go through the markup path: the sentence whole, the elements kept
    assert inline_target(inline) == (translator.translate(["alpha beta gamma delta"])[0], [
        ("g", {"id": "1", "ctype": "bold"}), ("x", {"id": "2"})])
    assert inline.isfuzzy()


def test_xliff_units_that_preserve_space_keep_their_lines(toy_model, translator, tmp_path):
    """po2xliff writes a catalog's strings as units with xml:space="preserve": their lines
    are translated one by one and their line breaks and edge whitespace kept, as in the
    catalog; a unit without it is a paragraph."""
    from translate.storage import xliff
    wrapped = f"\n{SENTENCES[0]}\n  {SENTENCES[1]}\n"
    path = tmp_path / "in.xlf"
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:1.1" version="1.1">
  <file original="app.po" source-language="en" datatype="po">
    <body>
      <trans-unit xml:space="preserve" id="1"><source>{wrapped}</source><target></target>
      </trans-unit>
      <trans-unit id="2"><source>{SENTENCES[2]}
{SENTENCES[3]}</source></trans-unit>
    </body>
  </file>
</xliff>
""", encoding="utf-8")
    out = xliff.xlifffile.parsestring(run(toy_model, path, tmp_path / "out.xlf"))
    kept, loose = out.units
    first, second = translator.translate([SENTENCES[0], SENTENCES[1]])
    assert str(kept.target) == f"\n{first}\n  {second}\n"
    assert str(loose.target) == translator.translate([f"{SENTENCES[2]} {SENTENCES[3]}"],
                                                     split_sentences=True)[0]


def test_a_catalog_through_po2xliff_and_back(toy_model, translator, tmp_path):
    """A gettext catalog handed over as XLIFF, as translate-toolkit converts it (po2xliff:
    plural entries as <group>s of forms, strings with space preserved), comes back through
    xliff2po with every form translated and every string's lines kept."""
    import polib
    from translate.convert import po2xliff, xliff2po
    catalog = polib.POFile()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    catalog.append(polib.POEntry(msgid=SENTENCES[0], msgid_plural=SENTENCES[1],
                                 msgstr_plural={0: "", 1: ""}))
    catalog.append(polib.POEntry(msgid=f"\n{SENTENCES[2]}\n{SENTENCES[3]}\n", msgstr=""))
    xlf = io.BytesIO()
    po2xliff.convertpo(io.BytesIO(str(catalog).encode()), xlf, None)
    path = tmp_path / "in.xlf"
    path.write_bytes(xlf.getvalue())
    back = io.BytesIO()
    xliff2po.convertxliff(io.BytesIO(run(toy_model, path, tmp_path / "out.xlf")), back, None)
    plural, lines = [e for e in polib.pofile(back.getvalue().decode()) if e.msgid]
    assert [plural.msgstr_plural[k] for k in (0, 1)] == translator.translate(SENTENCES[:2])
    third, fourth = translator.translate(SENTENCES[2:4])
    assert lines.msgstr == f"\n{third}\n{fourth}\n"


def inline_target(unit) -> tuple[str, list[tuple[str, dict]]]:
    """An XLIFF unit's target: its text, and its inline elements with their attributes."""
    target = unit.xmlelement.find(unit.namespaced("target"))
    return (" ".join("".join(target.itertext()).split()),
            [(e.tag.split("}")[1], dict(e.attrib)) for e in target.iter() if e is not target])


XLIFF2 = f"""<?xml version="1.0" encoding="UTF-8"?>
<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en">
  <file id="f1">
    <unit id="1"><segment><source>{SENTENCES[0]}</source></segment></unit>
    <unit id="2"><segment><source>{SENTENCES[1]}</source><target>KEPT</target></segment></unit>
    <unit id="3" translate="no"><segment><source>{SENTENCES[2]}</source></segment></unit>
    <unit id="4"><segment><source>alpha <pc id="1">beta gamma</pc> delta<ph id="2"/></source>\
</segment></unit>
    <unit id="5"><segment><source>{SENTENCES[3]}</source></segment>
      <segment><source>{SENTENCES[4]}</source></segment></unit>
  </file>
</xliff>
"""


def test_xliff2_segments(toy_model, translator, tmp_path):
    from translate.storage import xliff2
    path = tmp_path / "in.xliff"
    path.write_text(XLIFF2, encoding="utf-8")
    out = xliff2.Xliff2File.parsestring(run(toy_model, path, tmp_path / "out.xliff"))
    first, kept, no, inline, *segments = out.units
    assert str(first.target) == translator.translate([SENTENCES[0]])[0]
    assert first.xmlelement.get("state") == "initial"  # left for review
    assert str(kept.target) == "KEPT" and kept.xmlelement.get("state") is None
    assert not no.target
    assert inline_target(inline) == (translator.translate(["alpha beta gamma delta"])[0], [
        ("pc", {"id": "1"}), ("ph", {"id": "2"})])
    assert [str(u.target) for u in segments] == translator.translate(SENTENCES[3:5])
    assert out.gettargetlanguage() == translator.languages["target"]


def test_xliff_of_another_version_is_one_line(toy_model, tmp_path, capsys):
    path = tmp_path / "in.xlf"
    path.write_text(XLIFF2.replace('version="2.0"', 'version="3.0"'), encoding="utf-8")
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--no-compile", "--file",
                   str(path), "-o", str(tmp_path / "out.xlf")],
          "XLIFF version 3.0 is not read; give XLIFF 1.2 or 2.0")
    assert not (tmp_path / "out.xlf").exists()


@pytest.mark.parametrize("name,content,message", [
    ("in.xlf", XLIFF.replace('source-language="en"', 'source-language="en" '
                             'target-language="fr-CA"'),
     "the XLIFF file names fr-CA as its target language; this model translates en to es"),
    ("in.xliff", XLIFF2.replace('srcLang="en"', 'srcLang="de"'),
     "the XLIFF file names de as its source language"),
    ("in.xliff", XLIFF2.replace('version="2.0" ', "").replace('srcLang="en"', 'srcLang="de"'),
     "the XLIFF file names de as its source language"),  # 2.0 known by its namespace
    ("in.po", 'msgid ""\nmsgstr ""\n"Language: de_DE\\n"\n\nmsgid "alpha"\nmsgstr ""\n',
     "the catalog's Language header names de_DE as its target language"),
])
def test_a_file_of_another_language_pair_is_one_line(toy_model, tmp_path, capsys, name,
                                                      content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    out = tmp_path / f"out{path.suffix}"
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--no-compile", "--file",
                   str(path), "-o", str(out)], message)
    assert not out.exists()
    path.write_text(content.replace("fr-CA", "es-MX").replace('"de"', '"en"')
                    .replace("de_DE", "es_ES"), encoding="utf-8")
    run(toy_model, path, out)  # the model's own pair, with a region: translated


@pytest.mark.parametrize("name,content,message", [
    ("in.xls", b"\xd0\xcf\x11\xe0", "files of type .xls are not translated"),
    ("in.xlsx", b"PK\x03\x04 no", "not an Excel workbook (.xlsx)"),
    ("in.xlsm", b"PK\x03\x04 no", "not an Excel workbook (.xlsm)"),
    ("in.xlsx", _zip({"mimetype": b"application/zip"}),
     "not an Excel workbook (.xlsx): it has no [Content_Types].xml"),
    ("in.xlsx", _zip({"[Content_Types].xml": b"<Types/>"}),
     "not an Excel workbook (.xlsx): it has no workbook part"),
    ("in.xlsx", word_document(), "not an Excel workbook (.xlsx): it is a Word document (.docx); "
     "give it that extension"),
    ("in.xlsx", _zip({"[Content_Types].xml": f'<Types xmlns="{_TYPES}"><Override '
                      'PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
                      'officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/'
                      'sharedStrings.xml" ContentType="application/vnd.openxmlformats-'
                      'officedocument.spreadsheetml.sharedStrings+xml"/></Types>'.encode(),
                      "xl/workbook.xml": b"<workbook/>", "xl/sharedStrings.xml": b"<sst><broken"}),
     "not an Excel workbook (.xlsx): its xl/sharedStrings.xml is not well-formed XML"),
    ("in.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504),
     "not an Excel workbook (.xlsx): it is encrypted with a password"),
    ("in.xlsx", _zip({"xl/workbook.xml": b"<workbook/>", "xl/media/image1.png": png(),
                      "[Content_Types].xml": f'<Types xmlns="{_TYPES}"><Override PartName="/xl/'
                      'workbook.xml" ContentType="application/vnd.ms-excel.sheet.macroEnabled.'
                      'main+xml"/></Types>'.encode()}, damaged="xl/media/image1.png"),
     "not an Excel workbook (.xlsx): Bad CRC-32 for file 'xl/media/image1.png'"),
    ("in.pdf", b"%PDF", "not a PDF file that can be translated: PDFium cannot read it"),
    ("in.docx", b"PK\x03\x04 not really a zip", "not a Word document"),
    ("in.po", b'msgid "a"\nmsgstr "b"\nmsgid', "not a gettext catalog"),
    ("in.po", b'msgid "a"\nmsgstr ""\n"broken\n', "line 3 has a string without its closing"),
    ("in.srt", b"1\nno timing here\ntext\n", "cue 1 has no"),
    ("in.txt", b"   \n", "the file is empty"),
    ("in.txt", b"fine\n\xff bad", "line 2 is not valid UTF-8"),
    ("in.md", b"# fine\n\n\xff bad", "line 3 is not valid UTF-8"),
    ("in.srt", "1\n00:00:01,000 --> 00:00:02,000\nalpha\n\n2\nb\u00e9ta".encode("utf-16-le"),
     "is not valid UTF-8"),  # UTF-16 without its mark is not taken for it
    ("in.html", b'<meta charset="klingon"><p>alpha</p>', "says it is in klingon, an encoding"),
    ("in.html", b'<meta charset="latin1"><p>\xe9</p>\n<p>\xff\xfe</p>\n<p>\x81</p>',
     "line 3 is not valid cp1252"),  # browsers read Latin-1 as windows-1252
    ("in.xlf", b"<xliff><broken", "not an XLIFF file"),
    ("in.odt", b"PK\x03\x04 no", "not an OpenDocument text"),
    ("in.odt", _zip({"mimetype": b"application/vnd.oasis.opendocument.text",
                     "content.xml": b"<office:document-content><broken"}),
     "its content.xml is not well-formed XML"),
    ("in.odt", _zip({"mimetype": b"application/vnd.oasis.opendocument.text"}),
     "it has no content.xml"),
    ("in.odp", b"PK\x03\x04 no", "not an OpenDocument presentation (.odp)"),
    ("in.pptx", b"PK\x03\x04 no", "not a PowerPoint presentation (.pptx)"),
    ("in.pptx", _zip({"[Content_Types].xml": b"<Types/>"}), "not a PowerPoint presentation"),
    ("in.docx", pptx_deck(), "not a Word document (.docx): it is a PowerPoint presentation "
     "(.pptx); give it that extension"),
    ("in.pptx", word_document(), "not a PowerPoint presentation (.pptx): it is a Word "
     "document (.docx); give it that extension"),
    ("in.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504),
     "not a Word document (.docx): it is encrypted with a password, or in the format of "
     "Office 97-2003; save it without a password, in the current format"),
    ("in.epub", b"not a zip", "not an EPUB book: it is not a zip archive"),
    ("in.epub", _zip({"mimetype": b"application/zip"}),
     "its mimetype member is not application/epub+zip"),
    ("in.epub", _zip({"mimetype": b"application/epub+zip"}),
     "it has no META-INF/container.xml"),
    ("in.epub", _zip({**epub_book("<html/>"), "OEBPS/book.opf": b"<package><broken"}),
     "its OEBPS/book.opf is not well-formed XML"),
    ("in.epub", _zip(epub_book("<html>a chapter</html>"), damaged="OEBPS/text/chapter 1.xhtml"),
     "not an EPUB book: Bad CRC-32 for file 'OEBPS/text/chapter 1.xhtml'"),
])
def test_bad_files_are_one_line_and_write_nothing(toy_model, tmp_path, capsys, name, content,
                                                  message):
    path = tmp_path / name
    path.write_bytes(content)
    out = tmp_path / f"out{path.suffix}"
    err = fails(capsys, ["translate", "--checkpoint", str(toy_model), "--no-compile", "--file",
                         str(path), "-o", str(out)], message)
    assert path.name in err  # which file
    assert not out.exists()


def test_file_flag_mistakes(toy_model, tmp_path, capsys):
    path = tmp_path / "in.txt"
    path.write_text("alpha beta\n")
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--file", str(path)],
          "--file needs -o OUT")
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--file", str(path), "-o",
                   str(tmp_path / "out.po")], "give the output the input's extension")
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--file",
                   str(tmp_path / "missing.txt"), "-o", str(tmp_path / "o.txt")],
          "missing.txt: no such file")


def test_translate_file_through_libretranslate_aio(toy_model, tmp_path):
    """Every format through LibreTranslate's /translate_file and a real client gives what
    `aiayn translate --file` gives."""
    import asyncio

    import docx
    import httpx
    from libretranslate_aio import AsyncLibreTranslate

    from tests.serve.server import Server
    files = {"in.po": catalog(tmp_path).read_bytes(), "in.xlf": XLIFF.encode(),
             "in.xliff": XLIFF2.encode(),
             "in.txt": f"{SENTENCES[0]}\n\n{SENTENCES[1]}\n".encode(),
             "in.srt": f"1\n00:00:01,000 --> 00:00:02,000\n{SENTENCES[2]}\n".encode(),
             "in.vtt": f"WEBVTT\n\n00:01.000 --> 00:02.000\n{SENTENCES[3]}\n".encode(),
             "in.html": f"<p>{SENTENCES[3]} <b>{SENTENCES[4]}</b></p>".encode(),
             "in.md": f"# {SENTENCES[0]}\n\n{SENTENCES[1]} **{SENTENCES[2]}**\n".encode(),
             "in.json": f'{{"menu": {{"open": "{SENTENCES[3]}"}}}}'.encode(),
             "in.yml": f"en:\n  open: {SENTENCES[4]}\n".encode(),
             "in.ftl": f"open = {SENTENCES[5]}\n".encode(),
             "in.php": f"<?php\nreturn ['open' => '{SENTENCES[6]}'];\n".encode()}
    document = docx.Document()
    document.add_paragraph(SENTENCES[5])
    buffer = io.BytesIO()
    document.save(buffer)
    files["in.docx"] = buffer.getvalue()
    files["in.odt"] = odt_document(SENTENCES[6].split())
    from pptx import Presentation
    deck = Presentation()  # (the whole test deck, its chart's workbook in it, is over the limit)
    deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = SENTENCES[7]
    buffer = io.BytesIO()
    deck.save(buffer)
    files["in.pptx"] = buffer.getvalue()
    import openpyxl
    book = openpyxl.Workbook()
    book.active["A1"] = SENTENCES[0]
    buffer = io.BytesIO()
    book.save(buffer)
    files["in.xlsx"] = buffer.getvalue()
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P
    sheet, row, cell = Table(name="one"), TableRow(), TableCell(valuetype="string")
    cell.addElement(P(text=SENTENCES[1]))
    row.addElement(cell)
    sheet.addElement(row)
    spreadsheet = OpenDocumentSpreadsheet()
    spreadsheet.spreadsheet.addElement(sheet)
    buffer = io.BytesIO()
    spreadsheet.save(buffer)
    files["in.ods"] = buffer.getvalue()
    files["in.epub"] = _zip(epub_book(
        '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>alpha beta</p></body></html>'))
    from tests.test_pdf import pdf_file, text
    files["in.pdf"] = pdf_file([text("R", 11, 72, 700, SENTENCES[1])])
    expected = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        expected[name] = run(toy_model, tmp_path / name, tmp_path / f"cli-{name}")
    server = Server(toy_model, "--max-body-bytes", "40000")
    try:
        async def use():
            async with AsyncLibreTranslate(server.url) as client:
                urls = {name: (await client.translate_file(tmp_path / name, source="en",
                                                           target="es")).translated_file_url
                        for name in files}
                return urls, await client.frontend_settings()
        urls, settings = asyncio.run(use())
        assert {".docx", ".pptx", ".pdf"} <= set(settings.supported_files_format)
        for name, url in urls.items():
            got = httpx.get(url).content
            if name.endswith(".docx"):  # a zip: compare what it says
                assert docx.Document(io.BytesIO(got)).paragraphs[0].text == \
                    docx.Document(io.BytesIO(expected[name])).paragraphs[0].text
            elif name.endswith(".pptx"):
                said = [Presentation(io.BytesIO(d)).slides[0].shapes.title.text
                        for d in (got, expected[name])]
                assert said[0] == said[1] != SENTENCES[7]
            elif name.endswith(".xlsx"):
                said = [openpyxl.load_workbook(io.BytesIO(d)).active["A1"].value
                        for d in (got, expected[name])]
                assert said[0] == said[1] != SENTENCES[0]
            elif name.endswith(".pdf"):  # a PDF names when it was written: compare its text
                import pypdfium2
                said = [pypdfium2.PdfDocument(d)[0].get_textpage().get_text_range()
                        for d in (got, expected[name])]
                assert said[0] == said[1] != SENTENCES[1]
            elif name.endswith((".odt", ".ods")):
                from odf import teletype, text
                from odf.opendocument import load
                said = [teletype.extractText(load(io.BytesIO(d)).getElementsByType(text.P)[0])
                        for d in (got, expected[name])]
                source = SENTENCES[6] if name.endswith(".odt") else SENTENCES[1]
                assert said[0] == said[1] != source
            else:
                assert got == expected[name], name
        big = tmp_path / "big.txt"
        big.write_text("alpha beta\n" * 5000)
        fields = {"source": "en", "target": "es"}
        answer = httpx.post(server.url + "/translate_file", data=fields,
                            files={"file": ("big.txt", big.read_bytes())})
        assert answer.status_code == 413
        answer = httpx.post(server.url + "/translate_file", data=fields,
                            files={"file": ("x.key", b"PK")})
        assert answer.status_code == 400 and ".key are not translated" in answer.json()["error"]
        answer = httpx.post(server.url + "/translate_file", data=fields,
                            files={"file": ("x.pdf", b"%PDF-1.4 broken")})
        assert answer.status_code == 400 and "not a PDF file" in answer.json()["error"]
        answer = httpx.post(server.url + "/translate_file", data=fields,
                            files={"file": ("x.docx", b"PK broken")})
        assert answer.status_code == 400 and "not a Word document" in answer.json()["error"]
        assert httpx.get(server.url + "/download_file/nothing.txt").status_code == 404
    finally:
        server.stop()


def test_a_pair_named_for_a_model_is_the_pair_its_files_carry(tiny_checkpoint):
    """`aiayn serve de-es=DIR` names the pair of a checkpoint that does not know its own:
    files then say they are in the target language and are checked against the pair."""
    from aiayn.documents import translate_document
    from aiayn.errors import UserError
    translator = load(tiny_checkpoint, compile=False)
    page = b'<html lang="de"><body><p>alpha beta</p></body></html>'
    assert b'<html lang="de">' in translate_document(translator, page, ".html")  # unknown
    translator.name_pair("de", "es")
    assert translator.codec.language == "de"  # German sentence rules split its lines
    assert b'<html lang="es">' in translate_document(translator, page, ".html")
    french = b'msgid ""\nmsgstr ""\n"Language: fr\\n"\n\nmsgid "alpha"\nmsgstr ""\n'
    with pytest.raises(UserError, match="names fr as its target language"):
        translate_document(translator, french, ".po")
