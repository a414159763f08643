"""XLIFF 1.2 files (translate-toolkit): each translatable unit without a target gets its
source's translation, left unapproved for review (XLIFF's fuzzy); units with a target are kept
unless ``overwrite``, and ``translate="no"`` units are left alone. The target language is set
from the checkpoint's pair when the file names none. A source with inline elements (<g>, <x/>,
<bx/>, <ex/>, <ph>, <mrk>, ...) goes through the markup path: the sentence is translated whole
and each element is placed around (or, empty, at) the target words aligned to its own, so the
target carries the source's elements."""

from __future__ import annotations

from ..errors import UserError, require
from . import Job


def translate_xliff(data: bytes, job: Job) -> bytes:
    require("translate.storage.xliff", "XLIFF files", "documents")
    from lxml import etree
    from translate.storage import xliff
    try:
        store = xliff.xlifffile.parsestring(data)
    except Exception as err:  # translate-toolkit raises lxml's and its own errors alike
        raise UserError(f"not an XLIFF file: {err}") from None
    units = [u for u in store.units if not u.isheader() and u.istranslatable()
             and str(u.source or "").strip()]
    todo = [u for u in units if job.overwrite or not str(u.target or "").strip()]
    plain = [u for u in todo if not len(_source(u))]
    inline = [u for u in todo if len(_source(u))]
    for unit, text in zip(plain, job.lines([str(u.source) for u in plain])):
        unit.target = text
    sources = [etree.tostring(_source(u), encoding="unicode", with_tail=False) for u in inline]
    for unit, translated in zip(inline, job.markup(sources, "xml")):
        unit.target = "-"  # (translate-toolkit puts the element where XLIFF wants it)
        target = unit.xmlelement.find(unit.namespaced("target"))
        written = etree.fromstring(translated)
        target.text = written.text
        target[:] = list(written)
    for unit in todo:
        unit.markfuzzy(True)
    languages = job.translator.languages
    if languages and not store.gettargetlanguage():
        store.settargetlanguage(languages["target"])
    return bytes(store)


def _source(unit):
    """A unit's <source> element."""
    return unit.xmlelement.find(unit.namespaced("source"))
