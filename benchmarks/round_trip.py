"""What the round trips of files (`documents_roundtrip.py`, `slides_roundtrip.py`) share: each
file made or taken as it is, and translated by `translate_document` (what `aiayn translate
--file` and `/translate_file` run), a file it fails on a row of the table saying so.

    from round_trip import translations
    for document, fmt, path, out, seconds, printed in translations(...):
"""

from __future__ import annotations

import contextlib
import io
import shutil
import time
from pathlib import Path
from typing import Callable, Iterator


def translations(translator, documents: list[Path], formats: list[str], given: tuple[str, ...],
                 make: Callable[[Path, str, Path], None], folder: str,
                 columns: int) -> Iterator[tuple[Path, str, Path, bytes, float, str]]:
    """Each document in each format, translated: (document, format, its file, the
    translation, seconds, what the translation printed to stdout). A document whose suffix
    is in ``given`` is taken as it is, in its own format; any other is made into each of
    ``formats`` by ``make`` (document, format, path), in ``folder``. A failure is a row of
    ``columns`` columns."""
    from aiayn.documents import translate_document
    for document in documents:
        as_is = document.suffix in given
        for fmt in [document.suffix[1:]] if as_is else formats:
            suffix = "." + fmt.rsplit(".", 1)[-1]
            path = Path(folder) / f"{document.stem}{suffix}"
            if as_is:
                shutil.copyfile(document, path)
            else:
                make(document, fmt, path)
            started = time.perf_counter()
            try:
                with contextlib.redirect_stdout(io.StringIO()) as printed:
                    out = translate_document(translator, path.read_bytes(), suffix)
            except Exception as err:  # (a checkout under test may fail on a file)
                print(f"| {document} | {fmt} | failed: {type(err).__name__}: "
                      f"{str(err)[:80]} " + "|" * (columns - 1), flush=True)
                continue
            yield document, fmt, path, out, time.perf_counter() - started, printed.getvalue()
