"""Guided alignment: word alignments given to `prepare` become piece links, batches carry them
as attention targets, one cross-attention head is trained on them, and the model's
alignments then come from that head."""

import dataclasses

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import aiayn
from aiayn import ModelConfig, Transformer
from aiayn.checkpoint import Checkpoint
from aiayn.config import ConfigError
from aiayn.data.corpus import ParallelCorpus
from aiayn.data.prepare import TextPair, prepare
from aiayn.data.tokenizer import Tokenizer, word_starts
from aiayn.errors import UserError
from aiayn.train.recipe import TrainConfig
from aiayn.train.step import alignment_loss
from aiayn.train.trainer import train
from tests.conftest import losses, toy_pairs, write_pairs


def reversal_links(pairs) -> list[str]:
    """The toy task's true alignments (its targets are the source words reversed)."""
    return [" ".join(f"{i}-{len(s.split()) - 1 - i}" for i in range(len(s.split())))
            for s, _ in pairs]


@pytest.fixture(scope="module")
def aligned_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("aligned")
    pairs = toy_pairs(400, seed=1)
    files = write_pairs(root, "train", pairs)
    (root / "train.aln").write_text("".join(line + "\n" for line in reversal_links(pairs)))
    prepare(TextPair(*files), root / "data", vocab_size=100, alignments=root / "train.aln",
            log=lambda *_: None)
    return root, pairs


def test_links_join_the_pieces_of_linked_words(aligned_data):
    root, pairs = aligned_data
    corpus = ParallelCorpus(root / "data", "train")
    tokenizer = Tokenizer.load(root / "data" / "spm.model")
    cfg = ModelConfig.preset("tiny", vocab_size=100)
    checked = 0
    for index in range(50):
        src, tgt = corpus.ids("src", index), corpus.ids("tgt", index)
        src_words = word_starts(tokenizer.pieces(src, side="source"))
        tgt_words = word_starts(tokenizer.pieces(tgt))
        n = len(pairs[index][0].split())
        target = corpus.alignment(index, len(src), len(tgt),
                                  torch.zeros(len(tgt) + 3, len(src) + 2))
        for t, tw in enumerate(tgt_words):  # row t predicts target piece t
            expected = torch.tensor([float(sw == n - 1 - tw) for sw in src_words])
            torch.testing.assert_close(target[t, :len(src)], expected / expected.sum())
            checked += 1
        assert target[len(tgt), len(src)] == 1.0  # EOS on EOS
        assert target[len(tgt) + 1:].sum() == 0  # padding rows: nothing
    assert checked > 100
    batch = corpus.collate(np.arange(8), cfg)
    assert batch.alignment is not None
    assert batch.alignment.shape == (*batch.tgt_out.shape, batch.src.size(1))
    sums = batch.alignment.sum(-1)
    real = batch.tgt_out != cfg.pad_id
    torch.testing.assert_close(sums[real], torch.ones(int(real.sum())))
    assert (sums[~real] == 0).all()
    halves = batch.halves()
    torch.testing.assert_close(torch.cat([h.alignment for h in halves]), batch.alignment)


@pytest.mark.parametrize("kind", ["head", "aligner"])
def test_alignment_weights_come_with_the_same_logits(kind):
    """The alignment head is the first head of its layer; the aligner, beside the model, is
    the aligner's weights. Either is a (B, T, S) distribution off padding, and asking for it
    leaves the logits as they are."""
    where = {"alignment_layer": 1} if kind == "head" else {"aligner": True}
    model = Transformer(ModelConfig.preset("tiny", vocab_size=40, **where)).eval()
    src, tgt = torch.randint(4, 40, (3, 7)), torch.randint(4, 40, (3, 5))
    src[1, 5:] = model.cfg.pad_id
    logits, weights = model(src, tgt, return_weights=True)
    aligned_logits, aligned, _ = model(src, tgt, return_alignment=True)
    torch.testing.assert_close(aligned_logits, logits)
    torch.testing.assert_close(aligned, weights.cross[1][:, 0] if kind == "head"
                               else weights.aligner)
    assert aligned.shape == (3, 5, 7) and (aligned[1, :, 5:] == 0).all()  # never on padding
    torch.testing.assert_close(aligned.sum(-1), torch.ones(3, 5))
    torch.testing.assert_close(model(src, tgt, return_weights=True, return_alignment=True)[1],
                               aligned)
    with pytest.raises(ValueError, match="alignment_layer"):
        Transformer(ModelConfig.preset("tiny", vocab_size=40))(src, tgt, return_alignment=True)


