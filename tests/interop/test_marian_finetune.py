"""Fine-tuning an imported Marian model: `prepare --tokenizer`, `train --init`, exact resume."""

import pytest
import torch
from safetensors.torch import load_file

from aiayn import checkpoint as ckpt
from aiayn.checkpoint import Checkpoint
from aiayn.data.corpus import ParallelCorpus
from aiayn.data.prepare import TextPair, prepare
from aiayn.data.tokenizer import load_tokenizer
from aiayn.errors import UserError
from aiayn.interop.marian import import_marian
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from aiayn.train.validation import evaluate_loss
from tests.conftest import losses
from tests.interop.marian_folders import build, demo_lines

QUIET = dict(progress=False, log=lambda *_: None)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """An imported tiny Marian model and 2,000 demo pairs prepared with its vocabulary."""
    root = tmp_path_factory.mktemp("finetune")
    model = import_marian(build(root), root / "ckpt", log=lambda *_: None)
    pairs = {}
    for split, count in (("train", 2000), ("dev", 100)):
        for side in ("en", "es"):
            path = root / f"{split}.{side}"
            path.write_text("\n".join(demo_lines(side, count, split)) + "\n")
            pairs[split, side] = path
    data = root / "data"
    prepare(TextPair(pairs["train", "en"], pairs["train", "es"]), data,
            valid=TextPair(pairs["dev", "en"], pairs["dev", "es"]), max_len=120,
            tokenizer=Checkpoint.open(model).tokenizer, tokenizer_name=str(model),
            log=lambda *_: None)
    return model, data


def _cfg(model, **kw):
    return TrainConfig(init=str(model), max_tokens=1500, warmup=20, lr_scale=2.0,
                       valid_every=10, log_every=1, valid_bleu_sentences=0, **kw)


def test_prepared_ids_are_the_checkpoint_s(imported):
    model, data = imported
    vocab = Checkpoint.open(model).tokenizer
    first = demo_lines("en", 1, "train")[0]
    assert ParallelCorpus(data, "train").ids("src", 0).tolist() == vocab.encode(first)
    assert load_tokenizer(data).fingerprint() == vocab.fingerprint()


def test_fine_tuning_lowers_the_dev_loss(imported, tmp_path):
    model, data = imported
    cfg = _cfg(model, max_steps=30)
    before = evaluate_loss(Checkpoint.open(model).model(), ParallelCorpus(data, "valid"), cfg,
                           torch.device("cpu"))["valid_loss"]
    summary = train(data, tmp_path / "run", cfg, **QUIET)
    assert summary["last"]["valid_loss"] < before - 0.5


def test_resume_after_init_is_exact(imported, tmp_path):
    model, data = imported
    paper = dict(schedule="paper")  # (the runs' budgets differ)
    train(data, tmp_path / "whole", _cfg(model, max_steps=12, **paper), **QUIET)
    train(data, tmp_path / "split", _cfg(model, max_steps=5, **paper), **QUIET)
    train(data, tmp_path / "split", _cfg(model, max_steps=12, **paper), resume=True, **QUIET)
    assert losses(tmp_path / "whole") == losses(tmp_path / "split")
    a = load_file(str(tmp_path / "whole/checkpoints/last" / ckpt.WEIGHTS))
    b = load_file(str(tmp_path / "split/checkpoints/last" / ckpt.WEIGHTS))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_init_needs_the_checkpoint_s_vocabulary(imported, toy_data, tmp_path):
    model, _ = imported
    with pytest.raises(UserError, match="prepare it with `aiayn prepare --tokenizer"):
        train(toy_data, tmp_path / "run", _cfg(model, max_steps=2), **QUIET)


def test_an_imported_model_gets_an_aligner_and_translates_as_before(imported, tmp_path):
    """`train --aligner-only` on an imported Marian model (its decoder starts from the pad
    id): the new aligner learns the data's links, the imported weights stay as they were."""
    import aiayn
    model, _ = imported
    src, tgt = demo_lines("en", 300, "train"), demo_lines("es", 300, "train")
    for side, lines in (("en", src), ("es", tgt)):
        (tmp_path / f"train.{side}").write_text("\n".join(lines) + "\n")
    (tmp_path / "train.aln").write_text("".join(
        " ".join(f"{i}-{i}" for i in range(min(len(s.split()), len(t.split())))) + "\n"
        for s, t in zip(src, tgt)))
    prepare(TextPair(tmp_path / "train.en", tmp_path / "train.es"), tmp_path / "data",
            max_len=120, tokenizer=Checkpoint.open(model).tokenizer, tokenizer_name=str(model),
            alignments=tmp_path / "train.aln", log=lambda *_: None)
    train(tmp_path / "data", tmp_path / "run",
          _cfg(model, max_steps=8, aligner_only=True, precision="fp32"), **QUIET)
    curve = list(losses(tmp_path / "run").values())
    assert curve[-1] < curve[0]
    before = load_file(str(Checkpoint.open(model).path / ckpt.WEIGHTS))
    after = load_file(str(Checkpoint.open(tmp_path / "run").path / ckpt.WEIGHTS))
    assert all(torch.equal(after[k], v) for k, v in before.items())
    assert Checkpoint.open(tmp_path / "run").config.aligner
    sentences = demo_lines("en", 4, "dev")
    assert aiayn.load(tmp_path / "run").translate(sentences) == \
        aiayn.load(model).translate(sentences)
