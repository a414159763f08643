"""Software's string resources (JSON, YAML, .properties, .strings, Android's strings.xml, .resx)
translated whole: each string value translated, keys, comments, numbers and structure kept,
plurals given the target language's forms; read back by readers aiayn does not write them with
(Python's json, PyYAML, lxml, translate-toolkit)."""

import json

import pytest
import yaml
from lxml import etree

from aiayn.documents import translate_document
from aiayn.errors import UserError
from tests.conftest import toy_pairs
from tests.test_documents import run

SENTENCES = [s for s, _ in toy_pairs(6, seed=43)]


@pytest.fixture(scope="module")
def translator(toy_model):
    import aiayn
    return aiayn.load(toy_model)


class Dictionary:
    """A translator that looks each text up, for a language pair of our choosing."""

    def __init__(self, words: dict[str, str], target: str = "pl") -> None:
        self.words, self.languages = words, {"source": "en", "target": target}

    def translate(self, texts, *_, **__):
        return [self.words.get(t, t.upper()) for t in texts]


def refused(toy_model, tmp_path, data: bytes, suffix: str, message: str) -> None:
    """A bad file is one line of error, and the command line writes nothing for it."""
    with pytest.raises(UserError, match=message) as caught:
        translate_document(Dictionary({}), data, suffix)
    assert "\n" not in str(caught.value)
    path, out = tmp_path / f"in{suffix}", tmp_path / f"out{suffix}"
    path.write_bytes(data)
    from aiayn.cli import main
    assert main(["translate", "--checkpoint", str(toy_model), "--no-compile", "--file",
                 str(path), "-o", str(out)]) != 0
    assert not out.exists()


def test_json_values_are_translated_keys_numbers_and_indentation_kept(toy_model, translator,
                                                                      tmp_path):
    source = {"menu": {"open": SENTENCES[0], "count": 3, "on": True},
              "save": SENTENCES[1], "list": [SENTENCES[2], "42"]}
    path = tmp_path / "en.json"
    path.write_text(json.dumps(source, indent=2))
    out = run(toy_model, path, tmp_path / "es.json")
    t = translator.translate(SENTENCES[:3])
    assert json.loads(out) == {"menu": {"open": t[0], "count": 3, "on": True}, "save": t[1],
                               "list": [t[2], "42"]}
    assert out.decode().splitlines()[1] == '  "menu": {'  # indented as it came


def test_arb_and_webextension_files_keep_their_metadata(toy_model, translator, tmp_path):
    arb = {"@@locale": "en", "open": SENTENCES[0],
           "@open": {"description": SENTENCES[1]}}
    messages = {"title": {"message": SENTENCES[2], "description": SENTENCES[3]}}
    (tmp_path / "app_en.arb").write_text(json.dumps(arb))
    (tmp_path / "messages.json").write_text(json.dumps(messages))
    t = translator.translate([SENTENCES[0], SENTENCES[2]])
    out = json.loads(run(toy_model, tmp_path / "app_en.arb", tmp_path / "app_es.arb"))
    assert (out["open"], out["@open"], out["@@locale"]) == (t[0], arb["@open"], "es")
    out = json.loads(run(toy_model, tmp_path / "messages.json", tmp_path / "es.json"))
    assert out == {"title": {"message": t[1], "description": SENTENCES[3]}}


def test_rails_yaml_keeps_comments_quoting_and_numbers_and_names_the_target(
        toy_model, translator, tmp_path):
    source = (f"# {SENTENCES[5]}\nen:\n  greeting: \"{SENTENCES[0]}\"\n  files:\n"
              f"    one: {SENTENCES[1]}\n    other: {SENTENCES[2]}\n  count: 3\n"
              f"  enabled: true\n  code: 'AB-12'\n  names: [~, {SENTENCES[3]}]\n"
              f"  long: \"%B %d, %Y\"\n  round_mode: default\n  order:\n    - year\n")
    path = tmp_path / "en.yml"
    path.write_text(source)
    out = run(toy_model, path, tmp_path / "es.yml").decode()
    t = translator.translate(SENTENCES[:4])
    forms = {"one": t[1], "many": t[2], "other": t[2]}  # Spanish's "many", as CLDR counts
    # a date format, a setting's plain lower-case word and nothing stay as written
    assert yaml.safe_load(out) == {"es": {"greeting": t[0], "files": forms, "count": 3,
                                          "enabled": True, "code": "AB-12",
                                          "names": [None, t[3]], "long": "%B %d, %Y",
                                          "round_mode": "default", "order": ["year"]}}
    assert out.startswith(f"# {SENTENCES[5]}\nes:\n") and f'greeting: "{t[0]}"' in out
    assert f"names: [~, {t[3]}]" in out and "  order:\n    - year\n" in out


