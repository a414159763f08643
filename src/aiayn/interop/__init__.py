"""Models in and out: Hugging Face Marian (OPUS-MT) import and export, CTranslate2 export.

Importing reads the files ``save_pretrained`` writes (safetensors, JSON, SentencePiece) with
aiayn's own dependencies; exporting builds the other library's model, so it needs the
``interop`` extra (``pip install 'aiayn[interop]'``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import UserError


def require(module: str, what: str) -> ModuleType:
    """Import an optional dependency of the ``interop`` extra, or a one-line error naming it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"{what} needs {module}: pip install 'aiayn[interop]'") from None
