"""Inline markup, measured: tags placed by the model's alignments against a projection through
eflomal's, the output's well-formedness, and BLEU with the tags stripped; side by side with
translating each text node apart (LibreTranslate's HTML mode, and aiayn's before).

    python benchmarks/markup.py --checkpoint RUN --corpus DIR --src en --tgt es \
        [--sentences 300] [--page FILE ...]

Dev sentences get one or two spans of one to three whole words wrapped, at random, in <b>,
<a href> or <code> (seed 0; a span may nest inside another). A <code> span wraps words that
the reference keeps as they are (names, numbers, identifiers: what code holds in documents,
and what a translation keeps too); ``--code-anywhere`` wraps any words in it, prose included,
which <code> then keeps untranslated. Each tag carries a data-t number
so that it can be found in any output. A tag "agrees" when the target words it wraps are the
hull of the words eflomal links to the source words it wrapped (both empty counts as agreeing;
a column gives the share over the tags eflomal projects onto some word, leaving out those it
gives no place);
``--tokenized`` runs eflomal on the words' pieces, marks split off (``alignment.pieces``);
``--eflomal-runs N`` trains it N times and gives each agreement's mean and range. Every row's
outputs are aligned in the same eflomal runs, each distinct (source, output) pair once: rows
with the same translation meet the same links, and no pair weighs more for being in several;
``--samplers N`` gives eflomal N samplers instead of its default 3 (eflomal combines its
samplers' counts: more samplers, steadier links, slower).
``--also CKPT`` adds another model's row (its tags placed by its own translations and links)
in the same eflomal runs, for two models' agreement without the runs' spread between them.
``--page`` adds real HTML pages: well-formedness and tags kept, and the same agreement on their
sentences.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import html
import random
import sys
import time
from pathlib import Path
from unittest import mock

import sacrebleu
from alignment import eflomal_links
from machine import header

from aiayn.markup import Document
from aiayn.markup.parse import Element, Text, parse_html
from aiayn.markup.place import words


def corpus_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of a benchmark on a shared corpus's dev sentences: the model, the corpus
    directory and its pair, how many sentences."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--corpus", required=True, type=Path)
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--sentences", type=int, default=300)
    return p


def read(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def tag(sentence: str, rng: random.Random, first: int, verbatim: set[int] | None = None
        ) -> tuple[str, dict[int, list[int]], set[int]]:
    """The sentence with spans wrapped; each tag's number -> the source words it wraps; the
    numbers of the <code> tags. ``verbatim``: the words a <code> span may wrap (None: any)."""
    ws = sentence.split()
    spans: list[tuple[int, int, str]] = []
    for _ in range(rng.choice([1, 1, 2])):
        name = rng.choice(["b", "a", "code"])
        n = rng.randint(1, min(3, len(ws)))
        a = rng.randrange(0, len(ws) - n + 1)
        if name == "code" and verbatim is not None:
            runs = [(i, j) for i in range(len(ws)) for j in range(i + 1, min(i + 4, len(ws) + 1))
                    if all(k in verbatim for k in range(i, j))]
            if not runs:
                continue
            a, end = rng.choice(runs)
            n = end - a
        if all(b <= a or a + n <= c or (c <= a and a + n <= b) for c, b, _ in spans):
            spans.append((a, a + n, name))
    spans.sort(key=lambda s: (s[0], -s[1]))
    opens: dict[int, list[str]] = {}
    closes: dict[int, list[str]] = {}
    covered, code = {}, set()
    for k, (a, b, name) in enumerate(spans):
        number = first + k
        if name == "code":
            code.add(number)
        attrs = f' href="#{number}"' if name == "a" else ""
        opens.setdefault(a, []).append(f'<{name} data-t="{number}"{attrs}>')
        closes.setdefault(b - 1, []).insert(0, f"</{name}>")
        covered[number] = list(range(a, b))
    out = []
    for i, w in enumerate(ws):
        out.append("".join(opens.get(i, [])) + html.escape(w, quote=False)
                   + "".join(closes.get(i, [])))
    return " ".join(out), covered, code


def tagged_sample(src: list[str], ref: list[str], sentences: int, first: int = 0,
                  code_anywhere: bool = False
                  ) -> tuple[list[int], list[str], list[dict[int, list[int]]], set[int]]:
    """The benchmark's sample (seed 0): the dev sentences picked, each with spans wrapped,
    each tag's number -> its source words, and the numbers of the <code> tags."""
    rng = random.Random(0)
    picked = [k for k in range(first, len(src)) if 3 <= len(src[k].split()) <= 60][:sentences]
    tagged, covered, code, number = [], [], set(), 0
    for k in picked:
        ref_words = set(ref[k].split())
        verbatim = (None if code_anywhere else
                    {i for i, w in enumerate(src[k].split()) if w in ref_words})
        text, tags, kept = tag(src[k], rng, number, verbatim)
        number += len(tags)
        tagged.append(text)
        covered.append(tags)
        code |= kept
    return picked, tagged, covered, code


