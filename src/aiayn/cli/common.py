"""What the commands share: progress to stderr, renamed flags, the decoding flags, reading input
lines and writing a command's output."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError

if TYPE_CHECKING:
    from ..data.charset import Charset


def log(message: str) -> None:
    """Progress messages go to stderr; stdout carries results."""
    print(message, file=sys.stderr, flush=True)


class Renamed(argparse.Action):
    """A flag's former name: still accepted, with a warning naming the new one."""

    def __init__(self, option_strings, dest, new: str, **kwargs) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        log(f"aiayn: warning: {option_string} is now {self.new}")
        setattr(namespace, self.dest, values)


def add_decoding_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", required=True, action="append", metavar="DIR",
                   help="a checkpoint directory, or a run directory (its best checkpoint); "
                        "repeat for an ensemble of models with one vocabulary")
    from ..decode.options import DecodeOptions
    DecodeOptions.add_flags(p, ("beam", "lenpen", "lenpen_form", "beam_rules", "batch_tokens",
                                "max_len_a", "max_len_b"))
    p.add_argument("--max-tokens", dest="batch_tokens", type=int, action=Renamed,
                   new="--batch-tokens")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("--int8", action="store_true",
                   help="int8 linear layers (dynamic quantization; CPU): faster, see docs")
    p.add_argument("--shortlist", metavar="FILE",
                   help="decode over a vocabulary shortlist built by `aiayn shortlist` (for "
                        "large target vocabularies; eager steps)")
    p.add_argument("--glossary", metavar="TSV",
                   help="'source term<TAB>target term' lines: the target term of every term "
                        "found in a sentence is written in its translation (constrained beam "
                        "search)")
    add_compile_flag(p)


def decode_options(args: argparse.Namespace):
    from ..decode.options import DecodeOptions
    return DecodeOptions.from_flags(args)


def input_file(path: str | Path, flag: str = "") -> Path:
    """``path`` as a file to read, or a one-line error naming what it is instead (``flag``:
    the option that gave it, named in the message)."""
    p = Path(path)
    named = f"{flag} {p}" if flag else str(p)
    if p.is_dir():
        raise UserError(f"{named}: is a directory; give a file")
    if not p.is_file():
        raise UserError(f"{named}: no such file")
    return p


def read_lines(path: str | None) -> list[str]:
    """The lines of a file (stdin when None), as ``corpus.split_lines`` splits them: every
    input line gets one output line."""
    from ..data.corpus import split_lines
    return split_lines(read_text(path))


def read_text(path: str | None, flag: str = "") -> str:
    """A file whole (stdin when None): UTF-8, or UTF-16 or UTF-32 by its byte order mark
    (``flag``: the option that gave it, named in a message)."""
    return read_document(path, flag=flag)[0]


def read_document(path: str | None, kind: str = "text", flag: str = ""
                  ) -> tuple[str, Charset | None]:
    """A file whole and the encoding to write its translation in (``data.charset``: by its
    byte order mark, or what an HTML or XML ``kind`` of file declares, else UTF-8); stdin
    (None) read the same way from its bytes, so that bytes not in the encoding are one line
    naming their line, not characters the tokenizer cannot take."""
    from ..data import charset
    if path is None:
        if not hasattr(sys.stdin, "buffer"):  # already text (an embedding program's stream)
            return sys.stdin.read(), None
        return charset.read(sys.stdin.buffer.read(), "stdin", kind)
    p = input_file(path, flag)
    return charset.read(p.read_bytes(), f"{flag} {p}" if flag else str(p), kind)


def one_line(text: str) -> str:
    """An output that stays on its line: line breaks a translation may hold become spaces."""
    return text.replace("\r", " ").replace("\n", " ")


def write_output(text: str, path: str | None, encoding: Charset | None = None) -> None:
    """A command's output: to ``path`` (checked beforehand by ``outputs.output_file``), or to
    stdout when None; in UTF-8, or in ``encoding`` (a document's own)."""
    if encoding is None:
        if path:
            Path(path).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        return
    data = encoding.write(text)
    if path:
        Path(path).write_bytes(data)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def add_compile_flag(p: argparse.ArgumentParser) -> None:
    """``--compile`` / ``--no-compile``; neither: compiled decoding steps where the machine
    can run them (``aiayn.runtime.compiled.auto_compile``)."""
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="compiled decoding steps (float32, CPU, a C++ compiler). By default "
                        "they run where the machine can, each model shape built once in the "
                        "background (about a minute) while the eager steps decode; --compile "
                        "builds them in this process first, --no-compile decodes eagerly")
