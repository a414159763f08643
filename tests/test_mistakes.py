"""The catalogue of user mistakes, across every subcommand: each one ends with exit code 2 and
one line on stderr, ``aiayn: error: ...``, that names the thing and says what to do; no
traceback, and every file the user had is as it was."""

import hashlib
import shutil
from pathlib import Path

import pytest

from aiayn.cli import main
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from tests.conftest import FAST


@pytest.fixture(scope="module")
def world(tiny_checkpoint, toy_data, tmp_path_factory) -> Path:
    """A user's directory: a checkpoint, prepared data, a short run, and files good and bad."""
    root = tmp_path_factory.mktemp("user")
    shutil.copytree(tiny_checkpoint, root / "ckpt")
    shutil.copytree(toy_data, root / "data")
    train(root / "data", root / "run", TrainConfig(**{**FAST, "valid_bleu_sentences": 0},
                                                   max_steps=4),
          progress=False, log=lambda *_: None)
    (root / "src.txt").write_text("alpha beta\ngamma delta\nepsilon\n")
    (root / "ref.txt").write_text("BETA ALPHA\nDELTA GAMMA\nEPSILON\n")
    (root / "two.txt").write_text("alpha\nbeta\n")
    (root / "latin1.txt").write_bytes("alpha\nb\xe9ta\n".encode("latin-1"))
    (root / "empty.txt").write_text("")
    (root / "three.tsv").write_text("alpha\tALPHA\textra\n")
    (root / "typo.yaml").write_text("max_tokns: 100\n")
    (root / "broken.yaml").write_text("max_tokens: [1, 2\n")
    (root / "list.yaml").write_text("- 1\n- 2\n")
    (root / "not-a-checkpoint").mkdir()
    (root / "not-a-checkpoint" / "notes.txt").write_text("hello\n")
    shutil.copytree(root / "ckpt", root / "flipped")
    weights = bytearray((root / "flipped" / "model.safetensors").read_bytes())
    weights[-10] ^= 0xFF
    (root / "flipped" / "model.safetensors").write_bytes(bytes(weights))
    (root / "no-metrics").mkdir()
    (root / "marian").mkdir()
    (root / "marian" / "config.json").write_text('{"model_type": "bert"}')
    (root / "taken.txt").write_text("a file the user keeps\n")
    (root / "short.aln").write_text("0-1 1-0\n")
    (root / "bad.aln").write_text("0-1 1:0\n0-0\n0-0\n")
    (root / "far.aln").write_text("0-1 1-0\n0-5\n0-0\n")
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