def test_the_aligners_loss_trains_it_and_the_states_it_reads():
    """Guided alignment through the aligner is multi-task learning: its projections and the
    encoder below its keys are trained."""
    model = Transformer(ModelConfig.preset("tiny", vocab_size=40, aligner=True))
    src, tgt = torch.randint(4, 40, (3, 7)), torch.randint(4, 40, (3, 5))
    _, aligned, _ = model(src, tgt, return_alignment=True)
    target = torch.zeros(3, 5, 7)
    target[:, 1:, 0] = 1.0
    alignment_loss(aligned, target).backward()
    trained = {name for name, p in model.named_parameters()
               if p.grad is not None and p.grad.abs().sum() > 0}
    assert {f"aligner.{k}_proj.{part}" for k in "qk" for part in ("weight", "bias")} <= trained
    assert "encoder.layers.0.self_attn.qkv_proj.weight" in trained


def test_aligner_targets_are_the_rows_fed_each_piece(aligned_data):
    """With an aligner, row t + 1 (the query fed target piece t) takes piece t's links, and no
    row the EOS: the links of the head's rows moved down by one."""
    root, _ = aligned_data
    corpus = ParallelCorpus(root / "data", "train")
    for index in range(20):
        n_src, n_tgt = len(corpus.ids("src", index)), len(corpus.ids("tgt", index))
        head = corpus.alignment(index, n_src, n_tgt, torch.zeros(n_tgt + 2, n_src + 1))
        shifted = corpus.alignment(index, n_src, n_tgt, torch.zeros(n_tgt + 2, n_src + 1),
                                   shift=True)
        assert shifted[0].sum() == 0 and shifted[:, n_src].sum() == 0
        torch.testing.assert_close(shifted[1:n_tgt + 1], head[:n_tgt])
        assert shifted[n_tgt + 1:].sum() == 0
    batch = corpus.collate(np.arange(8), ModelConfig.preset("tiny", vocab_size=100,
                                                            aligner=True))
    assert batch.alignment is not None
    torch.testing.assert_close(batch.alignment[:, 0], torch.zeros_like(batch.alignment[:, 0]))


def test_alignment_layer_must_be_a_decoder_layer():
    with pytest.raises(ValueError, match="alignment_layer"):
        ModelConfig.preset("tiny", vocab_size=40, alignment_layer=2)  # tiny has 2 layers
    with pytest.raises(ValueError, match="aligner .True. and alignment_layer are two places"):
        ModelConfig.preset("tiny", vocab_size=40, alignment_layer=1, aligner=True)


def test_alignment_loss_is_the_cross_entropy_of_linked_rows():
    attention = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]])
    target = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])  # second row unlinked
    torch.testing.assert_close(alignment_loss(attention, target), -torch.tensor(0.5).log())


def guided(root, name: str, aligner: bool, steps: int = 300) -> tuple:
    """A tiny model trained on the toy task with its true alignments (a few seconds)."""
    cfg = TrainConfig(preset="tiny", model={"dropout": 0.0, "d_model": 64, "d_ff": 128},
                      max_tokens=1500, max_steps=steps, valid_every=steps,
                      valid_bleu_sentences=0,
                      alignment_weight=0.5, aligner=aligner, precision="fp32")
    lines: list[str] = []
    train(root / "data", root / name, cfg, progress=False, log=lines.append)
    return root / name, lines


