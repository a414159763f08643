"""Dynamic batching: requests queue their sentences, one worker thread decodes them together.

A request becomes a ``Job`` on a bounded queue. The worker takes the oldest job, then gathers
more until the jobs hold ``batch_tokens`` source tokens or ``max_wait_ms`` have passed since the
first, groups them by model and decoding options, and decodes each group as one set of
sentences (``Translator.translate_ids`` sorts them by length and cuts token-bounded batches).
Beam search is batch-invariant, so a sentence's translation is the one it gets alone. Each job's
future receives its own results on the event loop. Every model call happens on this one thread,
so torch's thread pool is never shared between requests.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..decode.options import DecodeOptions
from ..translate import Translator


class QueueFull(Exception):
    """The queue holds ``queue_size`` jobs already: the caller answers 503 at once."""


@dataclass
class Job:
    """Sentences (token ids with EOS) of one request for one model, or a call to run alone."""

    model: str
    sources: list[list[int]]
    options: DecodeOptions | None
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    call: Callable[[], Any] | None = None
    cancelled: bool = False
    queued: float = field(default_factory=time.monotonic)

    @property
    def tokens(self) -> int:
        return sum(len(s) for s in self.sources)

    def resolve(self, result: Any = None, error: BaseException | None = None) -> None:
        def settle() -> None:
            if self.future.done():
                return
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(result)
        self.loop.call_soon_threadsafe(settle)


class Batcher:
    """The queue and its worker thread.

    Args:
        translators: the served models by name.
        batch_tokens: source tokens gathered into one decoding round.
        max_wait_ms: how long the first job of a round waits for company.
        queue_size: the most jobs waiting; a request beyond it is refused.
        on_batch: called with (sentences, tokens) after each decoded group (metrics).
    """

    def __init__(self, translators: dict[str, Translator], *, batch_tokens: int = 4096,
                 max_wait_ms: float = 10.0, queue_size: int = 256,
                 on_batch: Callable[[int, int], None] | None = None) -> None:
        self.translators = translators
        self.batch_tokens, self.max_wait = batch_tokens, max_wait_ms / 1000
        self.jobs: queue.Queue[Job | None] = queue.Queue(maxsize=queue_size)
        self.on_batch = on_batch or (lambda sentences, tokens: None)
        self.thread = threading.Thread(target=self._run, name="aiayn-decoder", daemon=True)
        self.thread.start()

    @property
    def depth(self) -> int:
        return self.jobs.qsize()

    def submit(self, model: str, sources: list[list[int]], options: DecodeOptions | None,
               call: Callable[[], Any] | None = None) -> asyncio.Future:
        """Queue a job; its future resolves to a list of hypothesis lists (or the call's
        result). Raises ``QueueFull`` when the queue is full."""
        loop = asyncio.get_running_loop()
        job = Job(model, sources, options, loop.create_future(), loop, call)
        try:
            self.jobs.put_nowait(job)
        except queue.Full:
            raise QueueFull from None
        job.future.add_done_callback(lambda f: setattr(job, "cancelled", f.cancelled()))
        return job.future

    def close(self) -> None:
        """Finish the queued jobs, then stop the worker."""
        self.jobs.put(None)
        self.thread.join()

    # ------------------------------------------------------------------ the worker
    def _gather(self, first: Job) -> tuple[list[Job], bool]:
        """The first job and those that join it within the token budget and the wait."""
        jobs, tokens = [first], first.tokens
        deadline = time.monotonic() + self.max_wait
        while tokens < self.batch_tokens:
            remaining = deadline - time.monotonic()
            try:
                job = self.jobs.get(timeout=max(remaining, 0)) if remaining > 0 \
                    else self.jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:
                return jobs, True
            jobs.append(job)
            tokens += job.tokens
        return jobs, False

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self.jobs.get()
            if first is None:
                return
            if first.call is not None:  # runs alone (attention maps)
                self._call(first)
                continue
            jobs, stop = self._gather(first)
            calls = [j for j in jobs if j.call is not None]
            groups: dict[tuple, list[Job]] = {}
            for job in jobs:
                if job.call is None and not job.cancelled:
                    groups.setdefault((job.model, job.options), []).append(job)
            for (model, options), members in groups.items():
                self._decode(self.translators[model], options, members)
            for job in calls:
                self._call(job)

    def _decode(self, translator: Translator, options: DecodeOptions, jobs: list[Job]) -> None:
        sources = [s for job in jobs for s in job.sources]
        try:
            hyps = translator.translate_ids(sources, options)
        except Exception as err:  # one failing round must not stop the server
            for job in jobs:
                job.resolve(error=err)
            return
        self.on_batch(len(sources), sum(len(s) for s in sources))
        start = 0
        for job in jobs:
            job.resolve(hyps[start:start + len(job.sources)])
            start += len(job.sources)

    @staticmethod
    def _call(job: Job) -> None:
        if job.cancelled or job.call is None:
            return
        try:
            job.resolve(job.call())
        except Exception as err:
            job.resolve(error=err)
