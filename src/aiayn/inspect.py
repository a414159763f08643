"""What the model attends to: attention maps, word alignments, positional encodings as pictures.

The model returns attention weights only when asked (``return_weights=True``); everything here
consumes them from outside the model.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
from torch import Tensor

from .config import ModelConfig
from .data.tokenizer import word_starts
from .model import sinusoidal_table

KINDS = {"encoder": "encoder self-attention", "decoder": "decoder self-attention (masked)",
         "cross": "cross-attention (decoder -> encoder)"}
ALIGNERS = {"aligner": "aligner (target -> source)",
            "source_aligner": "source aligner (source -> target or (none))"}
MAPS = {**KINDS, **ALIGNERS}
EMPTY_WORD = "(none)"  # the source aligner's column 0 (the row fed the start piece): no counterpart


@dataclass
class AttentionMaps:
    """Tokens and weights of one sentence pair.

    Attributes:
        src_tokens: source subword pieces (with the final </s>).
        tgt_tokens: decoder input pieces (the start piece, <s> or Marian's <pad>, then the target
            pieces); row t of a decoder map is
            the query that predicts target piece t.
        encoder: per layer (H, S, S); decoder: per layer (H, T, T); cross: per layer (H, T, S).
        aligner: (T, S), the aligner's weights where the model has one
            (``ModelConfig.aligner``); its row t + 1 aligns target piece t.
        source_aligner: (S, T), the source aligner's weights where the model has one
            (``ModelConfig.source_aligner``): source piece s's over the decoder's rows, column
            0 the empty word and column t + 1 target piece t.
    """

    src_tokens: list[str]
    tgt_tokens: list[str]
    encoder: list[Tensor]
    decoder: list[Tensor]
    cross: list[Tensor]
    aligner: Tensor | None = None
    source_aligner: Tensor | None = None

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(query labels, key labels) of one kind of map (``KINDS`` or ``ALIGNERS``)."""
        return {"encoder": (self.src_tokens, self.src_tokens),
                "decoder": (self.tgt_tokens, self.tgt_tokens),
                "cross": (self.tgt_tokens, self.src_tokens),
                "aligner": (self.tgt_tokens, self.src_tokens),
                "source_aligner": (self.src_tokens, [EMPTY_WORD] + self.tgt_tokens[1:])}[kind]

    def layers(self, kind: str) -> list[Tensor]:
        """One kind's maps as layers of (heads, queries, keys); an aligner is one layer of one
        head, and a model without it has none."""
        if kind in ALIGNERS:
            weights = getattr(self, kind)
            return [] if weights is None else [weights[None]]
        return getattr(self, kind)


def attention_maps(model, tokenizer, src_ids: list[int], tgt_ids: list[int]) -> AttentionMaps:
    """Teacher-forced forward pass of src (ids + EOS) and target (ids) with the weights kept
    (on the CPU, wherever the model runs)."""
    return batched_attention_maps(model, tokenizer, [(src_ids, tgt_ids)])[0]