def test_plurals_get_the_target_language_s_forms():
    """Polish counts one, few, many (and other): Android's plurals and Rails' get each,
    "one" from the source's "one", the rest from "other"."""
    words = {"%d file": "%d plik", "%d files": "%d plików"}
    android = (b'<?xml version="1.0" encoding="utf-8"?>\n<resources>\n'
               b'    <!-- the main screen -->\n'
               b'    <string name="open">Open the file %1$s</string>\n'
               b'    <string name="key" translatable="false">abc</string>\n'
               b'    <plurals name="files"><item quantity="one">%d file</item>'
               b'<item quantity="other">%d files</item></plurals>\n'
               b'    <string-array name="days"><item>Monday</item><item>@string/x</item>'
               b'</string-array>\n'
               b'    <string-array name="ids" translatable="false"><item>abc</item>'
               b'</string-array>\n</resources>\n')
    words["Monday"] = "Don't say"  # Android escapes the apostrophe
    data = translate_document(Dictionary(words), android, ".xml")
    out = etree.fromstring(data)
    assert out.xpath("//string-array[@name='days']/item/text()") == ["Don\\'t say", "@string/x"]
    assert out.xpath("//string-array[@name='ids']/item/text()") == ["abc"]
    assert out.xpath("//string[@name='open']/text()") == ["OPEN THE FILE %1$S"]
    assert out.xpath("//string[@name='key']/text()") == ["abc"]
    assert out.xpath("//comment()")[0].text == " the main screen "
    forms = {i.get("quantity"): i.text for i in out.xpath("//plurals/item")}
    assert forms == {"one": "%d plik", "few": "%d plików", "many": "%d plików",
                     "other": "%d plików"}
    rails = b"en:\n  files:\n    one: \"%d file\"\n    other: \"%d files\"\n"
    out = yaml.safe_load(translate_document(Dictionary(words), rails, ".yml"))
    assert out == {"pl": {"files": {"one": "%d plik", "few": "%d plików",
                                    "many": "%d plików", "other": "%d plików"}}}


def test_android_html_in_cdata_goes_through_the_markup_path(toy_model, translator, tmp_path):
    """An Android strings file that declares entities in its DOCTYPE (as apps do for
    &nbsp;) is still Android's: an untranslatable string stays, and a CDATA section's HTML
    is translated through the markup path (its <br> parts sentences, its tags placed), its
    line breaks read as Android reads them, spaces."""
    html = f"<b>{SENTENCES[0]}</b><br>{SENTENCES[1]}"
    strings = (f'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE resources [\n'
               f'    <!ENTITY nbsp "&#160;">\n]>\n<resources>\n'
               f'    <string name="app" translatable="false">{SENTENCES[2]}</string>\n'
               f'    <string name="about"><![CDATA[\n        {html.replace("<br>", "<br>  ")}'
               f'\n    ]]></string>\n    <string name="title">{SENTENCES[3]}</string>\n'
               f'</resources>\n')
    (tmp_path / "strings.xml").write_text(strings)
    out = etree.fromstring(run(toy_model, tmp_path / "strings.xml", tmp_path / "es.xml"))
    assert out.xpath("//string[@name='app']/text()") == [SENTENCES[2]]
    assert out.xpath("//string[@name='about']/text()") == \
        translator.translate_markup([html.replace("<br>", "<br> ")], "html", fragments=True)
    assert out.xpath("//string[@name='title']/text()") == translator.translate([SENTENCES[3]])