def placed(output: str) -> tuple[str, dict[int, list[int]], bool]:
    """An output's text with the tags stripped, each numbered tag's word indices in it, and
    whether its tags are well-formed."""
    root, problems = parse_html(output)
    text: list[str] = []
    ranges: dict[int, tuple[int, int]] = {}

    def walk(node):
        for child in node.children:
            if isinstance(child, Text):
                text.append(child.text)
            elif isinstance(child, Element):
                start = len("".join(text))
                walk(child)
                number = child.attr("data-t")
                if number is not None:
                    ranges[int(number)] = (start, len("".join(text)))
    walk(root)
    plain = "".join(text)
    spans = words(plain)
    inside = {n: [k for k, (s, e) in enumerate(spans) if s < b and e > a]
              for n, (a, b) in ranges.items()}
    return " ".join(plain.split()), inside, not problems


def text_nodes(translator, document: str) -> str:
    """Every text node translated apart (sentence by sentence), the markup around kept."""
    root, _ = parse_html(document)
    nodes: list[Text] = []

    def walk(node):
        for child in node.children:
            if isinstance(child, Text) and child.text.strip():
                nodes.append(child)
            elif isinstance(child, Element) and child.tag not in ("script", "style", "code"):
                walk(child)
    walk(root)
    out = translator.translate([n.text.strip() for n in nodes], split_sentences=True)
    for node, translation in zip(nodes, out):
        lead = node.text[:len(node.text) - len(node.text.lstrip())]
        trail = node.text[len(node.text.rstrip()):]
        node.raw = lead + html.escape(translation, quote=False) + trail
    from aiayn.markup.parse import raw
    return raw(root)


def projected_hull(pairs, src_words) -> list[int]:
    """The target words from the first to the last that ``pairs`` link to ``src_words``."""
    projected = sorted({j for i, j in pairs if i in src_words})
    return list(range(projected[0], projected[-1] + 1)) if projected else []


def agreement(outputs, covered, links, only=None) -> tuple[int, int, int, int, int]:
    """(tags wrapping exactly the projected words, tags sharing a word with them or both
    empty, tags, and the first and third counted only over the tags eflomal projects onto
    some word) over sentences; ``only``: the tag numbers to count."""
    exact = overlap = total = exact_placed = placed = 0
    for placed_words, tags, pairs in zip(outputs, covered, links):
        for number, src_words in tags.items():
            if only is not None and number not in only:
                continue
            total += 1
            hull = projected_hull(pairs, src_words)
            mine = placed_words.get(number, [])
            exact += mine == hull
            overlap += bool(set(mine) & set(hull)) or mine == hull
            if hull:
                placed += 1
                exact_placed += mine == hull
    return exact, overlap, total, exact_placed, placed


