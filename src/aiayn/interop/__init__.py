"""Models in and out: Hugging Face Marian (OPUS-MT) import and export, CTranslate2 export.

Importing reads the files ``save_pretrained`` writes (safetensors, JSON, SentencePiece) with
aiayn's own dependencies; exporting builds the other library's model, so it needs the
``interop`` extra (``pip install 'aiayn[interop]'``).
"""

from __future__ import annotations

from types import ModuleType

from .. import errors

# what an export says of a model trained with an aligner (``ModelConfig.aligner``)
ALIGNER_LEFT = ("the model's aligner stays behind: {to} has no place for it, so its attention "
                "gives no word alignments there; aiayn's `translate --alignments` and markup "
                "read it")


def require(module: str, what: str) -> ModuleType:
    """Import a dependency of the ``interop`` extra, or a one-line error naming the extra."""
    return errors.require(module, what, "interop")
