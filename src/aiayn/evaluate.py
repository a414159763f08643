"""`aiayn evaluate`: translate a source file and score it against references with sacreBLEU."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import sacrebleu

from . import placeholders
from .decode.options import DecodeOptions
from .errors import UserError
from .glossary import Glossary, term_rate
from .translate import load


def score(hypotheses: list[str], references: list[str]) -> dict:
    """Detokenized corpus BLEU and chrF, with sacreBLEU's signatures."""
    if len(hypotheses) != len(references):
        raise UserError(f"{len(hypotheses)} hypotheses but {len(references)} references; "
                        "the files must have one line per sentence")
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    b = bleu.corpus_score(hypotheses, [references])
    c = chrf.corpus_score(hypotheses, [references])
    return {"bleu": b.score, "bleu_signature": str(bleu.get_signature()),
            "chrf": c.score, "chrf_signature": str(chrf.get_signature())}


def evaluate(checkpoint: str | Path | list, sources: list[str], references: list[str],
             options: DecodeOptions | None = None, *, device: str = "cpu",
             int8: bool = False, compile: bool | None = None,
             glossary: Glossary | None = None, shortlist: str | Path | None = None) -> dict:
    """Translate ``sources`` with the checkpoint (several: an ensemble) and score against
    ``references``; with a ``glossary``, the share of translations that hold their terms."""
    if len(sources) != len(references):
        raise UserError(f"--src has {len(sources)} lines but --ref has {len(references)}; "
                        "they must be aligned line by line")
    translator = load(checkpoint, device=device, int8=int8, compile=compile)
    if shortlist:
        translator.use_shortlist(shortlist)
    hypotheses = cast("list[str]", translator.translate(sources, options,  # (nbest 1)
                                                        glossary=glossary))
    terms = term_rate(glossary, sources, hypotheses) if glossary else {}
    return {**score(hypotheses, references), **placeholder_rate(sources, hypotheses), **terms,
            "hypotheses": hypotheses}


def placeholder_rate(sources: list[str], hypotheses: list[str]) -> dict:
    """Of the sources with placeholders (``%s``, ``{0}``, ``<b>``...), how many translations
    hold exactly the same ones; {} when no source has any."""
    having = [(s, h) for s, h in zip(sources, hypotheses) if placeholders.find(s)]
    if not having:
        return {}
    kept = sum(placeholders.kept(s, h) for s, h in having)
    return {"placeholders_kept": kept / len(having), "placeholder_sentences": len(having)}
