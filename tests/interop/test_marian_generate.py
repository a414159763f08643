"""Decoding an imported Marian model reproduces Hugging Face ``generate`` token for token."""

import pytest
import torch

from aiayn.checkpoint import Checkpoint
from aiayn.interop.marian import import_marian
from aiayn.translate import DecodeOptions, Translator
from tests.interop.marian_folders import build, demo_lines, hf_model, transformers

MAX_LENGTH = 24


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    """A Marian folder whose random weights are large enough for clear decisions, imported."""
    root = tmp_path_factory.mktemp("marian-generate")
    folder = build(root, init_std=0.2, seed=3)
    out = import_marian(folder, root / "ckpt", log=lambda *_: None)
    translator = Translator(Checkpoint.open(out).model(), Checkpoint.open(out).tokenizer)
    return folder, translator


def _generate(hf, tok, sentences: list[str], **kwargs) -> list[list[int]]:
    """generate() on mixed-length batches of 10, returning tokens without start, EOS and pad."""
    out = []
    for i in range(0, len(sentences), 10):
        batch = tok(sentences[i:i + 10], return_tensors="pt", padding=True)
        with torch.no_grad():
            ids = hf.generate(**batch, max_length=MAX_LENGTH, do_sample=False,
                              bad_words_ids=[[hf.config.pad_token_id]], **kwargs)
        for row in ids.tolist():
            out.append([t for t in row[1:] if t not in (hf.config.pad_token_id,
                                                          hf.config.eos_token_id)])
    return out


@pytest.mark.parametrize("beam,lenpen", [(1, 1.0), (4, 1.0), (4, 0.6)])
def test_outputs_equal_generate(marian, beam, lenpen):
    folder, translator = marian
    hf, tok = hf_model(folder), transformers.MarianTokenizer.from_pretrained(str(folder))
    # 50 sentences that fit the tiny model's 128 positions
    sentences = [s for s in demo_lines("en", 400, "dev") if len(tok(s).input_ids) <= 60][:50]
    assert len(sentences) == 50
    theirs = _generate(hf, tok, sentences, num_beams=beam, length_penalty=lenpen,
                       early_stopping=False)
    options = DecodeOptions(beam=beam, lenpen=lenpen, lenpen_form="hf", beam_rules="hf",
                            max_len_a=0.0, max_len_b=MAX_LENGTH - 1, batch_tokens=600)
    sources = [translator.codec.encode(s).ids for s in sentences]
    ours = [h[0].tokens for h in translator.translate_ids(sources, options)]
    assert sum(len(t) for t in ours) > 100  # the outputs are not trivially empty
    assert ours == theirs
