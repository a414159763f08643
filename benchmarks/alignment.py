"""Word alignments from eflomal (pip ``eflomal``), an aligner nobody here wrote: the yardstick
the markup and glossary benchmarks measure tag placement and term positions against.

    from alignment import eflomal_links
    links = eflomal_links(sources, targets, train_src, train_tgt)  # a set of (i, j) per pair

As a script it writes a corpus's training pairs' alignments in Pharaoh format, one line per
pair, for `aiayn prepare --alignments` (guided alignment):

    python benchmarks/alignment.py --corpus DIR --src en --tgt es -o train.en-es.aln

Words are split at whitespace, as ``aiayn.markup`` splits them. eflomal is run once over the
training corpus followed by the pairs to align (it learns from all of them), in both directions,
and the two are symmetrized with grow-diag-final-and (Koehn et al. 2005), as Moses does
(``aiayn.inspect.grow_diag_final_and``).
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time

from aiayn.inspect import grow_diag_final_and


def _read(path: str) -> list[set[tuple[int, int]]]:
    with open(path, encoding="utf-8") as f:
        return [{tuple(map(int, link.split("-"))) for link in line.split()}  # type: ignore[misc]
                for line in f]


def eflomal_links(sources: list[str], targets: list[str], train_src: list[str],
                  train_tgt: list[str]) -> list[set[tuple[int, int]]]:
    """Symmetrized (source word, target word) links of each pair of ``sources``/``targets``."""
    import eflomal
    src = [" ".join(s.lower().split()) + "\n" for s in train_src + sources]
    tgt = [" ".join(t.lower().split()) + "\n" for t in train_tgt + targets]
    src = [s if s.strip() else "_\n" for s in src]  # eflomal needs a word on each side
    tgt = [t if t.strip() else "_\n" for t in tgt]
    with tempfile.TemporaryDirectory() as tmp:
        fwd, rev = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        eflomal.Aligner().align(src, tgt, links_filename_fwd=fwd, links_filename_rev=rev)
        forward, backward = _read(fwd), _read(rev)
    n = len(train_src)
    return [grow_diag_final_and(f, b) for f, b in zip(forward[n:], backward[n:])]


def main() -> None:
    p = argparse.ArgumentParser(description="eflomal's alignments of a corpus's training pairs")
    p.add_argument("--corpus", required=True, help="a directory with train.SRC.gz, train.TGT.gz")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("-o", "--out", required=True, help="the Pharaoh file to write")
    args = p.parse_args()

    def read(lang: str) -> list[str]:
        with gzip.open(os.path.join(args.corpus, f"train.{lang}.gz"), "rt",
                       encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    start = time.perf_counter()
    src, tgt = read(args.src), read(args.tgt)
    links = eflomal_links(src, tgt, [], [])
    with open(args.out, "w", encoding="utf-8") as f:
        for s, t, pairs in zip(src, tgt, links):
            # an empty side was aligned as "_": no links
            f.write(" ".join(f"{i}-{j}" for i, j in sorted(pairs))
                    if s.split() and t.split() else "")
            f.write("\n")
    print(f"{len(src):,} pairs aligned in {time.perf_counter() - start:.0f} s: {args.out}")


if __name__ == "__main__":
    main()