@pytest.fixture(scope="module")
def guided_run(aligned_data):
    """``--aligner``: a separate head learns the alignments."""
    return guided(aligned_data[0], "run", aligner=True)


@pytest.fixture(scope="module")
def head_run(aligned_data):
    """By default the last decoder layer's first head learns them (Marian's way)."""
    return guided(aligned_data[0], "head-run", aligner=False)


@pytest.mark.parametrize("kind", ["aligner", "head"])
def test_a_model_trained_on_alignments_gives_them(kind, request):
    """On the toy reversal task: trained with the true alignments, the model's links (from its
    aligner, or its alignment head) are the reversal on sentences it has not seen."""
    import aiayn
    run, lines = request.getfixturevalue("guided_run" if kind == "aligner" else "head_run")
    translator = aiayn.load(run)
    if kind == "aligner":
        assert any("guided alignment: the aligner" in line for line in lines)
        assert translator.cfg.aligner and translator.cfg.alignment_layer is None
    else:
        assert any("guided alignment: head 1 of decoder layer 2" in line for line in lines)
        assert not translator.cfg.aligner and translator.cfg.alignment_layer == 1
    right = total = 0
    for source, target in toy_pairs(30, seed=7):
        n = len(source.split())
        links = set(translator.word_links([(source, target)])[0])
        truth = {(i, n - 1 - i) for i in range(n)}
        right += len(links & truth)
        total += len(links | truth)
    assert right / total >= 0.9, (right, total)


def test_alignment_files_that_do_not_fit_are_refused(tmp_path):
    pairs = toy_pairs(3, seed=1)
    files = write_pairs(tmp_path, "train", pairs)
    (tmp_path / "classify.aln").write_text("0-0\n0-0\n0-0\n")
    with pytest.raises(UserError, match="--task classify"):
        prepare(TextPair(*files), tmp_path / "out", vocab_size=40, task="classify",
                alignments=tmp_path / "classify.aln", log=lambda *_: None)
    (tmp_path / "long.aln").write_text("0-0\n0-0\n0-0\n0-0\n")
    with pytest.raises(UserError, match="long.aln has 4 lines but the training data has 3"):
        prepare(TextPair(*files), tmp_path / "out", vocab_size=40,
                alignments=tmp_path / "long.aln", log=lambda *_: None)
    assert not (tmp_path / "out").exists()


def test_init_from_a_model_without_an_aligner_adds_one(aligned_data):
    """Fine-tuning with alignments from a checkpoint trained without them: its weights are
    loaded, and the aligner starts new."""
    from aiayn.checkpoint import Checkpoint
    root, _ = aligned_data
    plain = TrainConfig(preset="tiny", max_tokens=1500, max_steps=2, valid_every=2,
                        valid_bleu_sentences=0, alignment_weight=0.0, precision="fp32")
    train(root / "data", root / "plain", plain, progress=False, log=lambda *_: None)
    assert not Checkpoint.open(root / "plain").config.aligner
    with pytest.raises(UserError, match="--aligner needs word alignments in"):
        train(root / "data", root / "refused", dataclasses.replace(plain, aligner=True),
              progress=False, log=lambda *_: None)
    assert not (root / "refused" / "checkpoints").exists()
    lines: list[str] = []
    tuned = dataclasses.replace(plain, alignment_weight=0.1, aligner=True,
                                init=str(root / "plain"))
    train(root / "data", root / "tuned", tuned, progress=False, log=lines.append)
    assert any("starting from the weights of" in line for line in lines)
    assert Checkpoint.open(root / "tuned").config.aligner


def test_exports_say_the_aligner_stays_behind(guided_run, tmp_path):
    pytest.importorskip("ctranslate2")
    from aiayn.interop.ct2 import export_ctranslate2
    lines: list[str] = []
    export_ctranslate2(guided_run[0], tmp_path / "ct2", log=lines.append)
    assert "the model's aligner stays behind: CTranslate2 has no place for it" in lines[-1]