def batched_attention_maps(model, tokenizer, pairs: list[tuple[list[int], list[int]]], *,
                           batch_tokens: int = 8192) -> list[AttentionMaps]:
    """``attention_maps`` of many (source ids, target ids) pairs, in padded batches of
    pairs of similar length (at most ``batch_tokens`` padded source and target tokens): a
    teacher-forced pass a batch instead of one a pair. Padding changes nothing a real
    position attends to (padded keys are masked, padded queries come after the real ones),
    so each pair's maps equal its own pass's to float rounding."""
    cfg = model.cfg
    device = next(model.parameters()).device
    out: list[AttentionMaps | None] = [None] * len(pairs)
    order = sorted(range(len(pairs)), key=lambda k: (len(pairs[k][0]), len(pairs[k][1])))
    at = 0
    while at < len(order):
        batch = [order[at]]
        while at + len(batch) < len(order):
            grown = batch + [order[at + len(batch)]]
            longest = max(len(pairs[k][0]) for k in grown) + max(len(pairs[k][1]) for k in grown)
            if len(grown) * (longest + 1) > batch_tokens:
                break
            batch = grown
        at += len(batch)
        srcs = [pairs[k][0] for k in batch]
        tgts = [[cfg.start_id, *pairs[k][1]] for k in batch]
        src = torch.full((len(batch), max(map(len, srcs))), cfg.pad_id, dtype=torch.long)
        tgt_in = torch.full((len(batch), max(map(len, tgts))), cfg.pad_id, dtype=torch.long)
        for row, (a, b) in enumerate(zip(srcs, tgts)):
            src[row, :len(a)] = torch.tensor(a)
            tgt_in[row, :len(b)] = torch.tensor(b)
        src, tgt_in = src.to(device), tgt_in.to(device)
        with torch.inference_mode():  # the model's forward pass without its output layer
            memory, src_mask, encoder = model.encode(src, return_weights=True)
            x, decoder, cross = model.decoder(model.tgt_embed(tgt_in), memory, src_mask,
                                              return_weights=True)
            aligner = None if model.aligner is None else model.aligner(x, memory, src_mask)
            source = model.source_align(memory, x, src_mask, tgt_in)
        # (read on the CPU, where links are made)
        encoder, decoder, cross = ([w.float().cpu() for w in ws] for ws in (encoder, decoder,
                                                                          cross))
        aligner = None if aligner is None else aligner.float().cpu()
        source = None if source is None else source.float().cpu()
        for row, k in enumerate(batch):
            s, t = len(srcs[row]), len(tgts[row])
            out[k] = AttentionMaps(
                src_tokens=tokenizer.pieces(srcs[row], side="source"),
                tgt_tokens=tokenizer.pieces([cfg.start_id]) + tokenizer.pieces(pairs[k][1]),
                encoder=[w[row, :, :s, :s] for w in encoder],  # (H, S, S) per layer
                decoder=[w[row, :, :t, :t] for w in decoder],  # (H, T, T)
                cross=[w[row, :, :t, :s] for w in cross],  # (H, T, S)
                aligner=None if aligner is None else aligner[row, :t, :s],  # (T, S)
                source_aligner=None if source is None else source[row, :s, :t],  # (S, T)
            )
    return cast("list[AttentionMaps]", out)


# ------------------------------------------------------------------------ alignments
def word_alignments(maps: AttentionMaps, layer: int | None = None, *, head: int | None = None,
                    sure_first: bool = False, min_weight: float = 0.0,
                    aligner: bool = False) -> list[tuple[int, int]]:
    """Source-target word alignments from cross-attention, as (source word, target word) pairs.

    The weights of every decoder layer averaged (or of ``layer``), and over heads; the attention
    of the query that *predicts* each target piece is summed over the pieces of each source
    word. Each target word is linked to the source word its pieces together attend to most,
    each source word to the target word one of whose pieces attends to it most (not their sum,
    which would favour a word of many pieces: "werden." over "geöffnet" for "open"), and the
    two are symmetrized with grow-diag-final-and (Koehn et al. 2005), as statistical aligners'
    two directions are.
    Measured against eflomal on Bible dev sentences, this agreed better than one direction or
    the penultimate layer alone (docs/design.md).

    ``head``: that head of ``layer`` alone: a model trained with guided alignment
    (``ModelConfig.alignment_layer``) has learned word alignments in its first head there.

    ``sure_first``: a source word with links found in both directions keeps only those (what
    inline tags are placed by: the hull of a tag's target words is then tighter).

    ``min_weight``: a source word keeps its links only if some target piece puts at least this
    much of its attention on it; the others are left unaligned, as a statistical aligner
    leaves words with no counterpart ("will" of "will go" -> "irá"). A piece, not a word's
    average: in a German compound ("Profiler-Unterstützung" for "profiler support") each
    source word has only the pieces that translate it.

    ``aligner``: the weights of the model's aligner instead (``maps.aligner``), a target
    piece's row being the one it is fed to.
    """
    found = _word_weights(maps, layer, head, aligner)
    if found is None:
        return []
    merged, strongest = found
    forward = {(i, j) for j, i in enumerate(merged.argmax(1).tolist())}
    backward = set(enumerate(strongest.argmax(0).tolist()))
    links = grow_diag_final_and(forward, backward)
    if sure_first:
        sure = forward & backward
        have = {i for i, _ in sure}
        links = sure | {(i, j) for i, j in links if i not in have}
    if min_weight > 0:
        by_piece = strongest.amax(0)
        links = {(i, j) for i, j in links if by_piece[i] >= min_weight}
    return sorted(links)


