"""LibreTranslate's API, so that its clients work unchanged: ``POST /translate``,
``POST /translate_file`` (and ``GET /download_file/NAME``), ``GET /languages``,
``GET /frontend/settings``, ``GET /health``, ``POST /detect`` and ``POST /suggest`` (refused,
as LibreTranslate refuses it where suggestions are off), with its field names, status codes
and ``{"error": ...}`` answers."""

from __future__ import annotations

import uuid
from collections import defaultdict
from pathlib import PurePath
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..decode.options import DecodeOptions
from ..documents import FORMATS
from ..errors import UserError
from ..markup import Document
from .http import ApiError
from .service import Service
from .text import join_sentences, language_name, split_sentences


async def translate(service: Service, request: Request) -> JSONResponse:
    values = await service.gate.fields(request)
    q = values.get("q")
    for name in ("q", "source", "target"):
        if values.get(name) in (None, "", []):
            raise ApiError(400, f"Invalid request: missing {name} parameter")
    texts = [q] if isinstance(q, str) else q
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "Invalid request: q must be a string or a list of strings")
    if len(texts) > service.settings.batch_limit:
        raise ApiError(400, f"Invalid request: request ({len(texts)}) exceeds text limit "
                            f"({service.settings.batch_limit})")
    service.check_chars(sum(len(t) for t in texts))
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
    model, detected = service.model_for(str(values["source"]), str(values["target"]),
                                        "\n".join(texts))
    nbest = 1 + alternatives
    options = DecodeOptions(beam=max(service.settings.beam, nbest), nbest=nbest)

    # every sentence of every text (or HTML document), decoded together
    plans: list[Document | list[list[str]]] = []
    sentences: list[str] = []
    for text in texts:
        if text_format == "html":
            doc = Document(text, "html", language=model.source, target=model.target)
            plans.append(doc)
            sentences += doc.sources
        else:
            lines = split_sentences(text, model.source)
            plans.append(lines)
            sentences += [s for line in lines for s in line]
    hyps = await service.decode(model, sentences, options)
    results: list[list[str]] = []
    renders: list[tuple[Document, list[str]]] = []
    start = 0
    for plan in plans:
        count = len(plan.sources) if isinstance(plan, Document) else sum(map(len, plan))
        mine, start = hyps[start:start + count], start + count
        ranks = [[nbest[min(rank, len(nbest) - 1)][0] for nbest in mine]
                 for rank in range(nbest)]
        if isinstance(plan, Document):
            renders += [(plan, rank) for rank in ranks]
            results.append([])
        else:
            results.append([_lines(plan, rank) for rank in ranks])
    if renders:  # the tags of HTML placed through the model's alignments, between batches
        pairs = [(doc.sources[i], rank[i]) for doc, rank in renders for i in doc.aligned]
        translator = model.translator
        links = iter(await service.run_alone(model, lambda: translator.tag_links(pairs)))
        found = iter(renders)
        for result, plan in zip(results, plans):
            if isinstance(plan, Document):
                for _ in range(nbest):
                    doc, rank = next(found)
                    placing = {i: next(links) for i in doc.aligned}
                    result.append(doc.render(rank, {i: p[0] for i, p in placing.items()},
                                             {i: p[1] for i, p in placing.items()}))
    single = isinstance(q, str)
    answer: dict[str, Any] = {"translatedText": results[0][0] if single
                              else [r[0] for r in results]}
    if alternatives:
        answer["alternatives"] = results[0][1:] if single else [r[1:] for r in results]
    if detected:
        answer["detectedLanguage"] = detected if single else [detected] * len(texts)
    return JSONResponse(answer)


def _lines(lines: list[list[str]], translations: list[str]) -> str:
    """A text from the translations of its lines' sentences, in order."""
    it = iter(translations)
    return join_sentences([[next(it) for _ in line] for line in lines])