def test_ctranslate2_reads_the_alignment_head_of_an_export(head_run, tmp_path):
    """Exported to CTranslate2, the model's attention that CTranslate2 returns with its
    translations is the alignment head's, as aiayn computes it for the same tokens."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    import aiayn
    from aiayn.interop.ct2 import export_ctranslate2
    run, _ = head_run
    translator = aiayn.load(run)
    out = export_ctranslate2(run, tmp_path / "ct2", log=lambda *_: None)
    ct = ctranslate2.Translator(str(out), device="cpu")
    sources = [s for s, _ in toy_pairs(8, seed=9)]
    pieces = [translator.tokenizer.sp.EncodeAsPieces(s) for s in sources]
    results = ct.translate_batch(pieces, beam_size=1, return_attention=True)
    for source, result in zip(sources, results):
        src = translator.codec.encode(source).ids  # + EOS
        tgt = [translator.tokenizer.sp.PieceToId(p) for p in result.hypotheses[0]]
        tgt_in = torch.tensor([[translator.cfg.start_id, *tgt]])
        with torch.no_grad():
            _, head, _ = translator.model(torch.tensor([src]), tgt_in, return_alignment=True)
        # (target pieces, source pieces): CTranslate2 leaves out the source's EOS column
        theirs = torch.tensor(result.attention[0])
        assert theirs.shape == (len(tgt), len(src) - 1)
        torch.testing.assert_close(head[0, :len(tgt), :len(src) - 1], theirs, atol=1e-4,
                                   rtol=1e-3)


def test_aligner_only_trains_the_aligner_and_nothing_else(aligned_data):
    """`train --aligner-only` on a finished model without an aligner: every weight of the
    model stays as it was and it translates the same, a new aligner is trained (its loss
    falls, its weights are what `align` and the full forward pass give), and it needs --init
    and the data's alignments."""
    root, pairs = aligned_data
    base = TrainConfig(preset="tiny", max_tokens=1500, max_steps=6, valid_every=6,
                       valid_bleu_sentences=0, alignment_weight=0.0, precision="fp32")
    train(root / "data", root / "finished", base, progress=False, log=lambda *_: None)
    with pytest.raises(ConfigError, match="aligner_only.*--init"):
        dataclasses.replace(base, aligner_only=True)
    only = dataclasses.replace(base, alignment_weight=0.1, aligner_only=True, max_steps=30,
                               valid_every=30, init=str(root / "finished"))
    lines: list[str] = []
    train(root / "data", root / "only", only, progress=False, log=lines.append)
    assert any("aligner only: the model's own weights stay as they are" in x for x in lines)
    before = load_file(str(Checkpoint.open(root / "finished").path / "model.safetensors"))
    after = load_file(str(Checkpoint.open(root / "only").path / "model.safetensors"))
    aligners = ("aligner.", "source_aligner.")
    assert {k for k in after if not k.startswith(aligners)} == set(before)
    for name, value in before.items():
        assert torch.equal(after[name], value), name
    assert {k for k in after if k.startswith(aligners)} == {
        f"{a}{k}_proj.{part}" for a in aligners for k in "qk" for part in ("weight", "bias")}
    model = Checkpoint.open(root / "only").model(Transformer).eval()
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    aligned, source = model.align(src, tgt)
    _, want, want_source = model(src, tgt, return_alignment=True)
    torch.testing.assert_close(aligned, want)
    torch.testing.assert_close(source, want_source)
    curve = list(losses(root / "only").values())
    assert curve[-1] < curve[0]
    sources = [s for s, _ in pairs[:5]]
    assert aiayn.load(root / "only").translate(sources) == \
        aiayn.load(root / "finished").translate(sources)
    with pytest.raises(UserError, match="--aligner-only needs word alignments in"):
        train(root / "data", root / "refused", dataclasses.replace(only, alignment_weight=0.0),
              progress=False, log=lambda *_: None)


