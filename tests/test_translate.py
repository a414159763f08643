import pytest
import torch

from aiayn.codec import join
from aiayn.runtime.cpu import Int8Linear
from aiayn.translate import DecodeOptions, load


def test_translations_come_back_in_input_order(tiny_checkpoint):
    translator = load(tiny_checkpoint)
    sentences = ["alpha beta gamma delta epsilon", "pi", "rho sigma", "tau upsilon phi chi psi"]
    # several small batches
    together = translator.translate(sentences, DecodeOptions(beam=2, batch_tokens=8))
    alone = [translator.translate([s], DecodeOptions(beam=2))[0] for s in sentences]
    assert together == alone


def test_empty_lines_give_empty_translations(tiny_checkpoint):
    out = load(tiny_checkpoint).translate(["", "alpha", "   "], DecodeOptions(beam=2))
    assert out[0] == "" and out[2] == "" and len(out) == 3


def test_a_sentence_past_the_limit_is_translated_in_pieces_cut_between_words(tiny_checkpoint):
    translator = load(tiny_checkpoint)  # max_len 64
    warnings = []
    translator.codec.warn = warnings.append
    sentence = " ".join(["omega alpha"] * 100)  # no sentence boundary to split at
    pieces = translator.codec.encode_text(sentence, 7)
    assert len(pieces) > 1 and all(len(p.ids) <= 64 for p in pieces)
    assert " ".join(p.text for p in pieces).split() == sentence.split()  # nothing dropped
    assert len(warnings) == 1 and warnings[0].startswith("line 7: a sentence of")
    done = []
    out = translator.translate([sentence], DecodeOptions(beam=1), on_batch=done.append)
    assert out == [join(translator.translate([p.text for p in pieces], DecodeOptions(beam=1)))]
    assert sum(done) == pytest.approx(1)  # progress counts the line, not its pieces
    # a word longer than the model reads alone is cut between characters, not dropped
    word = "x" * 500
    assert "".join(p.text for p in translator.codec.encode_text(word)) == word


def test_nbest_lists_are_sorted_with_scores(tiny_checkpoint):
    out = load(tiny_checkpoint).translate(["alpha beta", "gamma"],
                                          DecodeOptions(beam=4, nbest=3))
    for hyps in out:
        assert len(hyps) == 3
        scores = [s for _, s in hyps]
        assert scores == sorted(scores, reverse=True)


def test_int8_translator_quantizes_every_linear_layer_and_translates(tiny_checkpoint):
    fp32, int8 = load(tiny_checkpoint), load(tiny_checkpoint, int8=True)
    linears = [m for m in int8.model.modules() if isinstance(m, torch.nn.Linear)]
    quantized = [m for m in int8.model.modules() if isinstance(m, Int8Linear)]
    assert not linears and len(quantized) == 2 * 4 + 2 * 7 + 1  # every projection, output too
    src = torch.tensor([[10, 11, 12, 3]])
    with torch.no_grad():
        a = fp32.model(src, torch.tensor([[2, 13, 14]]))
        b = int8.model(src, torch.tensor([[2, 13, 14]]))
    assert (a - b).abs().max() < 0.1 * a.abs().max()  # close, not equal
    assert len(int8.translate(["alpha beta", "gamma"], DecodeOptions(beam=2))) == 2


def test_source_auto_picks_the_model_of_each_line_language(toy_model, tmp_path, capsys):
    from aiayn import Transformer
    from aiayn import checkpoint as ckpt
    from aiayn.checkpoint import Checkpoint
    from aiayn.cli import main
    from aiayn.translate import load
    from tests.test_cli import fails
    toy = Checkpoint.open(toy_model)
    torch.manual_seed(1)
    other = Transformer(toy.config)  # untrained: its outputs differ from the toy model's
    german = ckpt.save_checkpoint(tmp_path / "de", "step_0000001", other, toy.config,
                                  toy.tokenizer, languages={"source": "de", "target": "es"})
    lines = ["This is a small house and the dog sleeps in the garden.",
             "Das ist ein kleines Haus und der Hund schläft im Garten.", "",
             "Where is the station, please?"]
    (tmp_path / "in").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert main(["translate", "--checkpoint", str(toy_model), "--checkpoint", str(german),
                 "--source", "auto", "--no-compile", "-i", str(tmp_path / "in"),
                 "-o", str(tmp_path / "out")]) == 0
    english, de = load(toy_model, compile=False), load(german, compile=False)
    expected = [english.translate([lines[0]])[0], de.translate([lines[1]])[0], "",
                english.translate([lines[3]])[0]]
    assert (tmp_path / "out").read_text(encoding="utf-8").splitlines() == expected
    assert expected[0] != de.translate([lines[0]])[0]
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--checkpoint", str(german),
                   "--source", "fr", "-i", str(tmp_path / "in")],
          "--source fr: no --checkpoint reads it (they read de, en)")
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--checkpoint", str(toy_model),
                   "--source", "auto", "-i", str(tmp_path / "in")],
          "two --checkpoint models read en")
