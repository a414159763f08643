"""The translator's workflow beyond translating a file: scoring pairs, target prefixes,
ensembles and sampled translations."""

import shutil

import pytest
import torch

from aiayn import ModelConfig, Transformer
from aiayn.checkpoint import Checkpoint
from aiayn.cli import main
from aiayn.data.tokenizer import train_tokenizer
from aiayn.decode.ensemble import Ensemble
from aiayn.errors import UserError
from aiayn.integrity import write_checksums
from aiayn.translate import DecodeOptions, load
from tests.conftest import WORDS, assert_float32_close, toy_pairs

PAIRS = toy_pairs(30, seed=21)
SOURCES = [s for s, _ in PAIRS]


@pytest.fixture(scope="module")
def translator(toy_model):
    return load(toy_model)


def test_score_is_the_sum_of_the_model_s_log_probabilities(translator, toy_model):
    model = Checkpoint.open(toy_model).model().eval()  # the plain model, not the inference copy
    cfg = model.cfg
    source, target = PAIRS[0]
    src_ids = translator.codec.encode(source).ids
    tgt_ids = translator.tokenizer.encode_target(target)
    with torch.no_grad():
        lprobs = model(torch.tensor([src_ids]), torch.tensor([[cfg.start_id] + tgt_ids]))
        lprobs = lprobs.log_softmax(-1)[0]
    by_hand = sum(float(lprobs[t, tok]) for t, tok in enumerate(tgt_ids + [cfg.eos_id]))
    scored = translator.score([source], [target])[0]
    assert scored.total == pytest.approx(by_hand, abs=1e-4)
    assert scored.tokens == len(tgt_ids) + 1
    assert scored.per_token == pytest.approx(by_hand / scored.tokens, abs=1e-5)


def test_score_equals_beam_search_s_own_score_and_ignores_batching(translator):
    options = DecodeOptions(beam=4, nbest=1)
    sources = [translator.codec.encode(s).ids for s in SOURCES]
    hyps = [h[0] for h in translator.translate_ids(sources, options)]
    scores = translator.score_ids(sources, [h.tokens for h in hyps], options)
    for hyp, scored in zip(hyps, scores):
        assert scored.normalized == pytest.approx(hyp.score, abs=1e-4)
    one_by_one = [translator.score_ids([s], [h.tokens], options)[0]
                  for s, h in zip(sources, hyps)]
    small = translator.score_ids(sources, [h.tokens for h in hyps],
                                 DecodeOptions(batch_tokens=30))
    for a, b, c in zip(scores, one_by_one, small):
        # batching changes the products' blocking: float32 rounding, a few 1e-6 of a total
        assert a.total == pytest.approx(b.total, rel=1e-5) == pytest.approx(c.total, rel=1e-5)
    # a good translation scores higher than a shuffled one
    good = translator.score(SOURCES[:10], [t for _, t in PAIRS[:10]])
    bad = translator.score(SOURCES[:10], [t for _, t in PAIRS[10:20]])
    assert sum(g.per_token > b.per_token for g, b in zip(good, bad)) >= 9


def test_a_prefix_starts_every_output_and_an_empty_one_changes_nothing(translator):
    plain = translator.translate(SOURCES)
    assert translator.translate(SOURCES, prefixes=[""] * len(SOURCES)) == plain
    prefixes = [WORDS[i % len(WORDS)].upper() for i in range(len(SOURCES))]
    for options in (DecodeOptions(beam=1), DecodeOptions(beam=4)):
        together = translator.translate(SOURCES, options, prefixes=prefixes)
        alone = [translator.translate([s], options, prefixes=[p])[0]
                 for s, p in zip(SOURCES, prefixes)]
        assert together == alone  # batch-invariant
        assert all(out.startswith(p) for out, p in zip(together, prefixes))
    # the prefix is the start of the output, the rest is the model's continuation: forcing
    # the words greedy search picks itself changes nothing (forcing a beam's start would
    # narrow what the beam explores, so the identity holds for greedy search only)
    greedy = DecodeOptions(beam=1)
    plain_greedy = translator.translate(SOURCES, greedy)
    first_word = [out.split()[0] for out in plain_greedy]
    assert translator.translate(SOURCES, greedy, prefixes=first_word) == plain_greedy


