"""Placeholder protection: every form is found, masked to a sentinel that is one piece, and put
back; prepared data and checkpoints carry the setting, and translation restores the source's
placeholders whatever the model writes."""

import json

import pytest

from aiayn import placeholders
from aiayn.checkpoint import Checkpoint
from aiayn.data.prepare import TextPair, prepare
from aiayn.data.tokenizer import Tokenizer
from aiayn.translate import DecodeOptions, Translator
from tests.conftest import write_pairs

FORMS = ["%s", "%d", "%1$d", "%2$s", "%-10.3f", "%qs", "%lu", "%.*s", "%(name)s", "%%", "%H",
         "%1", "{0}", "{name}", "{}", "${name}", "<b>", "</b>", "<br/>", '<a href="x.html">',
         "&amp;", "&#39;", "&#x27;", "%{count}", "{{name}}", "%@", "%#@files@", "$name",
         ":seconds", "@:menu.file", "@.lower:(menu.file)", "<start-point>", "<file_name>",
         "<my-element>"]


@pytest.mark.parametrize("form", FORMS)
def test_every_form_round_trips(form):
    source = f"Delete {form} now"
    target = f"Jetzt {form} löschen"
    masked_source, masked_target, found = placeholders.mask(source, target)
    assert found == [form]
    assert masked_source == "Delete ⟦1⟧ now" and masked_target == "Jetzt ⟦1⟧ löschen"
    assert placeholders.restore(masked_target, found) == target
    assert placeholders.kept(source, placeholders.restore(masked_target, found))


def test_plain_text_is_left_alone():
    for text in ("100% sure", "50 % off", "a < b > c", "R&D and AT&T", "{ not a field }",
                 "a <-> b", "x <- y -> z",
                 "costs $5", "at 10:30", "Note: see", "https://x.org", "Error:Disk",
                 "mail me@home"):
        assert placeholders.find(text) == [], text


def test_repeated_placeholders_are_numbered_in_order_and_matched_by_text():
    source, target, found = placeholders.mask("%s of %d in %s", "%d von %s in %s")
    assert source == "⟦1⟧ of ⟦2⟧ in ⟦3⟧" and target == "⟦2⟧ von ⟦1⟧ in ⟦3⟧"
    assert found == ["%s", "%d", "%s"]
    # a target placeholder the source lacks stays text
    assert placeholders.mask("%s", "%s %d")[1] == "⟦1⟧ %d"


def test_restore_repairs_what_the_model_lost_or_repeated():
    found = ["%s", "<b>", "</b>"]
    assert placeholders.restore("⟦2⟧Datei⟦3⟧ ⟦1⟧", found) == "<b>Datei</b> %s"
    assert placeholders.restore("⟦2⟧Datei ⟦2⟧", found) == "<b>Datei %s </b>"
    assert placeholders.restore("Datei ⟦7⟧ ⟦1⟧", found) == "Datei %s <b> </b>"
    assert placeholders.restore("Datei", []) == "Datei"
    for output in ("", "⟦1⟧", "⟦3⟧ ⟦3⟧ ⟦3⟧", "x ⟦9⟧ y", "<Größe> %d ⟦2⟧"):
        assert placeholders.kept("%s <b> </b>", placeholders.restore(output, found))


def test_a_lost_placeholder_takes_the_place_of_a_stray_one_of_its_kind():
    # the model translated a meta-variable instead of moving its sentinel
    assert placeholders.restore("Speicher <Zahl> in MB", ["<size>"]) == "Speicher <size> in MB"
    # kinds match: the lost %s replaces %d, the lost <b> the stray <i>; {0} has no stray: appended
    assert (placeholders.restore("<i>Datei</i> %d", ["%s", "<b>", "</b>", "{0}"])
            == "<b>Datei</b> %s {0}")
    # a placeholder of the source that the output holds as text is not a stray
    assert placeholders.restore("<b> ⟦1⟧", ["<b>", "<b>"]) == "<b> <b>"


# software strings with a printf placeholder, a brace field and markup in every line
PAIRS = [(f"Open %s file {i} in <b>{'{0}'}</b>", f"Datei {i} %s in <b>{'{0}'}</b> öffnen")
         for i in range(150)]


def test_sentences_are_split_around_placeholders_never_through_them():
    """printf's %.*s and %.2f hold a full stop, after which sentencex ends a sentence: the
    text codec's splitting (the server's, --split-sentences, --file) and the markup path's
    keep each placeholder whole."""
    from sentencex import segment

    from aiayn.codec import sentences
    from aiayn.markup import Document
    line = "MSDOS end of file in field name '%.*s'. Rate: %.2f%% of %s. Done."
    assert any("%.*s" not in piece and "%." in piece for piece in segment("en", line))
    assert sentences(line, "en") == ["MSDOS end of file in field name '%.*s'.",
                                     "Rate: %.2f%% of %s.", "Done."]
    assert Document(f"<p>{line}</p>", "html", language="en").sources == \
        sentences(line, "en")


