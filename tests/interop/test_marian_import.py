"""Importing Hugging Face Marian (OPUS-MT) folders: the imported model computes what
``MarianMTModel`` computes, and tokenizes as ``MarianTokenizer`` does."""

import pytest
import torch

from aiayn.checkpoint import Checkpoint
from aiayn.interop.marian import import_marian
from tests.interop.marian_folders import LANGUAGE_TOKENS, build, demo_lines, hf_model, transformers

VARIANTS = {
    "shared-swish": dict(activation="swish"),
    "separate-vocabularies": dict(separate=True),
    "relu": dict(activation="relu"),
    "logits-bias": dict(logits_bias=True),
    "language-token": dict(language_tokens=True),
}


def _imported(tmp_path, **options):
    folder = build(tmp_path, **options)
    out = import_marian(folder, tmp_path / "ckpt", log=lambda *_: None)
    model, vocab = Checkpoint.open(out).model().eval(), Checkpoint.open(out).tokenizer
    return folder, model, vocab


def _padded(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.full((len(rows), max(map(len, rows))), pad)
    for i, row in enumerate(rows):
        out[i, :len(row)] = torch.tensor(row)
    return out, (out != pad).long()


@pytest.mark.parametrize("variant", VARIANTS)
def test_imported_logits_equal_marian_s(tmp_path, variant):
    folder, model, vocab = _imported(tmp_path, **VARIANTS[variant])
    hf = hf_model(folder)
    tok = transformers.MarianTokenizer.from_pretrained(str(folder))
    en, es = demo_lines("en", 6, "dev"), demo_lines("es", 6, "dev")
    if variant == "language-token":
        en = [f"{LANGUAGE_TOKENS[i % 2]} {s}" for i, s in enumerate(en)]
    cfg = model.cfg
    src_rows = [vocab.encode(s)[:40] + [cfg.eos_id] for s in en]
    tgt_rows = [[cfg.start_id] + vocab.encode_target(t)[:30] for t in es]
    assert src_rows[0][:-1] == tok(en[0]).input_ids[:-1][:40]
    src, src_mask = _padded(src_rows, cfg.pad_id)
    tgt, tgt_mask = _padded(tgt_rows, cfg.pad_id)
    with torch.no_grad():
        theirs = hf(input_ids=src, attention_mask=src_mask, decoder_input_ids=tgt).logits
        ours = model(src, tgt)
    real = tgt_mask.bool()
    assert (ours[real] - theirs[real]).abs().max() < 1e-4
    if variant == "logits-bias":
        assert cfg.output_bias
    if variant == "separate-vocabularies":
        assert not cfg.share_embeddings and cfg.tgt_vocab_size != cfg.vocab_size


def test_the_departures_are_named_options(tmp_path):
    _, model, _ = _imported(tmp_path, activation="swish", logits_bias=True)
    cfg = model.cfg
    assert (cfg.sinusoid_layout, cfg.activation, cfg.decoder_start) == ("halves", "swish", "pad")
    assert cfg.bos_id is None and cfg.start_id == cfg.pad_id
    assert {"activation=swish", "sinusoid_layout=halves", "output_bias=True",
            "decoder_start=pad"} <= set(cfg.departures())


@pytest.mark.parametrize("separate", [False, True])
def test_tokenization_equals_marian_tokenizer(tmp_path, separate):
    folder = build(tmp_path, separate=separate, language_tokens=not separate)
    out = import_marian(folder, tmp_path / "ckpt", log=lambda *_: None)
    vocab = Checkpoint.open(out).tokenizer
    tok = transformers.MarianTokenizer.from_pretrained(str(folder))
    en, es = demo_lines("en", 200, "dev"), demo_lines("es", 200, "dev")
    # characters neither vocabulary has seen, and a language token at the start
    en[:3] = ["Ω≈ç√∫ unseen ☃ snowman", "日本語のテキスト", "emoji 🙂 and ß"]
    if not separate:
        en[3] = ">>spa<< " + en[3]
    for s, t in zip(en, es):
        assert vocab.encode(s) + [vocab.eos_id] == tok(s).input_ids
        assert vocab.encode_target(t) + [vocab.eos_id] == tok(text_target=t).input_ids
        ids = vocab.encode_target(t)
        assert vocab.decode(ids) == tok.decode(ids, skip_special_tokens=True)
    assert any(vocab.unk_id in vocab.encode(s) for s in en[:3])