def _pair_of_models():
    cfg = ModelConfig.preset("tiny", vocab_size=50, dropout=0.0)
    torch.manual_seed(1)
    a = Transformer(cfg).eval()
    torch.manual_seed(2)
    b = Transformer(cfg).eval()
    return a, b


def test_ensemble_steps_average_the_models_log_probabilities():
    a, b = _pair_of_models()
    src = torch.randint(4, 50, (3, 7))
    src[:, -1] = 3
    tgt = torch.full((3, 1), 2)
    both = Ensemble([a, b])
    memories, mask, _ = both.encode(src)
    step = both.decode_step(tgt, both.init_cache(memories, mask, 10))[:, -1]
    by_hand = []
    for model in (a, b):
        memory, mask, _ = model.encode(src)
        by_hand.append(model.decode_step(tgt, model.init_cache(memory, mask, 10))[:, -1]
                       .log_softmax(-1))
    assert_float32_close(step, (by_hand[0] + by_hand[1]) / 2)
    one = Ensemble([a])
    memories, mask, _ = one.encode(src)
    assert_float32_close(one.decode_step(tgt, one.init_cache(memories, mask, 10))[:, -1],
                         by_hand[0])


def test_an_ensemble_of_a_model_with_itself_translates_as_the_model(toy_model, translator):
    options = DecodeOptions(beam=4)
    plain = translator.translate(SOURCES, options)
    assert load([toy_model]).translate(SOURCES, options) == plain
    assert load([toy_model, toy_model]).translate(SOURCES, options) == plain


def test_an_ensemble_needs_one_vocabulary(toy_model, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(toy_model, other)
    train_tokenizer([s for pair in toy_pairs(200, seed=3) for s in pair], tmp_path / "spm",
                    vocab_size=90)
    shutil.copyfile(tmp_path / "spm.model", other / "tokenizer.model")
    write_checksums(other)  # a consistent checkpoint, only with another vocabulary
    with pytest.raises(UserError, match="its vocabulary differs"):
        load([toy_model, other])


def test_sampling_is_reproducible_and_independent_of_the_batch(translator):
    sources = [translator.codec.encode(s).ids for s in SOURCES]
    options = DecodeOptions(sample=True, seed=7, top_k=5)
    first = [h[0].tokens for h in translator.translate_ids(sources, options)]
    again = [h[0].tokens for h in translator.translate_ids(sources, options)]
    small = [h[0].tokens for h in translator.translate_ids(
        sources, DecodeOptions(sample=True, seed=7, top_k=5, batch_tokens=20))]
    assert first == again == small
    other = [h[0].tokens for h in translator.translate_ids(
        sources, DecodeOptions(sample=True, seed=8, top_k=5))]
    assert other != first
    hot = translator.translate(SOURCES, DecodeOptions(sample=True, temperature=2.0))
    assert len(hot) == len(SOURCES)


def test_workflow_mistakes_are_one_line_errors(toy_model, tmp_path, capsys):
    src, tgt = tmp_path / "src.txt", tmp_path / "tgt.txt"
    src.write_text("alpha beta\ngamma\n")
    tgt.write_text("BETA ALPHA\n")

    def fails(argv, expected):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("aiayn: error:") and "\n" not in err and expected in err, err

    fails(["score", "--checkpoint", str(toy_model), "--src", str(src), "--tgt", str(tgt)],
          "score needs aligned files")
    fails(["translate", "--checkpoint", str(toy_model), "-i", str(src), "--prefix-file",
           str(tgt)], "give one prefix per line")
    fails(["translate", "--checkpoint", str(toy_model), "-i", str(src), "--sample",
           "--top-p", "1.5"], "--top-p in (0, 1]")
    tgt.write_text("BETA ALPHA\nGAMMA\n")
    capsys.readouterr()
    assert main(["score", "--checkpoint", str(toy_model), "--src", str(src), "--tgt",
                 str(tgt)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(len(line.split("\t")) == 3 for line in lines)
