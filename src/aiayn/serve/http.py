"""The service's HTTP plumbing, apart from what its routes answer: request bodies read within
a size limit, fields from JSON or forms, API keys and rate limits, errors in LibreTranslate's
shape, and each route counted and timed for Prometheus and the log."""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict, deque
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .batching import QueueFull

log = logging.getLogger("aiayn.serve")


class ApiError(Exception):
    """An error answered as LibreTranslate does: ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def flag(values: dict[str, Any], name: str) -> bool:
    """A request's true/false field, from JSON (true, false) or a form ("true", "false",
    "1", "0"); absent is false, anything else a 400 naming it."""
    value = values.get(name)
    if value in (None, False, "", 0, "false", "0"):
        return False
    if value in (True, 1, "true", "1"):
        return True
    raise ApiError(400, f"Invalid request: {name} must be true or false, not {value!r}")


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class Metrics:
    """The service's Prometheus metrics, in a registry of its own."""

    def __init__(self, queue_depth: Callable[[], int]) -> None:
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
              registry=r).set_function(queue_depth)

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


class Gate:
    """What every route does with a request before its own work: read the body within
    ``max_body_bytes``, parse its fields, check the API key and the client's rate."""

    def __init__(self, max_body_bytes: int, api_keys: frozenset[str] | None,
                 req_limit: int) -> None:
        self.max_body_bytes, self.api_keys = max_body_bytes, api_keys
        self.limiter = RateLimiter(req_limit)

    async def body(self, request: Request) -> bytes:
        """The body, or 413 once it passes the limit; the rest is read and dropped, so that
        the client, still sending, gets the answer instead of a reset connection."""
        limit, size, chunks = self.max_body_bytes, 0, []
        async for chunk in request.stream():
            size += len(chunk)
            if size <= limit:
                chunks.append(chunk)
        if size > limit:
            raise ApiError(413, f"Request body too large (limit {limit} bytes)")
        return b"".join(chunks)

    async def fields(self, request: Request) -> dict[str, Any]:
        """The request's fields from JSON, a URL-encoded form or a multipart form, once the
        API key and the rate limit admit it."""
        values = await self._parse(request)
        self.admit(request, values)
        return values

    async def upload(self, request: Request) -> tuple[dict[str, Any], str, bytes]:
        """A multipart form's fields, and its ``file``'s name and content, once the API key
        and the rate limit admit it; 400 without a file."""
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "multipart/form-data":
            raise ApiError(400, "Invalid request: send the file as multipart/form-data")
        request._body = await self.body(request)  # parsed from what was read
        form = await request.form()
        values = {k: v for k, v in form.items() if isinstance(v, str)}
        self.admit(request, values)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise ApiError(400, "Invalid request: missing file parameter")
        return values, upload.filename or "file", await upload.read()

    async def _parse(self, request: Request) -> dict[str, Any]:
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
        if self.api_keys is not None and key not in self.api_keys:
            raise ApiError(403, "Invalid API key")
        client = key or (request.client.host if request.client else "unknown")
        if not self.limiter.allow(client):
            raise ApiError(429, "Too many requests: slow down")


Handler = Callable[[Request], Awaitable[Response]]


def instrumented(path: str, handler: Handler, methods: list[str], metrics: Metrics) -> Route:
    """A route whose errors are answered in LibreTranslate's shape, counted by status, timed,
    and logged one line each."""
    async def endpoint(request: Request) -> Response:
        start = time.perf_counter()
        try:
            response = await handler(request)
        except ApiError as err:
            response = error_response(err.status, err.message)
        except ClientDisconnect:
            response = error_response(400, "Client disconnected")
        except QueueFull:
            response = error_response(503, "The server is busy; try again shortly")
        seconds = time.perf_counter() - start
        metrics.requests.labels(path, str(response.status_code)).inc()
        metrics.latency.labels(path).observe(seconds)
        client = request.client.host if request.client else "-"
        log.info('%s "%s %s" %d %.1f ms', client, request.method, path,
                 response.status_code, seconds * 1000)
        return response
    return Route(path, endpoint, methods=methods)
