"""`aiayn serve` under faults, bounded in count and time: many clients at once, malformed
requests of every kind on every route, clients that stall or vanish, and memory over
thousands of requests. A real server process on 127.0.0.1; real HTTP over sockets."""

import json
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import toy_pairs
from tests.serve.server import Server

SENTENCES = [s for s, _ in toy_pairs(40, seed=21)]
LT = {"source": "en", "target": "es"}


@pytest.fixture(scope="module")
def server(toy_model):
    running = Server(toy_model, "--char-limit", "500", "--batch-limit", "8",
                     "--max-body-bytes", "20000", "--keep-freed-mib", "64")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def cli_translations(toy_model):
    """`aiayn translate`'s output for every sentence, one process."""
    done = subprocess.run([sys.executable, "-m", "aiayn", "translate", "--checkpoint",
                           str(toy_model)], input="\n".join(SENTENCES) + "\n",
                          capture_output=True, text=True, check=True)
    return dict(zip(SENTENCES, done.stdout.splitlines()))


def test_32_concurrent_clients_get_the_command_lines_answers(server, cli_translations):
    def client(i: int):
        sentence = SENTENCES[i % len(SENTENCES)]
        return sentence, server.post("/translate", {"q": sentence, **LT})
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(client, range(96)))
    assert all(code == 200 for _, (code, _) in answers)
    assert all(answer["translatedText"] == cli_translations[s] for s, (_, answer) in answers)


MALFORMED = [
    # (method, path, body, content type)
    ("POST", "/translate", b"{not json", "application/json"),
    ("POST", "/translate", b"[1, 2, 3]", "application/json"),
    ("POST", "/translate", b'"just a string"', "application/json"),
    ("POST", "/translate", b"\xff\xfe\xfd", "application/json"),
    ("POST", "/translate", b'{"q": "\\ud800", "source": "en", "target": "es"}',
     "application/json"),
    ("POST", "/translate", json.dumps({"q": 5, **LT}).encode(), "application/json"),
    ("POST", "/translate", json.dumps({"q": ["a", 5], **LT}).encode(), "application/json"),
    ("POST", "/translate", json.dumps({"q": {"a": 1}, **LT}).encode(), "application/json"),
    ("POST", "/translate", json.dumps({"q": "alpha", "source": "en"}).encode(),
     "application/json"),
    ("POST", "/translate", json.dumps({"q": "alpha", "source": "zz", "target": "es"}).encode(),
     "application/json"),
    ("POST", "/translate", json.dumps({"q": "alpha", "source": "es", "target": "en"}).encode(),
     "application/json"),
    ("POST", "/translate", json.dumps({"q": "a" * 600, **LT}).encode(), "application/json"),
    ("POST", "/translate", json.dumps({"q": ["a"] * 9, **LT}).encode(), "application/json"),
    ("POST", "/translate", json.dumps({"q": "alpha", "format": "pdf", **LT}).encode(),
     "application/json"),
    ("POST", "/translate", json.dumps({"q": "alpha", "alternatives": "many", **LT}).encode(),
     "application/json"),
    ("POST", "/translate", json.dumps({"q": "alpha", "alternatives": 99, **LT}).encode(),
     "application/json"),
    ("POST", "/translate", b"x" * 30000, "application/json"),
    ("POST", "/translate", b"q=\xff&source=en&target=es", "application/x-www-form-urlencoded"),
    ("POST", "/translate", b"q=alpha&source=en", "application/x-www-form-urlencoded"),
    ("GET", "/translate", None, "application/json"),
    ("POST", "/detect", json.dumps({}).encode(), "application/json"),
    ("POST", "/detect", b"{broken", "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": "alpha", **LT}).encode(),
     "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "beam": 0, **LT}).encode(),
     "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "beam": "x", **LT}).encode(),
     "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "nbest": 9, **LT}).encode(),
     "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "lenpen": [1],
                                          **LT}).encode(), "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "lenpen": "nan",
                                          **LT}).encode(), "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "beam": 100000,
                                          **LT}).encode(), "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "glossary": 5,
                                          **LT}).encode(), "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "alignments": "no",
                                          **LT}).encode(), "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["a"] * 9, **LT}).encode(),
     "application/json"),
    ("POST", "/v1/translate", json.dumps({"sentences": ["alpha"], "source": "en",
                                          "target": "xx"}).encode(), "application/json"),
    ("POST", "/v1/attention", json.dumps({"text": "", **LT}).encode(), "application/json"),
    ("POST", "/v1/attention", json.dumps({"text": 7, **LT}).encode(), "application/json"),
    ("POST", "/v1/attention", json.dumps({"text": "a" * 600, **LT}).encode(),
     "application/json"),
    ("GET", "/languages/../../etc/passwd", None, "application/json"),
    ("DELETE", "/health", None, "application/json"),
    ("POST", "/metrics", b"{}", "application/json"),
]


@pytest.mark.parametrize("method,path,body,kind", MALFORMED,
                         ids=[f"{m[1]}-{i}" for i, m in enumerate(MALFORMED)])
def test_a_malformed_request_is_a_4xx_with_a_json_error(server, method, path, body, kind):
    code, answer = server.request(method, path, body, kind)
    assert 400 <= code < 500, (code, answer)
    assert isinstance(answer, dict) and isinstance(answer.get("error"), str), answer


def test_the_catalogue_of_malformed_requests_is_long():
    assert len(MALFORMED) >= 25
    assert {p for _, p, _, _ in MALFORMED} >= {"/translate", "/detect", "/v1/translate",
                                              "/v1/attention"}


def test_stalled_and_vanished_clients_do_not_hold_the_service(server, cli_translations):
    head = (b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 500\r\n\r\n{\"q\": \"alp")
    stalled = []
    for _ in range(20):  # they send half a body and wait
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall(head)
        stalled.append(sock)
    for _ in range(20):  # they send half a body and go away
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(head)
    try:
        start = time.monotonic()
        code, answer = server.post("/translate", {"q": SENTENCES[0], **LT})
        assert code == 200 and answer["translatedText"] == cli_translations[SENTENCES[0]]
        assert time.monotonic() - start < 10
    finally:
        for sock in stalled:
            sock.close()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_memory_levels_off_over_1500_requests(server, capsys):
    payloads = [{"q": SENTENCES[i % len(SENTENCES)] + " " + SENTENCES[(3 * i) % 40], **LT}
                for i in range(1500)]
    readings = [rss_mib(server.proc.pid)]
    with ThreadPoolExecutor(8) as pool:
        for half in (payloads[:750], payloads[750:]):
            assert all(code == 200 for code, _ in pool.map(
                lambda p: server.post("/translate", p), half))
            readings.append(rss_mib(server.proc.pid))
    first, second = readings[1] - readings[0], readings[2] - readings[1]
    with capsys.disabled():
        print(f"\n  serve RSS: {readings[0]:.0f} MiB at start, +{first:.1f} MiB over the first "
              f"750 requests, {second:+.1f} MiB over the next 750")
    assert second < 50
