"""Encoder classifiers end to end: prepare text<TAB>label, train --arch encoder --task
classify with the same loop, checkpoints and resume as translation, classify lines."""

import random

import pytest
import torch
from safetensors.torch import load_file

from aiayn import checkpoint as ckpt
from aiayn.classify import Classifier
from aiayn.cli import main
from aiayn.config import ConfigError
from aiayn.data.prepare import TextPair, prepare
from aiayn.errors import UserError
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from tests.conftest import WORDS, losses

QUIET = dict(progress=False, log=lambda *_: None)


def contains_omega(n: int, seed: int) -> list[tuple[str, str]]:
    """Does the sentence contain the word "omega"? Half of them do."""
    rng = random.Random(seed)
    others = [w for w in WORDS if w != "omega"]
    rows = []
    for i in range(n):
        words = [rng.choice(others) for _ in range(rng.randint(2, 8))]
        if i % 2:
            words.insert(rng.randrange(len(words) + 1), "omega")
        rows.append((" ".join(words), "yes" if i % 2 else "no"))
    return rows


def write_tsv(path, rows) -> TextPair:
    path.write_text("".join(f"{text}\t{label}\n" for text, label in rows))
    return TextPair(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("classify")
    prepare(write_tsv(root / "train.tsv", contains_omega(800, 1)), root / "data",
            valid=write_tsv(root / "valid.tsv", contains_omega(200, 2)), vocab_size=60,
            task="classify", log=lambda *_: None)
    return root / "data"


def _cfg(**kw) -> TrainConfig:
    return TrainConfig(arch="encoder", task="classify", preset="tiny",
                       model={"dropout": 0.1, "d_model": 64, "d_ff": 128}, max_tokens=1200,
                       warmup=40, valid_every=20, log_every=1, **kw)


def test_a_classifier_learns_a_synthetic_task(data, tmp_path):
    summary = train(data, tmp_path / "run", _cfg(max_steps=120), **QUIET)
    assert summary["best"]["valid_accuracy"] >= 0.99
    assert summary["best"]["valid_f1"] >= 0.99
    texts = ["alpha omega beta", "alpha beta gamma", "omega", "delta delta"]
    labels = [label for label, _ in Classifier.load(tmp_path / "run").classify(texts)]
    assert labels == ["yes", "no", "yes", "no"]
    source = tmp_path / "texts.txt"
    source.write_text("\n".join(texts) + "\n")
    assert main(["classify", "--checkpoint", str(tmp_path / "run"), "-i", str(source),
                 "-o", str(tmp_path / "labels.txt")]) == 0
    lines = (tmp_path / "labels.txt").read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == labels


def test_classifier_training_resumes_exactly(data, tmp_path):
    paper = dict(schedule="paper")  # (the runs' budgets differ)
    train(data, tmp_path / "whole", _cfg(max_steps=30, **paper), **QUIET)
    train(data, tmp_path / "split", _cfg(max_steps=12, **paper), **QUIET)
    train(data, tmp_path / "split", _cfg(max_steps=30, **paper), resume=True, **QUIET)
    assert losses(tmp_path / "whole") == losses(tmp_path / "split")
    a = load_file(str(tmp_path / "whole/checkpoints/last" / ckpt.WEIGHTS))
    b = load_file(str(tmp_path / "split/checkpoints/last" / ckpt.WEIGHTS))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_classification_mistakes_are_one_line_errors(data, toy_data, tmp_path):
    rows = contains_omega(20, 3)
    broken = tmp_path / "broken.tsv"
    broken.write_text("".join(f"{t}\t{label}\n" for t, label in rows) + "alpha beta\t\n")
    with pytest.raises(UserError, match="line 21 has no label"):
        prepare(TextPair(broken), tmp_path / "out", vocab_size=40, task="classify",
                log=lambda *_: None)
    assert not (tmp_path / "out").exists()
    with pytest.raises(UserError, match="not prepared for classification"):
        train(toy_data, tmp_path / "run", _cfg(max_steps=2), **QUIET)
    with pytest.raises(UserError, match="prepared for classification"):
        train(data, tmp_path / "run2", TrainConfig(preset="tiny", max_steps=2), **QUIET)
    with pytest.raises(ConfigError, match="--arch encoder goes with --task classify"):
        TrainConfig(arch="encoder")
