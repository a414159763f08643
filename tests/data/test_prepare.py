import gzip
import json

import numpy as np
import pytest

from aiayn.data.corpus import ParallelCorpus
from aiayn.data.prepare import TextPair, prepare
from aiayn.data.tokenizer import Tokenizer
from aiayn.errors import UserError
from tests.conftest import toy_pairs, write_pairs


def quiet_prepare(*args, **kwargs):
    return prepare(*args, log=lambda *_: None, **kwargs)


def test_prepared_ids_decode_back_to_the_text(toy_data):
    corpus = ParallelCorpus(toy_data, "valid")
    tok = Tokenizer.load(toy_data / "spm.model")
    refs = (toy_data / "valid.tgt.txt").read_text().splitlines()
    srcs = (toy_data / "valid.src.txt").read_text().splitlines()
    assert len(corpus) == len(refs) == 40
    for i in range(len(corpus)):
        assert tok.decode(corpus.ids("tgt", i).tolist()) == refs[i]
        assert tok.decode(corpus.ids("src", i).tolist()) == srcs[i]
    assert corpus.sides["src"][0].dtype == np.uint16


def test_gzip_and_tsv_inputs_give_the_same_corpus(tmp_path):
    pairs = toy_pairs(200)
    src, tgt = write_pairs(tmp_path, "plain", pairs)
    for path in (src, tgt):
        with gzip.open(str(path) + ".gz", "wt") as handle:
            handle.write(path.read_text())
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    a = quiet_prepare(TextPair(src.with_suffix(".src.gz"), tgt.with_suffix(".tgt.gz")),
                      tmp_path / "a", vocab_size=60)
    b = quiet_prepare(TextPair(tsv), tmp_path / "b", vocab_size=60)
    assert a["splits"]["train"]["pairs"] == b["splits"]["train"]["pairs"] == 200
    for side in ("src", "tgt"):
        assert np.array_equal(np.load(tmp_path / "a" / f"train.{side}.ids.npy"),
                              np.load(tmp_path / "b" / f"train.{side}.ids.npy"))


def test_empty_lines_are_skipped_and_long_ones_filtered_and_counted(tmp_path):
    pairs = toy_pairs(100) + [("", "X"), ("y", "  "), (" ".join(["alpha"] * 100), "A")]
    src, tgt = write_pairs(tmp_path, "t", pairs)
    stats = quiet_prepare(TextPair(src, tgt), tmp_path / "out", vocab_size=60, max_len=60)
    train = stats["splits"]["train"]
    assert train["empty_skipped"] == 2
    assert train["too_long_filtered"] == 1
    assert train["pairs"] == 100
    assert json.loads((tmp_path / "out" / "stats.json").read_text())["splits"]["train"] == train


@pytest.mark.parametrize("problem,message", [
    ("counts", r"a\.src has 3 lines but .*b\.tgt has 2; parallel files must be aligned"),
    ("empty", r"b\.tgt: the file is empty"),
    ("utf8", r"b\.tgt: line 2 is not valid UTF-8"),
    ("missing", r"nope\.tgt: no such file"),
])
def test_bad_input_is_a_one_line_error_and_writes_nothing(tmp_path, problem, message):
    src = tmp_path / "a.src"
    src.write_text("one\ntwo\nthree\n")
    tgt = tmp_path / "b.tgt"
    tgt.write_bytes({"counts": b"uno\ndos\n", "empty": b"", "utf8": b"uno\nd\xffos\ntres\n",
                     "missing": b""}[problem])
    if problem == "missing":
        tgt = tmp_path / "nope.tgt"
    with pytest.raises(UserError, match=message):
        quiet_prepare(TextPair(src, tgt), tmp_path / "out", vocab_size=20)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_existing_output_is_not_overwritten(tmp_path, toy_data):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    src, tgt = write_pairs(tmp_path, "t", toy_pairs(50))
    with pytest.raises(UserError, match="already exists and is not empty"):
        quiet_prepare(TextPair(src, tgt), tmp_path / "out", vocab_size=40)
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_byte_fallback_lets_unseen_characters_round_trip(tmp_path):
    from aiayn.data.tokenizer import train_tokenizer
    from tests.conftest import toy_pairs
    text = [s for pair in toy_pairs(400) for s in pair]
    tokenizer = train_tokenizer(text, tmp_path / "big", vocab_size=600)
    for unseen in ["alpha ☃ snowman", "ΩMEGA 日本語", "l'apostrophe «quoted» 🙂"]:
        ids = tokenizer.encode(unseen)
        assert 1 not in ids  # no <unk>
        assert tokenizer.decode(ids) == unseen
    small = train_tokenizer(text, tmp_path / "small", vocab_size=100)  # no room for bytes
    assert 1 in small.encode("☃")


def test_hebrew_stored_in_visual_order_is_reported(tmp_path):
    """Hebrew stored reversed, as some of GNU's Hebrew catalogs are (wget's: "the file's
    size has not changed"), puts its final letters first; prepare names how many pairs look
    so and the first, and logically ordered Hebrew raises nothing."""
    from aiayn.data.prepare import TextPair, prepare, visual_hebrew
    logical = "גודלו של הקובץ לא השתנה מאז נמשך"
    reversed_ = logical[::-1]
    assert visual_hebrew(reversed_) and not visual_hebrew(logical)
    assert not visual_hebrew("שלום עולם") and not visual_hebrew("no Hebrew here")
    src, tgt = tmp_path / "a.src", tmp_path / "a.tgt"
    src.write_text("the size\nhello\nthe file\nworld\n")
    tgt.write_text(f"{logical}\nשלום\n{reversed_}\n{reversed_}\n")
    logged: list[str] = []
    stats = prepare(TextPair(src, tgt), tmp_path / "data", vocab_size=60, log=logged.append)
    assert stats["splits"]["train"]["visual_order"] == 2
    assert any("2 pairs have Hebrew stored in visual order" in line and "line 3" in line
               for line in logged)
    logged.clear()
    tgt.write_text(f"{logical}\nשלום\n{logical}\nעולם\n")
    prepare(TextPair(src, tgt), tmp_path / "again", vocab_size=60, log=logged.append)
    assert not any("visual order" in line for line in logged)
