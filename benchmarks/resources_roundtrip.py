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
"""

from __future__ import annotations

import argparse
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


def read_yaml(paths: list[Path]) -> list[dict[str, object]]:
    """Each YAML file's values by their key path, as PyYAML reads them (numbers, truth
    values and nothing as such), under a single root key that names a language (Rails')."""
    import yaml

    def flat(node, prefix: str = "") -> dict[str, object]:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        out: dict[str, object] = {}
        for key, value in items:
            if isinstance(value, (dict, list)):
                out.update(flat(value, f"{prefix}{key}."))
            else:
                out[f"{prefix}{key}"] = value
        return out
    read = []
    for path in paths:
        tree = yaml.safe_load(path.read_text(encoding="utf-8"))
        if len(tree) == 1 and isinstance(next(iter(tree.values())), dict):
            tree = next(iter(tree.values()))
        read.append(flat(tree))
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
            read_yaml(paths) if suffix in (".yml", ".yaml") else read_json(paths)
    source, target = read[0], read[1]
    words = [k for k, v in source.items() if isinstance(v, str) and any(c.isalpha() for c in v)]
    others = [k for k, v in source.items() if not isinstance(v, str)]
    holding = [k for k in words if find(source[k])]
    comments = [line for line in data.decode("latin-1").splitlines()
                if line.lstrip().startswith("#")]
    comments_out = [line for line in out.decode("latin-1").splitlines()
                    if line.lstrip().startswith("#")]
    print(f"\nfile: {args.source} ({len(source)} properties, {len(words)} with a letter, "
          f"{len(holding)} with placeholders or markup)")
    print("| check | result |\n|---|---:|")
    reader = {".properties": "Java", ".yml": "PyYAML", ".yaml": "PyYAML"}.get(
        suffix, "Python's json")
    print(f"| {reader} reads the translation | {'yes' if target else 'NO'} |")
    print(f"| the same keys | {'yes' if source.keys() == target.keys() else 'NO'} |")
    print(f"| values with a letter changed | {sum(source[k] != target.get(k) for k in words)}"
          f"/{len(words)} |")
    if others:
        print(f"| other values (numbers, truth values, nothing) as they were | "
              f"{sum(source[k] == target.get(k) for k in others)}/{len(others)} |")
    print(f"| placeholders and markup kept | "
          f"{sum(kept(source[k], target.get(k, '')) for k in holding)}/{len(holding)} |")
    if comments:
        print(f"| comment lines as they were | {'yes' if comments == comments_out else 'NO'} "
              f"({len(comments)}) |")
    if suffix == ".properties":
        print(f"| output ASCII, other letters as \\u escapes | "
              f"{'yes' if out.isascii() else 'no'} |")
    if args.reference:
        reference = read[2]
        common = [k for k in words if k in reference]
        bleu = sacrebleu.corpus_bleu([target[k] for k in common], [[reference[k] for k in common]])
        ref_kept = sum(kept(source[k], reference[k]) for k in holding if k in reference)
        print(f"| BLEU against {args.reference.name} ({len(common)} values) | {bleu.score:.2f} |")
        print(f"| (the shipped translation keeps the placeholders and markup of "
              f"{ref_kept}/{sum(k in reference for k in holding)}) | |")
    print(f"| seconds | {seconds:.1f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