def main() -> None:
    p = corpus_parser(__doc__)
    p.add_argument("--first", type=int, default=0,
                   help="start at this dev sentence (another sample than the default's)")
    p.add_argument("--page", action="append", default=[], type=Path)
    p.add_argument("--also", action="append", default=[], metavar="CKPT",
                   help="another model's tags by alignment, a row in the same eflomal runs")
    p.add_argument("--code-anywhere", action="store_true",
                   help="<code> spans on any words, not only on words the reference keeps")
    p.add_argument("--misses", action="store_true",
                   help="print each b/a tag the first mode placed otherwise than eflomal's "
                        "projection: the sentence, the words each put it around, the links")
    p.add_argument("--tokenized", action="store_true",
                   help="eflomal aligns the words' pieces, marks split off, as aligners are "
                        "usually run; their links are mapped back onto the words")
    p.add_argument("--eflomal-runs", type=int, default=1,
                   help="train eflomal this many times (its sampler starts anew each run) and "
                        "give each agreement as the mean over the runs and their range")
    p.add_argument("--samplers", type=int, default=3,
                   help="eflomal's independent samplers, their counts combined (default 3, "
                        "eflomal's own)")
    args = p.parse_args()
    if args.samplers < 1:
        p.error(f"--samplers {args.samplers}: give 1 or more")

    import aiayn
    print(header(), flush=True)
    translator = aiayn.load(args.checkpoint)
    src = read(args.corpus / f"dev.{args.src}.gz")
    ref = read(args.corpus / f"dev.{args.tgt}.gz")
    picked, tagged, covered, code = tagged_sample(src, ref, args.sentences, args.first,
                                                  args.code_anywhere)
    number = sum(len(tags) for tags in covered)
    stripped = [" ".join(src[k].split()) for k in picked]
    refs = [ref[k] for k in picked]
    where = "on any words" if args.code_anywhere else "on words the reference keeps as they are"
    print(f"{args.checkpoint}: {len(picked)} dev sentences, {number} tags ({len(code)} <code> "
          f"{where}, kept as written in place of the words aligned to them)", flush=True)
    layer, guided = translator.cfg.alignment_layer, translator.cfg.aligner
    print("alignments: " + ("the aligner (guided alignment)" if guided else
                            f"the alignment head (guided alignment, decoder layer {layer + 1}, "
                            "head 1)" if layer is not None else
                            "every layer and head averaged (no alignment head)"), flush=True)
    guided = guided or layer is not None

    results, seconds = {}, {}

    def row(name: str, model=translator) -> None:
        """The sample's outputs with tags by alignment, as ``model`` places them, timed."""
        t0 = time.perf_counter()
        results[name] = model.translate_markup(tagged)
        seconds[name] = time.perf_counter() - t0

    import aiayn.inspect as inspect
    strongest = inspect.strongest_targets
    row("whole sentences, tags by alignment")
    with mock.patch.object(inspect, "strongest_targets", lambda maps, cfg: []):
        row("whole sentences, no fallback: a tag whose words have no link goes around no word")
    if guided:
        def every_word(maps, cfg):  # every word its strongest target, however little attends
            with mock.patch.object(inspect, "HEAD_MIN_WEIGHT", 0.0):
                return strongest(maps, cfg)
        with mock.patch.object(inspect, "strongest_targets", every_word):
            row("whole sentences, every word's strongest target as the fallback, however "
                "little attends to it (before)")
        own_weights = inspect._word_weights

        def summed(maps, layer, head, aligner):  # a source word's target as it was read before
            found = own_weights(maps, layer, head, aligner)
            if found is None:
                return None
            # the target word whose pieces together attend to the source word most, each
            # column scaled so that its largest value is still its strongest piece's weight
            # (what the least-weight cut reads)
            merged, strongest = found
            return merged, merged * (strongest.amax(0) / merged.amax(0).clamp_min(1e-9))
        with mock.patch.object(inspect, "_word_weights", summed):
            row("whole sentences, a source word's target by the target word's pieces summed "
                "(before)")
        with mock.patch.object(inspect, "HEAD_MIN_WEIGHT", 0.0):
            row("whole sentences, guided alignment, every source word's links kept")
        with mock.patch.object(inspect, "model_alignments",
                               lambda maps, cfg, sure_first=False:
                               inspect.word_alignments(maps, sure_first=sure_first)), \
                mock.patch.object(inspect, "strongest_targets", lambda maps, cfg: strongest(
                    dataclasses.replace(maps, aligner=None), cfg.replace(alignment_layer=None))):
            row("whole sentences, tags by every head averaged")
    if translator.cfg.source_aligner:  # the same model's links without its source aligner
        batched = inspect.batched_attention_maps
        with mock.patch.object(inspect, "batched_attention_maps", lambda *a, **k: [
                dataclasses.replace(m, source_aligner=None) for m in batched(*a, **k)]):
            row("whole sentences, the aligner alone (its source aligner unread)")
    for other in args.also:
        row(f"whole sentences, tags by alignment, {other}", aiayn.load(other))
    t1 = time.perf_counter()
    results["each text node apart"] = [text_nodes(translator, t) for t in tagged]
    t2 = time.perf_counter()
    plain = translator.translate(stripped, split_sentences=True)
    t3 = time.perf_counter()
    seconds["each text node apart"] = t2 - t1

    train_src = [" ".join(s.split()) for s in read(args.corpus / f"train.{args.src}.gz")]
    train_tgt = [" ".join(s.split()) for s in read(args.corpus / f"train.{args.tgt}.gz")]
    parsed = {name: [placed(o) for o in outs] for name, outs in results.items()}
    names = list(parsed)
    runs = [eflomal_links(stripped * len(names), [t for n in names for t, _, _ in parsed[n]],
                          train_src, train_tgt, tokenized=args.tokenized,
                          n_samplers=args.samplers)
            for _ in range(args.eflomal_runs)]
    links = runs[0]
    print(f"\nplain translation of the stripped text: BLEU "
          f"{sacrebleu.corpus_bleu(plain, [refs]).score:.2f}, {t3 - t2:.1f} s")
    no_code = [k for k, tags in enumerate(covered) if not set(tags) & code]
    how = "on the words' pieces, marks split off" if args.tokenized else "on whole words"
    runs_said = f", {args.eflomal_runs} runs" if args.eflomal_runs > 1 else ""
    runs_said += f", {args.samplers} samplers" if args.samplers != 3 else ""
    print(f"tags agree: exactly = they wrap the hull of the words eflomal ({how}{runs_said}) "
          "links to theirs; overlapping = they share a word with it (both empty counts for both)")
    print("| mode | well-formed, tags kept | b and a: exactly | overlapping | b and a around no "
          "word | b and a: exactly, of those eflomal places | code: exactly | overlapping | "
          f"BLEU, tags stripped | BLEU, {len(no_code)} sentences without code | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, name in enumerate(names):
        rows = parsed[name]
        ok = sum(wf and sorted(tags) == sorted(c) for (_, tags, wf), c in zip(rows, covered))
        other = set(range(number)) - code
        cells = []
        for only in (other, code):
            shares, where_placed = [], []
            for run in runs:
                mine = run[k * len(picked):(k + 1) * len(picked)]
                exact, overlap, total, exact_placed, placed_by = agreement(
                    [t for _, t, _ in rows], covered, mine, only)
                shares.append((100 * exact / max(1, total), 100 * overlap / max(1, total)))
                where_placed.append((100 * exact_placed / max(1, placed_by), placed_by))
            cells += [f"{_spread([e for e, _ in shares])} of {total}",
                      _spread([o for _, o in shares])]
            if only is other:
                empty = sum(not tags.get(n) for (_, tags, _), c in zip(rows, covered)
                            for n in c if n in other)
                low, high = min(n for _, n in where_placed), max(n for _, n in where_placed)
                of = f"{low}" if low == high else f"{low}-{high}"
                cells += [f"{empty}", f"{_spread([e for e, _ in where_placed])} of {of}"]
        bleu = sacrebleu.corpus_bleu([t for t, _, _ in rows], [refs]).score
        bleu_plain = sacrebleu.corpus_bleu([rows[i][0] for i in no_code],
                                           [[refs[i] for i in no_code]]).score
        print(f"| {name} | {ok}/{len(rows)} | {' | '.join(cells)} | {bleu:.2f} | "
              f"{bleu_plain:.2f} | {seconds[name]:.1f} |", flush=True)
    bleu_plain = sacrebleu.corpus_bleu([plain[i] for i in no_code],
                                       [[refs[i] for i in no_code]]).score
    print(f"plain translation of the stripped text, the {len(no_code)} sentences without code: "
          f"BLEU {bleu_plain:.2f}")
    if args.misses:
        print(f"\nb/a tags placed otherwise than eflomal projects them ({names[0]}):")
        for (text, tags, _), wrapped, pairs, source in zip(parsed[names[0]], covered,
                                                           links[:len(picked)], stripped):
            for number, src_words in wrapped.items():
                hull = projected_hull(pairs, src_words)
                if number in code or tags.get(number, []) == hull:
                    continue
                out = text.split()
                print(f"- {source}\n  -> {text}\n  span {[source.split()[i] for i in src_words]}"
                      f": aiayn {[out[j] for j in tags.get(number, [])]}, eflomal "
                      f"{[out[j] for j in hull]}; eflomal's links "
                      f"{sorted((i, j) for i, j in pairs if i in src_words)}")

    for page in args.page:
        document = page.read_text(encoding="utf-8")
        t0 = time.perf_counter()
        out = translator.translate_markup([document])[0]
        seconds_page = time.perf_counter() - t0
        before, after = parse_html(document)[1], parse_html(out)[1]
        kept = sorted(_tags(document)) == sorted(_tags(out))
        print(f"\npage {page}: {len(document):,} characters, {len(_tags(document))} tags, "
              f"{len(Document(document, 'html').sources)} sentences and attributes; "
              f"malformed spots in the source {len(before)}, in the output {len(after)}; "
              f"the same tags: {kept}; {seconds_page:.1f} s")
    sys.stdout.flush()


def _spread(shares: list[float]) -> str:
    """A share over eflomal's runs: the one, or the mean and the range."""
    if len(shares) == 1:
        return f"{shares[0]:.1f}%"
    return f"{sum(shares) / len(shares):.1f}% ({min(shares):.1f}-{max(shares):.1f})"


def _tags(text: str) -> list[str]:
    from html.parser import HTMLParser

    class Starts(HTMLParser):
        def __init__(self):
            super().__init__()
            self.found: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.found.append(tag)

        def handle_startendtag(self, tag, attrs):
            self.found.append(tag)

    parser = Starts()
    parser.feed(text)
    return parser.found


if __name__ == "__main__":
    main()
