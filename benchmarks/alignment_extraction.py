"""Ways of reading word links from cross-attention, measured against eflomal's links: the
F1 of the links and how often a span's hull lands exactly where eflomal's links project it.

Dev sentences from ``--first`` on (outside the markup benchmark's sample, so that a choice
made here is not fitted to it) are translated; each translation's cross-attention is read as
word-level maps (the alignment head where the model has one, and every layer and head
averaged), and each map as links in several ways: one direction's argmax, both joined by
grow-diag-final-and, their intersection first, with source words that no target word gives a
least weight left unaligned (the alignment head's reading, ``HEAD_MIN_WEIGHT``), thresholds;
where the model has a source aligner, the aligner's readings with the source words it puts
on its empty word left unaligned: those it weighs there most, or with at least 0.5, 0.7
(what ``model_alignments`` reads, ``EMPTY_MIN_WEIGHT``) or 0.9 of their weight.
Three random spans of one to three source words per sentence (seed 1) give the hull agreement.

    python benchmarks/alignment_extraction.py --checkpoint RUN --corpus DIR --src en \
        --tgt es [--first 500] [--sentences 200] [--tokenized]
"""

from __future__ import annotations

import argparse
import gzip
import random

import torch
from alignment import eflomal_links
from machine import header

import aiayn
from aiayn.data.tokenizer import word_starts
from aiayn.inspect import HEAD_MIN_WEIGHT, attention_maps, grow_diag_final_and, source_word_weights


