"""`aiayn import` and `aiayn export` from the command line: the imported checkpoint works with
every subcommand, and each user mistake is one line with exit code 2, nothing overwritten."""

import json
import shutil

import pytest
import torch

from aiayn import errors
from aiayn.cli import main
from aiayn.errors import UserError
from aiayn.interop import require
from tests.interop.marian_folders import build, demo_lines


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build(tmp_path_factory.mktemp("cli-marian"))


def _fails(capsys, argv: list[str], expected: str) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aiayn: error:") and "\n" not in err and expected in err, err


def test_imported_checkpoint_translates_evaluates_attends(folder, tmp_path, capsys):
    ckpt = str(tmp_path / "ckpt")
    assert main(["import", str(folder), "--out", ckpt]) == 0
    src, ref = tmp_path / "dev.en", tmp_path / "dev.es"
    src.write_text("\n".join(demo_lines("en", 5, "dev")) + "\n")
    ref.write_text("\n".join(demo_lines("es", 5, "dev")) + "\n")
    capsys.readouterr()
    assert main(["translate", "--checkpoint", ckpt, "-i", str(src), "--max-len-a", "0",
                 "--max-len-b", "8"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 5
    assert main(["evaluate", "--checkpoint", ckpt, "--src", str(src), "--ref", str(ref),
                 "--beam", "2", "--max-len-a", "0", "--max-len-b", "8"]) == 0
    assert main(["attend", "--checkpoint", ckpt, "Hello world.",
                 "--out", str(tmp_path / "maps")]) == 0
    assert any((tmp_path / "maps").iterdir())


def test_export_round_trip_from_the_command_line(folder, tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    assert main(["import", str(folder), "--out", str(ckpt)]) == 0
    assert main(["export", str(ckpt), "--to", "hf", "--out", str(tmp_path / "hf")]) == 0
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["model_type"] == "marian"
    _fails(capsys, ["export", str(ckpt), "--to", "hf", "--out", str(tmp_path / "hf")],
           "already exists")
    _fails(capsys, ["export", str(ckpt), "--to", "hf", "--quantization", "int8", "--out",
                    str(tmp_path / "x")], "--quantization applies to --to ctranslate2 only")


def test_import_mistakes_are_one_line_errors(folder, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / "source.spm").unlink()
    _fails(capsys, ["import", str(broken), "--out", str(tmp_path / "a")], "source.spm is missing")

    bart = tmp_path / "bart"
    shutil.copytree(folder, bart)
    config = json.loads((bart / "config.json").read_text())
    (bart / "config.json").write_text(json.dumps({**config, "model_type": "bart"}))
    _fails(capsys, ["import", str(bart), "--out", str(tmp_path / "b")], "not 'marian'")

    pickled = tmp_path / "pickled"
    shutil.copytree(folder, pickled)
    (pickled / "model.safetensors").unlink()
    torch.save({"weight": torch.zeros(2), "hook": UserError("pickled object")},
               pickled / "pytorch_model.bin")
    _fails(capsys, ["import", str(pickled), "--out", str(tmp_path / "c")],
           "cannot be read without running pickled code")

    _fails(capsys, ["import", str(tmp_path / "nowhere"), "--out", str(tmp_path / "d")],
           "no such folder")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("keep")
    _fails(capsys, ["import", str(folder), "--out", str(taken)], "already exists")
    assert (taken / "mine.txt").read_text() == "keep"
    assert not any(p.name.startswith(".tmp") for p in tmp_path.iterdir())


def test_import_reads_a_pickle_free_bin(folder, tmp_path):
    """pytorch_model.bin with tensors only loads through torch.load(weights_only=True)."""
    from safetensors.torch import load_file
    plain = tmp_path / "plain"
    shutil.copytree(folder, plain)
    torch.save(load_file(str(plain / "model.safetensors")), plain / "pytorch_model.bin")
    (plain / "model.safetensors").unlink()
    assert main(["import", str(plain), "--out", str(tmp_path / "ckpt")]) == 0


def test_a_missing_extra_names_it():
    with pytest.raises(UserError, match=r"'interop' extra .*pip install -e '\.\[interop\]'"):
        require("no_such_module_for_aiayn", "export --to hf")
    with pytest.raises(UserError, match=r"^serve needs nothing_here: install aiayn's 'serve' "
                                        r"extra \(in its clone: pip install -e '\.\[serve\]'\)"):
        errors.require("nothing_here", "serve", "serve")
