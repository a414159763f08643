"""A full disk or an I/O error while writing: a checkpoint that cannot be written leaves `last` at
the previous one and nothing partial, and stops with one line (or, with --on-save-error
continue, training goes on and the next checkpoint is written); `prepare` leaves nothing behind
and changes nothing it had."""

import errno
import importlib

import pytest

from aiayn import checkpoint as ckpt
from aiayn.checkpoint import Checkpoint
from aiayn.checkpoint import write as ckpt_write  # the module whose calls write files
from aiayn.cli import main
from aiayn.errors import UserError
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from tests.conftest import FAST, toy_pairs, write_pairs

CFG = TrainConfig(**{**FAST, "valid_bleu_sentences": 0, "log_every": 4, "schedule": "paper"},
                  max_steps=12)


def full_disk_at(monkeypatch, module, name: str, calls: set[int]) -> None:
    """``module.name`` writes its file, then fails as a full disk would, at the given calls."""
    original, seen = getattr(module, name), [0]

    def write(*args, **kwargs):
        seen[0] += 1
        result = original(*args, **kwargs)
        if seen[0] in calls:
            raise OSError(errno.ENOSPC, "No space left on device", str(args[-1]))
        return result
    monkeypatch.setattr(module, name, write)


def hidden(directory) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".")]


def test_a_checkpoint_that_cannot_be_written_stops_with_last_at_the_previous(
        toy_data, tmp_path, monkeypatch, capsys):
    full_disk_at(monkeypatch, ckpt_write, "save_file", {2})  # the 2nd checkpoint's training state
    run = tmp_path / "run"
    argv = ["train", "--data", str(toy_data), "--out", str(run), "--preset", "tiny",
            "--max-tokens", "150", "--warmup", "10", "--valid-every", "4",
            "--valid-bleu-sentences", "0", "--max-steps", "12", "--no-progress",
            "--schedule", "paper"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()  # (after training's own progress lines)
    assert "Traceback" not in err
    err = err.splitlines()[-1]
    assert err.startswith(f"aiayn: error: {run / 'checkpoints' / 'step_0000008'}: the checkpoint "
                          "could not be written (No space left on device (ENOSPC))")
    assert "checkpoints/last points at step_0000004" in err and "--resume" in err
    assert (run / "checkpoints" / "last").resolve().name == "step_0000004"
    assert [p.name for p in ckpt.list_step_checkpoints(run)] == ["step_0000004"]
    assert hidden(run / "checkpoints") == []
    Checkpoint.open(run, "last").model()
    monkeypatch.undo()  # space freed: the run goes on from step 4
    assert main([*argv, "--resume"]) == 0
    assert (run / "checkpoints" / "last").resolve().name == "step_0000012"


def test_on_save_error_continue_trains_on_and_writes_the_next_checkpoint(
        toy_data, tmp_path, monkeypatch, capsys):
    full_disk_at(monkeypatch, ckpt_write, "save_model", {2})
    cfg = TrainConfig(**{**CFG.to_dict(), "on_save_error": "continue"})
    summary = train(toy_data, tmp_path / "run", cfg, progress=False, log=lambda *_: None)
    assert summary["step"] == 12
    assert [p.name for p in ckpt.list_step_checkpoints(tmp_path / "run")] == [
        "step_0000004", "step_0000012"]
    warning = capsys.readouterr().err
    assert "aiayn: warning:" in warning and "step_0000008" in warning
    assert "tries again at the next checkpoint" in warning


def test_the_last_checkpoint_failing_stops_even_with_continue(toy_data, tmp_path, monkeypatch):
    full_disk_at(monkeypatch, ckpt_write, "save_model", {3})
    cfg = TrainConfig(**{**CFG.to_dict(), "on_save_error": "continue"})
    with pytest.raises(UserError, match="step_0000012: the checkpoint could not be written"):
        train(toy_data, tmp_path / "run", cfg, progress=False, log=lambda *_: None)
    assert (tmp_path / "run" / "checkpoints" / "last").resolve().name == "step_0000008"


def test_metrics_that_cannot_be_written_stop_with_the_file_named(toy_data, tmp_path,
                                                                 monkeypatch):
    import builtins
    original = builtins.open

    def no_space(file, *args, **kwargs):
        if str(file).endswith("metrics.jsonl") and args[:1] == ("a",):
            raise OSError(errno.ENOSPC, "No space left on device", str(file))
        return original(file, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", no_space)
    with pytest.raises(UserError, match=r"metrics.jsonl: could not be written \(No space left"):
        train(toy_data, tmp_path / "run", CFG, progress=False, log=lambda *_: None)


def test_prepare_on_a_full_disk_leaves_nothing_and_keeps_the_old_data(tmp_path, monkeypatch,
                                                                      capsys):
    prepare = importlib.import_module("aiayn.data.prepare")
    src, tgt = write_pairs(tmp_path, "train", toy_pairs(200))
    argv = ["prepare", "--train-src", str(src), "--train-tgt", str(tgt), "--vocab-size", "60",
            "--out", str(tmp_path / "data")]
    before = sorted(p.name for p in tmp_path.iterdir())
    full_disk_at(monkeypatch, prepare, "write_checksums", {1})
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # (after prepare's progress lines)
    assert err.startswith(f"aiayn: error: {tmp_path / 'data'}: the prepared data could not be "
                          "written (No space left on device")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing, not even hidden

    monkeypatch.undo()
    assert main(argv) == 0
    stats = (tmp_path / "data" / "stats.json").read_text()
    full_disk_at(monkeypatch, prepare, "write_checksums", {1})
    assert main([*argv, "--overwrite", "--vocab-size", "70"]) == 2
    assert (tmp_path / "data" / "stats.json").read_text() == stats
    assert main(["check", str(tmp_path / "data")]) == 0


def test_a_batch_that_does_not_fit_is_retried_in_halves(toy_data, tmp_path, monkeypatch):
    import torch

    from aiayn.train import step
    original, sizes = step.forward, []

    def small_only(net, batch, call=None):
        sizes.append(batch.src.size(0))
        if net.training and batch.src.size(0) > 8:  # (training steps; validation fits)
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(net, batch, call)
    monkeypatch.setattr(step, "forward", small_only)
    logged = []
    cfg = TrainConfig(**{**CFG.to_dict(), "max_tokens": 300})
    summary = train(toy_data, tmp_path / "run", cfg, progress=False, log=logged.append)
    assert summary["step"] == 12 and summary["skipped"] == 0
    assert any("out of memory; retrying as" in line for line in logged)


def test_a_batch_that_never_fits_says_to_lower_max_tokens(toy_data, tmp_path, monkeypatch):
    from aiayn.train import step

    def never(net, batch, call=None):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                           "68719476736 bytes")
    monkeypatch.setattr(step, "forward", never)
    with pytest.raises(UserError, match=r"step 1: a batch does not fit in cpu memory .* lower "
                                        r"--max-tokens"):
        train(toy_data, tmp_path / "run", CFG, progress=False, log=lambda *_: None)


def test_decoding_out_of_memory_is_one_line(tiny_checkpoint, tmp_path, monkeypatch, capsys):
    import torch

    from aiayn.translate import Translator

    def oom(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")
    monkeypatch.setattr(Translator, "translate_ids", oom)
    source = tmp_path / "in.txt"
    source.write_text("alpha beta\n")
    assert main(["translate", "--checkpoint", str(tiny_checkpoint), "--input", str(source)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("aiayn: error: out of memory (CUDA out of memory. Tried to allocate 9.00 "
                   "GiB); lower --batch-tokens (decoding, scoring) or --max-tokens (training)")
