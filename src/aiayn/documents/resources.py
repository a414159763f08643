"""Software's string resources, the files Weblate translates besides gettext catalogs, read and
written by translate-toolkit's stores (Weblate's own library): JSON (nested keys, i18next's,
Flutter's .arb, a WebExtension's messages.json), YAML (Rails' and others'), Java .properties,
Apple .strings, Android's strings.xml and .NET .resx; and Qt Linguist's .ts, which holds a
translation beside each source as a gettext catalog does.

A resource file holds one language: each string value is translated in place and the file is
written for the model's target language, its keys, comments, numbers and structure as they
were. A value is translated line by line, its placeholders kept by the placeholder path
(``%1$s``, ``{count}``, ``{{name}}``, ``%{count}``); a value without a letter or of one
code-like token (a URL, a key), and a string marked untranslatable (Android's
``translatable="false"``), stays. Android's string arrays, which translate-toolkit's store
does not read as units, are translated item by item with its escaping. A plural (Android's
``plurals``, Rails' ``one``/``other``) gets every form the target language has, each from
the source's form of its kind: "one" from "one", every other from "other"; an ICU message's
branches are translated apart (``documents.icu``). A file that names its language (Rails'
root key, .arb's ``@@locale``) is refused when that is not the model's source language, and
names the target language once translated.

A Qt .ts file is filled as a catalog is: each message without a translation gets one, marked
"unfinished" for review (Qt's fuzzy); one that has a translation is kept unless
``overwrite``, and vanished and obsolete ones are left; its languages are held to the
model's pair. A plural message (``%n file(s)``) gets its translation in every form.
"""

from __future__ import annotations

import copy
import io
import json
import re

from ..errors import UserError, require
from . import Job, code_like, local_name

_LETTER = re.compile(r"[^\W\d_]")
# a .strings entry whose "=" begins the next line (GNUstep's make_strings writes long keys
# so), which translate-toolkit's reader takes for two entries: joined for it, then put back
_STRINGS_BREAK = re.compile(rb'^("(?:[^"\\\n]|\\.)*")([ \t]*\r?\n[ \t]*=[ \t]*)"', re.M)
KINDS = {".json": "JSON", ".arb": "ARB", ".yml": "YAML", ".yaml": "YAML",
         ".properties": "Java .properties", ".strings": "Apple .strings",
         ".resx": ".NET .resx", ".xml": "Android string resources", ".ts": "Qt Linguist .ts"}


