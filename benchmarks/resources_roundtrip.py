"""A real string resource file (Java .properties, JSON, YAML) translated whole and read back by a
reader aiayn does not write it with: the same keys, every value with a letter translated,
placeholders and markup kept, comments as they were, and BLEU against the file's own
translation where one is shipped beside it.

    python benchmarks/resources_roundtrip.py --checkpoint RUN \\
        --source /usr/lib/libreoffice/share/wizards/resources_en_US.properties \\
        --reference /usr/lib/libreoffice/share/wizards/resources_de.properties
    python benchmarks/resources_roundtrip.py --checkpoint RUN \\
        --source package/locales/en.json --reference package/locales/de.json

LibreOffice's wizards carry their strings in .properties files (``%1`` placeholders, ``<BR>``
line breaks, names in quotes), one per language; they are read by ``java.util.Properties`` (a
JDK's ``java`` runs a small program from its source). Etherpad's npm package carries its
interface's strings as translatewiki.net's JSON (``{{name}}`` placeholders, links), read by
Python's ``json``. Rails' own English strings (Debian's ruby-activesupport and
ruby-actionview, ``lib/*/locale/en.yml``: ``%{count}`` placeholders, plurals, date formats,
settings) are read by PyYAML. translate-toolkit writes the first two, ruamel.yaml the third.
Firefox's own strings (Mozilla's Fluent: ``{ $count }`` and brand-name placeables, plurals,
access keys, CSS; en-US in Debian's firefox-esr ``omni.ja``, German in firefox-esr-l10n-de's
language pack) are read by Mozilla's ``fluent.runtime``, each message formatted for 1 and for
5; Roundcube's PHP language files (Debian's roundcube-core, ``$name`` placeholders, markup,
``\n`` line breaks for JavaScript) are read by PHP itself (``php``, Debian's php-cli).
GNUstep's own Apple .strings files (Debian's gnustep-gui-common and gnustep-base-common,
``Resources/{English,German}.lproj/Localizable.strings``) are read by GNUstep's
property-list parser (``plparse``, ``plget``; Debian's gnustep-base-runtime). An Android
app's ``strings.xml`` is read by lxml (libxml2), its CDATA sections' tags compared as HTML
reads them.

    python benchmarks/resources_roundtrip.py --checkpoint RUN \
        --source omni/localization/en-US/browser/preferences/preferences.ftl \
        --reference xpi/browser/localization/de/browser/preferences/preferences.ftl
    cp .../localization/en_US/labels.inc labels.php   # (and de_DE's as labels.de.php)
    python benchmarks/resources_roundtrip.py --checkpoint RUN --source labels.php \
        --reference labels.de.php
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import header

READER = """
import java.io.*;
import java.util.*;

