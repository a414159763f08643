"""XLIFF 1.2 files (translate-toolkit): each translatable unit without a target gets its
source's translation, left unapproved for review (XLIFF's fuzzy); units with a target are kept
unless ``overwrite``, and ``translate="no"`` units are left alone. The target language is set
from the checkpoint's pair when the file names none. Inline elements inside a source are read
as their text."""

from __future__ import annotations

from ..errors import UserError, require
from . import Job


def translate_xliff(data: bytes, job: Job) -> bytes:
    require("translate.storage.xliff", "XLIFF files", "documents")
    from translate.storage import xliff
    try:
        store = xliff.xlifffile.parsestring(data)
    except Exception as err:  # translate-toolkit raises lxml's and its own errors alike
        raise UserError(f"not an XLIFF file: {err}") from None
    units = [u for u in store.units if not u.isheader() and u.istranslatable()
             and str(u.source or "").strip()]
    todo = [u for u in units if job.overwrite or not str(u.target or "").strip()]
    for unit, text in zip(todo, job.lines([str(u.source) for u in todo])):
        unit.target = text
        unit.markfuzzy(True)
    languages = job.translator.languages
    if languages and not store.gettargetlanguage():
        store.settargetlanguage(languages["target"])
    return bytes(store)
