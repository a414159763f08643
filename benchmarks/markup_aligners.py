"""How often two good aligners project a tag onto the same words: the yardstick for the tag
agreement that ``markup.py`` measures.

    python benchmarks/markup_aligners.py --checkpoint RUN --corpus DIR --src en --tgt es

The same tagged dev sentences as ``markup.py`` (seed 0, <code> spans left out of the count)
are translated whole with tags placed by the model's alignments; then eflomal is trained three
times on the training pairs plus these translations: twice with its defaults (its sampler
starts anew each run) and once with its IBM-2-like model (``model=2``). For every pair of
aligners, and for the tags as placed, the share of tags whose projected words (the hull of the
target words linked to the tag's source words) are exactly the same; then how the placed tags
that differ from the first eflomal run's projection differ. ``--tokenized`` adds three runs on
the words' pieces, marks split off (``alignment.pieces``), their links mapped back onto words.
``--samplers N`` adds two runs with N samplers instead of eflomal's 3 (on pieces with
``--tokenized``): how much steadier its links are with more.
"""

from __future__ import annotations

import itertools
from collections import Counter

from alignment import eflomal_links
from machine import header
from markup import corpus_parser, placed, read, tagged_sample


def hull(pairs: set[tuple[int, int]], words: list[int]) -> list[int]:
    linked = sorted({j for i, j in pairs if i in words})
    return list(range(linked[0], linked[-1] + 1)) if linked else []


def difference(mine: list[int], theirs: list[int]) -> str:
    """How a placed tag's words differ from a projection's (both not equal)."""
    if not theirs:
        return "eflomal links the tag's words to nothing"
    if not mine:
        return "placed on no word"
    if set(mine) < set(theirs):
        return "narrower"
    if set(theirs) < set(mine):
        return "wider"
    return "overlapping, neither inside" if set(mine) & set(theirs) else "disjoint"


def main() -> None:
    p = corpus_parser(__doc__)
    p.add_argument("--tokenized", action="store_true",
                   help="three more runs on the words' pieces, marks split off")
    p.add_argument("--samplers", type=int, default=0,
                   help="two more runs with this many samplers (eflomal's default is 3)")
    args = p.parse_args()

    import aiayn
    print(header(), flush=True)
    translator = aiayn.load(args.checkpoint)
    src = read(args.corpus / f"dev.{args.src}.gz")
    ref = read(args.corpus / f"dev.{args.tgt}.gz")
    picked, tagged, covered, code = tagged_sample(src, ref, args.sentences)
    outputs = [placed(o) for o in translator.translate_markup(tagged)]
    stripped = [" ".join(src[k].split()) for k in picked]
    targets = [text for text, _, _ in outputs]
    train_src = read(args.corpus / f"train.{args.src}.gz")
    train_tgt = read(args.corpus / f"train.{args.tgt}.gz")
    runs = {}
    for marks in [False, True] if args.tokenized else [False]:
        name = "eflomal, marks split off" if marks else "eflomal"
        runs[name] = eflomal_links(stripped, targets, train_src, train_tgt, tokenized=marks)
        runs[f"{name}, again"] = eflomal_links(stripped, targets, train_src, train_tgt,
                                               tokenized=marks)
        runs[f"{name}, model 2"] = eflomal_links(stripped, targets, train_src, train_tgt,
                                                 tokenized=marks, model=2)
    if args.samplers:
        name = f"eflomal, {args.samplers} samplers" + (", marks split off" if args.tokenized
                                                       else "")
        for again in ["", ", again"]:
            runs[name + again] = eflomal_links(stripped, targets, train_src, train_tgt,
                                               tokenized=args.tokenized,
                                               n_samplers=args.samplers)
    names = ["tags as placed", *runs]
    same = dict.fromkeys(itertools.combinations(names, 2), 0)
    total, kinds = 0, Counter()
    for k, ((_, tags, _), spans) in enumerate(zip(outputs, covered)):
        for n, words in spans.items():
            if n in code:
                continue
            total += 1
            hulls = {"tags as placed": tags.get(n, []),
                     **{name: hull(links[k], words) for name, links in runs.items()}}
            for a, b in same:
                same[a, b] += hulls[a] == hulls[b]
            if hulls["tags as placed"] != hulls["eflomal"]:
                kinds[difference(hulls["tags as placed"], hulls["eflomal"])] += 1
    print(f"{args.checkpoint}: {len(picked)} dev sentences, {total} <b> and <a> tags")
    print("| projections | the same words |\n|---|---:|")
    for (a, b), count in same.items():
        print(f"| {a} / {b} | {100 * count / max(1, total):.1f}% |")
    print("\nplaced tags that differ from eflomal's projection, by how (share of all tags): "
          + "; ".join(f"{kind} {100 * n / max(1, total):.1f}%" for kind, n in kinds.most_common()))


if __name__ == "__main__":
    main()