public class Props {
    public static void main(String[] files) throws Exception {
        for (String file : files) {
            Properties properties = new Properties();
            try (InputStream in = new FileInputStream(file)) { properties.load(in); }
            List<String> keys = new ArrayList<>(properties.stringPropertyNames());
            Collections.sort(keys);
            System.out.println("== " + file);
            for (String key : keys) {
                String value = properties.getProperty(key);
                System.out.println(key + "\\t" + value.replace("\\\\", "\\\\\\\\")
                    .replace("\\n", "\\\\n").replace("\\t", "\\\\t"));
            }
        }
    }
}
"""


def read_with_java(paths: list[Path]) -> list[dict[str, str]]:
    """Each file's properties as Java reads them (``Properties.load``, ISO-8859-1 and \\u
    escapes)."""
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "Props.java"
        program.write_text(READER)
        out = subprocess.run(["java", str(program), *map(str, paths)], capture_output=True,
                             text=True, encoding="utf-8", check=True).stdout
    files: list[dict[str, str]] = []
    for line in out.splitlines():
        if line.startswith("== "):
            files.append({})
        else:
            key, _, value = line.partition("\t")
            files[-1][key] = value.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
    return files


def read_json(paths: list[Path]) -> list[dict[str, str]]:
    """Each JSON file's strings by their key path (nested objects joined by "."), the
    translatewiki metadata ("@metadata") left out."""
    import json

    def flat(node, prefix: str = "") -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in node.items():
            if key.startswith("@"):
                continue
            if isinstance(value, dict):
                out.update(flat(value, f"{prefix}{key}."))
            elif isinstance(value, str):
                out[prefix + key] = value
        return out
    return [flat(json.loads(path.read_text(encoding="utf-8"))) for path in paths]


def flat_values(node, prefix: str = "") -> dict[str, object]:
    """A tree of mappings and lists as its leaves by key path ("a.b.0")."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    out: dict[str, object] = {}
    for key, value in items:
        if isinstance(value, (dict, list)):
            out.update(flat_values(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def read_yaml(paths: list[Path]) -> list[dict[str, object]]:
    """Each YAML file's values by their key path, as PyYAML reads them (numbers, truth
    values and nothing as such), under a single root key that names a language (Rails')."""
    import yaml
    read = []
    for path in paths:
        tree = yaml.safe_load(path.read_text(encoding="utf-8"))
        if len(tree) == 1 and isinstance(next(iter(tree.values())), dict):
            tree = next(iter(tree.values()))
        read.append(flat_values(tree))
    return read


def read_fluent(paths: list[Path]) -> list[dict[str, str]]:
    """Each Fluent file's messages and attributes ("id", "id.attr") as Mozilla's runtime
    formats them for 5 of every number (``/1`` added: for 1), with "!errors" the count of
    formatting errors and "!refs id" each pattern's placeables (variables, terms, messages,
    functions) for the comparison."""
    from fluent.runtime import FluentBundle, FluentResource
    from fluent.syntax import FluentParser, ast
    from fluent.syntax.visitor import Visitor

    class References(Visitor):
        def __init__(self) -> None:
            self.found: set[str] = set()

        def generic_visit(self, node) -> None:
            if isinstance(node, ast.VariableReference):
                self.found.add(f"${node.id.name}")
            elif isinstance(node, (ast.TermReference, ast.MessageReference,
                                   ast.FunctionReference)):
                self.found.add(f"{type(node).__name__}:{node.id.name}")
            super().generic_visit(node)
    read = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        bundle = FluentBundle(["en-US"], use_isolating=False,
                              functions={"PLATFORM": lambda: "linux"})  # (Firefox's own)
        bundle.add_resource(FluentResource(text))
        out: dict[str, str] = {"!errors": "0"}
        errors = 0
        for entry in FluentParser().parse(text).body:
            if isinstance(entry, ast.Junk):
                errors += 1
            if not isinstance(entry, ast.Message):
                continue
            message = bundle.get_message(entry.id.name)
            patterns = {entry.id.name: (message.value, entry.value), **{
                f"{entry.id.name}.{a.id.name}": (message.attributes[a.id.name], a.value)
                for a in entry.attributes}}
            for key, (compiled, pattern) in patterns.items():
                if compiled is None:
                    continue
                for count, suffix in ((5, ""), (1, "/1")):
                    value, problems = bundle.format_pattern(
                        compiled, {name[1:]: count for name in _refs(References, pattern)
                                   if name.startswith("$")})
                    out[key + suffix] = value
                    errors += len(problems)
                out[f"!refs {key}"] = " ".join(sorted(_refs(References, pattern)))
        out["!errors"] = str(errors)
        read.append(out)
    return read


def _refs(visitor_class, pattern) -> set[str]:
    visitor = visitor_class()
    visitor.visit(pattern)
    return visitor.found


PHP_READER = """
$before = array_keys(get_defined_vars());
$returned = include $argv[1];
$defined = array_diff_key(get_defined_vars(), array_flip($before),
                          ['before' => 1, 'returned' => 1]);
echo json_encode(is_array($returned) ? $returned : $defined);
"""


PHP_CODE = """
foreach (token_get_all(file_get_contents($argv[1])) as $token) {
    if (is_array($token) && in_array($token[0], [T_CONSTANT_ENCAPSED_STRING,
                                                  T_ENCAPSED_AND_WHITESPACE])) {
        continue;
    }
    echo is_array($token) ? $token[1] : $token;
}
"""


def php_code(path: Path) -> str:
    """A PHP file without its strings' text, as PHP's own tokenizer splits it."""
    return subprocess.run(["php", "-r", PHP_CODE, str(path)], capture_output=True, text=True,
                          check=True).stdout


def read_php(paths: list[Path]) -> list[dict[str, object]]:
    """Each PHP file's strings by their key path, as PHP reads them: what the file returns
    (Laravel's) or the variables it defines (Roundcube's ``$labels``)."""
    import json
    return [flat_values(json.loads(subprocess.run(
        ["php", "-r", PHP_READER, str(path)], capture_output=True, text=True, check=True).stdout))
        for path in paths]


def read_strings(paths: list[Path]) -> list[dict[str, str]]:
    """Each Apple .strings file's values as GNUstep's property-list parser reads them
    (``plparse`` on the whole file, ``plget`` per key; Debian's gnustep-base-runtime), by
    the keys translate-toolkit finds in the first file."""
    import re

    from translate.storage import properties
    # (translate-toolkit's reader misreads a key whose "=" begins the next line: joined)
    joined = re.sub(rb'"[ \t]*\r?\n[ \t]*=[ \t]*"', b'" = "', paths[0].read_bytes())
    keys = [unit.getid() for unit in properties.stringsutf8file.parsestring(joined).units
            if unit.getid()]
    read = []
    for path in paths:
        parsed = subprocess.run(["plparse", str(path)], capture_output=True, text=True,
                                check=False)
        if "a dictionary" not in parsed.stdout + parsed.stderr:
            read.append({})
            continue
        data = path.read_bytes()
        values = {}
        for key in keys:
            got = subprocess.run(["plget", key], input=data, capture_output=True, check=False)
            if got.returncode == 0 and not got.stderr:
                values[key] = got.stdout.decode("utf-8")
        read.append(values)
    return read


def html_kept(source: str, target: str) -> bool:
    """Whether ``target`` keeps ``source``'s placeholders and tags, a tag as HTML reads it:
    its name and attributes, however quoted (Android drops a bare quote and reads ``\\"`` as
    one), ``<br />`` as ``<br>``; text's escapes (``&amp;``, ``&lt;``) are text."""
    from collections import Counter

    from aiayn.placeholders import find

    def read(text: str) -> Counter:
        found = Counter()
        for item in find(text):
            tag = re.match(r"<(/?)(\w+)(.*?)/?>$", item, re.S)
            if tag:
                values = re.findall(r'(\w+)\s*=\s*\\?"?([^"\\\s>]*)', tag.group(3))
                found[(tag.group(1), tag.group(2).lower(), tuple(sorted(values)))] += 1
            elif item not in ("&amp;", "&lt;", "&gt;", "&quot;"):
                found[item] += 1
        return found
    return read(source) == read(target)


PLIST_READER = """
const plist = require(process.env.PLIST_MODULE);
const fs = require("fs");
const read = process.argv.slice(1).map(f => plist.parse(fs.readFileSync(f, "utf8")));
console.log(JSON.stringify(read));
"""


def read_stringsdict(paths: list[Path]) -> list[dict[str, object]]:
    """Each .stringsdict file's texts by key path ("key.variable.category"), as the npm
    package ``plist`` reads it in Node (``PLIST_MODULE``: where ``npm install plist``
    put it; GNUstep's parser, Debian's build, refuses any XML property list with a letter
    beyond ASCII, the shipped German ones too)."""
    import json
    import os
    if "PLIST_MODULE" not in os.environ:
        sys.exit("set PLIST_MODULE to npm's plist package (npm install plist)")
    out = subprocess.run(["node", "-e", PLIST_READER, *map(str, paths)], capture_output=True,
                         text=True, check=True).stdout
    return [{k: v for k, v in flat_values(tree).items()  # (its settings are not text, nor
             if not k.endswith((".NSStringFormatSpecTypeKey", ".NSStringFormatValueTypeKey"))
             and not re.fullmatch(r"%#@\w+@", str(v))}  # a format that is one variable)
            for tree in json.loads(out)]


def read_resx(paths: list[Path]) -> list[dict[str, object]]:
    """Each .resx file's values by name, as lxml reads them: text for a string resource, a
    marker for one of another type (a picture, a file reference: its ``type``), which must
    stay as it was."""
    from lxml import etree
    read = []
    for path in paths:
        out: dict[str, object] = {}
        for data in etree.parse(str(path)).getroot().iter("data"):
            value = data.findtext("value") or ""
            out[data.get("name")] = value if data.get("type") is None and \
                data.get("mimetype") is None else ("typed", data.get("type"), value)
        read.append(out)
    return read


def read_android(paths: list[Path]) -> list[dict[str, str]]:
    """Each Android strings file's texts by name (a plural's by "name/quantity", an array's
    by "name[k]"), as libxml2 reads them through lxml (entities resolved, CDATA as text),
    with "!fixed NAME" for each string marked ``translatable="false"`` and "!apostrophes
    NAME" for each text outside CDATA with an apostrophe Android's aapt2 refuses (one not
    escaped, outside double quotes)."""
    from lxml import etree

    def bare_apostrophe(raw: str) -> bool:
        quoted = False
        for k, char in enumerate(raw):
            if char == '"' and (k == 0 or raw[k - 1] != "\\"):
                quoted = not quoted
            elif char == "'" and not quoted and (k == 0 or raw[k - 1] != "\\"):
                return True
        return False
    read = []
    for path in paths:
        root = etree.fromstring(path.read_bytes(), etree.XMLParser(resolve_entities=True,
                                                                   strip_cdata=False))
        out: dict[str, str] = {}
        for element in root:
            name = element.get("name")
            if not isinstance(element.tag, str) or name is None:
                continue
            if element.tag == "string":
                texts = {name: element}
            elif element.tag == "plurals":
                texts = {f"{name}/{i.get('quantity')}": i for i in element.iter("item")}
            elif element.tag == "string-array":
                texts = {f"{name}[{k}]": i for k, i in enumerate(element.iter("item"))}
            else:
                continue
            for key, node in texts.items():
                out[key] = " ".join("".join(node.itertext()).split())
                raw = etree.tostring(node, encoding="unicode", with_tail=False)
                if element.get("translatable") == "false":
                    out[f"!fixed {key}"] = out[key]
                if "<![CDATA[" not in raw and bare_apostrophe("".join(node.itertext())):
                    out[f"!apostrophes {key}"] = "yes"
        read.append(out)
    return read


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--source", required=True, type=Path)
    p.add_argument("--reference", type=Path)
    args = p.parse_args()

    import sacrebleu

    import aiayn
    from aiayn.documents import translate_document
    from aiayn.placeholders import find, kept
    print(header(), flush=True)
    if args.source.suffix == ".properties":
        print(subprocess.run(["java", "-version"], capture_output=True, text=True,
                             check=False).stderr.splitlines()[0])
    translator = aiayn.load(args.checkpoint)
    data, suffix = args.source.read_bytes(), args.source.suffix
    t0 = time.perf_counter()
    out = translate_document(translator, data, suffix)
    seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as folder:
        translated = Path(folder) / f"translated{suffix}"
        translated.write_bytes(out)
        paths = [args.source, translated] + ([args.reference] if args.reference else [])
        read = read_with_java(paths) if suffix == ".properties" else \
            read_yaml(paths) if suffix in (".yml", ".yaml") else \
            read_fluent(paths) if suffix == ".ftl" else \
            read_php(paths) if suffix == ".php" else \
            read_strings(paths) if suffix == ".strings" else \
            read_android(paths) if suffix == ".xml" else \
            read_resx(paths) if suffix == ".resx" else \
            read_stringsdict(paths) if suffix == ".stringsdict" else read_json(paths)
        code = [php_code(path) for path in paths[:2]] if suffix == ".php" else []
    source, target = read[0], read[1]
    if suffix == ".xml":  # Android: the checks' entries apart
        fixed = [k for k in source if k.startswith("!fixed ")]
        bare = [sum(k.startswith("!apostrophes ") for k in r) for r in (source, target)]
        source = {k: v for k, v in source.items() if not k.startswith("!")}
        target = {k: v for k, v in target.items() if not k.startswith("!")}
    if suffix == ".ftl":  # placeables compared as Fluent's references, not as text
        refs = {k[6:] for k in source if k.startswith("!refs ") and source[k]}
        fluent = ({k: v for k, v in source.items() if not k.startswith("!")},
                  {k: v for k, v in target.items() if not k.startswith("!")})
        errors = (source["!errors"], target["!errors"])
        keep = {k: source[f"!refs {k}"] == target.get(f"!refs {k}") for k in refs}
        source, target = fluent
    words = [k for k, v in source.items() if isinstance(v, str) and any(c.isalpha() for c in v)
             and not k.endswith("/1")]
    others = [k for k, v in source.items() if not isinstance(v, str)]
    holding = [k for k in words if find(source[k])] if suffix != ".ftl" else \
        [k for k in words if k in refs]
    opening = ("#", "/*") if suffix == ".strings" else ("#",)
    comments = [line.strip() for line in data.decode("latin-1").splitlines()
                if line.lstrip().startswith(opening)]
    comments_out = [line.strip() for line in out.decode("latin-1").splitlines()
                    if line.lstrip().startswith(opening)]
    if suffix == ".xml":  # XML's comments, wherever the writer put them
        comments = re.findall(r"<!--.*?-->", data.decode("utf-8"), re.S)
        comments_out = re.findall(r"<!--.*?-->", out.decode("utf-8"), re.S)
    print(f"\nfile: {args.source} ({len(source)} properties, {len(words)} with a letter, "
          f"{len(holding)} with placeholders or markup)")
    print("| check | result |\n|---|---:|")
    reader = {".properties": "Java", ".yml": "PyYAML", ".yaml": "PyYAML",
              ".ftl": "fluent.runtime", ".php": "PHP", ".strings": "GNUstep",
              ".xml": "lxml (libxml2)", ".resx": "lxml (libxml2)",
              ".stringsdict": "npm's plist (Node)"}.get(
                  suffix, "Python's json")
    print(f"| {reader} reads the translation | {'yes' if target else 'NO'} |")
    print(f"| the same keys | {'yes' if source.keys() == target.keys() else 'NO'} |")
    if args.reference:  # a target with other plural forms than the source's has other keys
        shipped = {k for k in read[2] if not k.startswith("!")}

        def forms(keys) -> dict[str, set[str]]:  # plural group -> its CLDR categories
            groups: dict[str, set[str]] = {}
            for key in keys:  # (Android's "name/one", a .stringsdict's "key.variable.one")
                found = re.fullmatch(r"(.+)[/.](zero|one|two|few|many|other)", key)
                if found:
                    groups.setdefault(found.group(1), set()).add(found.group(2))
            return groups
        ours, theirs = forms(target), forms(shipped)
        both = ours.keys() & theirs.keys()
        if both:
            print(f"| plurals holding every form the shipped translation has "
                  f"({', '.join(sorted(set().union(*theirs.values())))}) | "
                  f"{sum(ours[g] >= theirs[g] for g in both)}/{len(both)} |")
            print(f"| ... and no other | {sum(ours[g] == theirs[g] for g in both)}/"
                  f"{len(both)} |")
    print(f"| values with a letter changed | "
          f"{sum(k in target and source[k] != target[k] for k in words)}/{len(words)} |")
    if others:
        kinds = "resources of other types (pictures, file references)" if suffix == ".resx" \
            else "other values (numbers, truth values, nothing)"
        print(f"| {kinds} as they were | "
              f"{sum(source[k] == target.get(k) for k in others)}/{len(others)} |")
    if suffix == ".ftl":
        print(f"| placeables kept (variables, terms, functions) | "
              f"{sum(keep[k] for k in holding)}/{len(holding)} |")
        print(f"| formatting errors, source and translation (for 1 and for 5) | "
              f"{errors[0]}, {errors[1]} |")
        keys = [k for k in source if k.lower().endswith("accesskey")]

        def fitting(read: dict) -> int:  # access keys that are a letter of their label
            return sum(read.get(k, "").lower() in read.get(
                k[:-9] + "label" if k[:-9] + "label" in read else k.rsplit(".", 1)[0],
                "").lower() and len(read.get(k, "")) == 1 for k in keys)
        shipped = f" (the shipped translation: {fitting(read[2])})" if args.reference else ""
        print(f"| access keys a letter of their label, source and translation | "
              f"{fitting(source)}, {fitting(target)} of {len(keys)}{shipped} |")
        print(f"| placeholders and markup kept (as text, formatted) | "
              f"{sum(kept(source[k], target.get(k, '')) for k in words if find(source[k]))}"
              f"/{sum(bool(find(source[k])) for k in words)} |")
    elif suffix == ".xml":  # HTML in a CDATA section compared as HTML reads it
        print(f"| placeholders and markup kept (tags as HTML reads them) | "
              f"{sum(html_kept(source[k], target.get(k, '')) for k in holding)}"
              f"/{len(holding)} |")
    else:
        print(f"| placeholders and markup kept | "
              f"{sum(kept(source[k], target.get(k, '')) for k in holding)}/{len(holding)} |")
    if suffix == ".xml":
        print(f"| strings marked translatable=\"false\" as they were | "
              f"{sum(source[k[7:]] == target.get(k[7:]) for k in fixed)}/{len(fixed)} |")
        print(f"| texts with an apostrophe aapt2 refuses, source and translation | "
              f"{bare[0]}, {bare[1]} |")
    if suffix == ".php":  # everything but the strings, byte for byte, as PHP splits it
        print(f"| code, comments and layout outside the strings as they were (PHP's "
              f"tokenizer) | {'yes' if code[0] == code[1] else 'NO'} |")
    if comments:
        print(f"| comment lines as they were | {'yes' if comments == comments_out else 'NO'} "
              f"({len(comments)}) |")
    if suffix == ".properties":
        print(f"| output ASCII, other letters as \\u escapes | "
              f"{'yes' if out.isascii() else 'no'} |")
    if args.reference and target:
        reference = read[2]
        common = [k for k in words if k in reference]
        bleu = sacrebleu.corpus_bleu([target[k] for k in common], [[reference[k] for k in common]])
        print(f"| BLEU against {args.reference.name} ({len(common)} values) | {bleu.score:.2f} |")
        if suffix != ".ftl":
            ref_kept = sum(kept(source[k], reference[k]) for k in holding if k in reference)
            print(f"| (the shipped translation keeps the placeholders and markup of "
                  f"{ref_kept}/{sum(k in reference for k in holding)}) | |")
    print(f"| seconds | {seconds:.1f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
