"""PDF files translated in place: lines joined into paragraphs and each translated whole,
formatting kept, set again where the original was; what cannot be set again is left as it
is. The test files are written here byte by byte, as PDF 1.4 defines them, and the output is
read back by pypdf as well as by PDFium."""

import io
import re

import pytest

from aiayn.translate import load
from tests.conftest import toy_pairs
from tests.test_cli import fails
from tests.test_documents import run

pytest.importorskip("pypdfium2")
SENTENCES = [s for s, _ in toy_pairs(12, seed=41)]
FONTS = {"R": "Times-Roman", "B": "Times-Bold", "H": "Helvetica-Bold", "C": "Courier"}


@pytest.fixture(scope="module")
def translator(toy_model):
    return load(toy_model, compile=False)


def pdf_file(pages: list[str], *, resources: str = "", annotations: str = "",
             catalog: str = "") -> bytes:
    """A PDF of US Letter pages, each drawn by its content stream, with the standard fonts
    of ``FONTS`` named /R, /B, /H and /C (and other ``resources``; the first page with
    ``annotations``; more ``catalog`` entries)."""
    fonts = {name: k for k, name in enumerate(FONTS, start=3)}
    first_page = 3 + len(FONTS)
    objects = [f"<< /Type /Catalog /Pages 2 0 R {catalog}>>",
               "<< /Type /Pages /Kids [%s] /Count %d >>" % (
                   " ".join(f"{first_page + 2 * k} 0 R" for k in range(len(pages))),
                   len(pages))]
    objects += [f"<< /Type /Font /Subtype /Type1 /BaseFont /{base} "
                f"/Encoding /WinAnsiEncoding >>" for base in FONTS.values()]
    fonts_named = " ".join(f"/{name} {number} 0 R" for name, number in fonts.items())
    for k, content in enumerate(pages):
        annotated = f"/Annots [{annotations}] " if annotations and not k else ""
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] {annotated}"
                       f"/Resources << /Font << {fonts_named} >> {resources} >> "
                       f"/Contents {first_page + 2 * k + 1} 0 R >>")
        objects.append(f"<< /Length {len(content.encode('latin-1'))} >>\nstream\n"
                       f"{content}\nendstream")
    out, offsets = io.BytesIO(), []
    out.write(b"%PDF-1.4\n")
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
              f"%%EOF\n".encode())
    return out.getvalue()


def text(font: str, size: float, x: float, y: float, words: str, extra: str = "") -> str:
    return f"BT /{font} {size} Tf {extra} {x} {y} Td ({words}) Tj ET"


# the advance of each character, in thousandths of an em (Adobe's metrics of the fonts)
TIMES = dict(zip("abcdefghijklmnopqrstuvwxyz -_1.",
                 [444, 500, 444, 500, 444, 333, 500, 500, 278, 278, 500, 278, 778, 500, 500,
                  500, 500, 333, 389, 278, 500, 500, 722, 500, 500, 444, 250, 333, 500, 500,
                  250]))
WIDTHS = {"R": TIMES, "B": {**TIMES, "k": 556, "p": 556}, "C": {c: 600 for c in TIMES}}


def width(runs: list[tuple[str, str]], size: float) -> float:
    return sum(WIDTHS[font][c] for font, words in runs for c in words) * size / 1000


def justified(runs: list[tuple[str, str]], size: float, x: float, y: float,
              right: float) -> str:
    """A line of runs (font, text) from x to right, the spaces widened to fill it."""
    spaces = sum(words.count(" ") for _, words in runs)
    stretch = (right - x - width(runs, size)) / spaces
    shown = " ".join(f"/{font} {size} Tf ({words}) Tj" for font, words in runs)
    return f"BT {stretch:.3f} Tw {x} {y} Td {shown} 0 Tw ET"


def paragraph_lines() -> list[list[tuple[str, str]]]:
    """Three lines of one paragraph, the first two about as long (justified, their spaces
    stay narrow): the second holds a bold word and code."""
    words = SENTENCES[1].split() + SENTENCES[2].split() + SENTENCES[3].split()
    third = len(words) // 3
    second = [("R", " ".join(words[third:2 * third]) + " "), ("B", "kappa"), ("R", " "),
              ("C", "x_1"), ("R", " and")]
    first = words[:third]
    while width([("R", " ".join(first))], 11) < width(second, 11) - 10:
        first.append(words[len(first) % len(words)])
    return [[("R", " ".join(first))], second, [("R", " ".join(words[2 * third:]))]]


def page_of_paragraphs() -> str:
    """A heading; a paragraph of three lines (two justified) with a bold word and code; a list
    item; a right-aligned running head; a rotated line, an invisible one and a framed box."""
    lines = paragraph_lines()
    right = 72 + max(width(line, 11) for line in lines[:2]) + 5
    return "\n".join([
        text("R", 9, 480, 760, SENTENCES[4]),  # the running head, ending at the right
        text("H", 16, 72, 700, SENTENCES[0]),
        justified(lines[0], 11, 72, 670, right),
        justified(lines[1], 11, 72, 657, right),
        text("R", 11, 72, 644, lines[2][0][1]),
        text("R", 11, 72, 600, "- " + SENTENCES[5]),
        text("R", 11, 0, 0, SENTENCES[6], "0 1 -1 0 560 200 Tm"),
        text("R", 11, 72, 500, SENTENCES[7], "3 Tr"),
        "0 0 1 RG 60 400 300 60 re S",
        text("R", 11, 72, 420, SENTENCES[8], "0 Tr"),
    ])


def chars(data: bytes, page: int = 0) -> list[tuple[str, str, float, float]]:
    """Each character PDFium reads on a page: the character, its font's name, x and y."""
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    document = pdfium.PdfDocument(data)
    textpage = document[page].get_textpage()
    name, flags = ctypes.create_string_buffer(128), ctypes.c_int()
    x, y = ctypes.c_double(), ctypes.c_double()
    out = []
    for k in range(textpage.count_chars()):
        raw.FPDFText_GetFontInfo(textpage.raw, k, name, 128, flags)
        raw.FPDFText_GetCharOrigin(textpage.raw, k, x, y)
        out.append((chr(raw.FPDFText_GetUnicode(textpage.raw, k)), name.value.decode(),
                    x.value, y.value))
    return out


def lines_of(data: bytes) -> list[tuple[float, str]]:
    """The page's lines as pypdf reads them, by their baseline, top down."""
    from pypdf import PdfReader
    found: dict[float, list[tuple[float, str]]] = {}

    def visit(text, cm, tm, font, size):
        if text.strip():
            found.setdefault(round(tm[5] * cm[3] + cm[5]), []).append((tm[4] + cm[4], text))
    PdfReader(io.BytesIO(data)).pages[0].extract_text(visitor_text=visit)
    return [(y, " ".join(" ".join(t.split()) for _, t in sorted(parts)))
            for y, parts in sorted(found.items(), reverse=True)]


def sent_for(data: bytes) -> list[str]:
    """What translating a PDF sends the translator, each paragraph's markup (the translator
    answers with it as it is)."""
    from aiayn.documents import Job, pdf
    sent: list[str] = []

    class Recorder(Greek):
        def translate_markup(self, documents, fmt, options=None, glossary=None,
                             fragments=False):
            sent.extend(documents)
            return list(documents)
    pdf.translate_pdf(data, Job(Recorder()))
    return sent


