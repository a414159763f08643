import dataclasses
import json
from html.parser import HTMLParser

import matplotlib.image
import pytest
import torch

from aiayn.cli import main
from aiayn.config import ModelConfig
from aiayn.inspect import (
    AttentionMaps,
    attention_maps,
    batched_attention_maps,
    grow_diag_final_and,
    model_alignments,
    strongest_targets,
    word_alignments,
    word_starts,
    write_html,
)
from aiayn.translate import load


@pytest.fixture(scope="module")
def maps(tiny_checkpoint):
    return load(tiny_checkpoint).attention("alpha beta gamma", target="GAMMA BETA ALPHA")


def test_maps_have_layers_heads_queries_keys(maps):
    s, t = len(maps.src_tokens), len(maps.tgt_tokens)
    assert [tuple(w.shape) for w in maps.encoder] == [(4, s, s)] * 2
    assert [tuple(w.shape) for w in maps.decoder] == [(4, t, t)] * 2
    assert [tuple(w.shape) for w in maps.cross] == [(4, t, s)] * 2
    assert maps.src_tokens[-1] == "</s>" and maps.tgt_tokens[0] == "<s>"
    for w in maps.encoder + maps.decoder + maps.cross:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    for w in maps.decoder:
        assert torch.all(w.triu(1) == 0)  # lower-triangular: no looking ahead


def test_masked_keys_get_zero_weight(tiny_checkpoint):
    translator = load(tiny_checkpoint)
    src = torch.tensor([[10, 11, 3, 0, 0]])  # two pads
    _, weights = translator.model(src, torch.tensor([[2, 12]]), return_weights=True)
    assert torch.all(weights.encoder[0][..., 3:] == 0) and torch.all(weights.cross[1][..., 3:] == 0)


