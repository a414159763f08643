"""Directories replaced whole, so that a process killed at any instant leaves a complete copy.

Checkpoints, prepared data, averages and exports are built under a temporary name beside their
target and renamed into place. Renaming over an existing directory takes two renames (the old
one aside, the new one in) and a deletion: a process killed between the two renames leaves
``.old-NAME`` complete beside a missing ``NAME``, never a half-written ``NAME``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def replace_directory(tmp: Path, final: Path) -> None:
    """Rename the complete directory ``tmp`` to ``final``, replacing an existing ``final``."""
    if final.exists():
        old = final.with_name(f".old-{final.name}")
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old)
    else:
        os.replace(tmp, final)


def fsync_dir(path: Path) -> None:
    """Make the entries of the directory ``path`` (renames, new files) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
