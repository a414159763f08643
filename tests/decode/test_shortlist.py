"""Vocabulary shortlists: built from parallel text, they hold the tokens a source token is
translated into; decoding over one gives the full vocabulary's beams when they fit in it."""

import pytest
import torch

from aiayn.cli import main
from aiayn.decode.search import beam_search
from aiayn.decode.shortlist import Shortlist, Shortlisted
from aiayn.runtime.compiled import compile_available, cxx_compiler
from tests.conftest import toy_pairs
from tests.test_cli import fails


def test_each_source_token_lists_its_translation_first(toy_model):
    from aiayn.translate import load
    tok = load(toy_model, compile=False).tokenizer
    pairs = toy_pairs(400, seed=1)
    encoded = [(tok.encode(s), tok.encode_target(t)) for s, t in pairs]
    cfg_size = tok.vocab_size
    shortlist = Shortlist.build(encoded, cfg_size, cfg_size, tok.fingerprint(), per_token=3,
                                frequent=5)
    words = {w for s, _ in pairs for w in s.split()}
    hits = total = 0
    for word in words:  # the upper-cased word's pieces match the word's one to one
        source, target = tok.encode(word), tok.encode_target(word.upper())
        if len(source) == len(target):
            for a, b in zip(source, target):
                total += 1
                hits += b in shortlist.candidates[a].tolist()
    assert total >= 40 and hits >= 0.9 * total, (hits, total)
    assert len(shortlist.frequent) == 5
    vocab = shortlist.vocabulary([encoded[0][0]], [tok.vocab_size - 1])
    assert tok.vocab_size - 1 in vocab.tolist() and vocab.tolist() == sorted(set(vocab.tolist()))


def test_a_shortlist_of_every_token_decodes_as_the_full_vocabulary(toy_model):
    from aiayn.translate import load
    translator = load(toy_model, compile=False)
    src = translator._pad([translator.codec.encode(s).ids for s, _ in toy_pairs(4, seed=3)])
    everything = torch.arange(translator.cfg.target_vocab_size)
    full = beam_search(translator.model, src, beam=4)
    short = beam_search(Shortlisted(translator.model, everything), src, beam=4)
    assert [h[0].tokens for h in full] == [h[0].tokens for h in short]


@pytest.mark.skipif(not compile_available() or cxx_compiler() is None,
                    reason="compiled steps need AOTInductor and a C++ compiler")
def test_compiled_steps_over_a_shortlist_equal_the_eager_ones(toy_model):
    from aiayn.translate import load
    eager, compiled = load(toy_model, compile=False), load(toy_model, compile=True)
    src = eager._pad([eager.codec.encode(s).ids for s, _ in toy_pairs(6, seed=4)])
    full = beam_search(eager.model, src, beam=4)
    kept = sorted({t for hyps in full for t in hyps[0].tokens} | {eager.cfg.eos_id})
    others = [t for t in range(eager.cfg.target_vocab_size) if t not in kept]
    vocab = torch.tensor(sorted(kept + others[::2]))  # the full beams' tokens and half the rest
    want = beam_search(Shortlisted(eager.model, vocab), src, beam=4)
    before = compiled.model.compiled_steps
    got = beam_search(Shortlisted(compiled.model, vocab), src, beam=4)
    assert compiled.model.compiled_steps > before  # the steps of many rows ran compiled
    assert [h[0].tokens for h in got] == [h[0].tokens for h in want]
    assert [h[0].score for h in got] == pytest.approx([h[0].score for h in want], abs=1e-4)
    assert all(set(h[0].tokens) <= set(vocab.tolist()) for h in got)