def translate_resource(data: bytes, job: Job, suffix: str) -> bytes:
    """A resource file of the kind its extension names (``suffix``) translated."""
    kind = KINDS[suffix]
    if kind == "YAML":
        require("ruamel.yaml", "YAML files", "documents")
        return _translate_yaml(data, job)
    require("translate.storage.base", f"{kind} files", "documents")
    breaks = _STRINGS_BREAK.findall(data) if suffix == ".strings" else []
    try:
        store, named = _parsed(_STRINGS_BREAK.sub(rb'\1 = "', data) if breaks else data, suffix)
    except UserError:
        raise
    except Exception as err:  # translate-toolkit raises its readers' errors as they come
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(f"not {_a(kind)} file: {first}") from None
    bilingual = suffix == ".ts"  # a translation beside each source, as in a catalog
    if named:
        job.check_languages(f"the {kind} file", source=named,
                            target=store.gettargetlanguage() if bilingual else None)
    # the sources read before the target language is set (a plural's forms follow it)
    units = [(u, _texts(u.source)) for u in store.units if u.istranslatable()
             and not u.isheader() and _texts(u.source) and not _typed(u) and not (bilingual and (
                 u.isobsolete() or (any(t.strip() for t in _texts(u.target))
                                    and not job.overwrite)))]
    # Android's CDATA sections hold HTML (for Html.fromHtml): translated through the markup
    # path, whose <br> and <p> part sentences; their line breaks are spaces, as Android reads
    # them
    cdata = set(re.findall(rb'<(?:string|plurals)\b[^>]*\bname="([^"]*)"[^>]*>\s*<!\[CDATA\[',
                           data)) if suffix == ".xml" else set()
    units = [(u, [" ".join(t.split()) for t in sources] if u.getid().encode() in cdata
              else sources) for u, sources in units]
    pair = job.translator.languages
    if pair and not (bilingual and store.gettargetlanguage()):
        store.settargetlanguage(pair["target"])
    tags = store.get_plural_tags() if pair else None  # the target language's plural forms
    items = _array_items(store) if suffix == ".xml" else []
    texts = [t for _, sources in units for t in sources] + [t for _, t in items]
    html = [u.getid().encode() in cdata for u, sources in units for _ in sources] + \
        [False] * len(items)
    # Qt's keyboard accelerators ("&File"): taken out, and put back on a letter of the
    # translation, the same letter where it has it
    keys = [_accelerator(t) if bilingual else None for t in texts]
    texts = [t[:key[0]] + t[key[0] + 1:] if key else t for t, key in zip(texts, keys)]
    done = iter([_accelerated(t, key[1]) if key else t
                 for t, key in zip(_translated(texts, html, job), keys)])
    for unit, sources in units:
        translated = [t for _, t in zip(sources, done)]
        if bilingual and unit.hasplural():  # Qt: one source, "%n file(s)", for every form
            unit.target = _forms(translated * _qt_forms(unit, store), None)
        elif unit.hasplural() or len(sources) > 1:
            unit.target = _forms(translated, tags)
        else:
            unit.target = translated[0]
        if bilingual:
            unit.markfuzzy(True)  # Qt's "unfinished": for a person to review
    if items:
        from translate.storage.aresource import AndroidResourceUnit
        escaping = AndroidResourceUnit("")  # (its Android escaping, for any element)
        for (item, text), translation in zip(items, done):
            if translation != text:
                escaping.set_xml_text_value(translation, item)
    out = bytes(store)
    for key, between in breaks:  # each "=" back on the line it was on
        out = out.replace(key + b' = "', key + between + b'"', 1)
    if suffix == ".properties" and data.isascii():
        # an ASCII file (the classic kind, which Java once read as ISO-8859-1) gets every
        # other letter as a \u escape, as it had them: readers of either encoding read it
        out = re.sub(r"[^\x00-\x7f]", lambda m: f"\\u{ord(m.group()):04X}",
                     out.decode("latin-1")).encode("ascii")
    if suffix == ".strings" and data.isascii():
        # as an ASCII .properties: GNUstep's parser refuses other bytes in a .strings file
        # without a byte order mark, and Apple's and GNUstep's read \U escapes (GNUstep's
        # own translations are written so); beyond 16 bits, as UTF-16's two halves
        out = re.sub(r"[^\x00-\x7f]", lambda m: "".join(
            f"\\U{unit:04X}" for unit in _utf16(m.group())), out.decode("utf-8")).encode("ascii")
    if type(store).__name__ == "JsonNestedFile" and tags:  # (not .arb, not messages.json)
        out = _json_plurals(out, store.dump_args, plural_categories(job) or [])
    if named and pair:  # .arb: the file's language is the target's now
        out = re.sub(rb'("@@locale"\s*:\s*")' + re.escape(named.encode()) + rb'"',
                     lambda m: m.group(1) + pair["target"].encode() + b'"', out, count=1)
    return out


