"""`aiayn serve` under load: dynamic batching against decoding one request at a time.

32 concurrent clients send 20 requests each (one real dev sentence per request, LibreTranslate's
``POST /translate``) to a server on 127.0.0.1. Every answer is checked against the sentence
translated alone. The same server runs in two modes, alternating, ``--rounds`` times each:
dynamic batching (the defaults) and one request per decoding round (``--batch-tokens 1
--max-wait-ms 0``, as a server that decodes behind a lock). Then a long run of
``--long`` requests measures the server's resident memory after the first 100, after every
1,000 and at the end (``--memory-only``: that run alone). Run by hand (bounded in count and
time):

    .venv/bin/python benchmarks/serve_load.py --checkpoint runs/demo/averaged \\
        --sentences ../shared/data/bible-en-es/dev.en
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.serve.server import Server  # noqa: E402

MODES = {"dynamic batching": [], "one request at a time": ["--batch-tokens", "1",
                                                           "--max-wait-ms", "0"]}


def post(url: str, sentence: str) -> tuple[str, float]:
    body = json.dumps({"q": sentence, "source": "en", "target": "es"}).encode()
    request = urllib.request.Request(url + "/translate", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.loads(response.read())["translatedText"]
    return answer, time.perf_counter() - start


def load(url: str, sentences: list[str], clients: int) -> tuple[float, list[float], list[str]]:
    """Send every sentence once over ``clients`` concurrent connections; wall, latencies."""
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda s: post(url, s), sentences))
    return time.perf_counter() - start, [r[1] for r in results], [r[0] for r in results]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--sentences", required=True, help="a file of source sentences")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=20, help="per client")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--long", type=int, default=5000)
    parser.add_argument("--memory-only", action="store_true",
                        help="only the long run's resident memory")
    args = parser.parse_args()
    lines = [x.strip() for x in Path(args.sentences).read_text().splitlines() if x.strip()]
    sentences = lines[: args.clients * args.requests]

    if args.memory_only:
        from machine import header
        print(header())
        return memory(args, sentences)
    from aiayn.serve.text import join_sentences, split_sentences
    from aiayn.translate import load as load_translator
    translator = load_translator(args.checkpoint)
    # what the server must answer: each sentence of the text translated alone, joined back
    reference = [join_sentences([[translator.translate([x])[0] for x in line]
                                 for line in split_sentences(s, "en")]) for s in sentences]
    del translator
    from machine import header
    print(header())
    print(f"{args.clients} clients x {args.requests} requests, one dev sentence each "
          f"({len(sentences)} distinct); median of {args.rounds} alternating rounds")
    print("| mode | requests/s | p50 latency | p95 latency | wrong answers |")
    print("|---|---:|---:|---:|---:|")
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    lat: dict[str, list[float]] = {m: [] for m in MODES}
    wrong = {m: 0 for m in MODES}
    for _ in range(args.rounds):
        for mode, flags in MODES.items():
            server = Server(Path(args.checkpoint), "--queue-size", "1024", *flags)
            try:
                wall, latencies, answers = load(server.url, sentences, args.clients)
            finally:
                server.stop()
            rates[mode].append(len(sentences) / wall)
            lat[mode] += latencies
            wrong[mode] += sum(a != r for a, r in zip(answers, reference))
    for mode in MODES:
        q = statistics.quantiles(lat[mode], n=20)
        print(f"| {mode} | {statistics.median(rates[mode]):.1f} | {q[9] * 1000:.0f} ms "
              f"| {q[18] * 1000:.0f} ms | {wrong[mode]} |")
    ratio = statistics.median(rates["dynamic batching"]) / statistics.median(
        rates["one request at a time"])
    print(f"\ndynamic batching / one at a time: {ratio:.2f}x")
    memory(args, sentences)


def memory(args: argparse.Namespace, sentences: list[str]) -> None:
    """The long run: the server's resident memory after 100 requests, every 1,000 and the
    last."""
    server = Server(Path(args.checkpoint), "--queue-size", "1024")
    try:
        pool = (sentences * (args.long // len(sentences) + 1))[: args.long]
        marks = [100, *range(1000, args.long, 1000), args.long]
        rss, done = [], 0
        for mark in marks:
            load(server.url, pool[done:mark], args.clients)
            rss.append(rss_mib(server.proc.pid))
            done = mark
        metrics = urllib.request.urlopen(server.url + "/metrics").read().decode()
    finally:
        server.stop()
    served = [x for x in metrics.splitlines() if x.startswith("aiayn_requests_total")]
    print("\nresident memory (MiB) after " + ", ".join(
        f"{mark}: {value:.0f}" for mark, value in zip(marks, rss))
          + f" ({(rss[-1] / rss[0] - 1) * 100:+.1f}% after the first 100)")
    print("requests counted by /metrics: " + "; ".join(served))


if __name__ == "__main__":
    main()
