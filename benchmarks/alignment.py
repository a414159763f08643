"""Word alignments from eflomal (pip ``eflomal``), an aligner nobody here wrote: the yardstick
the markup and glossary benchmarks measure tag placement and term positions against.

    from alignment import eflomal_links
    links = eflomal_links(sources, targets, train_src, train_tgt)  # a set of (i, j) per pair

Words are split at whitespace, as ``aiayn.markup`` splits them. eflomal is run once over the
training corpus followed by the pairs to align (it learns from all of them), in both directions,
and the two are symmetrized with grow-diag-final-and (Koehn et al. 2005), as Moses does
(``aiayn.inspect.grow_diag_final_and``).
"""

from __future__ import annotations

import os
import tempfile

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