def test_a_paragraph_over_lines_is_translated_whole_and_set_in_its_place(
        toy_model, translator, tmp_path, capsys):
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([page_of_paragraphs()]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    assert "2 line(s) left as they are: rotated, invisible, in a reused drawing" in \
        capsys.readouterr().err
    lines = lines_of(out)
    said = {y: line for y, line in lines}
    # the heading and the running head, each on its line
    assert said[700] == translator.translate_markup([SENTENCES[0]])[0]
    assert said[760] == translator.translate_markup([SENTENCES[4]])[0]
    # the three lines as one sentence, its bold word and code kept, set from the first line's
    # baseline down
    source = " ".join("".join(f"<b>{w}</b>" if font == "B" else f"<code>{w}</code>"
                              if font == "C" else w for font, w in line)
                      for line in paragraph_lines())
    expected = translator.translate_markup([source])[0]
    paragraph = " ".join(line for y, line in lines if 630 < y <= 670)
    assert paragraph.split() == re.sub(r"<[^>]+>", "", expected).split()
    assert max(y for y, _ in lines if y <= 670) == 670
    read = [c for c in chars(out) if not c[0].isspace()]
    assert "".join(c[0] for c in read if c[1] == "Courier") == "x_1"  # code as written
    bold = re.search(r"<b>(.*?)</b>", expected)
    assert "".join(c[0] for c in read if c[1] == "Times-Bold") == \
        (bold.group(1).replace(" ", "") if bold else "")
    # the list item's mark where it was, the item translated after it
    item = " ".join(line for y, line in lines if 560 < y <= 600)
    assert item == "- " + translator.translate_markup([SENTENCES[5]])[0]
    dash = next(c for c in chars(out) if c[0] == "-" and round(c[3]) == 600)
    assert round(dash[2]) == 72
    # rotated and invisible text left alone, as is the frame
    from pypdf import PdfReader
    everything = PdfReader(io.BytesIO(out)).pages[0].extract_text()
    assert SENTENCES[6] in everything.replace("\n", " ") or \
        SENTENCES[6].replace(" ", "") in everything.replace("\n", "").replace(" ", "")
    assert " ".join(line for y, line in lines if 380 < y <= 420) == \
        translator.translate_markup([SENTENCES[8]])[0]
    import pypdfium2 as pdfium
    page = pdfium.PdfDocument(out)[0]
    assert sum(o.type == pdfium.raw.FPDF_PAGEOBJ_PATH for o in page.get_objects()) == 1


def marked_text(data: bytes) -> dict[int, str]:
    """The text a page's content draws inside each marked-content sequence with an MCID (what
    a tagged PDF's structure tree reads), as pypdf parses the content stream."""
    from pypdf import PdfReader
    from pypdf.generic import ContentStream
    reader = PdfReader(io.BytesIO(data))
    page = reader.pages[0]
    found: dict[int, str] = {}
    open_ids: list[int | None] = []
    for operands, operator in ContentStream(page.get_contents(), reader).operations:
        if operator == b"BDC":
            properties = operands[1]
            if not hasattr(properties, "get"):  # a name in the page's /Properties
                properties = page["/Resources"]["/Properties"][properties]
            open_ids.append(properties.get("/MCID"))
        elif operator == b"BMC":
            open_ids.append(None)
        elif operator == b"EMC":
            open_ids.pop()
        elif operator in (b"Tj", b"TJ") and open_ids and open_ids[-1] is not None:
            strings = operands[0] if operator == b"TJ" else operands
            said = "".join(bytes(x.original_bytes).decode("latin-1") for x in strings
                           if hasattr(x, "original_bytes"))
            found[open_ids[-1]] = found.get(open_ids[-1], "") + said
    return found


def test_a_tagged_pdf_s_structure_reads_the_translation(toy_model, translator, tmp_path):
    """A tagged PDF ties its text to its structure tree by marked content (MCIDs): the text
    set anew carries its paragraph's marks, its words with spaces between them, so the tree
    reads the translation (screen readers read the tree)."""
    page = "\n".join([f"/H1 <</MCID 0>> BDC {text('H', 16, 72, 700, SENTENCES[0])} EMC",
                      f"/P <</MCID 1>> BDC {text('R', 11, 72, 650, SENTENCES[5])} EMC"])
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([page], catalog="/MarkInfo << /Marked true >> "))
    assert marked_text(path.read_bytes()) == {0: SENTENCES[0], 1: SENTENCES[5]}
    out = marked_text(run(toy_model, path, tmp_path / "out.pdf"))
    t = translator.translate_markup([SENTENCES[0], SENTENCES[5]])
    assert {k: " ".join(v.split()) for k, v in out.items()} == {0: t[0], 1: t[1]}


def test_a_right_aligned_line_still_ends_where_it_did(toy_model, translator, tmp_path):
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([page_of_paragraphs()]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    head = [c for c in chars(out) if round(c[3]) == 760 and not c[0].isspace()]
    original = [c for c in chars(path.read_bytes()) if round(c[3]) == 760]
    assert head and abs(max(c[2] for c in head) - max(c[2] for c in original)) < 12


def test_a_listing_and_a_page_without_text_are_left_as_they_are(toy_model, tmp_path, capsys):
    listing = "\n".join(text("C", 10, 72, 700 - 12 * k, line)
                        for k, line in enumerate(SENTENCES[9:12]))
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([listing, "0 0 1 rg 100 100 50 50 re f"]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    assert [line for _, line in lines_of(out)] == SENTENCES[9:12]
    from pypdf import PdfReader
    assert len(PdfReader(io.BytesIO(out)).pages) == 2


def test_a_scan_s_invisible_text_only_is_one_warning(toy_model, tmp_path, capsys):
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([text("R", 11, 72, 700, SENTENCES[0], "3 Tr")]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    err = capsys.readouterr().err
    assert "no text that can be translated" in err
    assert len(out) > 0


@pytest.mark.parametrize("content,message", [
    (b"%PDF-1.4\nnothing else", "not a PDF file that can be translated"),
    (b"\x89PNG\r\n\x1a\n" + bytes(64), "not a PDF file that can be translated"),
])
def test_bad_pdf_files_are_one_line_and_write_nothing(toy_model, tmp_path, capsys, content,
                                                      message):
    path = tmp_path / "in.pdf"
    path.write_bytes(content)
    out = tmp_path / "out.pdf"
    err = fails(capsys, ["translate", "--checkpoint", str(toy_model), "--no-compile", "--file",
                         str(path), "-o", str(out)], message)
    assert "in.pdf" in err
    assert not out.exists()


def test_a_pdf_with_a_password_is_one_line(toy_model, tmp_path, capsys):
    from pypdf import PdfReader, PdfWriter
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_file([page_of_paragraphs()]))))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    path = tmp_path / "in.pdf"
    with open(path, "wb") as handle:
        writer.write(handle)
    out = tmp_path / "out.pdf"
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--no-compile", "--file",
                   str(path), "-o", str(out)],
          "in.pdf: not a PDF file that can be translated: it is encrypted with a password; "
          "save it without one")
    assert not out.exists()


