"""A real Xcode string catalog (.xcstrings), most of one language's localizations taken out, filled
again by aiayn: is each string given the language, marked for review, with its placeholders
and plural variations, every other localization untouched?

    python benchmarks/xcstrings_roundtrip.py --checkpoint RUN --catalog Localizable.xcstrings \\
        --target de [--keep-every 4]

Ice Cubes, a Mastodon client for iOS, keeps its strings in one catalog of 20 languages
(github.com/Dimillian/IceCubesApp, ``IceCubesApp/Resources/Localization/
Localizable.xcstrings``). Every ``--keep-every``-th string's ``--target`` localization is kept,
the others' taken out; the model is named the catalog's source language and ``--target``;
Python's json reads the result. BLEU compares the new localizations' texts with the ones
taken out.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

from machine import header


def leaves(localization: dict) -> list[dict]:
    """A localization's string units: its own, or its variations' (plural, device), nested."""
    found = [localization["stringUnit"]] if "stringUnit" in localization else []
    for variation in localization.get("variations", {}).values():
        for case in variation.values():
            found += leaves(case)
    return found


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--catalog", required=True, type=Path)
    p.add_argument("--target", required=True)
    p.add_argument("--keep-every", type=int, default=4)
    args = p.parse_args()

    import sacrebleu

    import aiayn
    from aiayn.documents import translate_document
    from aiayn.placeholders import find, kept
    print(header(), flush=True)
    catalog = json.loads(args.catalog.read_text(encoding="utf-8"))
    source, strings = catalog["sourceLanguage"], catalog["strings"]
    names = sorted(n for n, s in strings.items() if args.target in s.get("localizations", {}))
    taken = {}
    for k, name in enumerate(names):
        if k % args.keep_every:
            taken[name] = strings[name]["localizations"].pop(args.target)
    given = copy.deepcopy(catalog)
    data = json.dumps(catalog, indent=2, separators=(",", " : "), sort_keys=True,
                      ensure_ascii=False).encode()
    translator = aiayn.load(args.checkpoint)
    translator.name_pair(source, args.target)
    t0 = time.perf_counter()
    out = translate_document(translator, data, ".xcstrings")
    seconds = time.perf_counter() - t0
    result = json.loads(out)
    now = result["strings"]
    filled = [n for n in taken if args.target in now[n].get("localizations", {})]
    units = [u for n in filled for u in leaves(now[n]["localizations"][args.target])]
    others = sum(now[n].get("localizations", {}).get(lang) == loc
                 for n, s in given["strings"].items()
                 for lang, loc in s.get("localizations", {}).items())
    total = sum(len(s.get("localizations", {})) for s in given["strings"].values())

    def text(name: str) -> str:
        localization = given["strings"][name].get("localizations", {}).get(source)
        unit = (localization or {}).get("stringUnit")
        return unit["value"] if unit else name
    holding = [n for n in filled if "stringUnit" in taken[n] and find(text(n))]
    plural = [n for n in taken if "plural" in taken[n].get("variations", {})]
    simple = [n for n in filled if "stringUnit" in taken[n]
              and "stringUnit" in now[n]["localizations"][args.target]]
    bleu = sacrebleu.corpus_bleu(
        [now[n]["localizations"][args.target]["stringUnit"]["value"] for n in simple],
        [[taken[n]["stringUnit"]["value"] for n in simple]])
    print(f"\ncatalog: {args.catalog} ({len(strings)} strings, {len(names)} in {args.target}, "
          f"{len(taken)} taken out)")
    print("| check | result |\n|---|---:|")
    print(f"| Python's json reads it; the same strings | "
          f"{'yes' if set(now) == set(strings) else 'NO'} |")
    print(f"| written as Xcode writes (keys sorted, two spaces, \" : \") | "
          f"{'yes' if out.decode().rstrip() == json.dumps(result, indent=2, separators=(',', ' : '), sort_keys=True, ensure_ascii=False) else 'NO'} |")  # noqa: E501
    print(f"| strings given {args.target} again | {len(filled)}/{len(taken)} |")
    print(f"| their texts marked needs_review | "
          f"{sum(u.get('state') == 'needs_review' for u in units)}/{len(units)} |")
    print(f"| localizations there before, untouched | {others}/{total} |")
    print(f"| placeholders kept | "
          f"{sum(kept(text(n), now[n]['localizations'][args.target]['stringUnit']['value']) for n in holding)}"  # noqa: E501
          f"/{len(holding)} |")
    print(f"| plural variations given {args.target}'s categories | "
          f"{sum(sorted(now[n]['localizations'].get(args.target, {}).get('variations', {}).get('plural', {})) == sorted(taken[n]['variations']['plural']) for n in plural)}"  # noqa: E501
          f"/{len(plural)} |")
    print(f"| BLEU against the {args.target} taken out ({len(simple)} texts) | "
          f"{bleu.score:.2f} |")
    print(f"| seconds | {seconds:.1f} |")


if __name__ == "__main__":
    main()
