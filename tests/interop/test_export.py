"""aiayn models out: to Hugging Face Marian (same logits) and CTranslate2 (same outputs)."""

import pytest
import torch

from aiayn.errors import UserError
from aiayn.interop.ct2 import export_ctranslate2
from aiayn.interop.marian import export_hf
from aiayn.translate import DecodeOptions, load
from tests.conftest import toy_pairs

transformers = pytest.importorskip("transformers")
QUIET = dict(log=lambda *_: None)


@pytest.fixture
def trained(toy_model):
    return toy_model


SOURCES = [s for s, _ in toy_pairs(50, seed=7)]


def test_hf_export_computes_the_same_logits(trained, tmp_path):
    out = export_hf(trained, tmp_path / "hf", **QUIET)
    hf = transformers.MarianMTModel.from_pretrained(str(out), attn_implementation="eager").eval()
    tok = transformers.MarianTokenizer.from_pretrained(str(out))
    translator = load(trained)
    model, cfg = translator.model, translator.cfg
    batch = tok(SOURCES[:8], return_tensors="pt", padding=True)
    for row, s in enumerate(SOURCES[:8]):
        ids = translator.codec.encode(s).ids
        assert batch.input_ids[row, :len(ids)].tolist() == ids
    targets = [translator.translate([s])[0] for s in SOURCES[:8]]
    tgt = tok(text_target=targets, return_tensors="pt", padding=True).input_ids
    tgt_in = torch.cat([torch.full((8, 1), cfg.start_id), tgt[:, :-1]], 1)
    tgt_in[tgt_in == cfg.eos_id] = cfg.pad_id  # pads after the last token, as aiayn's batches
    with torch.no_grad():
        theirs = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                    decoder_input_ids=tgt_in).logits
        ours = model(batch.input_ids, tgt_in)
    real = torch.cat([torch.ones(8, 1, dtype=torch.bool), tgt[:, :-1] != cfg.pad_id], 1)
    assert (ours[real] - theirs[real]).abs().max() < 1e-4
    assert hf.config.decoder_start_token_id == cfg.bos_id


def test_ctranslate2_export_decodes_the_same_tokens(trained, tmp_path):
    ctranslate2 = pytest.importorskip("ctranslate2")
    translator = load(trained)
    pieces = [translator.tokenizer.sp.EncodeAsPieces(s) for s in SOURCES]
    sources = [translator.codec.encode(s).ids for s in SOURCES]
    agreement, limit = {}, 39  # CTranslate2's length limit, EOS not counted
    for quantization in (None, "int8"):
        out = export_ctranslate2(trained, tmp_path / f"ct2-{quantization}",
                                 quantization=quantization, **QUIET)
        ct = ctranslate2.Translator(str(out), device="cpu", compute_type="default")
        for beam in (1, 4):
            # CTranslate2's beam search stops as aiayn's does, with the |Y|^alpha penalty
            options = DecodeOptions(beam=beam, lenpen=1.0, lenpen_form="hf", max_len_a=0,
                                    max_len_b=limit + 1)
            ours = [h[0].tokens for h in translator.translate_ids(sources, options)]
            results = ct.translate_batch(pieces, beam_size=beam, length_penalty=1.0,
                                         max_decoding_length=limit, return_scores=True)
            theirs = [[translator.tokenizer.sp.PieceToId(p) for p in r.hypotheses[0]]
                      for r in results]
            agreement[quantization, beam] = sum(a == b for a, b in zip(ours, theirs))
            if quantization is None:  # the exported model's probabilities are ours
                scored = translator.score_ids(sources, theirs, options)
                # (an output cut at the limit has no EOS in CTranslate2's score, one in ours;
                # the two float32 implementations part by up to ~1e-3 a token)
                assert all(abs(r.scores[0] - s.normalized) < 2e-3
                           for r, s, t in zip(results, scored, theirs) if len(t) < limit)
    assert sum(len(t) for t in ours) > 300  # real outputs, ended by EOS
    assert agreement[None, 1] == 50, agreement
    # at beam 4 the two searches count finished hypotheses differently on rare sentences
    # (a short, improbable output that ends early counts towards aiayn's stop, not towards
    # CTranslate2's), so they may part on one or two of 50
    assert agreement[None, 4] >= 48, agreement
    print(f"int8 agreement: greedy {agreement['int8', 1]}/50, beam 4 {agreement['int8', 4]}/50")


def test_export_refuses_an_existing_folder_and_what_marian_cannot_hold(trained, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    for export in (export_hf, export_ctranslate2):
        with pytest.raises(UserError, match="already exists; choose another --out"):
            export(trained, tmp_path / "taken", **QUIET)
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
