"""Time and queue limits at the HTTP level, with a stand-in model that decodes on a signal."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from aiayn.codec import Source  # noqa: E402
from aiayn.decode.search import Hypothesis  # noqa: E402
from aiayn.serve.app import Model, Settings, create_app  # noqa: E402


class SlowTranslator:
    """Encodes one id a character; decoding waits until ``release`` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.codec = self

    def encode_text(self, sentence: str) -> list[Source]:
        return [Source(sentence, [5] * len(sentence) + [3])]

    def decode_lines(self, groups, hyps) -> list[list[tuple[str, float]]]:
        return [[("x" * len(h.tokens), h.score) for h in found] for found in hyps]

    def translate_ids(self, sources, options):
        self.release.wait(10)
        return [[Hypothesis([7] * (len(s) - 1), -1.0)] for s in sources]


def _client(translator, **settings) -> TestClient:
    return TestClient(create_app([Model("en", "es", translator)], Settings(**settings)))


def test_a_request_past_its_time_gets_504_and_the_server_goes_on():
    slow = SlowTranslator()
    with _client(slow, timeout=0.3) as client:
        answer = client.post("/translate", json={"q": "abc", "source": "en", "target": "es"})
        assert answer.status_code == 504 and "timed out" in answer.json()["error"]
        slow.release.set()
        answer = client.post("/translate", json={"q": "abcd", "source": "en", "target": "es"})
        assert answer.status_code == 200 and answer.json() == {"translatedText": "xxxx"}


def test_a_full_queue_answers_503_at_once():
    slow = SlowTranslator()
    with _client(slow, queue_size=1, max_wait_ms=0, timeout=30) as client:
        def send(text):
            return client.post("/translate", json={"q": text, "source": "en", "target": "es"})
        with ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(send, "a" * (i + 1)) for i in range(6)]
            # one job decoding and one queued hold the queue; the others are refused while
            # the decoder is still held
            done = []
            for _ in range(100):
                done = [f for f in futures if f.done()]
                if len(done) >= 4:
                    break
                time.sleep(0.05)
            assert len(done) == 4 and all(f.result().status_code == 503 for f in done)
            assert "busy" in done[0].result().json()["error"]
            slow.release.set()
            assert sorted(f.result().status_code for f in futures) == [200, 200] + [503] * 4