def read(path: str) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def word_map(weights: torch.Tensor, src_words: list[int], tgt_words: list[int]
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(target words, source words): a target word's rows averaged, a source word's columns
    summed; each target word's weight on the source's EOS (its empty word); and each source
    word's largest weight from any one target piece (a piece of a compound such as
    "Profiler-Unterstützung" may look at "support" while its average does not)."""
    n_src, n_tgt = max(src_words) + 1, max(tgt_words, default=-1) + 1
    out, count = torch.zeros(n_tgt, n_src), torch.zeros(n_tgt, 1)
    empty, by_piece = torch.zeros(n_tgt), torch.zeros(n_src)
    eos = len(src_words) - 1
    for t, tw in enumerate(tgt_words):
        if tw < 0:
            continue
        count[tw] += 1
        empty[tw] += weights[t, eos]
        row = torch.zeros(n_src)
        for s, sw in enumerate(src_words):
            if sw >= 0:
                out[tw, sw] += weights[t, s]
                row[sw] += weights[t, s]
        by_piece = torch.maximum(by_piece, row)
    return out / count.clamp_min(1), empty / count.view(-1).clamp_min(1), by_piece


def readings(m: torch.Tensor, empty: torch.Tensor, by_piece: torch.Tensor
             ) -> dict[str, set[tuple[int, int]]]:
    """Links of one word map, read in each way (``empty``: the target words' weights on the
    source's EOS; ``by_piece``: each source word's largest weight from one target piece)."""
    n_tgt, n_src = m.shape
    if n_src == 0 or n_tgt == 0:
        return {}
    forward = {(int(m[j].argmax()), j) for j in range(n_tgt)}
    backward = {(i, int(m[:, i].argmax())) for i in range(n_src)}
    joined = grow_diag_final_and(forward, backward)
    sure = forward & backward
    have = {i for i, _ in sure}
    first = sure | {(i, j) for i, j in joined if i not in have}
    out = {"target->source argmax": forward, "both directions, intersection": sure,
           "grow-diag-final-and": joined, "grow-diag-final-and, intersection first": first}
    strongest = m.amax(0)  # each source word's largest weight from one target word
    # target words that put more weight on the source's EOS than on any source word
    nothing = {j for j in range(n_tgt) if empty[j] > m[j].max()}
    for least in (0.1, 0.2, 0.3):
        for links, label, use in ((joined, "grow-diag-final-and", "--alignments gives"),
                                  (first, "grow-diag-final-and, intersection first",
                                   "tags use")):
            what = f" (what {use})" if least == HEAD_MIN_WEIGHT else ""
            name = f"{label}, source words under {least} unaligned{what}"
            out[name] = cut = {(i, j) for i, j in links if strongest[i] >= least}
            out[f"{name}, target words on EOS unaligned"] = {(i, j) for i, j in cut
                                                             if j not in nothing}
            out[f"{label}, source words under {least} from every target piece unaligned"] = {
                (i, j) for i, j in links if by_piece[i] >= least}
    for t in (0.2, 0.3, 0.4, 0.5):
        out[f"weight > {t}"] = {(i, j) for j in range(n_tgt) for i in range(n_src)
                                if m[j, i] > t}
    return out


def hull(links: set[tuple[int, int]], words: list[int]) -> list[int]:
    found = sorted({j for i, j in links if i in words})
    return list(range(found[0], found[-1] + 1)) if found else []


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--first", type=int, default=500)
    p.add_argument("--sentences", type=int, default=200)
    p.add_argument("--tokenized", action="store_true",
                   help="eflomal aligns the words' pieces, marks split off (alignment.pieces)")
    args = p.parse_args()
    print(header(), flush=True)
    dev = read(f"{args.corpus}/dev.{args.src}.gz")
    picked = [k for k in range(args.first, len(dev))
              if 3 <= len(dev[k].split()) <= 60][:args.sentences]
    sources = [" ".join(dev[k].split()) for k in picked]
    translator = aiayn.load(args.checkpoint)
    outputs = translator.translate(sources)
    model = getattr(translator.model, "model", translator.model)  # (compiled steps' model)
    layer = translator.cfg.alignment_layer
    maps: dict[str, list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]] = {
        "every layer and head averaged": []}
    # the source aligner's empty words, where the model has one: the empty word weighed at
    # least as much as any target word, or at least a share of the weight
    empty_words: dict[str, list[set[int]]] = {}
    if layer is not None:
        maps[f"alignment head (layer {layer + 1}, head 1)"] = []
    if translator.cfg.aligner:
        maps["aligner"] = []
    for source, output in zip(sources, outputs):
        encoded = translator.codec.encode(source)
        target = translator.codec.encode_target(output, encoded, limit=10**9)
        attention = attention_maps(model, translator.tokenizer, encoded.ids, target)
        src_words = word_starts(attention.src_tokens)
        tgt_words = word_starts(attention.tgt_tokens[1:])
        for name in maps:
            if name.startswith("aligner"):  # row t + 1 aligns target piece t
                weights = attention.aligner[1:]
            else:
                stack = (attention.cross[layer][0:1][None] if name.startswith("alignment")
                         else torch.stack(attention.cross))
                weights = stack.mean((0, 1))
            maps[name].append(word_map(weights, src_words, tgt_words))
        if attention.source_aligner is not None:
            words = source_word_weights(attention)
            for cut in ("argmax", 0.5, 0.7, 0.9):
                empty_words.setdefault(f"{cut}", []).append(set() if words is None else {
                    i for i, row in enumerate(words[0])
                    if words[1][i] >= (row.max() if cut == "argmax" else cut)})
    train_src = [" ".join(s.split()) for s in read(f"{args.corpus}/train.{args.src}.gz")]
    train_tgt = [" ".join(s.split()) for s in read(f"{args.corpus}/train.{args.tgt}.gz")]
    gold = eflomal_links(sources, outputs, train_src, train_tgt, tokenized=args.tokenized)
    rng = random.Random(1)
    spans = []
    for source in sources:
        n = len(source.split())
        spans.append([])
        for _ in range(3):
            length = rng.randint(1, min(3, n))
            start = rng.randrange(0, n - length + 1)
            spans[-1].append(list(range(start, start + length)))
    print(f"{args.checkpoint}: {len(sources)} dev sentences from {args.first}, "
          f"{3 * len(sources)} spans")
    print("| map | reading | spans placed exactly as eflomal's links project them | F1 | "
          "precision | recall |\n|---|---|---:|---:|---:|---:|")
    for name, word_maps in maps.items():
        scores: dict[str, list[int]] = {}
        for k, (m, links_gold, sentence_spans) in enumerate(zip(word_maps, gold, spans)):
            found = readings(*m)
            read_by_the_aligner = [r for r in found if "(what" in r and "EOS" not in r]
            for cut, per_sentence in empty_words.items() if name == "aligner" else ():
                said = ("" if cut == "argmax" else
                        f" (those with at least {cut} of their weight on it)")
                for reading in read_by_the_aligner:
                    found[f"{reading}, and the source aligner's empty words{said}"] = {
                        (i, j) for i, j in found[reading] if i not in per_sentence[k]}
            for reading, links in found.items():
                s = scores.setdefault(reading, [0, 0, 0, 0, 0])
                for words in sentence_spans:
                    s[0] += hull(links, words) == hull(links_gold, words)
                    s[1] += 1
                s[2] += len(links & links_gold)
                s[3] += len(links)
                s[4] += len(links_gold)
        for reading, (exact, total, common, mine, theirs) in scores.items():
            precision, recall = common / max(mine, 1), common / max(theirs, 1)
            f1 = 2 * precision * recall / max(precision + recall, 1e-9)
            print(f"| {name} | {reading} | {100 * exact / total:.1f}% | {f1:.3f} | "
                  f"{precision:.3f} | {recall:.3f} |", flush=True)


if __name__ == "__main__":
    main()