def _parsed(data: bytes, suffix: str):
    """The store for a file, and the language it names (or None)."""
    from translate.storage import aresource, jsonl10n, properties, resx
    if suffix in (".json", ".arb"):
        tree = json.loads(data.decode("utf-8-sig"))
        if not isinstance(tree, dict):
            raise UserError(f"not {_a(KINDS[suffix])} file: its top level is not an object "
                            f"of strings")
        if suffix == ".arb" or "@@locale" in tree:
            store, named = jsonl10n.ARBJsonFile.parsestring(data), tree.get("@@locale")
        elif tree and all(isinstance(v, dict) and "message" in v for v in tree.values()):
            store, named = jsonl10n.WebExtensionJsonFile.parsestring(data), None
        else:
            store, named = jsonl10n.JsonNestedFile.parsestring(data), None
        indent = re.search(rb"\n([ \t]+)\S", data)  # written as indented as it came
        store.dump_args["indent"] = indent.group(1).decode() if indent and b"\t" in \
            indent.group(1) else len(indent.group(1)) if indent else None
        return store, named
    if suffix == ".properties":
        # Java 9 reads UTF-8; the classic files are ISO-8859-1, other letters as \u escapes
        try:
            utf8 = not data.isascii() and bool(data.decode("utf-8"))
        except UnicodeDecodeError:
            utf8 = False
        # Java refuses a \u without four hex digits ("Malformed \uxxxx encoding"), which
        # translate-toolkit's reader would drop
        _check_unicode_escapes(data)
        return (properties.javautf8file if utf8 else properties.javafile).parsestring(data), \
            None
    if suffix == ".strings":
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        try:
            _check_strings(data.decode("utf-16" if utf16 else "utf-8-sig"))
        except UnicodeDecodeError as err:
            raise UserError(f"not an Apple .strings file: not {'UTF-16' if utf16 else 'UTF-8'}"
                            f" ({err.reason} at byte {err.start})") from None
        return (properties.stringsfile if utf16 else properties.stringsutf8file
                ).parsestring(data), None
    if suffix == ".resx":
        return resx.RESXFile.parsestring(data), None
    if suffix == ".ts":
        from translate.storage import ts2
        if not re.search(rb"<TS[\s>]", data[:4096]):
            raise UserError("not a Qt Linguist .ts file (a TypeScript source?): it has no "
                            "<TS> root")
        store = ts2.tsfile.parsestring(data)
        return store, store.getsourcelanguage() or None
    return aresource.AndroidResourceFile.parsestring(data), None


_BAD_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u(?![0-9a-fA-F]{4})")


def _check_unicode_escapes(data: bytes) -> None:
    """A UserError naming the first line, outside comments, with a \\u escape that lacks
    four hex digits: Java refuses the file ("Malformed \\uxxxx encoding"), and
    translate-toolkit's reader would drop the escape."""
    continued = False
    for number, line in enumerate(data.splitlines(), 1):
        comment = not continued and line.lstrip()[:1] in (b"#", b"!")
        if not comment and _BAD_ESCAPE.search(line):
            raise UserError(f"not a Java .properties file: line {number}: a \\u escape "
                            "without four hex digits")
        trailing = len(line) - len(line.rstrip(b"\\"))
        continued = not comment and trailing % 2 == 1


# an old-style property list's pieces: space, comments, quoted and unquoted strings, = and ;
_STRINGS_PIECE = re.compile(r'\s+|/\*.*?\*/|//[^\n]*|"(?:[^"\\]|\\.)*"|[\w$+/:.\-]+|[=;]',
                            re.S)
# what may follow each state: a key, then "=" and its value or ";" alone, then ";"
_STRINGS_NEXT = {"key": ("string", "after key"), "after key": ("=", "value"),
                 "value": ("string", "after value"), "after value": (";", "key")}


def _check_strings(text: str) -> None:
    """A UserError naming the line of the first thing in ``text`` that is not an Apple
    .strings file's ``"key" = "value";`` entries and comments (translate-toolkit's reader
    would take it in and write a file nobody else reads)."""
    state, pos = "key", 0
    while pos < len(text):
        line = text.count("\n", 0, pos) + 1
        match = _STRINGS_PIECE.match(text, pos)
        if text.startswith("/*", pos) and text.find("*/", pos + 2) < 0:
            raise UserError(f"not an Apple .strings file: line {line}: a comment is never "
                            "closed")
        if match is None:
            what = "a string is never closed" if text[pos] == '"' else f"unexpected {text[pos]!r}"
            raise UserError(f"not an Apple .strings file: line {line}: {what}")
        piece, pos = match.group(), match.end()
        if piece[0].isspace() or piece.startswith(("/*", "//")):
            continue
        kind = piece if piece in ("=", ";") else "string"
        wanted, following = _STRINGS_NEXT[state]
        if kind == wanted:
            state = following
        elif state == "after key" and kind == ";":
            state = "key"
        else:
            raise UserError(f"not an Apple .strings file: line {line}: {piece[:20]!r} where "
                            f"{'a string' if wanted == 'string' else repr(wanted)} belongs")
    if state != "key":
        raise UserError("not an Apple .strings file: its last entry does not end with ';'")


