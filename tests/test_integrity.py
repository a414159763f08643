"""Integrity: every checkpoint and data directory records its files' SHA-256; a flipped byte
is named when the file is loaded, and `aiayn check` finds it."""

import shutil

import pytest

from aiayn import checkpoint as ckpt
from aiayn.cli import main
from aiayn.data.corpus import ParallelCorpus, ids_file
from aiayn.errors import UserError
from aiayn.translate import load


def flip(path, offset: int = -100) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.fixture
def copies(toy_model, toy_data, tmp_path):
    checkpoint, data = tmp_path / "ckpt", tmp_path / "data"
    shutil.copytree(toy_model, checkpoint)
    shutil.copytree(toy_data, data)
    return checkpoint, data


def _check_fails(capsys, directory, name) -> None:
    capsys.readouterr()
    assert main(["check", str(directory)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aiayn: error:") and name in err and "SHA-256" in err


def test_a_flipped_byte_in_the_weights_is_named(copies, capsys):
    checkpoint, _ = copies
    assert main(["check", str(checkpoint)]) == 0
    assert "ok" in capsys.readouterr().out
    flip(checkpoint / ckpt.WEIGHTS)
    with pytest.raises(UserError, match=r"model.safetensors: its SHA-256 differs"):
        load(checkpoint)
    _check_fails(capsys, checkpoint, "model.safetensors")


def test_a_flipped_byte_in_the_tokenizer_is_named(copies, capsys):
    checkpoint, _ = copies
    flip(checkpoint / "tokenizer.model", 200)
    with pytest.raises(UserError, match=r"tokenizer.model: its SHA-256 differs"):
        load(checkpoint)
    _check_fails(capsys, checkpoint, "tokenizer.model")


def test_a_flipped_byte_in_prepared_data_is_named(copies, capsys):
    _, data = copies
    flip(data / ids_file("train", "src"))
    with pytest.raises(UserError, match=r"train.src.ids.npy: its SHA-256 differs"):
        ParallelCorpus(data, "train")
    _check_fails(capsys, data, "train.src.ids.npy")


def test_a_truncated_file_is_named_by_its_size(copies):
    checkpoint, _ = copies
    weights = checkpoint / ckpt.WEIGHTS
    weights.write_bytes(weights.read_bytes()[:-10])
    with pytest.raises(UserError, match=r"bytes where .* were written"):
        load(checkpoint)


def test_check_walks_every_checkpoint_of_a_run(toy_model, capsys):
    run = toy_model.parent.parent  # RUN/checkpoints/step_N
    assert main(["check", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.count("ok ") == len([p for p in (run / "checkpoints").iterdir()
                                    if p.is_dir() and not p.is_symlink()])


def test_check_of_something_it_cannot_check_is_an_error_not_an_ok(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x\n")
    assert main(["check", str(tmp_path / "empty")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"aiayn: error: {tmp_path / 'empty'}: not a run, a checkpoint or a prepared data "
        "directory (no checkpoints/, model.safetensors or stats.json); nothing to check")
    assert main(["check", str(tmp_path / "notes.txt")]) == 2
    assert "is a file; give a run, a checkpoint or a prepared data directory" in \
        capsys.readouterr().err