# (subcommand and arguments, with {w} for the user's directory; what the line must say)
CASES = [
    # prepare
    ("prepare --train-src {w}/nope.txt --train-tgt {w}/ref.txt --out {w}/new",
     "nope.txt: no such file"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/two.txt --out {w}/new", "two.txt"),
    ("prepare --train-src {w}/latin1.txt --train-tgt {w}/two.txt --out {w}/new",
     "latin1.txt: line 2 is not valid UTF-8"),
    ("prepare --train-src {w}/empty.txt --train-tgt {w}/empty.txt --out {w}/new", "empty"),
    ("prepare --train-tsv {w}/three.tsv --out {w}/new", "3 tab-separated columns"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --out {w}/data",
     "already exists and is not empty"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --vocab-size 5 --out {w}/new",
     "--vocab-size (5) is too small"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --max-len 2 --out {w}/new",
     "--max-len (2) must be at least 3"),
    ("prepare --train-tsv {w}/three.tsv --train-src {w}/src.txt --train-tgt {w}/ref.txt "
     "--out {w}/new", "not both"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --src-lang en --out {w}/new",
     "give both --src-lang and --tgt-lang"),
    ("prepare --train-src {w}/data --train-tgt {w}/ref.txt --out {w}/new", "is a directory"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --tokenizer {w}/not-a-checkpoint "
     "--out {w}/new", "not a checkpoint"),
    ("prepare --train-src {w}/src.txt --out {w}/new", "--train-tgt"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --alignments {w}/short.aln "
     "--out {w}/new", "short.aln has 1 lines but the training data has 3"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --alignments {w}/bad.aln "
     "--out {w}/new", "bad.aln: line 1 has '1:0'"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --alignments {w}/far.aln "
     "--out {w}/new", "far.aln: line 2 links 0-5, but the pair has 2 source and 2 target"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --alignments {w}/nope.aln "
     "--out {w}/new", "nope.aln: no such file"),
    # train
    ("train --data {w}/nope --out {w}/new", "nope"),
    ("train --data {w}/not-a-checkpoint --out {w}/new", "not-a-checkpoint"),
    ("train --data {w}/data --out {w}/new --config {w}/typo.yaml", "did you mean 'max_tokens'"),
    ("train --data {w}/data --out {w}/new --config {w}/nope.yaml", "nope.yaml: no such file"),
    ("train --data {w}/data --out {w}/new --config {w}/broken.yaml", "not valid YAML"),
    ("train --data {w}/data --out {w}/new --config {w}/latin1.txt",
     "line 2 is not valid UTF-8"),
    ("train --data {w}/data --out {w}/new --config {w}/data", "data: is a directory; give a"),
    ("train --data {w}/data --out {w}/new --config {w}/list.yaml", "expected a mapping"),
    ("train --data {w}/data --out {w}/new --model norm", "expected KEY=VALUE"),
    ("train --data {w}/data --out {w}/new --model n_head=4", "did you mean 'n_heads'"),
    ("train --data {w}/data --out {w}/new --model norm=sideways", "norm"),
    ("train --data {w}/data --out {w}/run --preset tiny", "already holds checkpoints"),
    ("train --data {w}/data --out {w}/new --resume", "has no checkpoint to resume from"),
    ("train --data {w}/data --out {w}/new --precision fp16 --device cpu", "needs a CUDA device"),
    ("train --data {w}/data --out {w}/new --device cuda", "no CUDA device"),
    ("train --data {w}/data --out {w}/new --init {w}/nope", "no such checkpoint directory"),
    ("train --data {w}/data --out {w}/new --max-tokens 0", "max_tokens (0) must be a positive"),
    ("train --data {w}/data --out {w}/new --arch encoder --task classify",
     "not prepared for classification"),
    ("train --data {w}/data --out {w}/run --resume --preset tiny --model d_model=64",
     "the model differs"),
    # average, plot
    ("average {w}/run --last 0 --out {w}/avg", "--last (0) must be at least 1"),
    ("average {w}/no-metrics --out {w}/avg", "no step checkpoints"),
    ("average {w}/src.txt --out {w}/avg", "src.txt: is a file; give a training run's"),
    ("plot {w}/no-metrics", "metrics.jsonl"),
    ("plot {w}/nope", "nope: no such directory; give a training run's directory"),
    ("plot {w}/src.txt", "src.txt: is a file; give a training run's directory"),
    # translate, score, evaluate
    ("translate --checkpoint {w}/nope --input {w}/src.txt", "no such checkpoint directory"),
    ("translate --checkpoint {w}/not-a-checkpoint --input {w}/src.txt", "not a checkpoint"),
    ("translate --checkpoint {w}/ckpt --input {w}/nope.txt", "nope.txt: no such file"),
    ("translate --checkpoint {w}/ckpt --input {w}/latin1.txt", "line 2 is not valid UTF-8"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --beam 2 --nbest 3", "--nbest"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --beam 0", "--beam"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --prefix-file {w}/two.txt",
     "--prefix-file"),
    ("translate --checkpoint {w}/flipped --input {w}/src.txt", "model.safetensors"),
    ("translate --checkpoint {w}/ckpt --checkpoint {w}/run --input {w}/src.txt --top-k 3",
     "--top-k"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --glossary {w}/src.txt",
     "line 1 has no TAB"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --shortlist {w}/src.txt",
     "not a shortlist file"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --shortlist {w}/data",
     "data: is a directory; give the file `aiayn shortlist` wrote"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --glossary {w}/data",
     "data: is a directory; give a file"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --glossary {w}/latin1.txt",
     "not UTF-8 text"),
    ("translate --checkpoint {w}/ckpt --file {w}/src.txt -o {w}/new.po",
     "give the output the input's extension"),
    ("translate --checkpoint {w}/ckpt --file {w}/empty.txt -o {w}/new.txt", "the file is empty"),
    ("translate --checkpoint {w}/ckpt --file {w}/src.txt -o {w}/data", "data: is a directory"),
    ("translate --checkpoint {w}/ckpt --file {w}/data -o {w}/new.txt",
     "data: is a directory; give a file"),
    ("translate --checkpoint {w}/ckpt --input {w}/data", "data: is a directory; give a file"),
    ("evaluate --checkpoint {w}/ckpt --src {w}/src.txt --ref {w}/data",
     "data: is a directory; give a file"),
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt --format html --nbest 2 --beam 2",
     "--nbest works on text"),
    ("shortlist --checkpoint {w}/ckpt --src {w}/src.txt --tgt {w}/two.txt -o {w}/new",
     "has 3 lines but"),
    ("shortlist --checkpoint {w}/nope --src {w}/src.txt --tgt {w}/ref.txt -o {w}/new",
     "no such checkpoint directory"),
    ("score --checkpoint {w}/ckpt --src {w}/src.txt --tgt {w}/two.txt", "has 3 lines but"),
    ("evaluate --checkpoint {w}/ckpt --src {w}/src.txt --ref {w}/two.txt", "3"),
    # generate, classify, attend
    ("generate --checkpoint {w}/ckpt hello", "decoder-only"),
    ("classify --checkpoint {w}/ckpt --input {w}/src.txt", "classif"),
    ("attend --checkpoint {w}/nope --out {w}/maps alpha", "no such checkpoint directory"),
    # import, export, check, serve
    ("import {w}/nope --out {w}/imported", "nope"),
    ("import {w}/src.txt --out {w}/imported", "src.txt: is a file, not a folder"),
    ("import {w}/marian --out {w}/imported", "bert"),
    ("export {w}/ckpt --to hf --quantization int8 --out {w}/exported",
     "--quantization applies to --to ctranslate2 only"),
    ("export {w}/ckpt --to hf --out {w}/data", "already exists"),
    ("check {w}/nope", "no such directory"),
    ("check {w}/flipped", "model.safetensors"),
    ("serve --checkpoint {w}/ckpt", "language pair is unknown"),
    ("serve --checkpoint en-es={w}/ckpt --api-keys {w}/nope.txt", "nope.txt: no such file"),
    ("serve --checkpoint en-es={w}/ckpt --api-keys {w}/latin1.txt", "line 2 is not valid UTF-8"),
    ("serve --checkpoint en-es={w}/ckpt --api-keys {w}/data", "data: is a directory; give a file"),
    ("serve --checkpoint en-es={w}/ckpt --port 70000", "a port is a number from 0 to 65535"),
    ("serve --checkpoint en-es={w}/ckpt --host 192.0.2.1", "not an address of this machine"),
    # output paths: a file where a directory is expected (and as a directory's parent)
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --out {w}/taken.txt",
     "taken.txt: is a file, not a directory"),
    ("prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --out {w}/taken.txt/data",
     "taken.txt is a file, not a folder"),
    ("train --data {w}/data --out {w}/taken.txt", "taken.txt: is a file, not a directory"),
    ("train --data {w}/data --out {w}/taken.txt/run", "taken.txt is a file, not a folder"),
    ("average {w}/run --out {w}/taken.txt", "taken.txt: is a file, not a directory"),
    ("attend --checkpoint {w}/ckpt --out {w}/taken.txt alpha", "is a file, not a directory"),
    ("import {w}/marian --out {w}/taken.txt", "taken.txt: is a file, not a directory"),
    ("export {w}/ckpt --to hf --out {w}/taken.txt", "taken.txt: is a file, not a directory"),
    ("export {w}/ckpt --to ctranslate2 --out {w}/taken.txt",
     "taken.txt: is a file, not a directory"),
    # ... a directory where a file is expected
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt -o {w}/data", "data: is a directory"),
    ("score --checkpoint {w}/ckpt --src {w}/src.txt --tgt {w}/ref.txt -o {w}/data",
     "data: is a directory"),
    ("classify --checkpoint {w}/ckpt --input {w}/src.txt -o {w}/data", "data: is a directory"),
    ("positions --d-model 8 --length 4 --out {w}/data", "data: is a directory"),
    ("plot {w}/run --out {w}/data", "data: is a directory"),
    # ... a file whose folder does not exist
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt -o {w}/nowhere/out.txt",
     "its folder"),
    ("score --checkpoint {w}/ckpt --src {w}/src.txt --tgt {w}/ref.txt -o {w}/nowhere/s.txt",
     "its folder"),
    ("classify --checkpoint {w}/ckpt --input {w}/src.txt -o {w}/nowhere/c.txt", "its folder"),
    ("positions --d-model 8 --length 4 --out {w}/nowhere/pe.png", "its folder"),
    ("plot {w}/run --out {w}/nowhere/curves.png", "its folder"),
    # ... an output that is an input
    ("translate --checkpoint {w}/ckpt --input {w}/src.txt -o {w}/src.txt", "also an input"),
    ("score --checkpoint {w}/ckpt --src {w}/src.txt --tgt {w}/ref.txt -o {w}/ref.txt",
     "also an input"),
    ("classify --checkpoint {w}/ckpt --input {w}/src.txt -o {w}/src.txt", "also an input"),
    # flags argparse checks
    ("translate --checkpoint {w}/ckpt --beam two", "--beam"),
    ("train --data {w}/data --out {w}/new --precision fp8", "--precision"),
    ("frobnicate", "frobnicate"),
]


