"""XLIFF files, 1.2 and 2.0 (translate-toolkit): each translatable unit (in 2.0, each segment)
without a target gets its source's translation, left for review (1.2's fuzzy, 2.0's state
"initial"); units with a target are kept unless ``overwrite``, and ``translate="no"`` units are
left alone. The target language is set from the checkpoint's pair when the file names none. A
source with inline elements (1.2's <g>, <x/>, <bx/>, <ex/>, <ph>, <mrk>; 2.0's <pc>, <ph/>,
<sc/>, <ec/>, <mrk>) goes through the markup path: the sentence is translated whole and each
element is placed around (or, empty, at) the target words aligned to its own, so the target
carries the source's elements. A unit whose space is preserved (``xml:space="preserve"``, as
po2xliff writes catalogs' strings) is translated line by line, its line breaks and edge
whitespace kept, as a catalog's strings are."""

from __future__ import annotations

from ..errors import UserError, require
from . import Job


def translate_xliff(data: bytes, job: Job) -> bytes:
    require("translate.storage.xliff", "XLIFF files", "documents")
    from lxml import etree
    from translate.storage import xliff
    try:
        version = _version(data)
        if version.startswith("2"):
            require("translate.storage.xliff2", "XLIFF 2 files (translate-toolkit 3.16 or "
                    "newer)", "documents")
            from translate.storage import xliff2
            store = xliff2.Xliff2File.parsestring(data)
        elif version.startswith("1") or not version:
            store = xliff.xlifffile.parsestring(data)
        else:
            raise UserError(f"XLIFF version {version} is not read; give XLIFF 1.2 or 2.0")
    except UserError:
        raise
    except Exception as err:  # translate-toolkit raises lxml's and its own errors alike
        raise UserError(f"not an XLIFF file: {err}") from None
    root = store.document.getroot()
    named = ({"source": root.get("srcLang"), "target": root.get("trgLang")}
             if version.startswith("2") else
             {"source": _attribute(store, "source-language"),
              "target": _attribute(store, "target-language")})
    job.check_languages("the XLIFF file", **named)
    units = [u for u in store.units if not u.isheader() and u.istranslatable()
             and str(u.source or "").strip()]
    todo = [u for u in units if job.overwrite or not str(u.target or "").strip()]
    plurals = [u for u in todo if u.hasplural()]  # (po2xliff's <group> of a catalog's forms)
    plain = [u for u in todo if not u.hasplural() and not len(_source(u))]
    inline = [u for u in todo if not u.hasplural() and len(_source(u))]
    _translate_plurals(job, plurals)
    for unit, text in zip(plain, _translated(job, [str(u.source) for u in plain],
                                             [_preserves_space(u) for u in plain])):
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


def _translate_plurals(job: Job, units: list) -> None:
    """Plural units (a catalog's entry with plural forms, as po2xliff groups them): each form
    gets its own source's translation, as a catalog's forms do."""
    from translate.misc.multistring import multistring
    forms = [[str(form) for form in unit.source.strings] for unit in units]
    done = iter(_translated(job, [form for unit_forms in forms for form in unit_forms],
                            [_preserves_space(u) for u in units for _ in u.source.strings]))
    for unit, unit_forms in zip(units, forms):
        unit.target = multistring([next(done) for _ in unit_forms])


def _translated(job: Job, texts: list[str], preserved: list[bool]) -> list[str]:
    """``texts`` translated in order: line by line, whitespace kept, where ``preserved``
    (``Job.by_line``), else as paragraphs (``Job.lines``)."""
    kept = iter(job.by_line([t for t, p in zip(texts, preserved) if p]))
    loose = iter(job.lines([t for t, p in zip(texts, preserved) if not p]))
    return [next(kept) if p else next(loose) for p in preserved]


def _preserves_space(unit) -> bool:
    """Whether a unit's whitespace is its text's (``xml:space="preserve"`` on it or around
    it, as po2xliff writes catalogs' strings): then its lines are translated one by one and
    its line breaks and edge whitespace kept."""
    space = "{http://www.w3.org/XML/1998/namespace}space"
    for element in (_source(unit), *_source(unit).iterancestors()):
        if element.get(space) is not None:
            return element.get(space) == "preserve"
    return False


def _attribute(store, name: str) -> str | None:
    """An attribute of an XLIFF 1.2 file's first <file> element."""
    first = next(store.document.getroot().iterchildren(store.namespaced("file")), None)
    return None if first is None else first.get(name)


def _source(unit):
    """A unit's <source> element (a plural group's: its first form's)."""
    element = unit.xmlelement
    first = element.find(unit.namespaced("trans-unit"))
    if element.find(unit.namespaced("source")) is None and first is not None:
        element = first
    return element.find(unit.namespaced("source"))


def _version(data: bytes) -> str:
    """The XLIFF version the root element names (its ``version``, else its namespace's)."""
    from lxml import etree
    parser = etree.XMLPullParser(events=("start",), resolve_entities=False, no_network=True)
    parser.feed(data[:65536])
    for _, root in parser.read_events():
        version = root.get("version") or ""
        namespace = etree.QName(root).namespace or ""
        if not version and namespace.startswith("urn:oasis:names:tc:xliff:document:"):
            version = namespace.rsplit(":", 1)[1]
        return version
    return ""