_LANGUAGE = re.compile(r"[a-z]{2,3}(?:[-_][A-Za-z0-9]+)?")
_PLURALS = {"zero", "one", "two", "few", "many", "other"}


def _translate_yaml(data: bytes, job: Job) -> bytes:
    """A YAML file read and written by ruamel.yaml's round trip, so that comments, quoting,
    key order and the types of numbers and truth values stay; each string with a letter
    translated. A mapping of plural forms (Rails': ``one``, ``other``) gets every form the
    target language has, each from "other" where the source has no such form. A single root
    key that is a language code (Rails') is the file's language."""
    from ruamel.yaml import YAML
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # lines as long as they came
    offset = _sequence_offset(data)
    if offset:  # a list's dashes indented under their key, as Rails writes them
        yaml.indent(mapping=2, sequence=offset + 2, offset=offset)
    if re.search(rb"[\s\[,:-]~\s*[,\]\r\n]", data):  # nothing written "~", as it came
        yaml.representer.add_representer(type(None), lambda representer, _: (
            representer.represent_scalar("tag:yaml.org,2002:null", "~")))
    try:
        tree = yaml.load(data)
    except Exception as err:  # ruamel raises its scanner's and parser's errors alike
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(f"not a YAML file: {first}") from None
    if not isinstance(tree, dict):
        raise UserError("not a YAML file of strings: its top level is not a mapping")
    root = next(iter(tree)) if len(tree) == 1 else None
    named = root if isinstance(root, str) and _LANGUAGE.fullmatch(root) \
        and isinstance(tree[root], dict) else None
    if named:
        job.check_languages("the YAML file", source=named)
    slots: list[tuple[object, object, str]] = []  # (mapping or list, key or index, text)

    def walk(node) -> None:
        items = list(node.items()) if isinstance(node, dict) else \
            list(enumerate(node)) if isinstance(node, list) else []
        for key, value in items:
            # a plain lower-case word is a setting's value, as Rails' "round_mode: default"
            # and the date order's "- year" are, which Rails reads as names; text is quoted
            # or capitalized ("Thousand", "Sunday")
            if isinstance(value, str) and _wording(value) and not (
                    type(value) is str and re.fullmatch(r"[a-z_]+", value)):
                slots.append((node, key, value))
            elif isinstance(value, (dict, list)):
                walk(value)
    walk(tree)
    translations = translated_values([v for _, _, v in slots], job)
    for (node, key, value), translation in zip(slots, translations):
        node[key] = translation if type(value) is str else type(value)(translation)  # type: ignore[index]
    pair = job.translator.languages
    _fill_plurals(tree, plural_categories(job) or [])
    out = io.BytesIO()
    yaml.dump(tree, out)
    text = out.getvalue()
    if named and pair:  # the root key names the language the file is now in
        text = re.sub(rf"^(['\"]?){re.escape(named)}\1:".encode(),
                      lambda m: m.group(0).replace(named.encode(), pair["target"].encode()),
                      text, count=1, flags=re.MULTILINE)
    return text


def _json_plurals(out: bytes, dump_args: dict, tags: list[str]) -> bytes:
    """A JSON file's plurals given the target language's missing forms, each from "other":
    i18next's (JSON v4: ``files_one``, ``files_other`` side by side; i18next asks for
    ``files_few`` in Polish and, not finding it, shows the key), and an object of plural
    forms (``{"one": ..., "other": ...}``, counterpart's, as in Element's strings)."""
    def fill(node):
        if isinstance(node, list):
            return [fill(item) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: fill(value) for key, value in node.items()}
        if node and set(node) <= _PLURALS and "other" in node:
            fill_from_other(node, tags)
            return node
        for key in [k for k in node if k.endswith("_other") and not k.endswith("_ordinal_other")]:
            base = key[:-len("other")]
            if not any(k != key and k.startswith(base) and k[len(base):] in _PLURALS
                       for k in node):
                continue  # a word ending in "_other", not a plural
            missing = [t for t in tags if base + t not in node]
            items = list(node.items())
            at = [k for k, _ in items].index(key)
            items[at:at] = [(base + t, node[key]) for t in missing]
            node = dict(items)
        return node
    tree = json.loads(out.decode("utf-8"))
    filled = fill(tree)
    if filled == tree:
        return out
    return (json.dumps(filled, **dump_args) + "\n").encode("utf-8")