@pytest.mark.parametrize("command,says", CASES, ids=[c[0].split()[0] + f"-{i}"
                                                     for i, c in enumerate(CASES)])
def test_a_mistake_is_one_line_exit_2_and_nothing_lost(world, capsys, command, says):
    before = snapshot(world)
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(main(command.replace("{w}", str(world)).split()))
    err = capsys.readouterr().err.strip()
    assert exited.value.code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("aiayn") and ": error: " in err and "Traceback" not in err, err
    assert says in err, err
    assert snapshot(world) == before
    for leftover in ("new", "avg", "imported", "exported", "maps", "nowhere"):
        assert not (world / leftover).exists()


def test_the_catalogue_covers_every_subcommand():
    from aiayn.cli import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    covered = {c[0].split()[0] for c in CASES}
    assert set(sub.choices) <= covered
    assert len(CASES) >= 60


# every writing command, its output in {w}/locked, a folder this process may not write to
# (simulated: the tests may run as root, whom permissions do not stop)
UNWRITABLE = [
    "prepare --train-src {w}/src.txt --train-tgt {w}/ref.txt --out {w}/locked/data",
    "train --data {w}/data --out {w}/locked/run",
    "average {w}/run --out {w}/locked/avg",
    "attend --checkpoint {w}/ckpt --out {w}/locked/maps alpha",
    "import {w}/marian --out {w}/locked/imported",
    "export {w}/ckpt --to hf --out {w}/locked/exported",
    "translate --checkpoint {w}/ckpt --input {w}/src.txt -o {w}/locked/out.txt",
    "score --checkpoint {w}/ckpt --src {w}/src.txt --tgt {w}/ref.txt -o {w}/locked/s.txt",
    "classify --checkpoint {w}/ckpt --input {w}/src.txt -o {w}/locked/c.txt",
    "positions --d-model 8 --length 4 --out {w}/locked/pe.png",
    "plot {w}/run --out {w}/locked/curves.png",
]


