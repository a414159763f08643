"""Glossaries, measured: how often a term's translation appears with and without the glossary,
the BLEU change and the speed cost.

    python benchmarks/glossary.py --checkpoint RUN --corpus DIR --src en --tgt es \
        [--sentences 300]

Terms are taken from the references: eflomal (trained on the corpus) aligns each dev source to
its reference, and one phrase of one or two source words (at least one of four letters or more)
whose aligned reference words are contiguous and aligned to nothing else is picked at random
(seed 0), its edge punctuation stripped on both sides. Each sentence gets its own one-term
glossary, so that a term never applies to another sentence; all sentences are decoded in one
batched call either way (beam 4).
"""

from __future__ import annotations

import gzip
import random
import re
import time
from pathlib import Path

import sacrebleu
from alignment import eflomal_links
from machine import header
from markup import corpus_parser

from aiayn.decode.options import DecodeOptions
from aiayn.glossary import Glossary

_EDGE = re.compile(r"^[^\w]+|[^\w]+$")


def read(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [" ".join(line.split()) for line in f]


def pick_term(src: str, ref: str, links: set[tuple[int, int]], rng: random.Random
              ) -> tuple[str, str] | None:
    sw, tw = src.split(), ref.split()
    phrases = []
    for n in (1, 2):
        for a in range(len(sw) - n + 1):
            span = set(range(a, a + n))
            if not any(len(_EDGE.sub("", w)) >= 4 for w in sw[a:a + n]):
                continue
            targets = {j for i, j in links if i in span}
            if not targets or any(i not in span for i, j in links if j in targets):
                continue
            lo, hi = min(targets), max(targets)
            if hi - lo + 1 != len(targets) or hi - lo > 2:
                continue
            if any(i not in span for i, j in links if lo <= j <= hi):
                continue
            source = _EDGE.sub("", " ".join(sw[a:a + n]))
            target = _EDGE.sub("", " ".join(tw[lo:hi + 1]))
            if source and target:
                phrases.append((source, target))
    return rng.choice(phrases) if phrases else None


def main() -> None:
    p = corpus_parser(__doc__)
    args = p.parse_args()

    import aiayn
    print(header(), flush=True)
    translator = aiayn.load(args.checkpoint)
    src = read(args.corpus / f"dev.{args.src}.gz")
    ref = read(args.corpus / f"dev.{args.tgt}.gz")
    links = eflomal_links(src, ref, read(args.corpus / f"train.{args.src}.gz"),
                          read(args.corpus / f"train.{args.tgt}.gz"))
    rng = random.Random(0)
    rows, terms = [], []
    for k in range(len(src)):
        term = pick_term(src[k], ref[k], links[k], rng)
        if term is not None and translator.codec.fits(src[k]):
            rows.append(k)
            terms.append(term)
        if len(rows) == args.sentences:
            break
    print(f"{args.checkpoint}: {len(rows)} dev sentences with a term from their reference "
          f"(e.g. {terms[0][0]!r} -> {terms[0][1]!r}, {terms[1][0]!r} -> {terms[1][1]!r})",
          flush=True)
    options = DecodeOptions()
    codec = translator.codec
    sources = [codec.encode(src[k]) for k in rows]
    constraints = [translator.constraints([s], Glossary((term,)), options)[0]
                   for s, term in zip(sources, terms)]
    translator.translate_ids([s.ids for s in sources[:8]], options)  # warm up
    outputs, seconds = {}, {}
    for name, given in (("without the glossary", None), ("with the glossary", constraints)):
        t0 = time.perf_counter()
        hyps = translator.translate_ids([s.ids for s in sources], options, constraints=given)
        seconds[name] = time.perf_counter() - t0
        outputs[name] = [codec.decode(h[0].tokens, s) for h, s in zip(hyps, sources)]
    refs = [ref[k] for k in rows]
    print("| decoding | term in the translation | BLEU | seconds |")
    print("|---|---:|---:|---:|")
    for name, outs in outputs.items():
        found = sum(t.lower() in o.lower() for (_, t), o in zip(terms, outs))
        bleu = sacrebleu.corpus_bleu(outs, [refs]).score
        print(f"| {name} | {found}/{len(outs)} = {100 * found / len(outs):.1f}% | {bleu:.2f} "
              f"| {seconds[name]:.1f} |")
    base, forced = seconds["without the glossary"], seconds["with the glossary"]
    print(f"speed cost: {forced / base:.2f}x the time of plain beam search")


if __name__ == "__main__":
    main()
