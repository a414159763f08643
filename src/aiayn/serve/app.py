"""The HTTP service: LibreTranslate's API, aiayn's own, metrics and the attention page.

``create_app(models, settings)`` returns a Starlette application; ``aiayn serve`` runs it on
uvicorn. Routes:

- LibreTranslate-compatible (existing clients work unchanged): ``POST /translate``,
  ``GET /languages``, ``GET /frontend/settings``, ``GET /health``, ``POST /detect``; errors are
  ``{"error": "..."}`` with LibreTranslate's status codes.
- Native: ``POST /v1/translate`` (sentences as given, beam, n-best, scores, alignments) and
  ``POST /v1/attention`` (tokens and per-layer, per-head cross-attention, for the page).
- ``GET /metrics`` (Prometheus text format) and ``GET /`` (the page).

Every decode goes through one ``Batcher``; request handlers only parse, validate and wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..decode.options import DecodeOptions
from ..detect import LanguageDetector
from ..errors import UserError
from ..translate import Translator
from .batching import Batcher, QueueFull
from .text import html_texts, join_sentences, language_name, rebuild_html, split_sentences

log = logging.getLogger("aiayn.serve")


@dataclass(frozen=True)
class Settings:
    """Limits and defaults of the service (``aiayn serve --help`` describes each)."""

    char_limit: int = 5000
    batch_limit: int = 64
    max_body_bytes: int = 1_000_000
    timeout: float = 60.0
    batch_tokens: int = 4096
    max_wait_ms: float = 10.0
    queue_size: int = 256
    api_keys: frozenset[str] | None = None
    req_limit: int = 0  # requests per minute per API key or client address; 0 = no limit
    beam: int = DecodeOptions.default("beam")


@dataclass
class Model:
    """A served model and its language pair."""

    source: str
    target: str
    translator: Translator

    @property
    def name(self) -> str:
        return f"{self.source}-{self.target}"


class ApiError(Exception):
    """An error answered as LibreTranslate does: ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class Metrics:
    def __init__(self, batcher_depth) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("aiayn_requests", "HTTP requests", ["path", "status"], registry=r)
        self.sentences = Counter("aiayn_sentences", "sentences translated", registry=r)
        self.tokens = Counter("aiayn_source_tokens", "source tokens translated", registry=r)
        self.batch = Histogram("aiayn_batch_sentences", "sentences per decoding round",
                               buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256), registry=r)
        self.latency = Histogram("aiayn_request_seconds", "request latency", ["path"],
                                 registry=r)
        Gauge("aiayn_queue_depth", "jobs waiting for the decoder",
              registry=r).set_function(batcher_depth)

    def batch_done(self, sentences: int, tokens: int) -> None:
        self.sentences.inc(sentences)
        self.tokens.inc(tokens)
        self.batch.observe(sentences)


