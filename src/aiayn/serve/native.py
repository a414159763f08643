"""aiayn's own routes: ``POST /v1/translate`` (sentences as given, beam, n-best, scores,
alignments, a glossary), ``POST /v1/attention`` (tokens and per-layer, per-head
cross-attention, for the page), ``GET /metrics`` (Prometheus text format) and ``GET /``
(the attention page)."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ..decode.options import DecodeOptions
from ..errors import UserError
from .http import ApiError, flag
from .service import Service


def _model(service: Service, values: dict, text: str):
    """The request's model: its ``source`` and ``target``, or the only one loaded when it
    names neither."""
    source, target = values.get("source"), values.get("target")
    if source is None and target is None and len(service.models) == 1:
        return next(iter(service.models.values()))
    if not isinstance(source, str) or not source or not isinstance(target, str) or not target:
        name = "target" if isinstance(source, str) and source else "source"
        raise ApiError(400, f"Invalid request: missing {name} parameter (this server has "
                            f"{', '.join(sorted(service.models))})")
    return service.model_for(source, target, text)[0]


async def v1_translate(service: Service, request: Request) -> JSONResponse:
    values = await service.gate.fields(request)
    sentences = values.get("sentences")
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise ApiError(400, "Invalid request: sentences must be a list of strings")
    if len(sentences) > service.settings.batch_limit:
        raise ApiError(400, f"Invalid request: {len(sentences)} sentences exceed the batch "
                            f"limit ({service.settings.batch_limit})")
    if sum(map(len, sentences)) > service.settings.char_limit:
        raise ApiError(400, f"Invalid request: the sentences exceed the text limit "
                            f"({service.settings.char_limit})")
    model = _model(service, values, "\n".join(sentences))
    try:
        options = DecodeOptions(beam=int(values.get("beam", service.settings.beam)),
                                nbest=int(values.get("nbest", 1)),
                                lenpen=float(values.get("lenpen",
                                                        DecodeOptions.default("lenpen"))))
    except (UserError, TypeError, ValueError) as err:
        raise ApiError(400, f"Invalid request: {err}") from None
    if options.beam > service.settings.beam_limit:
        raise ApiError(400, f"Invalid request: beam ({options.beam}) exceeds the beam limit "
                            f"({service.settings.beam_limit})")
    want_links = flag(values, "alignments")
    found = await service.decode(model, sentences, options,
                                 service.glossary(values.get("glossary")))
    out = []
    for nbest in found:
        (text, score), rest = nbest[0], nbest[1:]
        entry: dict[str, Any] = {"text": text, "score": score}
        if options.nbest > 1:
            entry["alternatives"] = [{"text": t, "score": x} for t, x in rest]
        out.append(entry)
    if want_links:
        pairs = [(s, e["text"]) for s, e in zip(sentences, out)]
        links = await service.run_alone(model, lambda: model.translator.align_all(pairs))
        for entry, link in zip(out, links):
            entry["alignment"] = link
    return JSONResponse({"model": model.name, "translations": out})


async def v1_attention(service: Service, request: Request) -> JSONResponse:
    values = await service.gate.fields(request)
    text = values.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ApiError(400, "Invalid request: missing text parameter")
    service.check_chars(len(text))
    model = _model(service, values, text)
    translator = model.translator

    def maps() -> dict:
        translation = str(translator.translate([text])[0])  # (nbest 1: a string)
        found = translator.attention(text, translation)
        return {"translation": translation, "source_tokens": found.src_tokens,
                "target_tokens": found.tgt_tokens,
                "cross": [[[[round(w, 4) for w in row] for row in head]
                           for head in layer.tolist()] for layer in found.cross]}
    return JSONResponse(await service.run_alone(model, maps))


async def metrics(service: Service, request: Request) -> Response:
    return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)


async def page(service: Service, request: Request) -> HTMLResponse:
    return HTMLResponse((files("aiayn.serve") / "page.html").read_text(encoding="utf-8"))


ROUTES = [("/", page, ["GET"]), ("/v1/translate", v1_translate, ["POST"]),
          ("/v1/attention", v1_attention, ["POST"]), ("/metrics", metrics, ["GET"])]
