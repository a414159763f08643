"""File integrity of checkpoints and prepared data: a SHA-256 of every file, checked on load.

A directory aiayn writes (a checkpoint, a prepared data directory) gets ``checksums.json``:
each file's size and SHA-256. Loading compares sizes first (free) and hashes each file once per
process (a cache keyed by path, size and modification time), so a truncated file, a flipped
bit or a bad copy is named at load time instead of surfacing later as a shape error or a
silently different translation. ``aiayn check DIR`` verifies a run, a checkpoint or a data
directory on demand. Directories written before checksums existed load unverified.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .errors import UserError

CHECKSUMS = "checksums.json"
_verified: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def write_checksums(directory: Path) -> None:
    """Record the size and SHA-256 of every file in ``directory`` (not subdirectories)."""
    directory = Path(directory)
    entries = {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name != CHECKSUMS:
            entries[path.name] = {"size": path.stat().st_size, "sha256": sha256(path)}
    tmp = directory / f".{CHECKSUMS}.tmp"
    tmp.write_text(json.dumps(entries, indent=1) + "\n")
    os.replace(tmp, directory / CHECKSUMS)


def recorded(directory: Path) -> dict | None:
    """The directory's checksums, or None when it has none."""
    path = Path(directory) / CHECKSUMS
    if not path.is_file():
        return None
    try:
        entries = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError(f"{path}: corrupt; run `aiayn check {directory}`") from None
    if not isinstance(entries, dict):
        raise UserError(f"{path}: corrupt; run `aiayn check {directory}`")
    return entries


def verify(directory: Path, names: list[str] | None = None) -> None:
    """Check the named files (default: every recorded one) against ``checksums.json``; a
    UserError names the first that is missing, of another size or of another content."""
    directory = Path(directory)
    entries = recorded(directory)
    if entries is None:
        return
    for name in names if names is not None else list(entries):
        if name not in entries:
            continue
        path, want = directory / name, entries[name]
        if not path.is_file():
            raise UserError(f"{path}: missing (recorded in {CHECKSUMS}); the directory is "
                            "incomplete: copy it again or use an earlier checkpoint")
        stat = path.stat()
        if stat.st_size != want["size"]:
            raise UserError(f"{path}: {stat.st_size} bytes where {want['size']} were written; "
                            "the file is damaged: copy it again or use an earlier checkpoint")
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in _verified:
            _verified[key] = sha256(path)
        if _verified[key] != want["sha256"]:
            raise UserError(f"{path}: its SHA-256 differs from the one written; the file is "
                            "damaged: copy it again or use an earlier checkpoint")