def test_an_int8_model_decodes_over_a_shortlist_of_its_own_int8_rows(toy_model):
    from aiayn.translate import load
    int8 = load(toy_model, int8=True, compile=False)
    src = int8._pad([int8.codec.encode(s).ids for s, _ in toy_pairs(4, seed=3)])
    vocab = torch.arange(0, int8.cfg.target_vocab_size, 2)
    vocab = torch.unique(torch.cat([vocab, torch.tensor([int8.cfg.eos_id])]))
    short = Shortlisted(int8.model, vocab)
    proj = int8.model.output_proj
    torch.testing.assert_close(short.weight, proj.weight_int8[vocab].float()
                               * proj.scale[vocab, None])
    hyps = beam_search(short, src, beam=4)
    assert all(set(h[0].tokens) <= set(vocab.tolist()) for h in hyps)


def test_shortlist_on_the_command_line(toy_model, tiny_checkpoint, tmp_path, capsys):
    pairs = toy_pairs(300, seed=1)
    (tmp_path / "train.src").write_text("".join(s + "\n" for s, _ in pairs))
    (tmp_path / "train.tgt").write_text("".join(t + "\n" for _, t in pairs))
    sources = [s for s, _ in toy_pairs(6, seed=12)]
    (tmp_path / "in").write_text("".join(s + "\n" for s in sources))
    assert main(["shortlist", "--checkpoint", str(toy_model), "--src",
                 str(tmp_path / "train.src"), "--tgt", str(tmp_path / "train.tgt"),
                 "-o", str(tmp_path / "short.safetensors")]) == 0
    outs = []
    for extra in ([], ["--shortlist", str(tmp_path / "short.safetensors")]):
        assert main(["translate", "--checkpoint", str(toy_model), "--no-compile",
                     "-i", str(tmp_path / "in"), "-o", str(tmp_path / "out"), *extra]) == 0
        outs.append((tmp_path / "out").read_text())
    assert outs[0] == outs[1]  # the toy task's tokens are all in the shortlist
    fails(capsys, ["translate", "--checkpoint", str(tiny_checkpoint), "--shortlist",
                   str(tmp_path / "short.safetensors"), "-i", str(tmp_path / "in")],
          "was built for another vocabulary")
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--shortlist",
                   str(tmp_path / "missing"), "-i", str(tmp_path / "in")], "no such file")
    (tmp_path / "bad").write_bytes(b"not safetensors")
    fails(capsys, ["evaluate", "--checkpoint", str(toy_model), "--shortlist",
                   str(tmp_path / "bad"), "--src", str(tmp_path / "in"), "--ref",
                   str(tmp_path / "in")], "not a shortlist file")


def test_the_server_decodes_over_its_models_shortlist(toy_model, tiny_checkpoint, tmp_path,
                                                      capsys):
    from aiayn.translate import load
    from tests.serve.server import Server
    # sources paired with other sentences' targets: a shortlist that leaves out tokens the
    # model needs, so that decoding over it visibly differs
    (tmp_path / "train.src").write_text("".join(s + "\n" for s, _ in toy_pairs(300, seed=1)))
    (tmp_path / "train.tgt").write_text("".join(t + "\n" for _, t in toy_pairs(300, seed=2)))
    short = tmp_path / "short.safetensors"
    assert main(["shortlist", "--checkpoint", str(toy_model), "--src",
                 str(tmp_path / "train.src"), "--tgt", str(tmp_path / "train.tgt"),
                 "-o", str(short), "--per-token", "2", "--frequent", "0"]) == 0
    translator = load(toy_model, compile=False)
    sentences = [s for s, _ in toy_pairs(5, seed=13)]
    full = translator.translate(sentences)
    translator.use_shortlist(short)
    expected = translator.translate(sentences)
    assert expected != full
    server = Server(toy_model, "--shortlist", str(short), "--no-compile")
    try:
        status, answer = server.post("/translate", {"q": sentences, "source": "en",
                                                    "target": "es"})
        assert status == 200 and answer["translatedText"] == expected
    finally:
        server.stop()
    fails(capsys, ["serve", "--checkpoint", f"en-es={tiny_checkpoint}", "--shortlist",
                   str(short)], "was built for none of the served models' vocabularies")
