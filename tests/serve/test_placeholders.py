"""One text path: a model trained on placeholder-protected data keeps ``%s``, ``{0}`` and
``<b>`` the same way through `aiayn translate`, the Python API, scoring, attention maps and
every route of `aiayn serve` (real HTTP clients against a real server process)."""

import subprocess
import sys

import pytest

from aiayn import placeholders
from aiayn.data.prepare import TextPair, prepare
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from aiayn.translate import load
from tests.conftest import FAST, write_pairs
from tests.serve.server import Server

PAIRS = [(f"Open %s file {i} in <b>{{0}}</b>", f"Datei {i} %s in <b>{{0}}</b> öffnen")
         for i in range(150)]
HELD_OUT = ["Open %d files in {name} now", "Save <i>%s</i> as %1$s", "Delete {0} and ${HOME}",
            "Copy &amp; paste %s", "Nothing here to keep"]


@pytest.fixture(scope="module")
def protected_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("protected")
    src, tgt = write_pairs(root, "train", PAIRS)
    prepare(TextPair(src, tgt), root / "data", valid=TextPair(src, tgt), vocab_size=120,
            protect_placeholders=True, languages=("en", "de"), log=lambda *_: None)
    train(root / "data", root / "run", TrainConfig(**FAST, max_steps=6), progress=False,
          log=lambda *_: None)
    return root / "run"


@pytest.fixture(scope="module")
def cli_translations(protected_run, tmp_path_factory):
    """What `aiayn translate` writes for the held-out strings."""
    done = subprocess.run([sys.executable, "-m", "aiayn", "translate", "--checkpoint",
                           str(protected_run)], input="\n".join(HELD_OUT) + "\n",
                          capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert len(lines) == len(HELD_OUT)
    return lines


@pytest.fixture(scope="module")
def server(protected_run):
    running = Server(protected_run, name="en-de")
    yield running
    running.stop()


def test_the_command_line_keeps_every_placeholder(cli_translations):
    for source, translation in zip(HELD_OUT, cli_translations):
        assert placeholders.kept(source, translation), (source, translation)


def test_libretranslate_clients_get_the_command_lines_text(server, cli_translations):
    from libretranslatepy import LibreTranslateAPI
    client = LibreTranslateAPI(server.url + "/")
    for source, expected in zip(HELD_OUT, cli_translations):
        assert client.translate(source, "en", "de") == expected
    status, answer = server.post("/translate", {"q": HELD_OUT, "source": "en", "target": "de"})
    assert status == 200 and answer["translatedText"] == cli_translations


def test_the_native_route_gets_the_command_lines_text(server, cli_translations):
    status, answer = server.post("/v1/translate", {"sentences": HELD_OUT, "source": "en",
                                                   "target": "de", "nbest": 2})
    assert status == 200
    assert [t["text"] for t in answer["translations"]] == cli_translations
    for source, entry in zip(HELD_OUT, answer["translations"]):
        for alternative in entry["alternatives"]:
            assert placeholders.kept(source, alternative["text"])


def test_attention_reads_the_masked_source_and_gives_the_same_translation(server,
                                                                          cli_translations):
    status, answer = server.post("/v1/attention", {"text": HELD_OUT[0], "source": "en",
                                                   "target": "de"})
    assert status == 200 and answer["translation"] == cli_translations[0]
    # the model read sentinels, one piece each, not the placeholders spelled out
    assert "⟦1⟧" in answer["source_tokens"] and "⟦2⟧" in answer["source_tokens"]
    assert not any("%" in piece for piece in answer["source_tokens"])


def test_scores_read_placeholders_as_the_model_was_trained_to(protected_run):
    translator = load(protected_run)
    codec = translator.codec
    source, target = PAIRS[3]
    encoded = codec.encode(source)
    target_ids = codec.encode_target(target, encoded)
    sentinel_ids = {translator.tokenizer.encode_target(s)[-1] for s in ("⟦1⟧", "⟦2⟧")}
    assert sentinel_ids <= set(target_ids)  # %s and {0} became the source's sentinels
    masked = placeholders.mask(source, target)[1]
    direct = translator.score_ids([encoded.ids], [translator.tokenizer.encode_target(masked)])
    assert translator.score([source], [target]) == direct
    # unmasked text would have been another sequence of pieces, with another score
    raw = translator.tokenizer.encode_target(target)
    assert raw != target_ids
