"""Files translated whole, in their own format, through the command line and through
LibreTranslate's /translate_file with a real client; every bad file is one line and writes
nothing."""

import io

import pytest

from aiayn.cli import main
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


def test_word_documents_keep_bold_italic_and_tables(toy_model, translator, tmp_path):
    import docx
    words = SENTENCES[6].split()
    document = docx.Document()
    paragraph = document.add_paragraph(words[0] + " ")
    paragraph.add_run(words[1]).bold = True
    paragraph.add_run(" " + " ".join(words[2:-1]) + " ")
    paragraph.add_run(words[-1]).italic = True
    document.add_table(rows=1, cols=1).cell(0, 0).text = SENTENCES[7]
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


@pytest.mark.parametrize("name,content,message", [
    ("in.pdf", b"%PDF", "files of type .pdf are not translated"),
    ("in.docx", b"PK\x03\x04 not really a zip", "not a Word document"),
    ("in.po", b'msgid "a"\nmsgstr "b"\nmsgid', "not a gettext catalog"),
    ("in.srt", b"1\nno timing here\ntext\n", "cue 1 has no"),
    ("in.txt", b"   \n", "the file is empty"),
    ("in.txt", b"\xff\xfe bad", "line 1 is not valid UTF-8"),
])
def test_bad_files_are_one_line_and_write_nothing(toy_model, tmp_path, capsys, name, content,
                                                  message):
    path = tmp_path / name
    path.write_bytes(content)
    out = tmp_path / f"out{path.suffix}"
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--no-compile", "--file",
                   str(path), "-o", str(out)], message)
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
    import asyncio

    import httpx
    from libretranslate_aio import AsyncLibreTranslate

    from tests.serve.server import Server
    path = catalog(tmp_path)
    expected = run(toy_model, path, tmp_path / "cli.po")
    server = Server(toy_model, "--max-body-bytes", "4000")
    try:
        async def use():
            async with AsyncLibreTranslate(server.url) as client:
                done = await client.translate_file(path, source="en", target="es")
                settings = await client.frontend_settings()
                return done.translated_file_url, settings
        url, settings = asyncio.run(use())
        assert ".docx" in settings.supported_files_format
        assert httpx.get(url).content == expected
        big = tmp_path / "big.txt"
        big.write_text("alpha beta\n" * 1000)
        answer = httpx.post(server.url + "/translate_file", data={"source": "en",
                                                                  "target": "es"},
                            files={"file": ("big.txt", big.read_bytes())})
        assert answer.status_code == 413
        answer = httpx.post(server.url + "/translate_file", data={"source": "en",
                                                                  "target": "es"},
                            files={"file": ("x.pdf", b"%PDF")})
        assert answer.status_code == 400 and ".pdf are not translated" in answer.json()["error"]
        answer = httpx.post(server.url + "/translate_file", data={"source": "en",
                                                                  "target": "es"},
                            files={"file": ("x.docx", b"PK broken")})
        assert answer.status_code == 400 and "not a Word document" in answer.json()["error"]
        assert httpx.get(server.url + "/download_file/nothing.txt").status_code == 404
    finally:
        server.stop()
