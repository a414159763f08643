"""Language detection accuracy (``aiayn.detect``, lingua) on the shared corpora's dev splits.

For each corpus, ``--sentences`` dev sentences of each language from the ``--first`` on (0: the
first), detected among the
corpus's two languages (what a server of that pair's models chooses between) and among every
language of the corpora together; the share detected right, per language. The log starts with
the CPU's model and flags.

    .venv/bin/python benchmarks/detect_accuracy.py --data ../shared/data [--sentences 500]
        [--first 0]
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

from aiayn.detect import LanguageDetector

CORPORA = {"bible-en-es": ("en", "es"), "l10n-en-de": ("en", "de")}


def dev_lines(root: Path, corpus: str, code: str, count: int, first: int = 0) -> list[str]:
    with gzip.open(root / corpus / f"dev.{code}.gz", "rt", encoding="utf-8") as handle:
        lines = [line.strip() for line in handle if line.strip()]
    return lines[first:first + count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--first", type=int, default=0, help="the first dev sentence taken")
    args = parser.parse_args()
    from machine import header
    print(header())
    print(f"dev sentences {args.first} to {args.first + args.sentences - 1} of each language")
    everything = sorted({code for pair in CORPORA.values() for code in pair})
    print("| corpus | language | sentences | right among the pair | right among "
          f"{', '.join(everything)} |\n|---|---|---:|---:|---:|")
    for corpus, pair in CORPORA.items():
        for code in pair:
            lines = dev_lines(args.data, corpus, code, args.sentences, args.first)
            shares = []
            for candidates in (list(pair), everything):
                detector = LanguageDetector(candidates)
                right = sum(detector.detect(line)[0][0] == code for line in lines)
                shares.append(f"{100 * right / len(lines):.1f}%")
            print(f"| {corpus} | {code} | {len(lines)} | {shares[0]} | {shares[1]} |")


if __name__ == "__main__":
    main()