def _word_weights(maps: AttentionMaps, layer: int | None, head: int | None, aligner: bool
                  ) -> tuple[Tensor, Tensor] | None:
    """The attention of ``word_alignments`` (its ``layer``, ``head`` and ``aligner``) between
    words, summed over each source word's pieces: (n_tgt, n_src) weights summed over each
    target word's pieces too, and the same with a target word's strongest piece in place of
    the sum; None where a side has no word."""
    if aligner:
        assert maps.aligner is not None
        weights = maps.aligner[1:]  # (T, S): row t + 1 aligns target piece t
    else:
        stack = (torch.stack(maps.cross) if layer is None
                 else maps.cross[layer][None])  # (L, H, T, S)
        if head is not None:
            stack = stack[:, head:head + 1]
        weights = stack.mean((0, 1))  # (T, S)
    words = _pieces_of_words(maps)
    if words is None:
        return None
    n_src, n_tgt, cols, sw_of, rows, tw_of = words
    # the weights summed over each source word's pieces (each target piece's weight on each
    # source word), then over each target word's pieces
    by_word = torch.zeros(len(rows), n_src).index_add_(
        1, sw_of, weights[rows][:, cols].float())  # (target pieces, n_src)
    merged = torch.zeros(n_tgt, n_src).index_add_(0, tw_of, by_word)  # (n_tgt, n_src)
    strongest = torch.zeros(n_tgt, n_src).scatter_reduce_(
        0, tw_of[:, None].expand_as(by_word), by_word, "amax")
    return merged, strongest


def _pieces_of_words(maps: AttentionMaps
                     ) -> tuple[int, int, Tensor, Tensor, Tensor, Tensor] | None:
    """The words of a pair's two sides: their counts, and the source pieces that belong to a
    word with each one's word, then the target pieces (piece t is decoder row t + 1's input
    and row t's prediction) with theirs; pieces of no word (-1) are left out. None where a
    side has no word."""
    src_words = word_starts(maps.src_tokens)
    tgt_words = word_starts(maps.tgt_tokens[1:])
    n_src, n_tgt = max(src_words) + 1, max(tgt_words, default=-1) + 1
    if n_src == 0 or n_tgt == 0:
        return None
    src = torch.tensor([s for s, w in enumerate(src_words) if w >= 0], dtype=torch.long)
    tgt = torch.tensor([t for t, w in enumerate(tgt_words) if w >= 0], dtype=torch.long)
    return (n_src, n_tgt, src, torch.tensor(src_words, dtype=torch.long)[src],
            tgt, torch.tensor(tgt_words, dtype=torch.long)[tgt])


def source_word_weights(maps: AttentionMaps) -> tuple[Tensor, Tensor] | None:
    """The source aligner's weights between words (``maps.source_aligner``): (n_src, n_tgt),
    a source word's pieces averaged (each piece's row sums to one) and a target word's
    summed, and each source word's weight on the empty word (n_src,); None where a side has
    no word."""
    assert maps.source_aligner is not None
    words = _pieces_of_words(maps)
    if words is None:
        return None
    n_src, n_tgt, rows, sw_of, cols, tw_of = words
    weights = maps.source_aligner[rows].float()  # (source pieces, 1 + target pieces)
    by_word = torch.zeros(len(rows), n_tgt).index_add_(1, tw_of, weights[:, cols + 1])
    pieces = torch.zeros(n_src).index_add_(0, sw_of, torch.ones(len(rows)))[:, None]
    merged = torch.zeros(n_src, n_tgt).index_add_(0, sw_of, by_word) / pieces
    empty = torch.zeros(n_src).index_add_(0, sw_of, weights[:, 0]) / pieces[:, 0]
    return merged, empty