@pytest.mark.parametrize("command", UNWRITABLE, ids=[c.split()[0] for c in UNWRITABLE])
def test_an_unwritable_output_is_one_line_before_any_work(world, capsys, monkeypatch, command):
    import os
    locked = world / "locked"
    locked.mkdir(exist_ok=True)
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: (
        False if Path(path) == locked and mode & os.W_OK else access(path, mode)))
    before = snapshot(world)
    assert main(command.replace("{w}", str(world)).split()) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aiayn: error: ") and len(err.splitlines()) == 1, err
    assert "locked is not writable" in err, err
    assert snapshot(world) == before and not any(locked.iterdir())


def test_stdin_not_in_utf8_is_one_line_naming_its_line(world, capsys, monkeypatch):
    import io
    import sys
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"alpha\nb\xe9ta\n")))
    assert main(["translate", "--checkpoint", str(world / "ckpt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "aiayn: error: stdin: line 2 is not valid UTF-8; convert the file to UTF-8"


def test_serve_on_a_port_in_use_is_one_line_before_the_models_load(world, capsys, monkeypatch):
    import socket

    import aiayn.cli.serving as serving
    monkeypatch.setattr(serving, "_served_models", lambda *a: pytest.fail("models loaded"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--checkpoint", f"en-es={world / 'ckpt'}", "--port",
                     str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"aiayn: error: --port {port}: another program listens on "
                   f"127.0.0.1:{port}; choose another --port or stop that program")


@pytest.mark.parametrize("flags,error", [
    (["--beam", "20"], "--beam (20) exceeds --beam-limit (16); raise --beam-limit or lower "
                       "--beam"),
    (["--timeout", "nan"], "--timeout and --max-wait-ms must be finite numbers"),
])
def test_serve_refuses_settings_it_cannot_honour_before_the_models_load(world, capsys,
                                                                         monkeypatch, flags,
                                                                         error):
    import aiayn.cli.serving as serving
    monkeypatch.setattr(serving, "_served_models", lambda *a: pytest.fail("models loaded"))
    assert main(["serve", "--checkpoint", f"en-es={world / 'ckpt'}", *flags]) == 2
    assert capsys.readouterr().err.strip() == f"aiayn: error: {error}"
