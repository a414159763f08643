"""Mozilla's Fluent (.ftl) files translated: values, attributes and variants translated, placeables
kept, plurals given the target language's categories, what is not words kept; read back by
Mozilla's own parser and runtime (``fluent.syntax``, ``fluent.runtime``)."""

import pytest
from fluent.runtime import FluentBundle, FluentResource
from fluent.syntax import FluentParser, ast

from aiayn.documents import translate_document
from tests.test_documents import run
from tests.test_resources import SENTENCES, Dictionary, refused

FTL = """\
### The downloads panel.

-brand-name = Firefox
    .gender = masculine

# Variables:
#   $count (Number) - how many files are downloading
downloads-more = { $count ->
        [one] { $count } more file downloading
       *[other] { $count } more files downloading
    }


downloads-clear =
  .label = Clear the list
  .accesskey = C
  .style = min-width: 30em
  .key = D
downloads-quit = { PLATFORM() ->
        [windows] Exit { -brand-name }
       *[other] Quit { -brand-name }
    }
downloads-error =
    The file could not be saved
    because it is blocked.

    Please try again.
downloads-empty = { "" }
"""

WORDS = {"{__a0} more file downloading": "jeszcze {__a0} plik",
         "{__a0} more files downloading": "jeszcze {__a0} plików",
         "Clear the list": "Wyczyść listę", "Exit {__a0}": "Zakończ {__a0}",
         "Quit {__a0}": "Wyjdź z {__a0}", "Firefox": "Firefox",
         "The file could not be saved because it is blocked.":
             "Nie można zapisać pliku, ponieważ jest zablokowany.",
         "Please try again.": "Spróbuj ponownie."}


def messages(text: str) -> dict[str, str]:
    """Every message and attribute as fluent.runtime formats it, for 1 and for 5 of each
    number, with any error it reports."""
    bundle = FluentBundle(["pl"], use_isolating=False,
                          functions={"PLATFORM": lambda: "linux"})  # (Firefox's own)
    assert bundle.add_resource(FluentResource(text)) is None
    out = {}
    for entry in FluentParser().parse(text).body:
        assert not isinstance(entry, ast.Junk), entry.annotations
        if isinstance(entry, ast.Message):
            message = bundle.get_message(entry.id.name)
            patterns = {"": message.value, **{f".{k}": v for k, v in message.attributes.items()}}
            for name, pattern in patterns.items():
                for count in (1, 5):
                    if pattern is not None:
                        value, errors = bundle.format_pattern(pattern, {"count": count})
                        assert errors == [], (entry.id.name, errors)
                        out[f"{entry.id.name}{name}/{count}"] = value
    return out


def test_fluent_messages_are_translated_and_read_back_by_mozillas_runtime():
    out = translate_document(Dictionary(WORDS), FTL.encode(), ".ftl").decode()
    read = messages(out)
    assert read["downloads-more/1"] == "jeszcze 1 plik"
    assert read["downloads-more/5"] == "jeszcze 5 plików"  # Polish's "many"
    assert read["downloads-clear.label/1"] == "Wyczyść listę"
    assert read["downloads-clear.accesskey/1"] == "c"  # a letter the translated label has
    assert read["downloads-clear.style/1"] == "min-width: 30em"  # CSS and keys stay
    assert read["downloads-clear.key/1"] == "D"
    assert read["downloads-quit/1"] == "Wyjdź z Firefox"  # PLATFORM() is "other" here
    assert read["downloads-error/1"] == ("Nie można zapisać pliku, ponieważ jest zablokowany."
                                         "\n\nSpróbuj ponownie.")
    assert read["downloads-empty/1"] == ""
    assert "zablokowany.\n\n    Spróbuj" in out  # a blank line, not one of spaces
    # every CLDR category Polish has, the new ones from "other", before the default
    assert ("[one] jeszcze { $count } plik\n        [few] jeszcze { $count } plików\n"
            "        [many] jeszcze { $count } plików\n       *[other]") in out
    # comments, blank lines, the term's attribute and what did not change stay byte for byte
    assert out.startswith("### The downloads panel.\n\n-brand-name = Firefox\n"
                          "    .gender = masculine\n\n# Variables:\n#   $count (Number) - how")
    assert "    }\n\n\ndownloads-clear =\n" in out and out.endswith('downloads-empty = { "" }\n')
    assert "[windows] Zakończ { -brand-name }" in out


def test_a_placeable_the_translation_lost_comes_back_and_braces_stay_text():
    words = {"Saved to {__a0}": "Zapisano", "Open {__a0}": "Otwórz {a} {__a0}"}
    ftl = b"saved = Saved to { $folder }\nopen = Open { $file }\n"
    out = translate_document(Dictionary(words), ftl, ".ftl").decode()
    assert out == 'saved = Zapisano { $folder }\nopen = Otwórz { "{" }a{ "}" } { $file }\n'
    bundle = FluentBundle(["pl"], use_isolating=False)
    bundle.add_resource(FluentResource(out))
    assert bundle.format_pattern(bundle.get_message("open").value, {"file": "x"}) == \
        ("Otwórz {a} x", [])


def test_fluent_file_through_the_command_line(toy_model, tmp_path):
    import aiayn
    translator = aiayn.load(toy_model)
    path = tmp_path / "en.ftl"
    path.write_text(f"# {SENTENCES[5]}\nfirst = {SENTENCES[0]}\n"
                    f"second =\n    .title = {SENTENCES[1]}\n", encoding="utf-8")
    out = run(toy_model, path, tmp_path / "es.ftl").decode()
    t = translator.translate(SENTENCES[:2])
    assert out == f"# {SENTENCES[5]}\nfirst = {t[0]}\nsecond =\n    .title = {t[1]}\n"


@pytest.mark.parametrize("data, message", [
    (b"ok = Fine\nbroken = { $count\n", r"not a Fluent \(\.ftl\) file: line 2: "),
    (b"= no name\n", r"not a Fluent \(\.ftl\) file: line 1: "),
    (b"a = caf\xe9\n", r"not a Fluent \(\.ftl\) file: not UTF-8"),
])
def test_bad_fluent_files_are_one_line_and_write_nothing(toy_model, tmp_path, data, message):
    refused(toy_model, tmp_path, data, ".ftl", message)
