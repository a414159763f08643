"""The command line: a smoke run end to end, and one clear line with exit code 2 per mistake."""

import json
import subprocess
import sys

import pytest
import torch

from aiayn.cli import main
from tests.conftest import toy_pairs, write_pairs

TRAIN = ["--preset", "tiny", "--max-tokens", "150", "--warmup", "10", "--valid-every", "3",
         "--valid-bleu-sentences", "4", "--log-every", "1", "--no-progress"]


def fails(capsys, argv, message):
    capsys.readouterr()  # only this call's output counts
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aiayn: error: ") and "\n" not in err, err
    assert message in err, err
    return err


def test_prepare_train_translate_evaluate_average_plot(tmp_path, capsys):
    train = write_pairs(tmp_path, "train", toy_pairs(300, seed=1))
    valid = write_pairs(tmp_path, "valid", toy_pairs(20, seed=2))
    assert main(["prepare", "--train-src", str(train[0]), "--train-tgt", str(train[1]),
                 "--valid-src", str(valid[0]), "--valid-tgt", str(valid[1]),
                 "--vocab-size", "80", "--out", str(tmp_path / "data")]) == 0
    assert main(["train", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "run"),
                 "--max-steps", "6", *TRAIN]) == 0
    summary = json.loads(capsys.readouterr().out.split("\n", 1)[1])  # after "prepared DIR"
    assert summary["step"] == 6
    (tmp_path / "in.txt").write_text("alpha beta\n\ngamma\n")
    assert main(["translate", "--checkpoint", str(tmp_path / "run"), "-i",
                 str(tmp_path / "in.txt"), "-o", str(tmp_path / "out.txt"), "--beam", "2"]) == 0
    assert len((tmp_path / "out.txt").read_text().split("\n")) == 4  # 3 lines and the newline
    assert (tmp_path / "out.txt").read_text().split("\n")[1] == ""
    assert main(["evaluate", "--checkpoint", str(tmp_path / "run"), "--src", str(valid[0]),
                 "--ref", str(valid[1]), "--beam", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("BLEU = ") and "nrefs:1|case:mixed|eff:no|tok:13a" in out[0]
    assert out[1].startswith("chrF = ")
    assert main(["average", str(tmp_path / "run"), "--last", "2",
                 "--out", str(tmp_path / "avg")]) == 0
    assert (tmp_path / "avg" / "model.safetensors").is_file()
    assert main(["plot", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "curves.png").stat().st_size > 10_000


def test_prepare_names_both_files_when_line_counts_differ(tmp_path, capsys):
    (tmp_path / "a.en").write_text("one\ntwo\n")
    (tmp_path / "a.es").write_text("uno\n")
    fails(capsys, ["prepare", "--train-src", str(tmp_path / "a.en"), "--train-tgt",
                   str(tmp_path / "a.es"), "--out", str(tmp_path / "d")],
          f"{tmp_path / 'a.en'} has 2 lines but {tmp_path / 'a.es'} has 1")


def test_prepare_reports_invalid_utf8_with_file_and_line(tmp_path, capsys):
    (tmp_path / "a.en").write_text("one\ntwo\n")
    (tmp_path / "a.es").write_bytes(b"uno\n\xc3\x28dos\n")
    fails(capsys, ["prepare", "--train-src", str(tmp_path / "a.en"), "--train-tgt",
                   str(tmp_path / "a.es"), "--out", str(tmp_path / "d")],
          "a.es: line 2 is not valid UTF-8")


def test_prepare_drops_a_utf8_mark_and_names_a_utf16_file(tmp_path, capsys):
    from aiayn.data.prepare import _lines
    (tmp_path / "a.en").write_bytes("\ufeffone\ntwo\n".encode("utf-8"))
    assert list(_lines(tmp_path / "a.en")) == ["one", "two"]
    (tmp_path / "a.es").write_bytes("\ufeffuno\ndos\n".encode("utf-16-le"))
    fails(capsys, ["prepare", "--train-src", str(tmp_path / "a.en"), "--train-tgt",
                   str(tmp_path / "a.es"), "--out", str(tmp_path / "d")],
          "a.es: the file is UTF-16 (its byte order mark says so); convert it to UTF-8")
    assert not (tmp_path / "d").exists()


def test_prepare_reports_an_empty_file(tmp_path, capsys):
    (tmp_path / "a.en").write_text("")
    (tmp_path / "a.es").write_text("uno\n")
    fails(capsys, ["prepare", "--train-src", str(tmp_path / "a.en"), "--train-tgt",
                   str(tmp_path / "a.es"), "--out", str(tmp_path / "d")], "a.en: the file is empty")


def test_train_names_an_unknown_config_key_and_the_nearest(toy_data, tmp_path, capsys):
    (tmp_path / "run.yaml").write_text("warmpu: 100\n")
    fails(capsys, ["train", "--data", str(toy_data), "--out", str(tmp_path / "r"), "--config",
                   str(tmp_path / "run.yaml")],
          "unknown training config key 'warmpu'; did you mean 'warmup'?")
    fails(capsys, ["train", "--data", str(toy_data), "--out", str(tmp_path / "r"), "--model",
                   "d_modle=64"], "unknown model config key 'd_modle'; did you mean 'd_model'?")
    fails(capsys, ["train", "--data", str(toy_data), "--out", str(tmp_path / "r"), "--model",
                   "d_model=30"], "d_model (30) must be divisible by n_heads")


def test_resume_with_another_vocabulary_is_refused(toy_data, tmp_path, capsys):
    assert main(["train", "--data", str(toy_data), "--out", str(tmp_path / "run"),
                 "--max-steps", "3", *TRAIN]) == 0
    train = write_pairs(tmp_path, "t", toy_pairs(300, seed=5))
    assert main(["prepare", "--train-src", str(train[0]), "--train-tgt", str(train[1]),
                 "--vocab-size", "90", "--out", str(tmp_path / "other")]) == 0
    fails(capsys, ["train", "--data", str(tmp_path / "other"), "--out", str(tmp_path / "run"),
                   "--resume", "--max-steps", "6", *TRAIN],
          "the model differs (vocab_size 100 -> 90")
    fails(capsys, ["train", "--data", str(toy_data), "--out", str(tmp_path / "fresh"),
                   "--resume", *TRAIN], "has no checkpoint to resume from")


def test_missing_and_corrupt_checkpoints_are_clear_errors(tiny_checkpoint, tmp_path, capsys):
    fails(capsys, ["translate", "--checkpoint", str(tmp_path / "nothing")],
          "no such checkpoint directory")
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in tiny_checkpoint.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    data = (broken / "model.safetensors").read_bytes()
    (broken / "model.safetensors").write_bytes(data[: len(data) // 2])
    fails(capsys, ["translate", "--checkpoint", str(broken)], "model.safetensors: ")
    (broken / "checksums.json").unlink()  # unverified (an older checkpoint): parsed, refused
    (broken / "config.json").write_text("{not json")
    fails(capsys, ["translate", "--checkpoint", str(broken)], "config.json: corrupt or invalid")
    # weights of another shape: the message names the first tensor that differs
    (broken / "model.safetensors").write_bytes(data)
    config = json.loads((tiny_checkpoint / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "d_ff": config["d_ff"] * 2}))
    fails(capsys, ["translate", "--checkpoint", str(broken)],
          "does not match the config (size mismatch for ")


def test_a_device_that_is_not_there_is_a_clear_error(tiny_checkpoint, tmp_path, capsys):
    for name in ("src", "ref"):
        (tmp_path / name).write_text("a b\n")
    evaluate = ["evaluate", "--src", str(tmp_path / "src"), "--ref", str(tmp_path / "ref")]
    for command in (["translate"], evaluate):
        argv = [*command, "--checkpoint", str(tiny_checkpoint), "--device"]
        fails(capsys, argv + ["gpu"], "--device gpu: expected cpu or cuda (cuda:N")
        fails(capsys, argv + ["cuda:x"], "--device cuda:x: expected cpu or cuda")
        if not torch.cuda.is_available():
            fails(capsys, argv + ["cuda"], "--device cuda: no CUDA device is available; use "
                                           "--device cpu")


def test_a_user_error_prints_one_line_and_no_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "aiayn", "translate", "--checkpoint",
                             str(tmp_path / "missing")], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr


def test_decoder_only_language_model_trains_and_generates(toy_data, tmp_path, capsys):
    assert main(["train", "--data", str(toy_data), "--out", str(tmp_path / "lm"),
                 "--arch", "decoder-only", "--max-steps", "4", *TRAIN]) == 0
    capsys.readouterr()
    argv = ["generate", "--checkpoint", str(tmp_path / "lm"), "ALPHA", "--seed", "7",
            "--top-k", "5", "--max-new-tokens", "8"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    assert capsys.readouterr().out == first  # seeded: reproducible
    fails(capsys, ["translate", "--checkpoint", str(tmp_path / "lm")],
          "holds a decoder-only model")
    fails(capsys, ["generate", "--checkpoint", str(tmp_path / "lm"), "x", "--top-p", "0"],
          "top_p (0.0) must be in (0, 1]")


def test_generate_refuses_a_translation_checkpoint(tiny_checkpoint, capsys):
    fails(capsys, ["generate", "--checkpoint", str(tiny_checkpoint), "hello"],
          "holds an encoder-decoder model")


def test_renamed_flags_still_work_with_a_warning(tiny_checkpoint, tmp_path, capsys):
    (tmp_path / "in.txt").write_text("alpha beta\ngamma\n")
    capsys.readouterr()
    assert main(["translate", "--checkpoint", str(tiny_checkpoint), "-i", str(tmp_path / "in.txt"),
                 "--beam", "2", "--max-tokens", "8"]) == 0
    captured = capsys.readouterr()
    assert "--max-tokens is now --batch-tokens" in captured.err
    assert len(captured.out.splitlines()) == 2
    assert main(["positions", "--d-model", "16", "--max-len", "10",
                 "--out", str(tmp_path / "pe.png")]) == 0
    assert "--max-len is now --length" in capsys.readouterr().err


def test_nbest_beyond_the_beam_and_a_bad_beam_are_one_line_errors(tiny_checkpoint, capsys):
    fails(capsys, ["translate", "--checkpoint", str(tiny_checkpoint), "--beam", "2",
                   "--nbest", "3"], "--nbest (3) must be between 1 and --beam (2)")
    fails(capsys, ["evaluate", "--checkpoint", str(tiny_checkpoint), "--src", "x", "--ref", "y",
                   "--beam", "0"], "--beam (0) must be at least 1")


@pytest.mark.parametrize("flags,named", [
    (["--max-len-a", "nan"], "--max-len-a (nan)"),
    (["--max-len-a", "inf"], "--max-len-a (inf)"),
    (["--lenpen", "nan"], "--lenpen (nan)"),
    (["--sample", "--temperature", "inf"], "--temperature (inf)"),
])
def test_a_number_that_is_not_finite_is_a_one_line_error(tiny_checkpoint, capsys, flags, named):
    fails(capsys, ["translate", "--checkpoint", str(tiny_checkpoint), *flags],
          f"{named} must be a finite number")


def test_every_flag_says_what_it_does():
    from aiayn.cli import build_parser
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        for action in sub._actions:
            if action.option_strings and action.help != "==SUPPRESS==":
                assert action.help, f"{name} {action.option_strings} has no help"


def test_a_yes_or_no_setting_is_a_flag_and_its_negation():
    from aiayn.cli import build_parser
    from aiayn.cli.training import _train_config
    parser = build_parser()
    base = ["train", "--data", "d", "--out", "o"]
    assert _train_config(parser.parse_args(base + ["--compile"])).compile is True
    assert _train_config(parser.parse_args(base + ["--no-compile"])).compile is False
    assert _train_config(parser.parse_args(base)).compile is False


def test_input_with_a_byte_order_mark_reads_as_its_encoding(tiny_checkpoint, tmp_path, capsys):
    """A file saved as "Unicode" (UTF-16 with its mark) or UTF-8 with one translates as the
    same lines in plain UTF-8 do, the mark not read as a character."""
    import codecs
    lines = "alpha beta\ngamma delta\n"
    plain = tmp_path / "plain.txt"
    plain.write_text(lines, encoding="utf-8")
    assert main(["translate", "--checkpoint", str(tiny_checkpoint), "--no-compile",
                 "-i", str(plain)]) == 0
    expected = capsys.readouterr().out
    for mark, encoding in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF8, "utf-8")):
        marked = tmp_path / f"{encoding}.txt"
        marked.write_bytes(mark + lines.encode(encoding))
        assert main(["translate", "--checkpoint", str(tiny_checkpoint), "--no-compile",
                     "-i", str(marked)]) == 0
        assert capsys.readouterr().out == expected


def test_a_picture_needs_a_picture_format_and_positions_a_base_above_one(tmp_path, capsys):
    fails(capsys, ["positions", "--out", str(tmp_path / "pe.txt")],
          "pe.txt: not a picture format; end the name with")
    fails(capsys, ["positions", "--base", "nan", "--out", str(tmp_path / "pe.png")],
          "--base (nan) must be a finite number above 1")
    fails(capsys, ["positions", "--base", "0", "--out", str(tmp_path / "pe.png")],
          "--base (0.0) must be a finite number above 1")
    fails(capsys, ["positions", "--d-model", "100000", "--length", "100000", "--out",
                   str(tmp_path / "pe.png")], "10,000,000,000 values, more than a picture shows")
    run = tmp_path / "run"
    run.mkdir()
    fails(capsys, ["plot", str(run), "--out", str(tmp_path / "curves.csv")],
          "curves.csv: not a picture format")
    assert not list(tmp_path.glob("pe.*")) and not (tmp_path / "curves.csv").exists()