def fill_from_other(plural: dict, tags: list[str]) -> None:
    """A plural's forms, keyed by category, given each of ``tags`` they lack as a copy of
    their "other" (Rails' mappings, .stringsdict rules, .xcstrings variations)."""
    if "other" in plural:
        for tag in tags:
            if tag not in plural:
                plural[tag] = copy.deepcopy(plural["other"])


def _sequence_offset(data: bytes) -> int:
    """How far a YAML file indents a block list's dashes under their key (0 or 2, say)."""
    lines = data.decode("utf-8", "replace").splitlines()
    for before, line in zip(lines, lines[1:]):
        if line.lstrip().startswith("- ") and before.rstrip().endswith(":"):
            return max(0, (len(line) - len(line.lstrip())) - (len(before) - len(before.lstrip())))
    return 0


def _fill_plurals(node, tags: list[str]) -> None:
    """Each mapping of plural forms given the target language's missing forms, from its
    "other"."""
    if isinstance(node, dict):
        if node and set(node) <= _PLURALS and "other" in node:
            fill_from_other(node, tags)
            return
        for value in node.values():
            _fill_plurals(value, tags)
    elif isinstance(node, list):
        for value in node:
            _fill_plurals(value, tags)


def translated_values(texts: list[str], job: Job) -> list[str]:
    """Values translated line by line (those that are words; the rest as they are), an ICU
    message's texts each apart (``documents.icu``), and vue-i18n's plural forms ("no apples
    | one apple | {count} apples") each apart."""
    from . import icu
    # each text's pieces to translate apart: an ICU message's, or vue-i18n's choices
    messages = [_wording(t) and icu.is_message(t) for t in texts]
    plans = [icu.texts(t) if message else _forms_apart(t) for t, message in zip(texts, messages)]
    tags = plural_categories(job) if any(plan is not None for plan in plans) else None
    leaves = [x for t, plan in zip(texts, plans) for x in (plan if plan is not None else [t])]
    done = iter(job.by_line([x if _wording(x) else "" for x in leaves]))
    out = []
    for text, plan, message in zip(texts, plans, messages):
        if plan is None:
            translation = next(done)
            out.append(translation if _wording(text) else text)
            continue
        got = [g if _wording(x) else x for x, g in zip(plan, (next(done) for _ in plan))]
        out.append(icu.rebuild(text, got, tags) if message else " | ".join(got))
    return out


def _forms_apart(text: str) -> list[str] | None:
    """vue-i18n's plural forms (its choices parted by " | "), where each is words; else
    None."""
    forms = text.split(" | ")
    return forms if len(forms) > 1 and all(_wording(f) for f in forms) else None


def _translated(texts: list[str], html: list[bool], job: Job) -> list[str]:
    """Values translated: those marked ``html`` through the markup path, as fragments of a
    page, the rest as values are (``translated_values``)."""
    plain = iter(translated_values([t for t, h in zip(texts, html) if not h], job))
    marked = iter(job.markup([t for t, h in zip(texts, html) if h], "html", fragments=True)
                  if any(html) else [])
    return [next(marked) if h else next(plain) for h in html]


def _typed(unit) -> bool:
    """Whether a unit is a .resx resource of another type than text (a picture, a file
    reference: ``type="System.Resources.ResXFileRef, ..."``), which translate-toolkit's
    store lists as text."""
    element = getattr(unit, "xmlelement", None)
    return element is not None and local_name(element.tag) == "data" and (
        element.get("type") is not None or element.get("mimetype") is not None)