def strongest_targets(maps: AttentionMaps, cfg: ModelConfig) -> list[tuple[int, int]]:
    """Each source word with the target word one of whose pieces attends to it most (the
    backward direction of ``word_alignments``), by the weights ``model_alignments`` reads:
    where an inline tag's words have no link, the tag goes around these rather than around no
    word (``aiayn.markup.place``). With an aligner, its own weights even where a source
    aligner has left the word unaligned: what the source aligner gives such a word's targets
    is the little it left off the empty word. Where those weights are guided (an aligner, an
    alignment head), a word that no target piece gives ``HEAD_MIN_WEIGHT`` of its attention
    has none: the translation left it out, and a tag over such words alone goes around no
    word, as Bergamot leaves it."""
    if maps.aligner is not None:
        found = _word_weights(maps, None, None, True)
    elif cfg.alignment_layer is not None:
        found = _word_weights(maps, cfg.alignment_layer, 0, False)
    else:
        found = _word_weights(maps, None, None, False)
    if found is None:
        return []
    strongest = found[1]
    weight, target = strongest.amax(0), strongest.argmax(0)
    guided = maps.aligner is not None or cfg.alignment_layer is not None
    return [(i, j) for i, (w, j) in enumerate(zip(weight.tolist(), target.tolist()))
            if not guided or w >= HEAD_MIN_WEIGHT]


HEAD_MIN_WEIGHT = 0.2  # an alignment head's least weight on a source word that keeps links
EMPTY_MIN_WEIGHT = 0.7  # a source aligner's least weight on the empty word that drops them


def model_alignments(maps: AttentionMaps, cfg: ModelConfig, *, sure_first: bool = False
                     ) -> list[tuple[int, int]]:
    """``word_alignments`` as the model gives them best: from its aligner or its alignment head
    where it was trained with guided alignment (``cfg.aligner``, ``cfg.alignment_layer``),
    source words that no target piece gives ``HEAD_MIN_WEIGHT`` of its attention left
    unaligned, and those whose pieces the source aligner (``cfg.source_aligner``) puts on its
    empty word with ``EMPTY_MIN_WEIGHT`` of their weight; else every layer and head."""
    if maps.aligner is not None:
        links = word_alignments(maps, sure_first=sure_first, min_weight=HEAD_MIN_WEIGHT,
                                aligner=True)
        read = None if maps.source_aligner is None else source_word_weights(maps)
        if read is None:
            return links
        empty = read[1]
        return [(i, j) for i, j in links if empty[i] < EMPTY_MIN_WEIGHT]
    layer = cfg.alignment_layer
    if layer is None:
        return word_alignments(maps, sure_first=sure_first)
    return word_alignments(maps, layer, head=0, sure_first=sure_first,
                           min_weight=HEAD_MIN_WEIGHT)


def grow_diag_final_and(forward: set[tuple[int, int]], backward: set[tuple[int, int]]
                        ) -> set[tuple[int, int]]:
    """Two directions' (source, target) links as one alignment: their intersection, grown by
    neighbouring links of the union that align a word not yet aligned, then union links
    between two words both unaligned (Koehn et al. 2005)."""
    union, links = forward | backward, forward & backward
    neighbours = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]

    def free(i: int, j: int) -> tuple[bool, bool]:
        return all(a != i for a, _ in links), all(b != j for _, b in links)

    grown = True
    while grown:
        grown = False
        for i, j in sorted(links):
            for di, dj in neighbours:
                k = (i + di, j + dj)
                if k in union and k not in links and any(free(*k)):
                    links.add(k)
                    grown = True
    for k in sorted(union):
        if all(free(*k)):
            links.add(k)
    return links


def pharaoh(links: list[tuple[int, int]]) -> str:
    """'i-j' pairs, source index first, as alignment tools read them."""
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


