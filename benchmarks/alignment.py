"""Word alignments from eflomal (pip ``eflomal``), an aligner nobody here wrote: the yardstick
the markup and glossary benchmarks measure tag placement and term positions against.

    from alignment import eflomal_links
    links = eflomal_links(sources, targets, train_src, train_tgt)  # a set of (i, j) per pair

As a script it writes a corpus's training pairs' alignments in Pharaoh format, one line per
pair, for `aiayn prepare --alignments` (guided alignment):

    python benchmarks/alignment.py --corpus DIR --src en --tgt es -o train.en-es.aln \
        [--tokenized] [--runs 3] [--samplers 3]

Words are split at whitespace, as ``aiayn.markup`` splits them. eflomal is run once over the
training corpus followed by the pairs to align (it learns from all of them), in both directions,
and the two are symmetrized with grow-diag-final-and (Koehn et al. 2005), as Moses does
(``aiayn.inspect.grow_diag_final_and``). ``tokenized`` splits marks off the words first
(``"(default:"`` -> ``( default :``), as aligners are usually run, and maps the pieces' links
back onto the whitespace words. eflomal samples its alignments, so one run differs from the
next; ``runs`` aligns several times and keeps the links most runs agree on (the mode of the
sampler, not one draw of it).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import re
import tempfile
import time
from collections import Counter

from aiayn.inspect import grow_diag_final_and


def _read(path: str) -> list[set[tuple[int, int]]]:
    with open(path, encoding="utf-8") as f:
        return [{tuple(map(int, link.split("-"))) for link in line.split()}  # type: ignore[misc]
                for line in f]


_PIECE = re.compile(r"\w+|[^\w\s]")
_MARK = re.compile(r"[^\w\s]")


def pieces(sentence: str) -> tuple[list[str], list[int]]:
    """``sentence``'s whitespace words split into runs of letters and digits and single marks
    (``"(default:"`` -> ``( default :``), each piece with the number of its word."""
    out, word_of = [], []
    for w, word in enumerate(sentence.split()):
        for piece in _PIECE.findall(word):
            out.append(piece)
            word_of.append(w)
    return out, word_of


def word_links(links: set[tuple[int, int]], src: list[str], src_word: list[int],
               tgt: list[str], tgt_word: list[int]) -> set[tuple[int, int]]:
    """Links between pieces as links between their words. A link through a mark counts only
    where its word has no letters or digits: "Adressen:" is linked through "Adressen", not
    through its colon."""
    def through_mark(pieces: list[str], of: list[int]) -> list[bool]:
        mark = [_MARK.match(piece) is not None for piece in pieces]
        wordy = {of[k] for k, m in enumerate(mark) if not m}
        return [m and of[k] in wordy for k, m in enumerate(mark)]
    src_mark, tgt_mark = through_mark(src, src_word), through_mark(tgt, tgt_word)
    return {(src_word[i], tgt_word[j]) for i, j in links if not (src_mark[i] or tgt_mark[j])}


def eflomal_links(sources: list[str], targets: list[str], train_src: list[str],
                  train_tgt: list[str], *, tokenized: bool = False,
                  **options) -> list[set[tuple[int, int]]]:
    """Symmetrized (source word, target word) links of each pair of ``sources``/``targets``.

    ``tokenized`` aligns the words' pieces (marks split off, as aligners are usually run)
    and maps their links back onto the whitespace words; ``options`` go to eflomal's
    ``Aligner`` (``model=2``, ...). A pair given more than once is aligned once: eflomal
    learns from the pairs it aligns, and copies of one pair would weigh its own links up
    (and each copy would be a draw of its own)."""
    import eflomal
    unique = list(dict.fromkeys(zip(sources, targets)))
    if len(unique) < len(sources):
        once = eflomal_links([s for s, _ in unique], [t for _, t in unique], train_src,
                             train_tgt, tokenized=tokenized, **options)
        found = dict(zip(unique, once))
        return [set(found[pair]) for pair in zip(sources, targets)]
    src = [s.lower() for s in train_src + sources]
    tgt = [t.lower() for t in train_tgt + targets]
    if tokenized:
        src_split, tgt_split = [pieces(s) for s in src], [pieces(t) for t in tgt]
        src = [" ".join(p) for p, _ in src_split]
        tgt = [" ".join(p) for p, _ in tgt_split]
    # eflomal needs a word on each side
    src = [" ".join(s.split()) + "\n" if s.strip() else "_\n" for s in src]
    tgt = [" ".join(t.split()) + "\n" if t.strip() else "_\n" for t in tgt]
    with tempfile.TemporaryDirectory() as tmp:
        fwd, rev = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        eflomal.Aligner(**options).align(src, tgt, links_filename_fwd=fwd,
                                         links_filename_rev=rev)
        forward, backward = _read(fwd), _read(rev)
    n = len(train_src)
    links = [grow_diag_final_and(f, b) for f, b in zip(forward[n:], backward[n:])]
    if tokenized:
        links = [word_links(pairs, *src_split[n + k], *tgt_split[n + k])
                 for k, pairs in enumerate(links)]
    return links


def majority(runs: list[list[set[tuple[int, int]]]]) -> list[set[tuple[int, int]]]:
    """Per pair, the links more than half of ``runs`` give."""
    need = len(runs) // 2 + 1
    return [{link for link, n in Counter(itertools.chain(*per_pair)).items() if n >= need}
            for per_pair in zip(*runs)]


def main() -> None:
    p = argparse.ArgumentParser(description="eflomal's alignments of a corpus's training pairs")
    p.add_argument("--corpus", required=True, help="a directory with train.SRC.gz, train.TGT.gz")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("-o", "--out", required=True, help="the Pharaoh file to write")
    p.add_argument("--tokenized", action="store_true",
                   help="align the words' pieces, marks split off; links written between words")
    p.add_argument("--runs", type=int, default=1,
                   help="align this many times and keep the links more than half of the runs "
                        "give")
    p.add_argument("--samplers", type=int, default=3,
                   help="eflomal's independent samplers, their counts combined (its default 3)")
    args = p.parse_args()
    if args.runs < 1 or args.samplers < 1:
        p.error(f"--runs {args.runs} --samplers {args.samplers}: give 1 or more")

    def read(lang: str) -> list[str]:
        with gzip.open(os.path.join(args.corpus, f"train.{lang}.gz"), "rt",
                       encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    start = time.perf_counter()
    src, tgt = read(args.src), read(args.tgt)
    links = majority([eflomal_links(src, tgt, [], [], tokenized=args.tokenized,
                                    n_samplers=args.samplers)
                      for _ in range(args.runs)])
    with open(args.out, "w", encoding="utf-8") as f:
        for s, t, pairs in zip(src, tgt, links):
            # an empty side was aligned as "_": no links
            f.write(" ".join(f"{i}-{j}" for i, j in sorted(pairs))
                    if s.split() and t.split() else "")
            f.write("\n")
    print(f"{len(src):,} pairs aligned in {time.perf_counter() - start:.0f} s: {args.out}")


if __name__ == "__main__":
    main()
