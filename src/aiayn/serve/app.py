"""The HTTP service: LibreTranslate's API, aiayn's own, metrics and the attention page.

``create_app(models, settings)`` returns a Starlette application; ``aiayn serve`` runs it on
uvicorn. Its parts:

- ``libretranslate``: LibreTranslate's routes (existing clients work unchanged), errors as
  ``{"error": "..."}`` with LibreTranslate's status codes;
- ``native``: ``POST /v1/translate``, ``POST /v1/attention``, ``GET /metrics``, ``GET /``;
- ``service``: the models, their one ``Batcher`` and the limits; request handlers only parse,
  validate and wait;
- ``http``: bodies, fields, API keys, rate limits, and every route counted, timed and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from . import libretranslate, native
from .http import error_response, instrumented
from .service import Model, Service, Settings

__all__ = ["Model", "Settings", "create_app"]


def create_app(models: list[Model], settings: Settings | None = None) -> Starlette:
    """The ASGI application serving ``models`` (at least one)."""
    service = Service(models, settings or Settings())
    routes = [instrumented(path, partial(handler, service), methods, service.metrics)
              for path, handler, methods in libretranslate.ROUTES + native.ROUTES]

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)  # (the handler of HTTPException only)
        service.metrics.requests.labels("other", str(exc.status_code)).inc()
        return error_response(exc.status_code, exc.detail)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await asyncio.get_running_loop().run_in_executor(None, service.batcher.close)

    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error},
                    lifespan=lifespan)
    app.state.service = service
    return app
