"""Subtitles translated cue by cue: SubRip and WebVTT, timings, identifiers, comments and styles
kept, a cue's lines translated apart where each is whole, its tags kept; WebVTT read back by
webvtt-py."""

import pytest
import webvtt

from aiayn.documents import translate_document
from tests.test_documents import run
from tests.test_resources import SENTENCES, Dictionary, refused

VTT = """WEBVTT - the pilot

NOTE a comment
that spans two lines

STYLE
::cue { color: yellow }

intro
00:00:01.000 --> 00:00:04.000 line:90% align:center
<v Roger Bingham>We are in New York City</v>
<i>with the whole crew</i>

00:04.500 --> 00:06.000
- Are you hurt?
- No, <c.loud>not at all</c>.

00:07.000 --> 00:09.000
Welcome <00:00:07.500>to the show
"""

WORDS = {"{__a0}We are in New York City{__a1} {__a2}with the whole crew{__a3}":
             "{__a0}Estamos en Nueva York{__a1} {__a2}con todo el equipo{__a3}",
         "- Are you hurt?": "- ¿Estás herido?",
         "- No, {__a0}not at all{__a1}.": "- No, {__a0}para nada{__a1}.",
         "Welcome {__a0}to the show": "Bienvenidos al programa"}  # (a timestamp lost)


def test_webvtt_cues_are_translated_and_the_rest_kept():
    out = translate_document(Dictionary(WORDS, "es"), VTT.encode(), ".vtt").decode()
    first = out.split("\n\n")[3].split("\n")  # one sentence over two lines: wrapped again
    assert len(first) == 4 and " ".join(first[2:]) == \
        "<v Roger Bingham>Estamos en Nueva York</v> <i>con todo el equipo</i>"
    assert out.replace("\n".join(first[2:]), "A") == VTT.replace(
        "<v Roger Bingham>We are in New York City</v>\n<i>with the whole crew</i>",
        "A").replace(
        "- Are you hurt?\n- No, <c.loud>not at all</c>.",
        "- ¿Estás herido?\n- No, <c.loud>para nada</c>.").replace(
        "Welcome <00:00:07.500>to the show", "Bienvenidos al programa <00:00:07.500>")
    before, after = webvtt.from_string(VTT), webvtt.from_string(out)
    assert [(c.identifier, c.start, c.end) for c in after] == \
        [(c.identifier, c.start, c.end) for c in before]
    assert [c.voice for c in after] == [c.voice for c in before] == ["Roger Bingham", None, None]


def test_subrip_dialogue_lines_are_translated_apart(toy_model, tmp_path):
    """Lines that each end a sentence (a dialogue's dashes) are translated one by one, so a
    speaker's words stay on their line; a sentence broken over lines is translated whole."""
    import aiayn
    translator = aiayn.load(toy_model)
    path = tmp_path / "in.srt"
    path.write_text(f"1\n00:00:01,000 --> 00:00:02,500\n- {SENTENCES[0]}.\n- {SENTENCES[1]}.\n",
                    encoding="utf-8")
    out = run(toy_model, path, tmp_path / "out.srt").decode().strip().split("\n")
    assert out[2:] == translator.translate([f"- {SENTENCES[0]}.", f"- {SENTENCES[1]}."],
                                           split_sentences=True)


@pytest.mark.parametrize("data, message", [
    (b"1\n00:00:01.000 --> 00:00:02.000\nHi\n", "not a WebVTT file: it does not begin with"),
    (b"WEBVTT\n\nhello\nthere\n", "not a WebVTT file: block 1 is neither a cue"),
])
def test_bad_webvtt_files_are_one_line_and_write_nothing(toy_model, tmp_path, data, message):
    refused(toy_model, tmp_path, data, ".vtt", message)


def test_lines_translated_into_arabic_are_marked_right_to_left_for_players():
    """Into a language written right to left, each line with such letters is wrapped in a
    right-to-left embedding (U+202B ... U+202C), as Subtitle Edit's "fix RTL" does: libass
    lays a subtitle line out left to right whatever its letters. A line left in Latin letters,
    the timings and a WebVTT cue's tags stay as they were; into German nothing changes."""
    srt = ("1\n00:00:01,000 --> 00:00:02,500\nHello world.\nGNU is free!\n\n"
           "2\n00:00:03,000 --> 00:00:04,000\nOK\n")
    words = {"Hello world.": "مرحبا بالعالم.", "GNU is free!": "GNU حر!", "OK": "OK"}
    out = translate_document(Dictionary(words, "ar"), srt.encode(), ".srt").decode()
    assert out == ("1\n00:00:01,000 --> 00:00:02,500\n\u202bمرحبا بالعالم.\u202c\n"
                   "\u202bGNU حر!\u202c\n\n2\n00:00:03,000 --> 00:00:04,000\nOK\n")
    assert translate_document(Dictionary(words, "de"), srt.encode(), ".srt").decode() == \
        srt.replace("Hello world.", words["Hello world."]).replace("GNU is free!",
                                                                   words["GNU is free!"])
    vtt = "WEBVTT\n\n00:01.000 --> 00:02.000\n<v Roger>Hello world.</v>\n"
    arabic = {"{__a0}Hello world.{__a1}": "{__a0}مرحبا بالعالم.{__a1}"}
    out = translate_document(Dictionary(arabic, "ar"), vtt.encode(), ".vtt").decode()
    assert out.endswith("\n<v Roger>\u202bمرحبا بالعالم.\u202c</v>\n")
    assert [c.voice for c in webvtt.from_string(out)] == ["Roger"]
