"""aiayn: the Transformer of *Attention Is All You Need*, complete, on PyTorch.

Importing it changes nothing in the process: the names below load on first use, and the
thread policy (``aiayn.runtime.threads``) is the command line's to set, before PyTorch loads.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
# the public names and the modules that define them, imported when first asked for
_EXPORTS = {
    "ConfigError": "config", "ModelConfig": "config",
    "EncoderModel": "model", "LanguageModel": "model", "Transformer": "model",
    "DecodeOptions": "decode.options", "Translator": "translate", "load": "translate",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'aiayn' has no attribute {name!r}")