class RateLimiter:
    """At most ``per_minute`` requests per client in any 60 seconds."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.seen: dict[str, deque[float]] = defaultdict(deque)

    def allow(self, client: str) -> bool:
        if not self.per_minute:
            return True
        now, times = time.monotonic(), self.seen[client]
        while times and now - times[0] > 60:
            times.popleft()
        if len(times) >= self.per_minute:
            return False
        times.append(now)
        return True


class Service:
    """The models, the batcher and the limits, with one method per route."""

    def __init__(self, models: list[Model], settings: Settings) -> None:
        self.models = {m.name: m for m in models}
        self.settings = settings
        self.metrics = Metrics(lambda: self.batcher.depth)
        self.batcher: Batcher = Batcher(
            {m.name: m.translator for m in models}, batch_tokens=settings.batch_tokens,
            max_wait_ms=settings.max_wait_ms, queue_size=settings.queue_size,
            on_batch=self.metrics.batch_done)
        self.limiter = RateLimiter(settings.req_limit)
        self.detectors: dict[tuple[str, ...], LanguageDetector] = {}

    # ------------------------------------------------------------------ helpers
    async def body(self, request: Request) -> bytes:
        """The body, or 413 once it passes the limit; the rest is read and dropped, so that
        the client, still sending, gets the answer instead of a reset connection."""
        limit, size, chunks = self.settings.max_body_bytes, 0, []
        async for chunk in request.stream():
            size += len(chunk)
            if size <= limit:
                chunks.append(chunk)
        if size > limit:
            raise ApiError(413, f"Request body too large (limit {limit} bytes)")
        return b"".join(chunks)

    async def fields(self, request: Request) -> dict[str, Any]:
        """The request's fields from JSON, a URL-encoded form or a multipart form."""
        body = await self.body(request)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "application/json":
            try:
                values = json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise ApiError(400, "Invalid request: malformed JSON") from None
            if not isinstance(values, dict):
                raise ApiError(400, "Invalid request: expected a JSON object")
            try:  # JSON may escape a lone surrogate ("\\ud800"), which no text can hold
                json.dumps(values, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise ApiError(400, "Invalid request: the JSON holds an unpaired surrogate "
                                    "escape; send valid Unicode text") from None
            return values
        if kind == "multipart/form-data":
            request._body = body  # parsed from what was read
            form = await request.form()
            return {k: v for k, v in form.items() if isinstance(v, str)}
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(400, "Invalid request: the body is not valid UTF-8") from None
        # a repeated q is a list of texts (as clients send lists in forms)
        return {k: v if k == "q" and len(v) > 1 else v[0]
                for k, v in parse_qs(text, keep_blank_values=True).items()}

    def admit(self, request: Request, values: dict[str, Any]) -> None:
        """API key (403) and rate limit (429)."""
        key = values.get("api_key") or None
        if self.settings.api_keys is not None and key not in self.settings.api_keys:
            raise ApiError(403, "Invalid API key")
        client = key or (request.client.host if request.client else "unknown")
        if not self.limiter.allow(client):
            raise ApiError(429, "Too many requests: slow down")

    def detector(self, codes: list[str]) -> LanguageDetector:
        """A detector among ``codes`` (built once per set of languages)."""
        key = tuple(sorted(set(codes)))
        if key not in self.detectors:
            try:
                self.detectors[key] = LanguageDetector(list(key))
            except UserError as err:
                raise ApiError(400, f"Language detection is not available: {err}") from None
        return self.detectors[key]

    def model_for(self, source: str, target: str,
                  text: str = "") -> tuple[Model, dict[str, Any] | None]:
        """The model of a language pair. ``source`` "auto" picks, among the models into
        ``target``, the one whose source language ``text`` is detected in (lingua, limited
        to those languages). Returns the model and, when detected, LibreTranslate's
        ``detectedLanguage`` ({"confidence", "language"})."""
        if source == "auto":
            fits = {m.source: m for m in self.models.values() if m.target == target}
            if not fits:
                raise ApiError(400, f"{target} is not supported")
            code, confidence = self.detector(list(fits)).detect(text)[0]
            return fits[code], {"confidence": confidence, "language": code}
        for code in (source, target):
            if not any(code in (m.source, m.target) for m in self.models.values()):
                raise ApiError(400, f"{code} is not supported")
        model = self.models.get(f"{source}-{target}")
        if model is None:
            raise ApiError(400, f"{source} to {target} is not supported")
        return model, None

    async def decode(self, model: Model, sentences: list[str],
                     options: DecodeOptions) -> list[list[tuple[str, float]]]:
        """Each sentence's n-best translations as (text, score), through the model's codec
        (as `aiayn translate` decodes them)."""
        codec = model.translator.codec
        groups = [codec.encode_text(s) for s in sentences]  # past the limit: in pieces
        hyps = await self.wait(self.batcher.submit(
            model.name, [source.ids for group in groups for source in group], options))
        return codec.decode_lines(groups, hyps)

    async def run_alone(self, model: Model, call):
        return await self.wait(self.batcher.submit(model.name, [], None, call=call))

    async def wait(self, future: asyncio.Future):
        try:
            return await asyncio.wait_for(future, self.settings.timeout)
        except asyncio.TimeoutError:
            raise ApiError(504, f"Translation timed out after {self.settings.timeout:g} s") \
                from None

    # ------------------------------------------------------------------ LibreTranslate
    async def translate(self, request: Request) -> JSONResponse:
        values = await self.fields(request)
        self.admit(request, values)
        q = values.get("q")
        for name in ("q", "source", "target"):
            if values.get(name) in (None, "", []):
                raise ApiError(400, f"Invalid request: missing {name} parameter")
        texts = [q] if isinstance(q, str) else q
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ApiError(400, "Invalid request: q must be a string or a list of strings")
        if len(texts) > self.settings.batch_limit:
            raise ApiError(400, f"Invalid request: request ({len(texts)}) exceeds text limit "
                                f"({self.settings.batch_limit})")
        chars = sum(len(t) for t in texts)
        if chars > self.settings.char_limit:
            raise ApiError(400, f"Invalid request: request ({chars}) exceeds text limit "
                                f"({self.settings.char_limit})")
        text_format = values.get("format", "text") or "text"
        if text_format not in ("text", "html"):
            raise ApiError(400, f"Invalid request: format must be text or html, not "
                                f"{text_format!r}")
        try:
            alternatives = int(values.get("alternatives", 0) or 0)
        except (TypeError, ValueError):
            raise ApiError(400, "Invalid request: alternatives must be an integer") from None
        if not 0 <= alternatives <= 10:
            raise ApiError(400, "Invalid request: alternatives must be between 0 and 10")
        # source auto: one detection over the request's texts together picks the model
        model, detected = self.model_for(str(values["source"]), str(values["target"]),
                                         "\n".join(texts))
        nbest = 1 + alternatives
        options = DecodeOptions(beam=max(self.settings.beam, nbest), nbest=nbest)

        # every sentence of every text (or of every HTML text node), decoded together
        plans, sentences = [], []
        for text in texts:
            pieces = html_texts(text) if text_format == "html" else [(True, text)]
            nodes = [split_sentences(t, model.source) for is_text, t in pieces if is_text]
            plans.append((pieces, nodes))
            sentences += [s for node in nodes for line in node for s in line]
        hyps = await self.decode(model, sentences, options)
        results, start = [], 0
        for pieces, nodes in plans:
            count = sum(len(line) for node in nodes for line in node)
            mine, start = hyps[start:start + count], start + count
            results.append([_render(rank, pieces, nodes, mine, text_format)
                            for rank in range(nbest)])
        single = isinstance(q, str)
        answer: dict[str, Any] = {"translatedText": results[0][0] if single
                                  else [r[0] for r in results]}
        if alternatives:
            answer["alternatives"] = results[0][1:] if single else [r[1:] for r in results]
        if detected:
            answer["detectedLanguage"] = detected if single else [detected] * len(texts)
        return JSONResponse(answer)

    async def languages(self, request: Request) -> JSONResponse:
        codes: dict[str, set[str]] = defaultdict(set)
        for m in self.models.values():
            codes[m.source].add(m.target)
            codes.setdefault(m.target, set())
        return JSONResponse([{"code": c, "name": language_name(c), "targets": sorted(t)}
                             for c, t in sorted(codes.items())])

    async def frontend_settings(self, request: Request) -> JSONResponse:
        first = next(iter(self.models.values()))
        keys = self.settings.api_keys is not None
        return JSONResponse({
            "charLimit": self.settings.char_limit, "frontendTimeout": 500,
            "apiKeys": keys, "keyRequired": keys, "suggestions": False,
            "filesTranslation": False, "supportedFilesFormat": [],
            "language": {"source": {"code": first.source, "name": language_name(first.source)},
                         "target": {"code": first.target, "name": language_name(first.target)}},
        })

    async def health(self, request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def detect(self, request: Request) -> JSONResponse:
        values = await self.fields(request)
        self.admit(request, values)
        q = values.get("q")
        if q in (None, ""):
            raise ApiError(400, "Invalid request: missing q parameter")
        if not isinstance(q, str):
            raise ApiError(400, "Invalid request: q must be a string")
        if len(q) > self.settings.char_limit:
            raise ApiError(400, f"Invalid request: request ({len(q)}) exceeds text limit "
                                f"({self.settings.char_limit})")
        found = self.detector([m.source for m in self.models.values()]).detect(q)
        return JSONResponse([{"confidence": c, "language": code} for code, c in found])

    # ------------------------------------------------------------------ native API
    async def v1_translate(self, request: Request) -> JSONResponse:
        values = await self.fields(request)
        self.admit(request, values)
        sentences = values.get("sentences")
        if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            raise ApiError(400, "Invalid request: sentences must be a list of strings")
        if len(sentences) > self.settings.batch_limit:
            raise ApiError(400, f"Invalid request: {len(sentences)} sentences exceed the batch "
                                f"limit ({self.settings.batch_limit})")
        if sum(map(len, sentences)) > self.settings.char_limit:
            raise ApiError(400, f"Invalid request: the sentences exceed the text limit "
                                f"({self.settings.char_limit})")
        model, _ = self.model_for(str(values.get("source", "")), str(values.get("target", "")),
                                  "\n".join(sentences))
        try:
            options = DecodeOptions(beam=int(values.get("beam", self.settings.beam)),
                                    nbest=int(values.get("nbest", 1)),
                                    lenpen=float(values.get("lenpen",
                                                            DecodeOptions.default("lenpen"))))
        except (UserError, TypeError, ValueError) as err:
            raise ApiError(400, f"Invalid request: {err}") from None
        found = await self.decode(model, sentences, options)
        out = []
        for nbest in found:
            (text, score), rest = nbest[0], nbest[1:]
            entry: dict[str, Any] = {"text": text, "score": score}
            if options.nbest > 1:
                entry["alternatives"] = [{"text": t, "score": x} for t, x in rest]
            out.append(entry)
        if values.get("alignments"):
            pairs = [(s, e["text"]) for s, e in zip(sentences, out)]
            links = await self.run_alone(
                model, lambda: [model.translator.align(s, t) for s, t in pairs])
            for entry, link in zip(out, links):
                entry["alignment"] = link
        return JSONResponse({"model": model.name, "translations": out})

    async def v1_attention(self, request: Request) -> JSONResponse:
        values = await self.fields(request)
        self.admit(request, values)
        text = values.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "Invalid request: missing text parameter")
        if len(text) > self.settings.char_limit:
            raise ApiError(400, f"Invalid request: request ({len(text)}) exceeds text limit "
                                f"({self.settings.char_limit})")
        model, _ = self.model_for(str(values.get("source", "")), str(values.get("target", "")),
                                  text)
        translator = model.translator

        def maps() -> dict:
            translation = str(translator.translate([text])[0])  # (nbest 1: a string)
            found = translator.attention(text, translation)
            return {"translation": translation, "source_tokens": found.src_tokens,
                    "target_tokens": found.tgt_tokens,
                    "cross": [[[[round(w, 4) for w in row] for row in head]
                               for head in layer.tolist()] for layer in found.cross]}
        return JSONResponse(await self.run_alone(model, maps))

    async def metrics_text(self, request: Request) -> Response:
        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def page(self, request: Request) -> HTMLResponse:
        return HTMLResponse((files("aiayn.serve") / "page.html").read_text(encoding="utf-8"))


def _render(rank: int, pieces, nodes, translations, text_format: str) -> str:
    """One text (or HTML document) from the rank-th translation of each of its sentences (the
    best where a sentence has fewer)."""
    it = iter(translations)
    outs = []
    for node in nodes:
        lines = []
        for line in node:
            lines.append([nbest[min(rank, len(nbest) - 1)][0]
                          for nbest in (next(it) for _ in line)])
        outs.append(join_sentences(lines))
    return rebuild_html(pieces, outs) if text_format == "html" else outs[0]


def create_app(models: list[Model], settings: Settings | None = None) -> Starlette:
    """The ASGI application serving ``models`` (at least one)."""
    if not models:
        raise UserError("serve needs at least one --checkpoint")
    service = Service(models, settings or Settings())

    def route(path: str, handler, methods: list[str]) -> Route:
        async def endpoint(request: Request) -> Response:
            start = time.perf_counter()
            try:
                response = await handler(request)
            except ApiError as err:
                response = _error(err.status, err.message)
            except ClientDisconnect:
                response = _error(400, "Client disconnected")
            except QueueFull:
                response = _error(503, "The server is busy; try again shortly")
            seconds = time.perf_counter() - start
            service.metrics.requests.labels(path, str(response.status_code)).inc()
            service.metrics.latency.labels(path).observe(seconds)
            client = request.client.host if request.client else "-"
            log.info('%s "%s %s" %d %.1f ms', client, request.method, path,
                     response.status_code, seconds * 1000)
            return response
        return Route(path, endpoint, methods=methods)

    routes = [
        route("/", service.page, ["GET"]),
        route("/translate", service.translate, ["POST"]),
        route("/languages", service.languages, ["GET"]),
        route("/frontend/settings", service.frontend_settings, ["GET"]),
        route("/health", service.health, ["GET"]),
        route("/detect", service.detect, ["POST"]),
        route("/v1/translate", service.v1_translate, ["POST"]),
        route("/v1/attention", service.v1_attention, ["POST"]),
        route("/metrics", service.metrics_text, ["GET"]),
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)  # (the handler of HTTPException only)
        service.metrics.requests.labels("other", str(exc.status_code)).inc()
        return _error(exc.status_code, exc.detail)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await asyncio.get_running_loop().run_in_executor(None, service.batcher.close)

    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error},
                    lifespan=lifespan)
    app.state.service = service
    return app
