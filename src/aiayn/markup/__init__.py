"""Documents with inline markup (HTML, XML) translated sentence by sentence, tags kept."""

from .document import FORMATS, Document

__all__ = ["FORMATS", "Document"]