# ------------------------------------------------------------------------ pictures
def _heatmap(ax, weights: Tensor, rows: list[str], cols: list[str], title: str,
             fontsize: float, title_size: float):
    image = ax.imshow(weights.numpy(), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto",
                      interpolation="nearest")
    ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=fontsize)
    ax.set_yticks(range(len(rows)), rows, fontsize=fontsize)
    ax.set_xlabel("key", fontsize=fontsize + 1)
    ax.set_ylabel("query", fontsize=fontsize + 1)
    ax.set_title(title, fontsize=title_size)
    return image


def _label_font(n_tokens: int, inches_per_token: float) -> float:
    """A tick-label size that fits one label per row: about 70% of the row height in points."""
    return max(4.0, min(9.0, 0.7 * 72 * inches_per_token))


def plot_attention(maps: AttentionMaps, out_dir: str | Path) -> list[Path]:
    """Write, per kind, a layers x heads grid and one head-averaged map per layer (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, label in KINDS.items():
        layers = maps.layers(kind)
        if not layers:
            continue
        rows, cols = maps.axes(kind)
        n_layers, n_heads = len(layers), layers[0].size(0)
        longest = max(len(rows), len(cols))
        cell = max(3.0, 0.12 * longest + 1.3)  # inches per map, labels included
        font = _label_font(longest, 0.12)
        fig, axes = plt.subplots(n_layers, n_heads, figsize=(cell * n_heads + 1.2, cell * n_layers),
                                 squeeze=False, constrained_layout=True)
        for li, layer in enumerate(layers):
            for hi in range(n_heads):
                image = _heatmap(axes[li][hi], layer[hi], rows, cols,
                                 f"layer {li + 1}, head {hi + 1}", font, 10)
        fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
        fig.suptitle(f"{label}: every layer and head", fontsize=14)
        path = out_dir / f"{kind}_heads.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
        written += [_one_map(plt, layer.mean(0), rows, cols,
                             f"{label}\nlayer {li + 1}, mean of {n_heads} heads",
                             out_dir / f"{kind}_layer{li + 1}_mean.png")
                    for li, layer in enumerate(layers)]
    for kind, label in ALIGNERS.items():  # one map each: nothing to average
        layers = maps.layers(kind)
        if layers:
            written.append(_one_map(plt, layers[0][0], *maps.axes(kind), label,
                                    out_dir / f"{kind}.png"))
    return written


def _one_map(plt, weights: Tensor, rows: list[str], cols: list[str], title: str,
             path: Path) -> Path:
    """One map, large, in a picture of its own."""
    longest = max(len(rows), len(cols))
    size = max(5.0, 0.2 * longest + 2.0)
    fig, ax = plt.subplots(figsize=(size + 1.2, size), constrained_layout=True)
    image = _heatmap(ax, weights, rows, cols, title, _label_font(longest, 0.2), 13)
    fig.colorbar(image, ax=ax, label="attention weight")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_positions(d_model: int, max_len: int, out: str | Path, base: float = 10000.0) -> Path:
    """The sinusoidal table (§3.5) as a heat map, and a few of its dimensions as curves."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = sinusoidal_table(max_len, d_model, base)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 8.5), constrained_layout=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    image = top.imshow(table.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto",
                       interpolation="nearest")
    top.set(title=f"sinusoidal positional encoding (d_model {d_model}, base {base:g})",
            xlabel="dimension i (even: sin, odd: cos)", ylabel="position")
    fig.colorbar(image, ax=top, label="PE(pos, i)")
    # sin dimensions a quarter of the spectrum apart, so the wavelengths visibly differ
    dims = sorted({(d_model * k // 8) & ~1 for k in range(4)} | {1})
    for dim in dims:
        fn = "sin" if dim % 2 == 0 else "cos"
        wavelength = 2 * math.pi * base ** ((dim - dim % 2) / d_model)
        bottom.plot(table[:, dim].numpy(), label=f"i = {dim} ({fn}), wavelength {wavelength:.0f}")
    bottom.set(title="a few dimensions: each is a sinusoid, wavelength growing with i",
               xlabel="position", ylabel="PE(pos, i)")
    bottom.legend(loc="lower left", fontsize=8, ncols=2, framealpha=0.9)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return Path(out)


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>aiayn attention: %(title)s</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
select,button{font-size:1em;margin-right:.6em}
table{border-collapse:collapse;margin-top:1em}
td{width:1.6em;height:1.6em;padding:0;border:1px solid #fff}
th{font-weight:normal;font-size:.8em;padding:2px 4px;white-space:nowrap}
th.col{writing-mode:vertical-rl;transform:rotate(180deg);vertical-align:bottom}
#info{margin-top:.6em;min-height:1.2em;color:#555}
</style></head><body>
<h1>Attention: %(title)s</h1>
<p>Source: %(source)s<br>Target: %(target)s</p>
<label>map <select id="kind"></select></label>
<label>layer <select id="layer"></select></label>
<label>head <select id="head"></select></label>
<div id="info">hover over a cell</div>
<table id="grid"></table>
<script id="data" type="application/json">%(data)s</script>
<script>
const D = JSON.parse(document.getElementById("data").textContent);
const kind = document.getElementById("kind"), layer = document.getElementById("layer"),
      head = document.getElementById("head"), grid = document.getElementById("grid"),
      info = document.getElementById("info");
function opt(sel, values, labels) {
  sel.innerHTML = "";
  values.forEach((v, i) => { const o = document.createElement("option");
    o.value = v; o.textContent = labels[i]; sel.appendChild(o); });
}
function colour(w) {  // white -> dark blue
  const c = Math.round(255 * (1 - w)); return `rgb(${c},${Math.round(c * 0.9 + 20)},255)`;
}
function draw() {
  const k = D.kinds[kind.value], L = k.layers[layer.value];
  const H = L.length, h = head.value;
  const W = h === "mean" ? L[0].map((row, i) => row.map((_, j) =>
      L.reduce((s, m) => s + m[i][j], 0) / H)) : L[h];
  grid.innerHTML = "";
  const hdr = grid.insertRow(); hdr.appendChild(document.createElement("th"));
  k.cols.forEach(t => { const th = document.createElement("th"); th.className = "col";
    th.textContent = t; hdr.appendChild(th); });
  W.forEach((row, i) => { const tr = grid.insertRow();
    const th = document.createElement("th"); th.textContent = k.rows[i]; tr.appendChild(th);
    row.forEach((w, j) => { const td = tr.insertCell(); td.style.background = colour(w);
      td.title = `${k.rows[i]} -> ${k.cols[j]}: ${w.toFixed(3)}`;
      td.onmouseover = () => info.textContent = td.title; }); });
}
function layers() {
  const k = D.kinds[kind.value];
  opt(layer, k.layers.map((_, i) => i), k.layers.map((_, i) => `${i + 1}`));
  const H = k.layers[0].length;
  opt(head, ["mean", ...Array.from({length: H}, (_, i) => i)],
      ["mean of heads", ...Array.from({length: H}, (_, i) => `${i + 1}`)]);
  draw();
}
opt(kind, Object.keys(D.kinds), Object.keys(D.kinds).map(k => D.labels[k]));
kind.onchange = layers; layer.onchange = draw; head.onchange = draw;
layers();
</script></body></html>
"""


def write_html(maps: AttentionMaps, path: str | Path, *, source: str, target: str) -> Path:
    """One self-contained page (inline data and script, nothing fetched) to browse every map."""
    kinds = {}
    for kind in MAPS:
        layers = maps.layers(kind)
        if layers:
            rows, cols = maps.axes(kind)
            kinds[kind] = {"rows": rows, "cols": cols,
                           "layers": [[[[round(float(x), 4) for x in row] for row in h]
                                       for h in layer] for layer in layers]}
    data = json.dumps({"kinds": kinds, "labels": MAPS}).replace("</", "<\\/")
    page = _PAGE % {"title": html.escape(source[:60]), "source": html.escape(source),
                    "target": html.escape(target), "data": data}
    Path(path).write_text(page, encoding="utf-8")
    return Path(path)