def test_aligner_only_resumes_exactly(aligned_data, tmp_path):
    root, _ = aligned_data
    base = TrainConfig(preset="tiny", max_tokens=1500, max_steps=4, valid_every=4,
                       valid_bleu_sentences=0, alignment_weight=0.0, precision="fp32")
    train(root / "data", tmp_path / "finished", base, progress=False, log=lambda *_: None)
    only = dataclasses.replace(base, alignment_weight=0.1, aligner_only=True, schedule="paper",
                               valid_every=3, log_every=1, init=str(tmp_path / "finished"))
    quiet = dict(progress=False, log=lambda *_: None)
    train(root / "data", tmp_path / "whole", dataclasses.replace(only, max_steps=9), **quiet)
    train(root / "data", tmp_path / "split", dataclasses.replace(only, max_steps=4), **quiet)
    train(root / "data", tmp_path / "split", dataclasses.replace(only, max_steps=9),
          resume=True, **quiet)
    assert losses(tmp_path / "whole") == losses(tmp_path / "split")
    a = load_file(str(tmp_path / "whole/checkpoints/last/model.safetensors"))
    b = load_file(str(tmp_path / "split/checkpoints/last/model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_source_aligner_targets_are_the_links_read_from_the_source():
    """Each source piece spread evenly over the rows fed the target pieces linked to it; a
    piece with none on row 0, the empty word; the EOS, padding and a pair without links
    (its words changed by normalization) add nothing."""
    from aiayn.train.step import source_alignment
    cfg = ModelConfig.preset("tiny", vocab_size=40)
    eos, pad = cfg.eos_id, cfg.pad_id
    src = torch.tensor([[5, 6, 7, 8, eos], [5, 6, eos, pad, pad], [5, 6, 7, 8, eos]])
    alignment = torch.zeros(3, 4, 5)  # (B, T, S): row t + 1 holds target piece t's links
    alignment[0, 1, 0] = alignment[0, 2, 0] = 0.5  # piece 0 -> target pieces 0 and 1
    alignment[0, 3, 2] = 1.0  # piece 2 -> target piece 2; pieces 1 and 3 have none
    alignment[1, 1, 1] = 1.0  # piece 1 -> target piece 0; piece 0 has none
    want = torch.zeros(3, 5, 4)
    want[0, 0, 1] = want[0, 0, 2] = 0.5
    want[0, 2, 3] = 1.0
    want[0, 1, 0] = want[0, 3, 0] = 1.0
    want[1, 1, 1] = want[1, 0, 0] = 1.0
    torch.testing.assert_close(source_alignment(alignment, src, pad), want)


def test_the_source_aligner_reads_the_states_without_training_them():
    """Its (B, S, T) weights are each source piece's distribution over the real target rows
    (row 0, fed the start piece, its empty word), padded sources weigh nothing, and its loss
    reaches its own projections alone: the translation learns nothing from it."""
    model = Transformer(ModelConfig.preset("tiny", vocab_size=40, aligner=True,
                                           source_aligner=True))
    src, tgt = torch.randint(4, 40, (3, 7)), torch.randint(4, 40, (3, 5))
    src[1, 5:] = model.cfg.pad_id
    tgt[2, 3:] = model.cfg.pad_id
    _, _, source = model(src, tgt, return_alignment=True)
    assert source.shape == (3, 7, 5)
    assert (source[1, 5:] == 0).all() and (source[2, :, 3:] == 0).all()
    real = src != model.cfg.pad_id
    torch.testing.assert_close(source.sum(-1)[real], torch.ones(int(real.sum())))
    target = torch.zeros(3, 7, 5)
    target[:, :4, 1] = 1.0
    alignment_loss(source, target).backward()
    trained = {name for name, p in model.named_parameters()
               if p.grad is not None and p.grad.abs().sum() > 0}
    assert {f"source_aligner.{k}_proj.weight" for k in "qk"} <= trained
    assert all(name.startswith("source_aligner.") for name in trained), trained
    with pytest.raises(ConfigError, match="source_aligner .True. reads beside an aligner"):
        ModelConfig.preset("tiny", vocab_size=40, source_aligner=True)


def test_the_source_aligner_learns_the_links_from_the_source_side(guided_run):
    """Trained with `--aligner`, a model has a source aligner too; on the toy reversal task
    each source word's strongest target word by it is the reversal."""
    from aiayn.inspect import source_word_weights
    translator = aiayn.load(guided_run[0])
    assert translator.cfg.source_aligner
    assert any("the aligner and the source aligner learn" in line for line in guided_run[1])
    right = total = 0
    for source, target in toy_pairs(30, seed=7):
        n = len(source.split())
        maps = translator.attention(source, target)
        assert maps.source_aligner is not None
        read = source_word_weights(maps)
        assert read is not None
        right += sum(int(row.argmax()) == n - 1 - i for i, row in enumerate(read[0]))
        total += n
    assert right / total >= 0.9, (right, total)


def test_attend_draws_both_aligners(guided_run, tmp_path):
    """`aiayn attend` on a model with aligners draws each as one map and puts both in the
    page, the source aligner's first column named as the empty word, the weights the maps'."""
    import json
    import re

    import matplotlib.image

    from aiayn.cli import main
    sentence = "alpha beta gamma"
    assert main(["attend", "--checkpoint", str(guided_run[0]), sentence,
                 "--out", str(tmp_path)]) == 0
    for name in ("aligner.png", "source_aligner.png"):
        assert matplotlib.image.imread(tmp_path / name).shape[0] >= 450
    page = (tmp_path / "index.html").read_text()
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>',
                                page, re.S).group(1))
    maps = aiayn.load(guided_run[0]).attention(sentence)
    source = data["kinds"]["source_aligner"]
    assert source["rows"] == maps.src_tokens
    assert source["cols"] == ["(none)"] + maps.tgt_tokens[1:]
    assert data["kinds"]["aligner"]["cols"] == maps.src_tokens
    assert np.allclose(source["layers"][0][0], maps.source_aligner.numpy(), atol=1e-4)
    assert np.allclose(data["kinds"]["aligner"]["layers"][0][0], maps.aligner.numpy(),
                       atol=1e-4)


