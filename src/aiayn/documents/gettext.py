"""gettext catalogs (.po, .pot) read and written by polib: each untranslated entry's msgid
becomes its msgstr, marked fuzzy for a translator to review (as msgmerge marks its guesses).

Entries already translated (and not fuzzy) are kept unless ``overwrite``; obsolete entries and
the header are never touched. A plural entry's form for one thing is the singular's
translation and every other form the plural's: which form that is, the header's Plural-Forms
says (Arabic's form 0 is for none, its form 1 for one; 2 forms, the first for one, where it
says nothing). msgctxt, comments, references and flags (c-format, python-format) are kept;
whether the placeholders survive is the model's: a model trained with ``prepare
--placeholders`` masks them (``aiayn.placeholders``).
"""

from __future__ import annotations

import re

from ..data import charset
from ..errors import UserError, require
from . import Job


def translate_po(data: bytes, job: Job) -> bytes:
    polib = require("polib", "gettext catalogs", "documents")
    text, encoding = charset.read(data, "gettext catalog", "gettext")
    _check_strings(text)
    try:
        catalog = polib.pofile(text, wrapwidth=78)
    except (OSError, ValueError) as err:
        raise UserError(f"not a gettext catalog: {err}") from None
    job.check_languages("the catalog's Language header", target=catalog.metadata.get("Language"))
    singular_forms = _singular_forms(catalog.metadata.get("Plural-Forms", ""))
    todo = []
    for entry in catalog:
        if entry.obsolete or not entry.msgid:
            continue
        done = entry.translated() and "fuzzy" not in entry.flags
        if not done or job.overwrite:
            todo.append(entry)
    texts = [t for e in todo for t in ([e.msgid, e.msgid_plural] if e.msgid_plural
                                       else [e.msgid])]
    out = iter(job.by_line(texts))
    for entry in todo:
        if entry.msgid_plural:
            singular, plural = next(out), next(out)
            entry.msgstr_plural = {k: singular if one else plural
                                   for k, one in enumerate(singular_forms)}
        else:
            entry.msgstr = next(out)
        if "fuzzy" not in entry.flags:
            entry.flags.insert(0, "fuzzy")
    languages = job.translator.languages
    if languages and not catalog.metadata.get("Language"):
        catalog.metadata["Language"] = languages["target"]
    return encoding.write(str(catalog))


def _singular_forms(header: str) -> list[bool]:
    """For each of a catalog's plural forms, whether it is the one for a single thing: the
    form its ``plural`` expression gives 1, where no smaller count has it (Python's gettext
    reads the C expression). The first of two where the header says nothing, or says what
    Python's gettext cannot read."""
    import gettext
    count = re.search(r"nplurals\s*=\s*(\d+)", header)
    nplurals = min(int(count.group(1)), 100) if count else 2
    rule = re.search(r"plural\s*=\s*([^;]+)", header)
    try:
        form = gettext.c2py(rule.group(1)) if rule else None
        first = {form(n): n for n in reversed(range(200))} if form else {}
    except (ValueError, RecursionError, ZeroDivisionError):
        first = {}
    one = next((k for k, n in first.items() if n == 1), 0)
    return [k == one for k in range(nplurals)]


# a line that holds a string: a keyword (msgid, msgstr[1], ...) or a continuation, also in
# obsolete (#~) and previous (#|) entries; its string must close with an unescaped quote
_STRING_LINE = re.compile(r'\s*(?:#[~|]\s*)?(?:msg\w+(?:\[\d+\])?\s*)?"')
_CLOSED = re.compile(r'(?:[^"\\]|\\.)*"\s*')


def _check_strings(text: str) -> None:
    """Refuse a catalog with a string left open (``msgstr "broken``), which polib reads
    without a word, dropping its last character, and msgfmt refuses."""
    for number, line in enumerate(text.splitlines(), 1):
        opened = _STRING_LINE.match(line)
        if opened and not _CLOSED.fullmatch(line, opened.end()):
            raise UserError(f"not a gettext catalog: line {number} has a string without its "
                            "closing quote")