def test_contents_leaders_and_table_cells_are_kept_apart(toy_model, translator, tmp_path):
    """A table of contents' line: its title translated, its dots and page number left where
    they were; cells of a table drawn without lines (words far apart) are translated apart;
    all on a page drawn at three quarters of its units (as Canva and others write them)."""
    page = "\n".join([
        "0.75 0 0 0.75 0 0 cm",
        f"BT /R 14 Tf 96 900 Td ({SENTENCES[0]} . . . . . . . . . . . . 7) Tj ET",
        f"BT /R 14 Tf 96 860 Td ({SENTENCES[1]}) Tj 300 0 Td ({SENTENCES[2]}) Tj ET",
    ])
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([page]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    read = chars(out)
    leader = [c for c in read if round(c[3]) == 675 and c[0] in ".7"]
    source = [c for c in chars(path.read_bytes()) if round(c[3]) == 675 and c[0] in ".7"]
    assert [(c[0], round(c[2], 1)) for c in leader] == [(c[0], round(c[2], 1)) for c in source]
    said = {y: line for y, line in lines_of(out)}
    title = translator.translate_markup([SENTENCES[0]])[0]
    assert said[675].startswith(title + " . . .") and said[675].endswith("7")
    cells = translator.translate_markup(SENTENCES[1:3])
    assert said[645] == f"{cells[0]} {cells[1]}"
    # the cells start where they did, in the page's units: the second at 0.75 * (96 + 300),
    # after a gap
    xs = sorted(c[2] for c in read if round(c[3]) == 645 and not c[0].isspace())
    second = next(b for a, b in zip(xs, xs[1:]) if b - a > 12)
    assert abs(second - 0.75 * 396) < 1.5
    sized = [c for c in read if round(c[3]) == 645 and not c[0].isspace()]
    box = [c for c in chars(path.read_bytes()) if round(c[3]) == 645]
    assert abs(min(c[2] for c in sized) - min(c[2] for c in box)) < 1.5


def test_a_justified_line_s_wide_spaces_are_not_columns():
    """A justified line of a few long words (TeX sets values and names so) has its spaces
    stretched wider than a column's gutter: read as one line, since the lines above and below
    run across them. A table whose rows end alike keeps its cells apart; so does a listing."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from aiayn.documents.pdf.glyphs import read_lines
    words = SENTENCES[1].split() + SENTENCES[2].split()
    long = ["qqqqqqqq", "rrrrrrrr", "ssssssss"]
    right = 72 + width([("R", " ".join(words))], 11) + 20
    assert (right - 72 - width([("R", " ".join(long))], 11)) / 2 > 2 * 11  # wider than 2 em
    cells = ["abc", "a", "abcdefgh"]
    page = "\n".join([
        justified([("R", " ".join(words))], 11, 72, 700, right),
        justified([("R", " ".join(long))], 11, 72, 687, right),
        justified([("R", " ".join(words))], 11, 72, 674, right),
        *(text("R", 11, 72, y, cell) + text("R", 11, 200, y, "lambda") +
          text("R", 11, 330, y, "done") for y, cell in zip((600, 587, 574), cells)),
        *(text("C", 11, 72, y, "x_1") + text("C", 11, 200, y, "y_1") for y in (500, 487)),
    ])
    document = pdfium.PdfDocument(pdf_file([page]))
    textpage = document[0].get_textpage()
    lines = [" ".join(line.text.split()) for line in read_lines(textpage.raw, document[0], raw)]
    assert " ".join(long) in lines
    for cell in cells:
        assert [cell, "lambda", "done"] == lines[lines.index(cell):lines.index(cell) + 3]
    assert lines.count("x_1") == 2 and lines.count("y_1") == 2


def test_slanted_letters_are_italic_not_turned(toy_model, translator, tmp_path, capsys):
    """A word processor slants a font that has no italic (LibreOffice by 15 degrees): the
    line runs left to right, so it is read, as italic, and translated; a line turned a
    quarter is left as it is."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from aiayn.documents.pdf.glyphs import read_lines
    page = "\n".join([text("R", 11, 0, 0, SENTENCES[9], "1 0 0.2679 1 72 700 Tm"),
                       text("R", 11, 0, 0, SENTENCES[6], "0 1 -1 0 560 200 Tm")])
    document = pdfium.PdfDocument(pdf_file([page]))
    first = document[0]
    textpage = first.get_textpage()
    lines = read_lines(textpage.raw, first, raw)
    slanted = next(line for line in lines if line.text.strip() == SENTENCES[9])
    assert slanted.plain and all(style.italic for style in slanted.styles)
    assert not next(line for line in lines if line.text.strip() == SENTENCES[6]).plain
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([page]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    assert "1 line(s) left as they are" in capsys.readouterr().err
    assert dict(lines_of(out))[700] == translator.translate_markup([SENTENCES[9]])[0]
    assert {c[1] for c in chars(out) if round(c[3]) == 700} == {"Times-Italic"}


def test_a_word_hyphenated_at_a_line_s_end_joins_its_lines_into_one_paragraph():
    """PDFium reads a word broken by a hyphen on into the next line, with no line end
    between: the two lines are still two, one step apart, so the paragraph goes on over both
    and the word is whole again."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from aiayn.documents.pdf.glyphs import read_lines
    words = SENTENCES[1].split() + SENTENCES[2].split()
    right = 72 + width([("R", " ".join(words[:6]) + " trans-")], 11)
    page = "\n".join([
        text("R", 11, 72, 700, " ".join(words[:6]) + " trans-"),
        text("R", 11, 72, 687, "lation " + " ".join(words[6:])),
        text("R", 11, 72, 674, "xx " * int((right - 72) / 5)),  # (the column's edge)
    ])
    data = pdf_file([page])
    document = pdfium.PdfDocument(data)
    textpage = document[0].get_textpage()
    lines = read_lines(textpage.raw, document[0], raw)
    assert [(line.text.strip(), line.baseline) for line in lines[:2]] == [
        (" ".join(words[:6]) + " trans\u00ad", 700.0), ("lation " + " ".join(words[6:]), 687.0)]
    assert " ".join(words[:6]) + " translation " + " ".join(words[6:]) in sent_for(data)[0]
    # what the next line begins with does not make it a list's item ("ECMA-" / "402) APIs"),
    # and the hyphen before a number is the word's own
    sent = sent_for(pdf_file([page.replace("trans-", "ecma-").replace("(lation ", "(1\\) ")]))
    assert " ".join(words[:6]) + " ecma-1) " + " ".join(words[6:]) in sent[0]
    # a compound broken at its own hyphen keeps it where the document writes it so elsewhere
    # (and not run together)
    for elsewhere, joined in (("a well-known name", "well-known"),
                              ("a well-known name, wellknown", "wellknown"),
                              ("no such word", "wellknown")):
        sent = sent_for(pdf_file([page.replace("trans-", "well-").replace(
            "(lation ", "(known ") + "\n" + text("R", 11, 72, 600, elsewhere)]))
        assert " ".join(words[:6]) + f" {joined} " + " ".join(words[6:]) in sent[0]


def filled(words: list[str], x: float, right: float) -> tuple[list[tuple[str, str]], list[str]]:
    """As many of ``words`` as fit from x to right in Times at 11 points: the line's runs
    and the words left."""
    k = 1
    while k < len(words) and width([("R", " ".join(words[:k + 1]))], 11) < right - x:
        k += 1
    return [("R", " ".join(words[:k]))], words[k:]


def carried_page(indent: float = 0.0, foot: str = "") -> tuple[str, str, str]:
    """Two columns (72-290, 320-538): a paragraph of three justified lines at the first's
    foot, going on at the top of the second (indented by ``indent``) and ending there; a
    paragraph of its own below. ``foot`` ends the first column's last line. The page, and the
    two paragraphs' texts as read."""
    words = (" ".join(SENTENCES[1:7]) + " ").split() * 2
    lines, left, texts = [], words, []
    for k, y in enumerate((700, 687, 674)):
        line, left = filled(left, 72 + 15 * (k == 0), 290)
        if k == 2 and foot:
            line, left = [("R", line[0][1] + foot)], left
        lines.append(justified(line, 11, 72 + 15 * (k == 0), y, 290))
        texts.append(line[0][1])
    second, left = filled(left, 320 + indent, 538)
    lines.append(justified(second, 11, 320 + indent, 700, 538))
    end = " ".join(left[:3]) + "."
    lines.append(text("R", 11, 320, 687, end))
    lines.append(text("R", 11, 335, 650, SENTENCES[8]))
    return "\n".join(lines), " ".join(texts + [second[0][1], end]), SENTENCES[8]


def test_a_paragraph_carried_into_the_next_column_is_translated_whole(
        toy_model, translator, tmp_path):
    """A paragraph that a column's foot cut goes on at the top of the next column, not
    indented: it is translated whole, and the translation shared out between the two places
    (read in order). An indented line there, or a sentence's end at the foot, begins a
    paragraph of its own."""
    page, whole, alone = carried_page()
    assert sent_for(pdf_file([page])) == [whole, alone]
    for other in (carried_page(indent=15), carried_page(foot=".")):
        sent = sent_for(pdf_file([other[0]]))
        assert len(sent) == 3 and " ".join(sent[:2]) == other[1]
    # translated: the whole paragraph's translation reads on from the first column's foot
    # into the second's top
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([page]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    from pypdf import PdfReader
    read = re.sub(r"\s+", "", PdfReader(io.BytesIO(out)).pages[0].extract_text())
    expected = translator.translate_markup([whole])[0]
    assert re.sub(r"\s+", "", expected) in read
    columns = {round(c[2]) < 300 for c in chars(out) if c[0].isalpha() and round(c[3]) > 660}
    assert columns == {True, False}  # both places hold some of it


def test_a_joined_translation_is_shared_out_at_spaces_its_spans_numbered_on():
    from aiayn.documents.pdf import _joined, _shared_out
    from aiayn.documents.pdf.blocks import Plan
    markup, styles, links = _joined([Plan('a <span data-r="1">b</span>', ["own", "bold"], {}),
                                     Plan('c <a data-h="1">d</a>', ["own too", "link"], {1: 4})])
    assert markup == 'a <span data-r="1">b</span> c <a data-h="2">d</a>'
    assert styles == ["own", "bold", "link"] and links == [{}, {2: 4}]
    pieces = [("eins ", None), ("zwei drei", 1), (" vier", None), ("", 2), (" fünf", 2)]
    assert _shared_out(pieces, [0.5, 0.5]) == [
        [("eins ", None), ("zwei drei", 1)], [("vier", None), ("", 2), (" fünf", 2)]]
    # a span cut in two goes on in the next part; a word alone leaves the next part empty
    assert _shared_out([("eins zwei", 1)], [0.5, 0.5]) == [[("eins", 1)], [("zwei", 1)]]
    assert _shared_out([("eins", None)], [0.5, 0.5]) == [[("eins", None)], []]


def test_a_paragraph_carried_onto_the_next_page_is_translated_whole():
    """The same across a page break: the last line of a page full, the next page's first
    line not indented; a running head in the same size on every page between them."""
    words = (" ".join(SENTENCES[1:7]) + " ").split() * 2
    first, left = filled(words, 72, 400)
    second, left = filled(left, 72, 400)
    pages = [justified(first, 11, 72, 100, 400) + "\n" + justified(second, 11, 72, 87, 400),
             text("R", 11, 72, 700, " ".join(left[:4]) + "."), text("R", 11, 72, 700, "end.")]
    whole = " ".join([first[0][1], second[0][1], " ".join(left[:4]) + "."])
    assert sent_for(pdf_file(pages)) == [whole, "end."]
    head = text("R", 11, 72, 740, SENTENCES[9])
    assert sent_for(pdf_file([f"{head}\n{page}" for page in pages])) == [
        SENTENCES[9], whole, SENTENCES[9], SENTENCES[9], "end."]


def test_running_heads_and_feet_recur_a_page_s_first_line_does_not():
    from aiayn.documents.pdf.blocks import Paragraph, furniture
    from aiayn.documents.pdf.glyphs import Line

    def page(top: str, first: str, foot: str) -> list[Paragraph]:
        return [Paragraph([Line(text, baseline=y)]) for text, y in
                ((top, 760.0), (first, 700.0), (first + " goes on", 687.0), (foot, 40.0))]
    pages = [page("Chapter 2: Reading", f"Paragraph {n} begins", str(n)) for n in range(4)]
    aside = furniture(pages)
    assert aside == {id(p) for one in pages for p in (one[0], one[3])}
    # a page's first line of text on the same baseline on every page is not a running head
    pages = [page(f"Heading {c}", f"Paragraph {c} begins", "") for c in "abcd"]
    assert furniture([one[1:3] for one in pages]) == set()
    assert furniture(pages[:2]) == set()  # (two pages: no running heads told)


def test_a_word_hyphenated_at_a_column_s_foot_leaves_the_next_column_s_top_apart():
    """The word a hyphen breaks at the foot of a column goes on at the top of the next,
    higher on the page: the two lines stay two, each where it stands."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from aiayn.documents.pdf.glyphs import read_lines
    words = SENTENCES[1].split()
    page = "\n".join([text("R", 11, 72, 100 + 13 * k, " ".join(words)) for k in (2, 1)] + [
        text("R", 11, 72, 100, " ".join(words[:4]) + " trans-"),
        text("R", 11, 320, 700, "lation " + " ".join(words[4:])),
        text("R", 11, 320, 687, " ".join(words))])
    document = pdfium.PdfDocument(pdf_file([page]))
    textpage = document[0].get_textpage()
    lines = {line.text.strip(): (line.left, line.baseline)
             for line in read_lines(textpage.raw, document[0], raw)}
    assert lines[" ".join(words[:4]) + " trans\u00ad"] == (pytest.approx(72, abs=1), 100.0)
    assert lines["lation " + " ".join(words[4:])] == (pytest.approx(320, abs=1), 700.0)


class Greek:
    """A translator that answers in Greek letters, which the standard fonts lack."""

    languages = None

    def translate_markup(self, documents, fmt, options=None, glossary=None, fragments=False):
        return ["καλημέρα " + d for d in documents]


def test_letters_the_standard_fonts_lack_are_set_in_a_unicode_font(tmp_path, monkeypatch):
    from aiayn.documents import Job, pdf
    from aiayn.documents.pdf import fonts as choice
    from aiayn.errors import UserError
    data = pdf_file([text("R", 11, 72, 700, SENTENCES[0])])
    out = pdf.translate_pdf(data, Job(Greek()))
    said = [line for _, line in lines_of(out)]
    assert said == ["καλημέρα " + SENTENCES[0]]
    fonts = {c[1] for c in chars(out) if not c[0].isspace()}
    assert any("DejaVu" in name for name in fonts), fonts
    monkeypatch.setattr(choice, "folders", lambda: [tmp_path])
    with pytest.raises(UserError, match="install the DejaVu fonts"):
        pdf.translate_pdf(data, Job(Greek()))


@pytest.mark.parametrize("said,now", [("en-US", "el"), ("fr", "fr"), (None, None)])
def test_the_document_s_language_names_the_target_where_it_named_the_source(said, now):
    """The catalog's /Lang, which screen readers read the text in: a source language's
    becomes the target's; another language, or none, is left as it was."""
    import pypdf

    from aiayn.documents import Job, pdf

    class EnglishToGreek(Greek):
        languages = {"source": "en", "target": "el"}
    data = pdf_file([text("R", 11, 72, 700, SENTENCES[0])],
                    catalog=f"/Lang ({said}) " if said else "")
    out = pdf.translate_pdf(data, Job(EnglishToGreek()))
    assert pypdf.PdfReader(io.BytesIO(out)).trailer["/Root"].get("/Lang") == now


def test_columns_read_side_by_side_are_paragraphs_of_their_own(toy_model, translator,
                                                               tmp_path):
    """Two columns whose lines a PDF draws in turn, left then right on each baseline (as
    many word processors do): each column's two lines are one paragraph."""
    columns = [SENTENCES[9].split() + SENTENCES[10].split(), SENTENCES[11].split() +
               SENTENCES[3].split()]
    halves = [[words[:len(words) // 2], words[len(words) // 2:]] for words in columns]
    right = [x + 5 + max(width([("R", " ".join(half))], 11) for half in pair)
             for x, pair in zip((72, 320), halves)]
    drawn = []
    for k, y in enumerate((700, 687)):
        for x, pair, edge in zip((72, 320), halves, right):
            line = [("R", " ".join(pair[k]))]
            drawn.append(justified(line, 11, x, y, edge) if k == 0 else
                         text("R", 11, x, y, line[0][1]))
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file(["\n".join(drawn)]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    read = [c for c in chars(out) if not c[0].isspace()]
    for x, edge, words in zip((72, 320), right, columns):
        said = "".join(c[0] for c in read if x - 1 <= c[2] < edge + 30 and c[3] > 600
                       and (x == 320 or c[2] < 300))
        expected = translator.translate_markup([" ".join(words)])[0]
        assert said == expected.replace(" ", "")


def test_a_page_pdfium_cannot_write_again_is_left_as_it_was(toy_model, tmp_path, capsys):
    """PDFium writes a calibrated colour space's fill as black: the page that has one is
    left as it was, with a warning, and the others are translated."""
    import numpy as np
    import pypdfium2 as pdfium
    filled = "/Cal cs 0.9 0.2 0.1 sc 72 500 300 150 re f\n" + text("R", 11, 72, 700,
                                                                  SENTENCES[0])
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([filled, text("R", 11, 72, 700, SENTENCES[1])],
                              resources="/ColorSpace << /Cal [/CalRGB << /WhitePoint "
                                        "[0.9505 1 1.089] >>] >>"))
    out = run(toy_model, path, tmp_path / "out.pdf")
    assert "page(s) 1 left as they were: PDFium cannot write their drawings again" in \
        capsys.readouterr().err
    pictures = [np.asarray(pdfium.PdfDocument(d)[0].render(scale=0.5).to_pil())
                for d in (path.read_bytes(), out)]
    assert (pictures[0] == pictures[1]).all()
    said = {y: line for y, line in lines_of(out)}
    assert said[700] == SENTENCES[0]
    from pypdf import PdfReader
    second = PdfReader(io.BytesIO(out)).pages[1].extract_text().strip()
    assert second != SENTENCES[1] and second


def test_a_link_moves_with_its_words(toy_model, translator, tmp_path):
    """A link (an annotation over words) ends up over the words its text became."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    words = SENTENCES[4].split() + SENTENCES[5].split()
    before = " ".join(words[:2]) + " "
    start = 72 + width([("R", before)], 11)
    end = start + width([("R", words[2])], 11)
    link = (f"<< /Type /Annot /Subtype /Link /Rect [{start:.2f} 696 {end:.2f} 708] "
            f"/Border [0 0 0] /A << /S /URI /URI (https://example.org/) >> >>")
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([text("R", 11, 72, 700, " ".join(words))], annotations=link))
    out = run(toy_model, path, tmp_path / "out.pdf")
    source = " ".join(words[:2]) + f' <a href="x">{words[2]}</a> ' + " ".join(words[3:])
    expected = translator.translate_markup([source])[0]
    inside = re.search(r"<a[^>]*>(.*?)</a>", expected).group(1).replace(" ", "")
    page = pdfium.PdfDocument(out)[0]
    annotation = raw.FPDFPage_GetAnnot(page.raw, 0)
    rect = raw.FS_RECTF()
    raw.FPDFAnnot_GetRect(annotation, rect)
    raw.FPDFPage_CloseAnnot(annotation)
    under = page.get_textpage().get_text_bounded(rect.left + 0.5, rect.bottom + 1,
                                                  rect.right - 0.5, rect.top - 1)
    assert under.replace(" ", "") == inside


@pytest.mark.parametrize("bottom", [698.3, 703.3], ids=["underline", "strike-through"])
def test_an_underline_or_a_strike_through_moves_with_its_words(toy_model, translator,
                                                               tmp_path, bottom):
    """An underline (a strike-through) is a thin rule drawn under (through) words; it ends
    up under (through) the words their text became, at the same height, and the old rule
    goes. A table's rule under a line stays where it is."""
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    words = SENTENCES[4].split() + SENTENCES[5].split()
    start = 72 + width([("R", " ".join(words[:2]) + " ")], 11)
    end = start + width([("R", words[2])], 11)
    content = "\n".join([text("R", 11, 72, 700, " ".join(words)),
                         f"0 0 0 rg {start:.2f} {bottom} {end - start:.2f} 0.6 re f",
                         text("R", 11, 72, 600, SENTENCES[6]),
                         "0 0 0 rg 40 596 532 0.5 re f"])  # a rule across the page
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([content]))
    out = run(toy_model, path, tmp_path / "out.pdf")
    source = " ".join(words[:2]) + f" <b>{words[2]}</b> " + " ".join(words[3:])
    expected = translator.translate_markup([source])[0]
    inside = re.search(r"<b>(.*?)</b>", expected).group(1).replace(" ", "")
    page = pdfium.PdfDocument(out)[0]
    textpage = page.get_textpage()
    rules, box = [], [ctypes.c_float() for _ in range(4)]
    for k in range(raw.FPDFPage_CountObjects(page.raw)):
        obj = raw.FPDFPage_GetObject(page.raw, k)
        if raw.FPDFPageObj_GetType(obj) == raw.FPDF_PAGEOBJ_PATH:
            raw.FPDFPageObj_GetBounds(obj, *box)
            rules.append(tuple(round(v.value, 1) for v in box))
    assert (40.0, 596.0, 572.0, 596.5) in rules and len(rules) == 2
    below = bottom
    left, bottom, right, top = next(r for r in rules if r[0] != 40.0)
    assert abs(top - bottom - 0.6) < 0.1 and abs(bottom - below) < 0.2
    over = textpage.get_text_bounded(left + 0.5, 701, right - 0.5, 707)
    assert over.replace(" ", "") == inside


def test_a_highlight_moves_with_its_words(toy_model, translator, tmp_path):
    """A highlight (a text markup annotation, its areas over words) ends up over the words
    its text became, as a link does."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    words = SENTENCES[4].split() + SENTENCES[5].split()
    start = 72 + width([("R", " ".join(words[:2]) + " ")], 11)
    end = start + width([("R", words[2])], 11)
    mark = (f"<< /Type /Annot /Subtype /Highlight /Rect [{start:.2f} 697 {end:.2f} 709] "
            f"/QuadPoints [{start:.2f} 709 {end:.2f} 709 {start:.2f} 697 {end:.2f} 697] "
            f"/C [1 1 0] >>")
    path = tmp_path / "in.pdf"
    path.write_bytes(pdf_file([text("R", 11, 72, 700, " ".join(words))], annotations=mark))
    out = run(toy_model, path, tmp_path / "out.pdf")
    source = " ".join(words[:2]) + f' <a href="x">{words[2]}</a> ' + " ".join(words[3:])
    inside = re.search(r"<a[^>]*>(.*?)</a>", translator.translate_markup([source])[0]).group(1)
    page = pdfium.PdfDocument(out)[0]
    annotation = raw.FPDFPage_GetAnnot(page.raw, 0)
    assert raw.FPDFAnnot_GetSubtype(annotation) == raw.FPDF_ANNOT_HIGHLIGHT
    quad = raw.FS_QUADPOINTSF()
    assert raw.FPDFAnnot_CountAttachmentPoints(annotation) == 1
    raw.FPDFAnnot_GetAttachmentPoints(annotation, 0, quad)
    raw.FPDFPage_CloseAnnot(annotation)
    left, right = min(quad.x1, quad.x3), max(quad.x2, quad.x4)
    bottom, top = min(quad.y3, quad.y4), max(quad.y1, quad.y2)
    under = page.get_textpage().get_text_bounded(left + 0.5, bottom + 1, right - 0.5, top - 1)
    assert under.replace(" ", "") == inside.replace(" ", "")


HEBREW = dict(zip("abcdefghijklmnopqrstuvwxyz", "אבגדהוזחטיכלמנסעפצקרשתאבגד"))
ARABIC = dict(zip("abcdefghijklmnopqrstuvwxyz", "ابتثجحخدذرزسشصضطظعغفقكلمنه"))


class RightToLeft:
    """A translator into Hebrew (or Arabic): each word of the source spelled in its letters,
    every third word followed by a version number in brackets, every fifth by a Latin name;
    tags kept."""

    def __init__(self, letters=HEBREW, target="he"):
        self.letters, self.languages = letters, {"source": "en", "target": target}
        self.said: list[str] = []  # every translation given, tags taken out

    def translate_markup(self, documents, fmt, options=None, glossary=None, fragments=False):
        out = [" ".join(self.word(w, k) for k, w in enumerate(d.split(" "))) for d in documents]
        self.said += [re.sub(r"<[^>]+>", "", d) for d in out]
        return out

    def word(self, word: str, k: int) -> str:
        spelled = re.sub(r"(?<![<a-z/])[a-z]+(?![a-z]*>)",
                         lambda m: "".join(self.letters[c] for c in m.group()), word)
        return spelled + (" (2.0)" if k % 3 == 2 else "") + (" GNU" if k % 5 == 4 else "")


class Canned:
    """A translator between a pair of our choosing (None: a pair nobody named) that answers
    every paragraph with ``answer``, and keeps what it read, tags taken out."""

    def __init__(self, answer: str, source: str = "en", target: str | None = "de") -> None:
        self.answer, self.read = answer, []
        self.languages = {"source": source, "target": target} if target else None

    def translate_markup(self, documents, fmt, options=None, glossary=None, fragments=False):
        self.read += [re.sub(r"<[^>]+>", "", d) for d in documents]
        return [self.answer for _ in documents]


def seen(data: bytes) -> dict[float, tuple[str, float, float]]:
    """By baseline, top down: the glyphs each line draws, left to right as they are seen, as
    the characters they are (the content stream decoded here: a WinAnsi font's bytes, an
    embedded DejaVu font's glyph numbers through its own cmap; PDFium and pypdf read text
    back by guessing its logical order), and the line's left and right edges (PDFium's boxes
    of its glyphs)."""
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    from fontTools.ttLib import TTFont
    from pypdf import PdfReader
    from pypdf.generic import ContentStream

    from aiayn.documents.pdf.fonts import folders
    page = PdfReader(io.BytesIO(data)).pages[0]
    fonts = {name: font.get_object() for name, font in page["/Resources"]["/Font"].items()}
    glyphs: dict[str, dict[int, str]] = {}
    pieces: dict[float, list[tuple[float, str]]] = {}
    x, y, font = 0.0, 0.0, None
    for operands, operator in ContentStream(page.get_contents(), page.pdf).operations:
        if operator == b"Tm":
            x, y = float(operands[4]), float(operands[5])
        elif operator == b"Tf":
            font = fonts[operands[0]]
        elif operator in (b"Tj", b"TJ"):
            shown = b"".join(getattr(o, "original_bytes", o) for o in (
                operands[0] if operator == b"TJ" else operands) if isinstance(o, (str, bytes)))
            name = str(font["/BaseFont"]).lstrip("/")
            if font["/Subtype"] != "/Type0":
                pieces.setdefault(y, []).append((x, shown.decode("cp1252")))
                continue
            if name not in glyphs:
                path = next(f / f"{name}.ttf" for f in folders()
                            if (f / f"{name}.ttf").is_file())
                order = TTFont(str(path)).getGlyphOrder()
                named = {g: chr(c) for c, g in TTFont(str(path)).getBestCmap().items()}
                glyphs[name] = {k: named.get(g, "?") for k, g in enumerate(order)}
            pieces.setdefault(y, []).append((x, "".join(
                glyphs[name][int.from_bytes(shown[k:k + 2], "big")]
                for k in range(0, len(shown), 2))))
    textpage = pdfium.PdfDocument(data)[0].get_textpage()
    box = [ctypes.c_double() for _ in range(4)]  # left, right, bottom, top
    origin = [ctypes.c_double(), ctypes.c_double()]
    edges: dict[float, list[float]] = {}
    for k in range(textpage.count_chars()):
        raw.FPDFText_GetCharBox(textpage.raw, k, *box)
        raw.FPDFText_GetCharOrigin(textpage.raw, k, *origin)
        if not chr(raw.FPDFText_GetUnicode(textpage.raw, k)).isspace():
            edges.setdefault(round(origin[1].value, 1), []).extend([box[0].value, box[1].value])
    lines = {}
    for y, found in sorted(pieces.items(), reverse=True):
        said = " ".join("".join(text for _, text in sorted(found)).split())
        near = [x for at, xs in edges.items() if abs(at - y) < 0.5 for x in xs]
        if said:
            lines[round(y, 1)] = (said, min(near, default=0.0), max(near, default=0.0))
    return lines


def test_a_translation_into_hebrew_is_set_right_to_left_in_the_order_it_is_seen():
    """Each line of a paragraph reads, left to right, as the Unicode Bidirectional Algorithm
    shows the words it holds (python-bidi's ``get_display``): Hebrew words reversed, numbers
    and Latin names as they are, brackets mirrored. The lines end at the column's right edge
    and begin where they end (ragged left); the list mark goes to the right; letters Times
    lacks are set in DejaVu Sans, which has them (DejaVu Serif has no Hebrew)."""
    from bidi.algorithm import get_display  # python-bidi's own, with rule L4

    from aiayn.documents import Job, pdf
    lines = paragraph_lines()
    edge = 72 + max(width(line, 11) for line in lines[:2]) + 5
    data = pdf_file(["\n".join([
        justified(lines[0], 11, 72, 670, edge), justified(lines[1], 11, 72, 657, edge),
        text("R", 11, 72, 644, lines[2][0][1]), text("R", 11, 72, 600, "- " + SENTENCES[5])])])
    translator = RightToLeft()
    out = pdf.translate_pdf(data, Job(translator))
    paragraph, item = translator.said
    words = paragraph.split()
    assert any(word.isascii() for word in words) and "(2.0)" in words
    lines_seen = seen(out)
    at, lefts = 0, []
    for y, (said, left, right) in lines_seen.items():
        if not 610 < y <= 670:
            continue
        count = len(said.split())
        assert said == get_display(" ".join(words[at:at + count]), base_dir="R")
        assert abs(right - edge) < 1.5, (y, right, edge)
        at += count
        lefts.append(left)
    assert at == len(words) and len(lefts) >= 3 and max(lefts) - min(lefts) > 5  # ragged
    said, left, right = lines_seen[600]
    on_line = [c for c in chars(out) if round(c[3]) == 600 and not c[0].isspace()]
    mark = [c for c in on_line if c[0] == "-"]
    assert said.endswith("-") and len(mark) == 1 and mark[0][2] == max(c[2] for c in on_line)
    assert said[:-1].rstrip() == get_display(item, base_dir="R")
    fonts = {font for c, font, _, _ in chars(out) if not c.isspace() and not c.isascii()}
    assert fonts and all("DejaVuSans" in name and "Serif" not in name for name in fonts), fonts


def test_arabic_letters_are_joined_and_a_hebrew_name_in_german_keeps_its_order():
    """Arabic words are drawn in the forms their letters take joined (arabic-reshaper's
    presentation forms), short vowels kept; a paragraph into a language written left to
    right keeps its left edge, and a Hebrew word in it reads right to left."""
    import unicodedata

    import arabic_reshaper
    from bidi.algorithm import get_display

    from aiayn.documents import Job, pdf
    data = pdf_file([text("R", 11, 72, 700, SENTENCES[0])])
    translator = RightToLeft(ARABIC, "ar")
    out = pdf.translate_pdf(data, Job(translator))
    said, left, right = seen(out)[700]
    logical = translator.translate_markup([SENTENCES[0]], "html")[0]
    vowels = arabic_reshaper.ArabicReshaper(configuration={"delete_harakat": False})
    assert said == get_display(vowels.reshape(logical), base_dir="R")
    assert all(0xFE70 <= ord(c) <= 0xFEFF for c in said if c.isalpha() and not c.isascii())
    assert any(ord(c) != ord(d) for c, d in zip(said, get_display(logical, base_dir="R")))

    german = Canned(f"Hallo {HEBREW['s']}{HEBREW['h']}{HEBREW['l']} Welt")
    said, left, _ = seen(pdf.translate_pdf(data, Job(german)))[700]
    assert said == "Hallo " + HEBREW["l"] + HEBREW["h"] + HEBREW["s"] + " Welt"
    assert abs(left - 72) < 1.5

    hebrew_first = f"{HEBREW['s']}{HEBREW['h']} ist hier"  # German that starts with a name
    for target, at_left in (("de", True), (None, False)):  # None: a language nobody named
        said, left, right = seen(pdf.translate_pdf(
            data, Job(Canned(hebrew_first, target=target))))[700]
        assert (abs(left - 72) < 1.5) == at_left, (target, left, right)
    # short vowels: a kasra, a fatha, a dammatan
    vowelled = Canned("\u0643\u0650\u062a\u064e\u0627\u0628\u064c", target="ar")
    said, _, _ = seen(pdf.translate_pdf(data, Job(vowelled)))[700]
    assert [c for c in said if unicodedata.category(c) == "Mn"] == ["\u064c", "\u064e", "\u0650"]
    # Persian's "I want": a zero-width non-joiner keeps its halves apart
    persian = Canned("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", target="fa")
    said, _, _ = seen(pdf.translate_pdf(data, Job(persian)))[700]
    # seen left to right: the second half, the non-joiner, then a final yeh and an initial
    # meem, which join each other and nothing else
    assert said.endswith("\u200c\ufbfd\ufee3")


def test_the_order_a_line_is_seen_in_is_python_bidi_s():
    """``visual`` resolves the levels of the Unicode Bidirectional Algorithm itself (a line
    here is pieces in several fonts, and python-bidi gives only the reordered string): on
    random lines of Hebrew, Arabic, Latin, numbers of both kinds, brackets, marks and
    combining marks, in paragraphs of both directions, its order is ``get_display``'s (rules
    L1-L2), and each stretch of odd level is drawn as python-bidi's first implementation
    draws it (with rule L4's mirrored brackets)."""
    import random

    import arabic_reshaper
    from bidi import get_display
    from bidi.algorithm import get_display as drawn_by_python_bidi

    from aiayn.documents.pdf import visual
    words = ["שלום", "ספר", "abc", "GNU", "123", "4.5", "50%", "$10", "(שלום)", "(abc)", "-",
             ":", "!", "«", "»", "“", "%s", "{0}", "שלום123", "abc-def", "קובץ.", "1-2", "/",
             "(", ")", "[", "]", "+1", "١٢٣", "كِتَابٌ", "(ملف)", "\u200f", "\u200e", "v2.0",
             "%1$s", "א\u05b8", "x\u0301"]
    keeping_vowels = arabic_reshaper.ArabicReshaper(configuration={"delete_harakat": False})
    rng = random.Random(0)
    for _ in range(3000):
        line = " ".join(rng.choice(words) for _ in range(rng.randint(1, 9)))
        for level in (0, 1):
            levels = visual.levels(line, level)
            runs: list[tuple[int, str]] = []
            for c, n in zip(line, levels):
                runs = runs[:-1] + [(n, runs[-1][1] + c)] if runs and runs[-1][0] == n \
                    else runs + [(n, c)]
            seen = [runs[k] for k in visual.order([n for n, _ in runs])]
            expected = get_display(line, base_dir="R" if level else "L")
            assert "".join(text[::-1] if n % 2 else text for n, text in seen) == expected, line
            for n, text in seen:
                if n % 2:
                    shown = "".join(c for c in text if c not in visual.INVISIBLE)
                    assert visual.drawn(text, n) == drawn_by_python_bidi(
                        keeping_vowels.reshape(shown), base_dir="R"), text


def test_a_bullet_drawn_apart_from_its_item_goes_with_it_to_the_right():
    """A bullet drawn off its item's baseline (LibreOffice raises it) is read as a line of its
    own; into a language written right to left it moves with its item to the item's right,
    into one written left to right it stays where it was."""
    from aiayn.documents import Job, pdf
    data = pdf_file(["\n".join([text("R", 8, 86, 603, "\x95"),
                                text("R", 11, 100, 600, SENTENCES[5]),
                                text("R", 11, 72, 560, SENTENCES[1] + " " + SENTENCES[2])])])
    for translator, right_to_left in ((RightToLeft(), True), (Greek(), False)):
        out = pdf.translate_pdf(data, Job(translator))
        on_line = [c for c in chars(out) if 598 < c[3] < 606 and not c[0].isspace()]
        bullet = [c for c in on_line if c[0] == "\u2022"]
        item = [c[2] for c in on_line if c[0] != "\u2022"]
        assert len(bullet) == 1 and item
        if right_to_left:
            assert bullet[0][2] > max(item)
        else:
            assert round(bullet[0][2]) == 86 and bullet[0][2] < min(item)


def test_a_cell_set_right_to_left_ends_before_the_text_beside_it():
    """A line cut apart from text beside it (a table's cells, a running head's page number)
    is set within the room up to that text, so set right to left it does not run into it,
    though the body text below reaches the right margin."""
    from aiayn.documents import Job, pdf
    body = " ".join(SENTENCES[3:9])
    data = pdf_file(["\n".join([text("R", 11, 72, 700, SENTENCES[1]),
                                text("R", 11, 330, 700, "7"),
                                text("R", 11, 72, 680, body[:95]),
                                text("R", 11, 72, 667, body[95:190])])])
    out = pdf.translate_pdf(data, Job(RightToLeft()))
    row = [c for c in chars(out) if round(c[3]) == 700 and not c[0].isspace()]
    seven = [c[2] for c in row if c[0] == "7"]
    cell = [c[2] for c in row if c[0] != "7"]
    assert seven == [330] and cell and max(cell) < 325


def test_a_pdf_written_right_to_left_is_read_in_paragraphs_and_set_left_to_right():
    """A PDF in Hebrew (here the one a translation into Hebrew writes: its lines end at the
    right edge and start where their words run out) is read as paragraphs of whole lines in
    their logical order, and translated into a language written left to right each is set
    from the column's left edge."""
    from aiayn.documents import Job, pdf
    lines = paragraph_lines()
    edge = 72 + max(width(line, 11) for line in lines[:2]) + 5
    data = pdf_file(["\n".join([
        justified(lines[0], 11, 72, 670, edge), justified(lines[1], 11, 72, 657, edge),
        text("R", 11, 72, 644, lines[2][0][1]), text("R", 11, 72, 600, SENTENCES[5])])])
    into_hebrew = RightToLeft()
    hebrew = pdf.translate_pdf(data, Job(into_hebrew))
    assert len({y for y in seen(hebrew) if 610 < y <= 670}) >= 3  # a paragraph of 3 lines

    back = Canned(" ".join(["back"] * 60), source="he", target="en")
    out = pdf.translate_pdf(hebrew, Job(back))
    assert back.read == into_hebrew.said
    lefts = [left for y, (_, left, _) in seen(out).items() if 600 < y <= 670]
    # (the Hebrew's leftmost line, not quite at 72, is where its page's text begins)
    assert len(lefts) >= 3 and max(lefts) - min(lefts) < 1 and min(lefts) < 76, lefts


def seen_line(drawn: str, order: list[int] | None = None):
    """A line as PDFium could read it: the glyphs ``drawn`` left to right, 6 points apart (a
    space a gap of 6), given in ``order`` (by default as drawn); a combining mark over the
    glyph before it."""
    import unicodedata

    from aiayn.documents.pdf.glyphs import Line, Style
    style = Style("sans", False, False, 10.0, (0, 0, 0, 255))
    boxes, x = [], 72.0
    for c in drawn:
        if unicodedata.category(c) == "Mn":
            boxes.append((boxes[-1][0] + 1, boxes[-1][1] - 1))
            continue
        boxes.append((x, x + 5))
        x += 6
    order = order if order is not None else list(range(len(drawn)))
    text = "".join(drawn[k] for k in order)
    return Line(text, [style] * len(text), [boxes[k][0] for k in order],
                [boxes[k][1] for k in order], [1] * len(text), [boxes[k][0] for k in order],
                [-1] * len(text), 72.0, x, 700.0, 10.0, {1}, True, [700.0] * len(text))


@pytest.mark.parametrize("drawn, order, read", [
    # a line with a URL, its words given in the order they are seen
    ("https://x.org \u05e7\u05d3\u05d5\u05d1 \u05da\u05de\u05e1\u05de", None,
     "\u05de\u05e1\u05de\u05da \u05d1\u05d5\u05d3\u05e7 https://x.org"),
    # brackets given as the glyphs drawn, mirrored: the line's pairing turns them
    (")\u05ea\u05d7\u05ea( \u05dd\u05d5\u05dc\u05e9", None,
     "\u05e9\u05dc\u05d5\u05dd (\u05ea\u05d7\u05ea)"),
    # a vowel point stays on its letter
    ("\u05d1\u05d0\u05b8", None, "\u05d0\u05b8\u05d1"),
    # already in reading order, right to left (as PDFium reads aiayn's own): unchanged
    ("GNU \u05dd\u05d5\u05dc\u05e9", [7, 6, 5, 4, 3, 0, 1, 2],
     "\u05e9\u05dc\u05d5\u05dd GNU"),
])
def test_a_line_written_right_to_left_is_read_in_order_from_where_its_glyphs_stand(
        drawn, order, read):
    from aiayn.documents.pdf.reading import in_reading_order
    assert in_reading_order(seen_line(drawn, order)).text == read


def test_a_line_of_german_that_ends_with_a_hebrew_name_is_read_left_to_right():
    """On a page written left to right, a line whose last word is Hebrew is still a line
    written left to right: read in PDFium's order, set from its left edge."""
    from aiayn.documents import Job, pdf
    name = HEBREW["s"] + HEBREW["h"] + HEBREW["l"]

    german = pdf.translate_pdf(pdf_file([text("R", 11, 72, 700, SENTENCES[0]),
                                         text("R", 11, 72, 650, SENTENCES[1])]),
                               Job(Canned(f"Der Name ist {name}")))
    back = Canned("The name is here", source="de", target="en")
    out = pdf.translate_pdf(german, Job(back))
    assert back.read == [f"Der Name ist {name}"] * 2
    assert all(abs(left - 72) < 1.5 for _, left, _ in seen(out).values())
