"""How to decode, declared once: every option with its default, help and unit, from which the
command line's flags (``add_flags``) and the server's defaults are made, as ``TrainConfig``
makes `aiayn train`'s."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, fields
from typing import Any

from ..config import finite_number
from ..errors import UserError
from .search import BEAM, BEAM_RULES, LENGTH_PENALTIES, LENPEN, MAX_LEN_A, MAX_LEN_B


def option(default: Any, help: str, *, unit: str | None = None,
           choices: tuple | None = None) -> Any:
    """A DecodeOptions field with the help text, unit or choices its flag is made from."""
    return dataclasses.field(default=default, metadata={"help": help, "unit": unit,
                                                        "choices": choices})


@dataclass(frozen=True)
class DecodeOptions:
    """How to decode (§6.1 defaults: beam 4, length penalty 0.6, max length input + 50).

    ``lenpen_form="hf"``, ``beam_rules="hf"``, ``max_len_a=0`` and ``max_len_b=L - 1``
    reproduce Hugging Face's ``generate(num_beams=beam, length_penalty=lenpen,
    max_length=L)``. Each field's metadata holds its help; ``add_flags`` makes the flags.
    """

    beam: int = option(BEAM, "beam size; 1 = greedy", unit="N")
    lenpen: float = option(LENPEN, "length penalty alpha", unit="ALPHA")
    lenpen_form: str = option("gnmt", "gnmt: score / ((5 + |Y|) / 6)^alpha, the paper's; hf "
                              "(or simple): score / |Y|^alpha, Hugging Face's",
                              choices=LENGTH_PENALTIES)
    nbest: int = option(1, "hypotheses returned per sentence (at most --beam)", unit="N")
    batch_tokens: int = option(4096, "source tokens x beam per decoding batch", unit="TOKENS")
    max_len_a: float = option(MAX_LEN_A, "an output may be this many times as long as its input, "
                              "plus --max-len-b", unit="FACTOR")
    max_len_b: int = option(MAX_LEN_B, "an output may be this many tokens longer than its input",
                            unit="TOKENS")
    beam_rules: str = option("aiayn", "aiayn: a sentence stops once --beam hypotheses have "
                             "finished; hf: Hugging Face generate's rules. --lenpen-form hf "
                             "--beam-rules hf --max-len-a 0 --max-len-b L-1 reproduces "
                             "generate(num_beams=BEAM, length_penalty=LENPEN, max_length=L)",
                             choices=BEAM_RULES)
    sample: bool = option(False, "sample one translation per sentence instead of beam search "
                          "(back-translation); reproducible with --seed")
    temperature: float = option(1.0, "--sample: temperature")
    top_k: int = option(0, "--sample: draw from the K most probable tokens; 0 = all", unit="K")
    top_p: float = option(1.0, "--sample: draw from the smallest set of tokens of probability "
                          "P", unit="P")
    seed: int = option(0, "--sample: random seed", unit="N")

    SAMPLING = ("temperature", "top_k", "top_p", "seed")

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.type in ("float", float) and not finite_number(getattr(self, f.name)):
                raise UserError(f"--{f.name.replace('_', '-')} ({getattr(self, f.name)!r}) "
                                "must be a finite number")
        if self.beam < 1:
            raise UserError(f"--beam ({self.beam}) must be at least 1")
        if not 1 <= self.nbest <= self.beam:
            raise UserError(f"--nbest ({self.nbest}) must be between 1 and --beam ({self.beam})")
        if self.lenpen_form not in LENGTH_PENALTIES:
            raise UserError(f"--lenpen-form ({self.lenpen_form!r}) must be one of "
                            f"{', '.join(LENGTH_PENALTIES)}")
        if self.beam_rules not in BEAM_RULES:
            raise UserError(f"--beam-rules ({self.beam_rules!r}) must be one of "
                            f"{', '.join(BEAM_RULES)}")
        if self.temperature <= 0 or self.top_k < 0 or not 0 < self.top_p <= 1:
            raise UserError("--temperature must be positive, --top-k >= 0 and --top-p in (0, 1]")
        if self.batch_tokens < 1:
            raise UserError(f"--batch-tokens ({self.batch_tokens}) must be at least 1")
        if self.max_len_a < 0 or self.max_len_b < 0:
            raise UserError("--max-len-a and --max-len-b must be >= 0")

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of the option ``name``."""
        return next(f.default for f in fields(cls) if f.name == name)

    @classmethod
    def add_flags(cls, parser: argparse.ArgumentParser, names: tuple[str, ...],
                  help: dict[str, str] | None = None) -> None:
        """One flag per option in ``names`` (``--max-len-a`` for ``max_len_a``), with its help
        (or the one ``help`` gives for it) and default."""
        for f in fields(cls):
            if f.name not in names:
                continue
            text = (help or {}).get(f.name, f.metadata["help"])
            flag = "--" + f.name.replace("_", "-")
            if f.type in ("bool", bool):
                parser.add_argument(flag, action="store_true", help=text)
                continue
            parser.add_argument(flag, type=type(f.default), default=f.default,
                                choices=f.metadata["choices"], metavar=f.metadata["unit"],
                                help=f"{text} (default: {f.default})".replace("%", "%%"))

    @classmethod
    def from_flags(cls, args: argparse.Namespace, **given: Any) -> "DecodeOptions":
        """The options the flags that ``add_flags`` made say, with ``given`` on top; the
        sampling flags without --sample are a UserError (they would be ignored)."""
        values = {f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)}
        if not values.get("sample"):
            stray = [f"--{n.replace('_', '-')}" for n in cls.SAMPLING
                     if n in values and values[n] != cls.default(n)]
            if stray:
                raise UserError(f"{', '.join(stray)} only apply to sampling: add --sample, or "
                                "drop them for beam search")
        return cls(**{**values, **given})