def test_vue_i18n_plural_forms_are_translated_apart_and_linked_messages_kept():
    """vue-i18n's plural choices ("no apples | one apple | {count} apples") are translated
    each alone and parted again; a linked message (``@:key``) is a placeholder."""
    from aiayn.placeholders import find
    words = {"no apples": "brak jabłek", "one apple": "jedno jabłko",
             "{count} apples": "{count} jabłek", "Open a|b now": "Otwórz a|b teraz"}
    source = {"apples": "no apples | one apple | {count} apples", "pipe": "Open a|b now",
              "link": "@:menu.file"}
    out = json.loads(translate_document(Dictionary(words), json.dumps(source).encode(),
                                        ".json"))
    assert out == {"apples": "brak jabłek | jedno jabłko | {count} jabłek",
                   "pipe": "Otwórz a|b teraz",  # (not " | ": not choices)
                   "link": "@:menu.file"}
    assert find("See @:menu.file and @.lower:menu.edit") == ["@:menu.file", "@.lower:menu.edit"]


def test_i18next_plurals_get_the_target_languages_forms():
    """i18next's JSON v4 plurals (``files_one``, ``files_other``): Polish's "few" and "many"
    added from "other", before it; an ordinal's forms and a lone "_other" key left alone.
    An object of plural forms gets them too."""
    words = {"{{count}} file": "{{count}} plik", "{{count}} files": "{{count}} plików",
             "First": "Pierwszy", "Other things": "Inne rzeczy"}
    source = {"menu": {"files_one": "{{count}} file", "files_other": "{{count}} files"},
              "place_ordinal_one": "First", "place_ordinal_other": "First",
              "see_other": "Other things", "saved": {"one": "{{count}} file", "other":
                                                       "{{count}} files"}}
    out = translate_document(Dictionary(words), json.dumps(source, indent=2).encode(), ".json")
    assert json.loads(out) == {
        "menu": {"files_one": "{{count}} plik", "files_few": "{{count}} plików",
                 "files_many": "{{count}} plików", "files_other": "{{count}} plików"},
        "place_ordinal_one": "Pierwszy", "place_ordinal_other": "Pierwszy",
        "see_other": "Inne rzeczy",
        "saved": {"one": "{{count}} plik", "other": "{{count}} plików", "few": "{{count}} plików",
                  "many": "{{count}} plików"}}  # (an object of forms: counterpart's)
    assert list(json.loads(out)["menu"]) == ["files_one", "files_few", "files_many",
                                              "files_other"]
    assert out.decode().startswith('{\n  "menu": {\n    "files_one"')  # indented as it came


def test_icu_messages_translate_their_branches_and_keep_their_arguments():
    """An ICU message (Flutter's .arb), and html10n's plural macro: the text around its
    arguments and inside each branch translated apart, the arguments and the number sign
    kept, a plural given Polish's forms from "other"; a select's keys stay. A text the model
    loses a placeholder from gets it back at its end."""
    words = {"{__a0} in {__a1}": "{__a0} w {__a1}", "No files": "Brak plików",
             "{__n} file": "{__n} plik", "{__n} files": "{__n} plików",
             "He left": "On wyszedł", "They left": "Oni wyszli",
             "The price is {__a0}": "Cena",  # (the model lost the argument)
             "{__a0} unnamed {__a1}": "{__a0} bez nazwy: {__a1}", "author": "autor",
             "authors": "autorów"}
    arb = {"@@locale": "en",
           "files": "{count, plural, =0 {No files} one {# file} other {# files}} in {folder}",
           "who": "{gender, select, male {He left} other {They left}}",
           "price": "The price is {price, number, currency}", "broken": "{a, plural, one {x",
           "authors": "{{num}} unnamed {[plural(num) one: author, other: authors ]}"}
    out = json.loads(translate_document(Dictionary(words), json.dumps(arb).encode(), ".arb"))
    assert out == {
        "@@locale": "pl",
        "files": "{count, plural, =0 {Brak plików} one {# plik} few {# plików} "
                 "many {# plików} other {# plików}} w {folder}",
        "who": "{gender, select, male {On wyszedł} other {Oni wyszli}}",
        "price": "Cena {price, number, currency}",
        "broken": "{A, PLURAL, ONE {X",  # not a message: a text as any other
        "authors": "{{num}} bez nazwy: {[plural(num) one: autor, few: autorów, many: autorów, "
                   "other: autorów ]}"}  # html10n's macro (Etherpad), as ICU's plural


