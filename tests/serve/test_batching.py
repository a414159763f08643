"""The decoding queue: rounds gather requests, results equal decoding alone, a full queue
refuses at once."""

import asyncio
import threading

import pytest

from aiayn.serve.batching import Batcher, QueueFull
from aiayn.translate import DecodeOptions, load
from tests.conftest import toy_pairs

SENTENCES = [s for s, _ in toy_pairs(16, seed=5)]


def test_gathered_requests_get_what_each_gets_alone(toy_model):
    translator = load(toy_model)
    options = DecodeOptions()
    alone = [translator.translate_ids([translator.codec.encode(s).ids], options)[0][0].tokens
             for s in SENTENCES]
    rounds = []
    batcher = Batcher({"m": translator}, batch_tokens=10_000, max_wait_ms=200,
                      on_batch=lambda n, t: rounds.append(n))

    async def many():
        futures = [batcher.submit("m", [translator.codec.encode(s).ids], options)
                   for s in SENTENCES]
        return await asyncio.gather(*futures)
    results = asyncio.run(many())
    batcher.close()
    assert [r[0][0].tokens for r in results] == alone
    assert len(rounds) < len(SENTENCES)  # requests shared decoding rounds


class Blocking:
    """A translator stand-in whose decoding waits for a signal."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def translate_ids(self, sources, options):
        self.release.wait(10)
        return [[None] for _ in sources]


def test_a_full_queue_refuses_at_once():
    stand_in = Blocking()
    batcher = Batcher({"m": stand_in}, queue_size=2, max_wait_ms=0)

    async def flood():
        futures = [batcher.submit("m", [[5, 3]], DecodeOptions())]
        await asyncio.sleep(0.1)  # the worker has taken the first job and is decoding it
        futures += [batcher.submit("m", [[5, 3]], DecodeOptions()) for _ in range(2)]
        with pytest.raises(QueueFull):
            batcher.submit("m", [[5, 3]], DecodeOptions())
        stand_in.release.set()
        return await asyncio.gather(*futures)
    assert len(asyncio.run(flood())) == 3
    batcher.close()