def _accelerator(text: str) -> tuple[int, str] | None:
    """Where a text's one keyboard accelerator is (Qt's "&" before a letter or digit) and its
    letter; None for none, for several and for a text with "&&" (an ampersand itself)."""
    found = [m.start() for m in re.finditer(r"&(?=[^\W_])", text)]
    if len(found) != 1 or "&&" in text or re.search(r"&#?\w+;", text):
        return None
    return found[0], text[found[0] + 1]


def _accelerated(text: str, letter: str) -> str:
    """``text`` with an accelerator: before ``letter`` where a word of it begins with that
    letter (either case), else before its first letter or digit ("&Bearbeiten" for
    "&Edit", as translators choose)."""
    for pattern in (rf"(?<![^\W_]){re.escape(letter)}", r"[^\W_]"):
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            return text[:match.start()] + "&" + text[match.start():]
    return text


def plural_categories(job: Job) -> list[str] | None:
    """The target language's plural categories (CLDR's, as translate-toolkit lists them,
    "other" last), where the model's pair is known."""
    from translate.lang import data as languages
    pair = job.translator.languages
    if not pair:
        return None
    code = re.split(r"[-_]", pair["target"])[0]
    return [*[t for t in languages.plural_tags.get(code, ["one"]) if t != "other"], "other"]


def _qt_forms(unit, store) -> int:
    """How many forms a Qt plural message takes: as many as lupdate wrote for the file's
    language, else as many as Qt counts for it."""
    from translate.lang import data as languages
    written = len(_texts(unit.target))
    code = re.split(r"[-_]", store.gettargetlanguage() or "")[0]
    return written or len(languages.qt_plural_tags.get(code, ["other"]))


def _array_items(store) -> list[tuple[object, str]]:
    """Android's ``string-array`` items (translate-toolkit's store reads no unit of them),
    with their text, but those of an array marked untranslatable."""
    from translate.storage.aresource import AndroidResourceUnit
    reading = AndroidResourceUnit("")
    return [(item, reading.get_xml_text_value(item))
            for array in store.document.getroot().iter("string-array")
            if array.get("translatable") != "false" for item in array.iter("item")]


def _wording(text: str) -> bool:
    """Whether a value is words to translate: it has a letter besides its placeholders (a
    date format, "%B %d, %Y", has none) and is not one code-like token (a URL, an address,
    a key: ``documents.code_like``)."""
    from ..placeholders import PATTERN
    return _LETTER.search(PATTERN.sub("", text)) is not None and not code_like(text)


def _utf16(char: str) -> list[int]:
    """A character's UTF-16 code units (two for one beyond 16 bits)."""
    data = char.encode("utf-16-be")
    return [int.from_bytes(data[k:k + 2], "big") for k in range(0, len(data), 2)]


def _a(kind: str) -> str:
    """A kind of file with its article: "a JSON", "an Android string resources"."""
    return f"{'an' if kind.lstrip('.')[0] in 'AEIOU' else 'a'} {kind}"


def android(data: bytes) -> bool:
    """Whether an .xml file is Android's string resources (a ``resources`` root)."""
    # (a DOCTYPE may declare entities in brackets: Android's strings files name &nbsp; so)
    head = re.sub(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\]\s*)?>", b"",
                  data[:4096], flags=re.S)
    return re.match(rb"\s*<resources[\s>]", head) is not None


def _texts(source) -> list[str]:
    """A unit's source as its texts: one, or a plural's forms."""
    strings = getattr(source, "strings", None)
    if strings is not None:
        return [str(s) for s in strings]
    return [source] if isinstance(source, str) and source.strip() else []


def _forms(translated: list[str], tags: list[str] | None):
    """A plural's translated forms as the target language counts them: "one" from the
    source's first form, every other from its last (the source's own count where the
    target's is unknown)."""
    from translate.misc.multistring import multistring
    if not tags:
        return multistring(translated)
    return multistring([translated[0] if tag == "one" else translated[-1] for tag in tags])