async def translate_file(service: Service, request: Request) -> JSONResponse:
    """LibreTranslate's file translation: a multipart upload (``file``, ``source``,
    ``target``), translated in its own format (``aiayn.documents``); the answer's
    ``translatedFileUrl`` downloads it."""
    from ..documents import extension, translate_document
    values, filename, data = await service.gate.upload(request)
    for name in ("source", "target"):
        if not values.get(name):
            raise ApiError(400, f"Invalid request: missing {name} parameter")
    try:
        kind = extension(filename)
    except UserError as err:
        raise ApiError(400, f"Invalid request: {err}") from None
    if not data.strip():
        raise ApiError(400, "Invalid request: the file is empty")
    model, _ = service.model_for(values["source"], values["target"],
                                 data[:4000].decode("utf-8", "replace"))
    translator, settings = model.translator, service.settings
    options = DecodeOptions(beam=settings.beam)
    try:
        out = await service.run_alone(model, lambda: translate_document(
            translator, data, kind, options, glossary=settings.glossary))
    except UserError as err:
        raise ApiError(400, f"Invalid request: {err}") from None
    name = f"{uuid.uuid4().hex}.{PurePath(filename).name}"
    service.keep_file(name, out)
    return JSONResponse({"translatedFileUrl": f"{str(request.base_url)}download_file/{name}"})


async def download_file(service: Service, request: Request) -> Response:
    name = request.path_params["name"]
    data = service.files.get(name)
    if data is None:
        raise ApiError(404, "Invalid request: no such file (translated files are kept for a "
                            "while only)")
    original = name.split(".", 1)[-1]
    return Response(data, media_type="application/octet-stream",
                    headers={"Content-Disposition": f'attachment; filename="{original}"'})


async def languages(service: Service, request: Request) -> JSONResponse:
    codes: dict[str, set[str]] = defaultdict(set)
    for m in service.models.values():
        codes[m.source].add(m.target)
        codes.setdefault(m.target, set())
    return JSONResponse([{"code": c, "name": language_name(c), "targets": sorted(t)}
                         for c, t in sorted(codes.items())])


async def frontend_settings(service: Service, request: Request) -> JSONResponse:
    first = next(iter(service.models.values()))
    keys = service.settings.api_keys is not None
    return JSONResponse({
        "charLimit": service.settings.char_limit, "frontendTimeout": 500,
        "apiKeys": keys, "keyRequired": keys, "suggestions": False,
        "filesTranslation": True, "supportedFilesFormat": list(FORMATS),
        "language": {"source": {"code": first.source, "name": language_name(first.source)},
                     "target": {"code": first.target, "name": language_name(first.target)}},
    })


async def health(service: Service, request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def detect(service: Service, request: Request) -> JSONResponse:
    values = await service.gate.fields(request)
    q = values.get("q")
    if q in (None, ""):
        raise ApiError(400, "Invalid request: missing q parameter")
    if not isinstance(q, str):
        raise ApiError(400, "Invalid request: q must be a string")
    service.check_chars(len(q))
    # every language the server reads or writes, as LibreTranslate detects among all its
    # languages: text already in a target language is said to be in it
    languages = {code for m in service.models.values() for code in (m.source, m.target)}
    found = service.detector(sorted(languages)).detect(q)
    return JSONResponse([{"confidence": c, "language": code} for code, c in found])


async def suggest(service: Service, request: Request) -> JSONResponse:
    """Suggestions (a user's better translation, kept for retraining) are not taken, as
    ``/frontend/settings`` says (``"suggestions": false``)."""
    raise ApiError(403, "Suggestions are disabled on this server.")


ROUTES = [("/translate", translate, ["POST"]), ("/languages", languages, ["GET"]),
          ("/frontend/settings", frontend_settings, ["GET"]), ("/health", health, ["GET"]),
          ("/detect", detect, ["POST"]), ("/suggest", suggest, ["POST"]),
          ("/translate_file", translate_file, ["POST"]),
          ("/download_file/{name}", download_file, ["GET"])]
