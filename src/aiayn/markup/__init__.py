"""Documents with inline markup (HTML, XML) translated sentence by sentence, tags kept."""

from .document import FORMATS, Document, primary_subtag, right_to_left

__all__ = ["FORMATS", "Document", "primary_subtag", "right_to_left"]