def test_a_source_word_the_links_never_give_a_counterpart_is_left_unaligned(
        aligned_data, guided_run, tmp_path):
    """Trained on links that never link the first source word, the source aligner puts it on
    the empty word and the model's links leave it out; the aligner alone, whose rows only
    learn what each target word translates, still links it. (The aligners of the model trained
    on every word's links, trained on alone by `--aligner-only`.)"""
    from aiayn.inspect import model_alignments
    _, pairs = aligned_data
    files = write_pairs(tmp_path, "train", pairs)
    (tmp_path / "train.aln").write_text("".join(
        " ".join(f"{i}-{len(s.split()) - 1 - i}" for i in range(1, len(s.split()))) + "\n"
        for s, _ in pairs))
    prepare(TextPair(*files), tmp_path / "data", tokenizer=Checkpoint.open(guided_run[0]).tokenizer,
            alignments=tmp_path / "train.aln", log=lambda *_: None)
    cfg = TrainConfig(preset="tiny", model={"dropout": 0.0, "d_model": 64, "d_ff": 128},
                      max_tokens=1500, max_steps=500, valid_every=500,
                      valid_bleu_sentences=0, alignment_weight=0.5, aligner=True,
                      aligner_only=True, init=str(guided_run[0]), precision="fp32")
    train(tmp_path / "data", tmp_path / "run", cfg, progress=False, log=lambda *_: None)
    translator = aiayn.load(tmp_path / "run")
    first = without = others = total = 0
    for source, target in toy_pairs(30, seed=7):
        n = len(source.split())
        maps = translator.attention(source, target)
        links = set(model_alignments(maps, translator.cfg))
        first += any(i == 0 for i, _ in links)
        without += any(i == 0 for i, _ in model_alignments(
            dataclasses.replace(maps, source_aligner=None), translator.cfg))
        others += len(links & {(i, n - 1 - i) for i in range(1, n)})
        total += n - 1
    assert first <= 3 and without >= 15, (first, without)
    assert others / total >= 0.9, (others, total)
