"""`aiayn`: the command line, a thin shell over the library.

One function per subcommand reads its flags into the library's typed options and calls it;
the subcommands live by group (``data``, ``training``, ``decoding``, ``inspection``,
``interop``, ``serving``) and share ``common``'s helpers. Nothing here imports PyTorch until a
command runs. Every user mistake ends in one line on stderr, ``aiayn: error: ...``, and exit
code 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, NoReturn

from ..config import ConfigError
from ..errors import UserError
from ..runtime.threads import set_wait_policy, use_available_cores
from . import data, decoding, inspection, interop, serving, training

SUBCOMMANDS: tuple[Callable, ...] = (
    data.add_prepare, training.add_train, training.add_average_plot,
    decoding.add_translate_evaluate, decoding.add_shortlist, decoding.add_generate,
    decoding.add_classify,
    inspection.add_inspection, interop.add_interop, serving.add_serve, data.add_check)


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a mistake in the command line as one line that names the help to read."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="aiayn", description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # before the parser, whose subcommands import PyTorch: its thread pool reads the spin once
    set_wait_policy(next((a for a in argv if not a.startswith("-")), None))
    args = build_parser().parse_args(argv)
    use_available_cores()
    try:
        return args.command_fn(args) or 0
    except (UserError, ConfigError) as err:
        print(f"aiayn: error: {err}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as err:  # (torch.OutOfMemoryError is a RuntimeError)
        if not (isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError"
                or "can't allocate memory" in str(err)):
            raise
        print(f"aiayn: error: out of memory ({(str(err) or 'MemoryError').splitlines()[0]}); "
              "lower --batch-tokens (decoding, scoring) or --max-tokens (training)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aiayn: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`aiayn translate ... | head`)
        sys.stderr.close()
        return 141