def test_attend_writes_readable_pngs_and_a_self_contained_page(tiny_checkpoint, tmp_path, capsys):
    assert main(["attend", "--checkpoint", str(tiny_checkpoint), "alpha beta gamma delta",
                 "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    for kind in ("encoder", "decoder", "cross"):
        assert f"{kind}_heads.png" in names
        assert f"{kind}_layer1_mean.png" in names and f"{kind}_layer2_mean.png" in names
    grid = matplotlib.image.imread(tmp_path / "encoder_heads.png")
    assert grid.shape[1] > grid.shape[0] > 300  # 4 heads wide, 2 layers high
    single = matplotlib.image.imread(tmp_path / "cross_layer1_mean.png")
    assert single.shape[0] >= 450 and single.shape[1] >= 550

    page = (tmp_path / "index.html").read_text()
    assert "<script src" not in page and "http" not in page.split("<body>")[1]

    class Collect(HTMLParser):
        data = ""
        inside = False

        def handle_starttag(self, tag, attrs):
            self.inside = ("id", "data") in attrs

        def handle_data(self, data):
            if self.inside:
                self.data += data

    parser = Collect()
    parser.feed(page)
    data = json.loads(parser.data)
    maps = load(tiny_checkpoint).attention("alpha beta gamma delta")
    assert data["kinds"]["encoder"]["rows"] == maps.src_tokens
    assert len(data["kinds"]["cross"]["layers"]) == 2


def test_html_escapes_tokens(maps, tmp_path):
    maps = dataclasses.replace(maps, src_tokens=["</script><b>"] + maps.src_tokens[1:])
    page = write_html(maps, tmp_path / "x.html", source="<i>", target="t").read_text()
    assert "</script><b>" not in page and "&lt;i&gt;" in page


def test_batched_maps_equal_each_pairs_own(tiny_checkpoint):
    """Pairs of different lengths through padded batches (three, at this budget) give the
    weights the model's own forward pass of each pair alone gives, padding sliced off, and
    an aligner's too."""
    from aiayn import Transformer
    from aiayn.model.models import Aligner
    translator = load(tiny_checkpoint, compile=False)
    model, tokenizer = translator.model, translator.tokenizer
    model.aligner = Aligner(model.cfg.d_model).eval()  # (a model trained with one has it)
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    pairs = []
    for n in (1, 5, 2, 8, 3, 7):
        source = translator.codec.encode(" ".join(words[:n]))
        pairs.append((source.ids, translator.codec.encode_target(" ".join(words[-n:]).upper(),
                                                                 source)))
    assert isinstance(model, Transformer)
    batched = batched_attention_maps(model, tokenizer, pairs, batch_tokens=60)
    for (src, tgt), many in zip(pairs, batched):
        with torch.inference_mode():
            _, own = model(torch.tensor([src]), torch.tensor([[model.cfg.start_id, *tgt]]),
                           return_weights=True)
        assert len(many.src_tokens) == len(src) and len(many.tgt_tokens) == len(tgt) + 1
        for kind in ("encoder", "decoder", "cross"):
            for a, b in zip(getattr(own, kind), getattr(many, kind)):
                assert a[0].shape == b.shape and torch.allclose(a[0], b, atol=1e-5)
        assert own.aligner is not None and many.aligner is not None
        assert torch.allclose(own.aligner[0], many.aligner, atol=1e-5)
    one = attention_maps(model, tokenizer, *pairs[3])  # one pair: a batch of one
    assert torch.equal(one.cross[0], batched_attention_maps(model, tokenizer, pairs[3:4])[0]
                       .cross[0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_tags_and_alignments_of_a_model_on_the_gpu(toy_model):
    """A model on the GPU reads its attention there and its links are made on the CPU: the
    alignments of the trained toy model are the CPU's, and tags come back well-formed."""
    pairs = [("alpha beta gamma", "GAMMA BETA ALPHA"), ("delta epsilon zeta", "ZETA EPSILON")]
    cpu, gpu = load(toy_model, compile=False), load(toy_model, device="cuda")
    assert gpu.align_all(pairs) == cpu.align_all(pairs)
    out = gpu.translate_markup(["alpha <b>beta</b> gamma"])[0]
    assert out.count("<b>") == 1 and out.count("</b>") == 1


def test_alignments_are_valid_word_indices(maps):
    links = word_alignments(maps)
    n_src = max(word_starts(maps.src_tokens)) + 1
    n_tgt = max(word_starts(maps.tgt_tokens[1:])) + 1
    assert n_tgt == 3 and n_src == 3 and links
    assert all(0 <= i < n_src and 0 <= j < n_tgt for i, j in links)


def test_source_words_without_enough_attention_stay_unaligned():
    # "he will go" -> "irá ." : both target rows look at "go"; "will" and "he" get at most 0.15
    src = ["\u2581he", "\u2581will", "\u2581go", "</s>"]
    tgt = ["<s>", "\u2581ir", "á", "\u2581."]  # "irá" is two pieces, averaged
    head = torch.tensor([[0.10, 0.15, 0.70, 0.05],
                         [0.10, 0.05, 0.80, 0.05],
                         [0.25, 0.05, 0.10, 0.60]])
    maps = AttentionMaps(src, tgt, [], [], [head[None]])
    every = word_alignments(maps, 0, head=0)
    assert (1, 0) in every  # "will" -> "irá", its best target, read backwards
    assert word_alignments(maps, 0, head=0, min_weight=0.2) == [
        (i, j) for i, j in every if i != 1]  # "he" keeps its 0.25 from "."
    cfg = ModelConfig(vocab_size=8, d_model=8, n_heads=2, n_encoder_layers=1,
                      n_decoder_layers=1, d_ff=8, alignment_layer=0)
    assert model_alignments(maps, cfg) == word_alignments(maps, 0, head=0, min_weight=0.2)
    # what a tag over a word without links falls back on: the target word that attends to it
    # most ("he" -> "."), where one gives it the least weight; "will" is left out of the
    # translation, and a tag over it alone goes around no word
    assert strongest_targets(maps, cfg) == [(0, 1), (2, 0)]
    unguided = cfg.replace(alignment_layer=None)  # every head averaged: no least weight
    assert [i for i, _ in strongest_targets(maps, unguided)] == [0, 1, 2]


def test_a_word_inside_a_compound_keeps_its_link():
    # "saturation bit range must" -> "Sättigungs-Bit-Bereich muss": one piece of the compound
    # gives "range" 0.5, averaged over its five pieces 0.19; a piece's weight counts
    src = ["\u2581saturation", "\u2581bit", "\u2581range", "\u2581must", "</s>"]
    tgt = ["<s>", "\u2581S\u00e4tt", "igungs", "-Bit", "-", "Bereich", "\u2581muss"]
    head = torch.tensor([[0.85, 0.05, 0.05, 0.00, 0.05],
                         [0.85, 0.05, 0.05, 0.00, 0.05],
                         [0.05, 0.85, 0.05, 0.00, 0.05],
                         [0.30, 0.30, 0.30, 0.00, 0.10],
                         [0.20, 0.20, 0.50, 0.00, 0.10],
                         [0.02, 0.02, 0.06, 0.85, 0.05]])
    maps = AttentionMaps(src, tgt, [], [], [head[None]])
    assert word_alignments(maps, 0, head=0, min_weight=0.2) == [(0, 0), (1, 0), (2, 0), (3, 1)]
    assert word_alignments(maps, 0, head=0, min_weight=0.6) == [(0, 0), (1, 0), (3, 1)]


def test_a_source_word_is_linked_back_by_a_target_piece_not_a_words_length():
    # "cannot open" -> "kann geöffnet werden.": both pieces of "werden." look at "open" by
    # 0.6, "geöffnet" by 0.9; summed, the longer word would draw "open"'s link, and a tag
    # over "open" would take "werden." in place of "geöffnet"
    src = ["\u2581cannot", "\u2581open", "</s>"]
    tgt = ["<s>", "\u2581kann", "\u2581geöffnet", "\u2581werden", "."]
    head = torch.tensor([[0.90, 0.05, 0.05],
                         [0.05, 0.90, 0.05],
                         [0.30, 0.60, 0.10],
                         [0.30, 0.60, 0.10]])
    maps = AttentionMaps(src, tgt, [], [], [head[None]])
    assert word_alignments(maps, 0, head=0, sure_first=True) == [(0, 0), (1, 1)]
    # "werden." still attends to "open" most: both directions joined keep it
    assert word_alignments(maps, 0, head=0) == [(0, 0), (1, 1), (1, 2)]
    cfg = ModelConfig(vocab_size=8, d_model=8, n_heads=2, n_encoder_layers=1,
                      n_decoder_layers=1, d_ff=8, alignment_layer=0)
    assert strongest_targets(maps, cfg) == [(0, 0), (1, 1)]


def test_an_aligner_is_read_from_the_row_fed_each_piece():
    """A model with an aligner: target piece t's links come from the aligner's row t + 1 (the
    query fed that piece), not from the cross-attention row that predicts it."""
    src, tgt = ["\u2581a", "\u2581b", "</s>"], ["<s>", "\u2581x", "\u2581y"]
    head = torch.tensor([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.1, 0.1, 0.8]])
    aligner = torch.tensor([[0.3, 0.3, 0.4], [0.05, 0.9, 0.05], [0.9, 0.05, 0.05]])
    maps = AttentionMaps(src, tgt, [], [], [head[None]], aligner=aligner)
    cfg = ModelConfig(vocab_size=8, d_model=8, n_heads=2, n_encoder_layers=1,
                      n_decoder_layers=1, d_ff=8, aligner=True)
    assert model_alignments(maps, cfg) == [(0, 1), (1, 0)]  # x - b, y - a
    assert strongest_targets(maps, cfg) == [(0, 1), (1, 0)]  # by the aligner, not the head
    assert word_alignments(maps, 0, head=0) == [(0, 0), (1, 1)]  # the head's rows, unshifted
    # a source aligner that leaves "a" unaligned (0.8 on its empty word, column 0) and gives
    # its last 0.2 to "x": a tag over "a" goes where the aligner points, "y"
    source = torch.tensor([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [1.0, 0.0, 0.0]])
    both = dataclasses.replace(maps, source_aligner=source)
    assert model_alignments(both, cfg.replace(source_aligner=True)) == [(1, 0)]
    assert strongest_targets(both, cfg.replace(source_aligner=True)) == [(0, 1), (1, 0)]


def test_grow_diag_final_and_symmetrizes_two_directions():
    forward = {(0, 0), (1, 1), (2, 1), (3, 3)}
    backward = {(0, 0), (1, 1), (2, 2), (4, 4)}
    # the intersection, (2, 1) and (2, 2) grown from (1, 1) as neighbours aligning a free word,
    # then (3, 3) and (4, 4) whose words are both unaligned
    assert grow_diag_final_and(forward, backward) == {(0, 0), (1, 1), (2, 1), (2, 2), (3, 3),
                                                      (4, 4)}


def test_word_starts_merge_subwords():
    assert word_starts(["\u2581in", "\u2581the", "\u2581begin", "ning", "</s>"]) == [0, 1, 2, 2, -1]


def test_translate_with_alignments(tiny_checkpoint, tmp_path):
    (tmp_path / "in").write_text("alpha beta\n\n")
    assert main(["translate", "--checkpoint", str(tiny_checkpoint), "--alignments", "--beam", "2",
                 "-i", str(tmp_path / "in"), "-o", str(tmp_path / "out")]) == 0
    first, second = (tmp_path / "out").read_text().split("\n")[:2]
    text, links = first.split("\t")
    for link in links.split():
        i, j = map(int, link.split("-"))
        assert 0 <= i < 2 and 0 <= j < len(text.split())
    assert second == "\t"


def test_positions_picture(tmp_path):
    assert main(["positions", "--d-model", "128", "--length", "50",
                 "--out", str(tmp_path / "pe.png")]) == 0
    assert matplotlib.image.imread(tmp_path / "pe.png").shape[:2] == (850, 1100)