def test_properties_strings_and_resx_keep_keys_and_comments(toy_model, translator, tmp_path):
    t = translator.translate(SENTENCES[:2])
    (tmp_path / "en.properties").write_text(f"# {SENTENCES[5]}\nopen={SENTENCES[0]}\n"
                                            f"save.file = {SENTENCES[1]}\n")
    out = run(toy_model, tmp_path / "en.properties", tmp_path / "es.properties").decode()
    assert out == f"# {SENTENCES[5]}\nopen={t[0]}\nsave.file={t[1]}\n"  # translate-toolkit's "="
    latin = "open=Open the caf\xe9\n".encode("latin-1")  # the classic encoding, not UTF-8
    out = translate_document(Dictionary({"Open the caf\xe9": "Otw\xf3rz kawiarni\u0119"}),
                             latin, ".properties")  # ó in ISO-8859-1, ę beyond it escaped
    assert out == b"open=Otw\xf3rz kawiarni\\u0119\n"
    (tmp_path / "en.strings").write_text(f'/* {SENTENCES[5]} */\n"open" = "{SENTENCES[0]}";\n')
    out = run(toy_model, tmp_path / "en.strings", tmp_path / "es.strings").decode()
    assert out == f'/* {SENTENCES[5]} */\n"open" = "{t[0]}";\n'
    # an ASCII .strings file gets \U escapes (GNUstep refuses other bytes without a BOM);
    # one in UTF-8 stays UTF-8
    words = {"Open the file": "Otwórz plik 📂", "Open the café": "Otwórz kawiarnię"}
    out = translate_document(Dictionary(words), b'"open" = "Open the file";\n', ".strings")
    assert out == b'"open" = "Otw\\U00F3rz plik \\UD83D\\UDCC2";\n'
    out = translate_document(Dictionary(words), '"open" = "Open the café";\n'.encode(),
                             ".strings")
    assert out == '"open" = "Otwórz kawiarnię";\n'.encode()
    # an "=" at the start of the next line, as GNUstep's make_strings writes long keys
    words = {"Cannot load the file %@": "Nie można wczytać pliku %@", "Save": "Zapisz"}
    out = translate_document(Dictionary(words), b'/* long */\n"Cannot load the file %@"\n  = '
                             b'"Cannot load the file %@";\n"Save" = "Save";\n', ".strings")
    assert out == (b'/* long */\n"Cannot load the file %@"\n  = "Nie mo\\U017Cna wczyta\\U0107 '
                   b'pliku %@";\n"Save" = "Zapisz";\n')
    resx = (f'<?xml version="1.0" encoding="utf-8"?>\n<root><data name="Open" '
            f'xml:space="preserve"><value>{SENTENCES[0]}</value><comment>{SENTENCES[5]}'
            f"</comment></data></root>\n")
    (tmp_path / "en.resx").write_text(resx)
    out = etree.fromstring(run(toy_model, tmp_path / "en.resx", tmp_path / "es.resx"))
    assert out.xpath("//data[@name='Open']/value/text()") == [t[0]]
    typed = (resx.replace("</root>", '<data name="Icon" type="System.Resources.ResXFileRef, '
                          'System.Windows.Forms"><value>..\\Resources\\open file.png;System.'
                          'Drawing.Bitmap, System.Drawing</value></data></root>'))
    out = etree.fromstring(translate_document(Dictionary({}), typed.encode(), ".resx"))
    assert out.xpath("//data[@name='Icon']/value/text()") == [  # a file reference: not text
        "..\\Resources\\open file.png;System.Drawing.Bitmap, System.Drawing"]
    assert out.xpath("//data[@name='Open']/comment/text()") == [SENTENCES[5]]


QT = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="{target}" sourcelanguage="en">
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../main.cpp" line="10"/>
        <source>{new}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{done}</source>
        <translation>kept as it is</translation>
    </message>
    <message numerus="yes">
        <source>%n {new}</source>
        <translation type="unfinished"><numerusform></numerusform><numerusform></numerusform>
        </translation>
    </message>
    <message>
        <source>{done}</source>
        <translation type="vanished">gone</translation>
    </message>
