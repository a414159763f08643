"""What the routes share: the served models by language pair, their decoding batcher, the
limits, and language detection among the models' languages."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass

from ..decode.options import DecodeOptions
from ..detect import LanguageDetector
from ..errors import UserError
from ..glossary import Glossary
from ..translate import Translator
from .batching import Batcher
from .http import ApiError, Gate, Metrics

KEEP_FILES, KEEP_BYTES = 64, 256 << 20  # translated files kept for download


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
    beam_limit: int = 16  # the largest beam a /v1/translate request may ask for
    glossary: Glossary | None = None  # the terms of every request


@dataclass
class Model:
    """A served model and its language pair."""

    source: str
    target: str
    translator: Translator

    @property
    def name(self) -> str:
        return f"{self.source}-{self.target}"


class Service:
    """The models, the batcher that decodes for every route, and the limits."""

    def __init__(self, models: list[Model], settings: Settings) -> None:
        if not models:
            raise UserError("serve needs at least one --checkpoint")
        self.models = {m.name: m for m in models}
        self.settings = settings
        self.metrics = Metrics(lambda: self.batcher.depth)
        self.batcher: Batcher = Batcher(
            {m.name: m.translator for m in models}, batch_tokens=settings.batch_tokens,
            max_wait_ms=settings.max_wait_ms, queue_size=settings.queue_size,
            on_batch=self.metrics.batch_done)
        self.gate = Gate(settings.max_body_bytes, settings.api_keys, settings.req_limit)
        self.detectors: dict[tuple[str, ...], LanguageDetector] = {}
        self.files: OrderedDict[str, bytes] = OrderedDict()  # translated, for download

    def keep_file(self, name: str, data: bytes) -> None:
        """Keep a translated file for download: the latest ``KEEP_FILES`` files, at most
        ``KEEP_BYTES`` together, the oldest dropped first."""
        self.files[name] = data
        while len(self.files) > KEEP_FILES or (
                len(self.files) > 1 and sum(map(len, self.files.values())) > KEEP_BYTES):
            self.files.popitem(last=False)

    def check_chars(self, chars: int) -> None:
        """400 for a request of more than ``char_limit`` characters."""
        if chars > self.settings.char_limit:
            raise ApiError(400, f"Invalid request: request ({chars}) exceeds text limit "
                                f"({self.settings.char_limit})")

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
                  text: str = "") -> tuple[Model, dict[str, object] | None]:
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

    def glossary(self, terms=None) -> Glossary | None:
        """The service's glossary with a request's ``terms`` ((source, target) pairs or a
        mapping) added; 400 for terms that are not pairs of strings."""
        if not terms:
            return self.settings.glossary
        try:
            extra = Glossary.from_pairs(terms)
        except UserError as err:
            raise ApiError(400, f"Invalid request: {err}") from None
        return Glossary((self.settings.glossary.terms if self.settings.glossary else ())
                        + extra.terms)

    async def decode(self, model: Model, sentences: list[str], options: DecodeOptions,
                     glossary: Glossary | None = None) -> list[list[tuple[str, float]]]:
        """Each sentence's n-best translations as (text, score), through the model's codec
        (as `aiayn translate` decodes them). Sentences with glossary terms (the service's by
        default) are decoded by constrained beam search on the decoding thread between
        rounds."""
        translator, codec = model.translator, model.translator.codec
        groups = [codec.encode_text(s) for s in sentences]  # past the limit: in pieces
        sources = [source for group in groups for source in group]
        glossary = glossary or self.settings.glossary
        constraints = translator.constraints(sources, glossary, options) if glossary else None
        if constraints and any(constraints):
            hyps = await self.run_alone(model, lambda: translator.translate_ids(
                [s.ids for s in sources], options, constraints=constraints))
        else:
            hyps = await self.wait(self.batcher.submit(model.name, [s.ids for s in sources],
                                                       options))
        return codec.decode_lines(groups, hyps)

    async def run_alone(self, model: Model, call):
        """``call()``'s result, run on the decoding thread between two rounds."""
        return await self.wait(self.batcher.submit(model.name, [], None, call=call))

    async def wait(self, future: asyncio.Future):
        try:
            return await asyncio.wait_for(future, self.settings.timeout)
        except asyncio.TimeoutError:
            raise ApiError(504, f"Translation timed out after {self.settings.timeout:g} s") \
                from None
