"""Where a command writes, checked before it does any work.

Every command that writes takes its output paths through ``output_file`` or
``output_directory``, so each mistake gets the same one line naming the path and what to do,
and nothing the user had is overwritten by accident:

- a file where a directory is expected, or a directory where a file is expected;
- a file whose folder does not exist (a directory's missing parents are created, as
  ``mkdir -p`` would: a run or data directory is a tree the command makes);
- a place this process may not write;
- an output that is one of the command's inputs.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import UserError


def _nearest_existing(path: Path) -> Path:
    for parent in [path, *path.parents]:
        if parent.exists():
            return parent
    return Path(".")


def _check_writable(where: Path, flag: str, path: Path) -> None:
    if not os.access(where, os.W_OK | (os.X_OK if where.is_dir() else 0)):
        raise UserError(f"{flag} {path}: {where} is not writable; choose a path you can "
                        "write to")


def _check_not_input(path: Path, flag: str, inputs: tuple[str | Path | None, ...]) -> None:
    for given in inputs:
        if given is None:
            continue
        given = Path(given)
        if given.exists() and path.exists() and os.path.samefile(given, path):
            raise UserError(f"{flag} {path}: it is also an input ({given}); writing it would "
                            "destroy the input, choose another path")


def output_file(path: str | Path, flag: str, *inputs: str | Path | None) -> Path:
    """``path`` as a file to write: not a directory, its folder there and writable, not one
    of ``inputs``. ``flag`` names the option in the messages ("-o", "--out")."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{flag} {path}: is a directory; name a file to write (nothing was "
                        "overwritten)")
    parent = path.parent
    if not parent.exists():
        raise UserError(f"{flag} {path}: its folder {parent} does not exist; create it or "
                        "choose another path")
    if not parent.is_dir():
        raise UserError(f"{flag} {path}: {parent} is a file, not a folder; choose another path")
    _check_not_input(path, flag, inputs)
    _check_writable(path if path.exists() else parent, flag, path)
    return path


def picture_file(path: str | Path, flag: str) -> Path:
    """``path`` as ``output_file`` checks it, with an extension that names a picture format
    matplotlib writes (.png, .svg, .pdf, ...)."""
    path = output_file(path, flag)
    from matplotlib.figure import Figure
    kinds = Figure().canvas.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in kinds:
        raise UserError(f"{flag} {path}: not a picture format; end the name with "
                        f"{', '.join('.' + k for k in sorted(kinds))}")
    return path


def output_directory(path: str | Path, flag: str, *inputs: str | Path | None) -> Path:
    """``path`` as a directory to write into: not a file, no file among its parents, its
    nearest existing ancestor writable, not one of ``inputs``. Its missing parents are the
    command's to create."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {path}: is a file, not a directory; name a directory to "
                        "write (nothing was overwritten)")
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise UserError(f"{flag} {path}: {existing} is a file, not a folder; choose another "
                        "path")
    _check_not_input(path, flag, inputs)
    _check_writable(existing, flag, path)
    return path
