"""User-facing errors: anything a user can fix is a UserError, printed as one line, exit code 2."""

from __future__ import annotations

import importlib
from types import ModuleType


class UserError(Exception):
    """A mistake in the user's input (file, flag, config, checkpoint); the message says what
    to do."""


def require(module: str, what: str, extra: str) -> ModuleType:
    """Import an optional dependency, or a one-line error naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"{what} needs {module}: install aiayn's {extra!r} extra (in its "
                        f"clone: pip install -e '.[{extra}]')") from None