</context>
</TS>
"""


def test_qt_keyboard_accelerators_are_put_back_on_the_translation():
    """A Qt message's accelerator ("&File") is taken out before translation and put back:
    on the same letter where a word of the translation begins with it, else on its first
    letter; "&&" (an ampersand) and an entity are text."""
    from translate.storage import ts2
    words = {"File": "Plik", "Save As...": "Zapisz jako...", "Exit": "Wyjdź",
             "Tom && Jerry": "Tom && Jerry"}
    messages = "".join(f"<message><source>{s}</source><translation type=\"unfinished\">"
                       f"</translation></message>" for s in
                       ("&amp;File", "Save &amp;As...", "E&amp;xit", "Tom &amp;&amp; Jerry"))
    ts = (f'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE TS>\n<TS version="2.1" '
          f'language="pl"><context><name>Menu</name>{messages}</context></TS>\n')
    out = ts2.tsfile.parsestring(translate_document(Dictionary(words), ts.encode(), ".ts"))
    assert [str(u.target) for u in out.units] == ["&Plik", "&Zapisz jako...", "&Wyjdź",
                                                   "Tom && Jerry"]


def test_qt_ts_files_are_filled_as_catalogs(toy_model, translator, tmp_path):
    """A Qt Linguist file: messages without a translation get one, marked unfinished; one
    with a translation stays (and vanished ones); a plural message gets every form; with
    --overwrite the translated ones are translated again. A file of another target
    language, and a TypeScript file, are refused in one line."""
    from translate.storage import ts2
    path = tmp_path / "app_es.ts"
    path.write_text(QT.format(target="es", new=SENTENCES[0], done=SENTENCES[1]))
    units = ts2.tsfile.parsestring(run(toy_model, path, tmp_path / "out.ts")).units
    t = translator.translate([SENTENCES[0], f"%n {SENTENCES[0]}", SENTENCES[1]])
    assert [(str(u.target), u.isfuzzy()) for u in units if not u.hasplural()] == \
        [(t[0], True), ("kept as it is", False), ("gone", False)]
    assert list(units[2].target.strings) == [t[1], t[1]] and units[2].isfuzzy()
    units = ts2.tsfile.parsestring(run(toy_model, path, tmp_path / "again.ts",
                                       "--overwrite")).units
    assert str(units[1].target) == t[2]
    path.write_text(QT.format(target="de", new=SENTENCES[0], done=SENTENCES[1]))
    with pytest.raises(UserError, match="names de as its target language"):
        translate_document(translator, path.read_bytes(), ".ts")
    with pytest.raises(UserError, match=r"not a Qt Linguist \.ts file \(a TypeScript"):
        translate_document(translator, b"const x: number = 1;\n", ".ts")


def test_xcode_string_catalogs_get_the_target_language_beside_the_others():
    """An .xcstrings catalog: a string without the target language gets it, marked
    needs_review, from its source localization or its key, plural variations given Polish's
    categories; one marked shouldTranslate false and the other languages stay."""
    catalog = {"sourceLanguage": "en", "version": "1.0", "strings": {
        "Open the file %@": {"comment": "A button", "localizations": {"fr": {"stringUnit": {
            "state": "translated", "value": "Ouvrir le fichier %@"}}}},
        "files": {"localizations": {"en": {"variations": {"plural": {
            "one": {"stringUnit": {"state": "translated", "value": "%lld file"}},
            "other": {"stringUnit": {"state": "translated", "value": "%lld files"}}}}}}},
        "API_KEY": {"shouldTranslate": False}}}
    words = {"Open the file %@": "Otwórz plik %@", "%lld file": "%lld plik",
             "%lld files": "%lld plików"}
    out = translate_document(Dictionary(words), json.dumps(catalog).encode(), ".xcstrings")
    assert out.decode().startswith('{\n  "sourceLanguage" : "en",\n  "strings" : {')
    read = json.loads(out)["strings"]
    review = {"state": "needs_review"}
    assert read["Open the file %@"]["localizations"] == {
        "fr": catalog["strings"]["Open the file %@"]["localizations"]["fr"],
        "pl": {"stringUnit": {**review, "value": "Otwórz plik %@"}}}
    plural = read["files"]["localizations"]["pl"]["variations"]["plural"]
    assert {k: v["stringUnit"]["value"] for k, v in plural.items()} == {
        "one": "%lld plik", "few": "%lld plików", "many": "%lld plików", "other": "%lld plików"}
    assert read["API_KEY"] == {"shouldTranslate": False}
    unnamed = Dictionary(words)
    unnamed.languages = None
    with pytest.raises(UserError, match="this model names no target language"):
        translate_document(unnamed, json.dumps(catalog).encode(), ".xcstrings")
    with pytest.raises(UserError, match='not an Xcode string catalog .*no "strings" object'):
        translate_document(Dictionary(words), b'{"version": "1.0"}', ".xcstrings")


def test_stringsdict_plural_rules_get_the_target_language_s_forms():
    """A .stringsdict property list: each plural rule's forms translated, Polish's "few" and
    "many" added from "other", the format key's words translated around its variable, the
    rule's settings as they were; Python's plistlib reads it back."""
    import plistlib
    rules = {"NSStringFormatSpecTypeKey": "NSStringPluralRuleType",
             "NSStringFormatValueTypeKey": "d", "one": "%d file", "other": "%d files"}
    source = plistlib.dumps({"files": {"NSStringLocalizedFormatKey": "You have %#@n@",
                                       "n": rules}})
    words = {"%d file": "%d plik", "%d files": "%d plików", "You have %#@n@": "Masz %#@n@"}
    out = plistlib.loads(translate_document(Dictionary(words), source, ".stringsdict"))
    assert out == {"files": {"NSStringLocalizedFormatKey": "Masz %#@n@", "n": {
        "NSStringFormatSpecTypeKey": "NSStringPluralRuleType",
        "NSStringFormatValueTypeKey": "d", "one": "%d plik", "few": "%d plików",
        "many": "%d plików", "other": "%d plików"}}}
    with pytest.raises(UserError, match="not a .stringsdict property list: "):
        translate_document(Dictionary(words), b"<plist><dict><key>a", ".stringsdict")


def test_xml_that_is_not_android_resources_stays_markup(toy_model, translator, tmp_path):
    path = tmp_path / "in.xml"
    path.write_text(f"<doc><p>{SENTENCES[0]}</p></doc>")
    assert run(toy_model, path, tmp_path / "out.xml").decode() == \
        f"<doc><p>{translator.translate([SENTENCES[0]])[0]}</p></doc>"


@pytest.mark.parametrize("suffix, data, message", [
    (".json", b'{"a": "b",', "not a JSON file: "),
    (".json", b'["a", "b"]', "not a JSON file: its top level is not an object"),
    (".arb", b'{"@@locale": "de", "a": "Datei"}', "names de as its source language"),
    (".yml", b"a: [b\n", "not a YAML file: "),
    (".yml", b"- a\n- b\n", "not a YAML file of strings: its top level is not a mapping"),
    (".yml", b"fr:\n  a: b\n", "names fr as its source language"),
    (".resx", b"<root><data", "not a .NET .resx file: "),
    (".xml", b"<resources><string name='a'>b</resources>",
     "not an Android string resources file: "),
    (".strings", b'"a" = "b"\n"c" = "d";\n',
     "not an Apple .strings file: line 2: '\"c\"' where ';' belongs"),
    (".strings", b'/* x */\n"a" = "b;\n', "not an Apple .strings file: line 2: a string is "
                                          "never closed"),
    (".strings", b'"a" = "b";\n/* open\n', "line 2: a comment is never closed"),
    (".strings", b'"a" = "b";\n"c" = "d"', "its last entry does not end with ';'"),
    (".strings", b'"a" = "caf\xe9";', r"not an Apple .strings file: not UTF-8"),
    # Java's Properties.load: "Malformed \uxxxx encoding" (a comment's \u is not read)
    (".properties", b"# \\user\na=b\\u12\n", r"not a Java .properties file: line 2: a "
                                              r"\\u escape without four hex digits"),
    (".properties", b"a=b \\\n  \\uzz\n", r"line 2: a \\u escape"),
])
def test_bad_resource_files_are_one_line(translator, suffix, data, message):
    with pytest.raises(UserError, match=message) as caught:
        translate_document(translator, data, suffix)
    assert "\n" not in str(caught.value)
