"""User-facing errors: anything a user can fix is a UserError, printed as one line, exit code 2."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input (file, flag, config, checkpoint); the message says what to do."""
