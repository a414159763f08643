"""No input is cut: a line of 3,000 tokens comes back whole, sentence by sentence, the same
through the Python API, `aiayn translate` and `aiayn serve`."""

import random
import subprocess
import sys

import pytest

from aiayn.codec import join, sentences
from aiayn.translate import DecodeOptions, load
from tests.conftest import WORDS


def long_line(tokens: int, tokenizer) -> str:
    """Sentences of toy words, each ending in a full stop, until ``tokens`` are reached."""
    rng, out = random.Random(5), []
    while len(tokenizer.encode(" ".join(out))) < tokens:
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + ".")
    return " ".join(out)


@pytest.fixture(scope="module")
def translator(toy_model):
    return load(toy_model)


@pytest.fixture(scope="module")
def line(translator):
    text = long_line(3000, translator.tokenizer)
    assert len(translator.tokenizer.encode(text)) > 5 * translator.cfg.max_len
    return text


@pytest.fixture(scope="module")
def expected(translator, line):
    """Each sentence translated alone, joined."""
    return join(translator.translate(sentences(line, "en"), DecodeOptions(beam=2)))


def test_the_api_translates_every_sentence_of_a_3000_token_line(translator, line, expected):
    warnings = []
    translator.codec.warn = warnings.append
    assert len(translator.codec.encode_text(line)) == len(sentences(line, "en"))
    assert translator.translate([line], DecodeOptions(beam=2)) == [expected]
    assert not warnings  # every sentence fits: nothing to say


def test_the_command_line_gives_the_same(toy_model, line, expected):
    done = subprocess.run([sys.executable, "-m", "aiayn", "translate", "--checkpoint",
                           str(toy_model), "--beam", "2"], input=line + "\n",
                          capture_output=True, text=True, check=True)
    assert done.stdout == expected + "\n"


def test_the_server_gives_the_same(toy_model, line, expected):
    from tests.serve.server import Server
    running = Server(toy_model, "--char-limit", "100000", "--beam", "2")
    try:
        code, answer = running.post("/translate", {"q": line, "source": "en", "target": "es"})
        assert code == 200 and answer["translatedText"] == expected
        code, answer = running.post("/v1/translate", {"sentences": [line], "source": "en",
                                                      "target": "es", "beam": 2})
        assert code == 200 and answer["translations"][0]["text"] == expected
    finally:
        running.stop()
