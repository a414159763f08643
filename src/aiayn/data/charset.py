"""How a text file's bytes are read, and its translation written back the same way.

The encoding comes from the file's byte order mark (UTF-8, UTF-16 or UTF-32, as Windows tools
save "Unicode" subtitles), else from what the file says it is in (an XML declaration's
``encoding``, an HTML ``<meta charset>`` within the first 1,024 bytes as browsers look for it,
a gettext header's ``charset``), else UTF-8. The translation is written in that encoding with
the same mark, so a subtitle player or a page reads it as it read the original. Markup writes
a character its encoding lacks as a character reference (``&#337;``); another format cannot,
and says so in one line.

    text, charset = charset.read(data, "SubRip file")
    ...
    return charset.write(translated)
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from ..errors import UserError

# UTF-32's little-endian mark begins with UTF-16's, so it is looked for first
_MARKS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
          (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
          (codecs.BOM_UTF16_BE, "utf-16-be"))
_NAME = rb"""["']?\s*([A-Za-z][A-Za-z0-9._:-]*)"""
_XML = re.compile(rb"""^\s*<\?xml[^>]*?\sencoding\s*=\s*""" + _NAME)
_META = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*""" + _NAME, re.IGNORECASE)
_GETTEXT = re.compile(rb"""Content-Type:[^"\n]*?charset\s*=\s*""" + _NAME)
_WINDOWS_1252 = {"iso8859-1", "ascii"}  # the labels browsers read as windows-1252


@dataclass(frozen=True)
class Charset:
    """The encoding a file was read in: ``encoding`` (Python's codec), ``mark`` (its byte
    order mark, b"" for none), ``markup`` (characters it lacks are written as references)."""

    encoding: str = "utf-8"
    mark: bytes = b""
    markup: bool = False

    def write(self, text: str) -> bytes:
        """``text`` in this encoding, after the same mark."""
        try:
            return self.mark + text.encode(
                self.encoding, "xmlcharrefreplace" if self.markup else "strict")
        except UnicodeEncodeError as err:
            raise UserError(f"the translation holds {text[err.start]!r}, which the file's "
                            f"encoding ({self.encoding}) cannot hold; convert the file to "
                            "UTF-8") from None


def byte_order_mark(data: bytes) -> tuple[bytes, str] | None:
    """The byte order mark ``data`` starts with and the codec it names ("utf-16-le", ...)."""
    return next(((mark, name) for mark, name in _MARKS if data.startswith(mark)), None)


def read(data: bytes, what: str, kind: str = "text") -> tuple[str, Charset]:
    """The text of ``data`` and how to write its translation back. ``kind``: "text", "html",
    "xml" or "gettext" (what the file may say its encoding is). A UserError names the line
    that is not in the encoding, or an encoding Python does not know."""
    found = byte_order_mark(data)
    if found:
        mark, encoding = found
    else:
        mark, encoding = b"", _declared(data, what, kind) or "utf-8"
    body = data[len(mark):]
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as err:
        line = body[:err.start].decode(encoding, "replace").count("\n") + 1
        said = "UTF-8" if encoding == "utf-8" else encoding
        raise UserError(f"{what}: line {line} is not valid {said}; convert the file to "
                        "UTF-8") from None
    return text, Charset(encoding, mark, kind in ("html", "xml"))


def _declared(data: bytes, what: str, kind: str) -> str | None:
    """The encoding the file says it is in, as Python names it; None where it says none."""
    head = data[:1024]
    if kind in ("html", "xml"):
        found = _XML.match(head) or (_META.search(head) if kind == "html" else None)
    elif kind == "gettext":
        found = _GETTEXT.search(data[:4096])  # the header entry comes first
    else:
        return None
    if found is None:
        return None
    name = found.group(1).decode("ascii")
    if kind == "gettext" and name.upper() == "CHARSET":  # a template's placeholder
        return None
    try:
        encoding = codecs.lookup(name).name
    except LookupError:
        raise UserError(f"{what} says it is in {name}, an encoding Python does not know; "
                        "convert the file to UTF-8") from None
    if encoding.startswith(("utf-16", "utf-32")):
        return "utf-8"  # said so in bytes one wide: the file was converted, the text kept
    if kind == "html" and encoding in _WINDOWS_1252:
        return "cp1252"
    return encoding