def test_prepared_data_protects_placeholders_as_single_pieces(tmp_path):
    pairs = PAIRS
    src, tgt = write_pairs(tmp_path, "train", pairs)
    stats = prepare(TextPair(src, tgt), tmp_path / "data", valid=TextPair(src, tgt),
                    vocab_size=120, protect_placeholders=True, log=lambda *_: None)
    assert stats["placeholders"] is True
    vocab = Tokenizer.load(tmp_path / "data" / "spm.model")
    for sentinel in placeholders.SENTINELS:
        assert sentinel in vocab.pieces(vocab.encode(f"x {sentinel} y"))
    ids = vocab.encode(placeholders.mask(pairs[0][0])[0])
    assert [p for p in vocab.pieces(ids) if "⟦" in p] == ["⟦1⟧", "⟦2⟧", "⟦3⟧", "⟦4⟧"]
    # the validation references stay raw text: BLEU compares with what users wrote
    assert (tmp_path / "data" / "valid.tgt.txt").read_text().splitlines()[0] == pairs[0][1]
    assert json.loads((tmp_path / "data" / "stats.json").read_text())["placeholders"]


def test_translation_restores_the_sources_placeholders(tiny_checkpoint, monkeypatch):
    """Whatever the model writes (here: one sentinel swapped, one repeated, one lost), the
    translation holds the source's placeholders."""
    translator = Translator(Checkpoint.open(tiny_checkpoint).model(),
                            Checkpoint.open(tiny_checkpoint).tokenizer, placeholders=True)
    def fake_decode(tokens):
        return "⟦2⟧ Datei ⟦1⟧ ⟦1⟧"
    monkeypatch.setattr(translator.tokenizer, "decode", fake_decode)
    out = translator.translate(["Open %s in {0} as %d", "plain"], DecodeOptions(beam=1))
    assert out[0] == "{0} Datei %s %d"
    assert placeholders.kept("Open %s in {0} as %d", out[0])
    assert out[1] == "Datei"  # sentinels of a source without placeholders are dropped


def test_checkpoints_of_protected_data_translate_with_protection(tmp_path):
    from aiayn.evaluate import evaluate
    from aiayn.train.recipe import TrainConfig
    from aiayn.train.trainer import train
    from tests.conftest import FAST
    pairs = PAIRS
    src, tgt = write_pairs(tmp_path, "train", pairs)
    prepare(TextPair(src, tgt), tmp_path / "data", valid=TextPair(src, tgt), vocab_size=120,
            protect_placeholders=True, log=lambda *_: None)
    train(tmp_path / "data", tmp_path / "run", TrainConfig(**FAST, max_steps=4),
          progress=False, log=lambda *_: None)
    assert Checkpoint.open(tmp_path / "run").placeholders
    sources = [s for s, _ in pairs[:10]]
    result = evaluate(tmp_path / "run", sources, [t for _, t in pairs[:10]],
                      DecodeOptions(beam=2, max_len_b=10))
    assert result["placeholders_kept"] == 1.0 and result["placeholder_sentences"] == 10


def test_fine_tuning_data_keeps_protection_with_the_checkpoint_s_vocabulary(tmp_path,
                                                                             tiny_checkpoint):
    """`prepare --tokenizer CKPT --placeholders`: new pairs for a model trained with
    protection are encoded as its own data was; a vocabulary without the sentinels is
    refused with one line, and nothing is written."""
    from aiayn.data.corpus import ParallelCorpus
    from aiayn.errors import UserError
    src, tgt = write_pairs(tmp_path, "train", PAIRS)
    prepare(TextPair(src, tgt), tmp_path / "data", vocab_size=120, protect_placeholders=True,
            log=lambda *_: None)
    vocab = Tokenizer.load(tmp_path / "data" / "spm.model")
    stats = prepare(TextPair(src, tgt), tmp_path / "tuning", tokenizer=vocab,
                    tokenizer_name="the run", protect_placeholders=True, log=lambda *_: None)
    assert stats["placeholders"] is True
    before = ParallelCorpus(tmp_path / "data", "train")
    after = ParallelCorpus(tmp_path / "tuning", "train")
    assert all((before.ids(side, i) == after.ids(side, i)).all() for side in ("src", "tgt")
               for i in range(len(PAIRS)))
    plain = Checkpoint.open(tiny_checkpoint).tokenizer
    with pytest.raises(UserError, match="--placeholders: the vocabulary of the toy model has "
                                        "no placeholder sentinels"):
        prepare(TextPair(src, tgt), tmp_path / "refused", tokenizer=plain,
                tokenizer_name="the toy model", protect_placeholders=True, log=lambda *_: None)
    assert not (tmp_path / "refused").exists()
