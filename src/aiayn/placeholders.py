"""Placeholders of software strings, kept through translation.

Localisation strings carry placeholders that a translation must keep exactly: printf's ``%s``,
``%1$d``, ``%qs`` and ``%(name)s`` (and Apple's ``%@`` and ``%#@name@``), strftime's ``%H``,
Qt's ``%1``, ``{0}`` and ``{name}``, ``${name}``, Rails' ``%{name}``, i18next's and
Mustache's ``{{name}}``, PHP's and the shell's ``$name``, Laravel's ``:name``, vue-i18n's linked
messages ``@:key``, markup ``<b>``
... ``</b>`` (and a command's metavariables written so, git's ``<start-point>``) and entities
``&amp;``. With placeholder protection (``aiayn prepare
--placeholders``) each one is replaced, in both languages, by a
sentinel ``⟦1⟧``, ``⟦2⟧``... numbered by its place in the source, and every sentinel is one
piece of the vocabulary; the model learns to move sentinels, never to spell them. Translating
masks the source the same way and puts the source's own placeholders back in place of the
sentinels of the output (``restore``), repairing an output that dropped one (in place of a stray
placeholder of its kind, else appended at the end) or repeated one (dropped).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable

PATTERN = re.compile(r"""
    %(?:\d+\$)?\#@[A-Za-z_][A-Za-z0-9_]*@
  | %(?:\d+\$)?[-+\#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn@]
  | %\([A-Za-z_][A-Za-z0-9_]*\)[-+\#0]*\d*(?:\.\d+)?[diouxXeEfFgGcrs]
  | %[-_0^\#]?[aAbBCDeFgGhHIjklmMrRSTuUVwWxXyYzZ]
  | %\d+
  | %%
  | \$\{[^{}\s]+\}
  | \$[A-Za-z_][A-Za-z0-9_]*
  | (?<![\w:/]):[A-Za-z_][A-Za-z0-9_]*
  | @(?:\.[a-z]+)?:(?:\([\w.-]+\)|[\w.-]*\w)
  | %\{[A-Za-z_][A-Za-z0-9_]*\}
  | \{\{-?\s*[^{}\s]+\s*\}\}
  | \{[A-Za-z0-9_.:!\[\]]*\}
  | </?[A-Za-z][A-Za-z0-9_-]*(?:\s[^<>]*)?/?>
  | &(?:[A-Za-z][A-Za-z0-9]*|\#[0-9]+|\#x[0-9A-Fa-f]+);
""", re.VERBOSE)
MAX = 24  # sentinels ⟦1⟧..⟦24⟧; placeholders beyond the 24th of a sentence stay as text
SENTINELS = [f"⟦{i}⟧" for i in range(1, MAX + 1)]
SENTINEL = re.compile(r"⟦(\d+)⟧")


def find(text: str) -> list[str]:
    """The placeholders of ``text``, in order."""
    return PATTERN.findall(text)


_HIDDEN = re.compile("\ue000(\\d+)\ue001")


def unbroken(split: Callable[[str], list[str]], text: str) -> list[str]:
    """``split(text)``, a sentence splitter's pieces, with no placeholder cut in two: each is
    hidden behind a word of private-use characters while ``split`` runs. printf's ``%.*s``
    and ``%.2f`` hold a full stop, after which sentencex ended a sentence, and a translation
    of each half could keep neither."""
    found: list[str] = []

    def hide(match: re.Match) -> str:
        found.append(match.group(0))
        return f"\ue000{len(found) - 1}\ue001"
    hidden = PATTERN.sub(hide, text)
    if not found:
        return split(text)
    return [_HIDDEN.sub(lambda m: found[int(m.group(1))], piece) for piece in split(hidden)]


def kept(source: str, translation: str) -> bool:
    """Whether a translation holds exactly the placeholders of its source (in any order)."""
    return Counter(find(source)) == Counter(find(translation))


def mask(source: str, target: str | None = None) -> tuple[str, str | None, list[str]]:
    """``source`` (and its ``target``) with placeholders replaced by sentinels.

    The i-th placeholder of the source becomes ``⟦i⟧``; in the target each placeholder takes
    the sentinel of the first unclaimed source placeholder with the same text (one the source
    does not have stays as text). Returns the masked texts and the source's placeholders."""
    originals: list[str] = []

    def number(match: re.Match) -> str:
        if len(originals) == MAX:
            return match.group(0)
        originals.append(match.group(0))
        return SENTINELS[len(originals) - 1]

    masked_source = PATTERN.sub(number, source)
    if target is None:
        return masked_source, None, originals
    free = list(enumerate(originals))

    def claim(match: re.Match) -> str:
        for k, (i, text) in enumerate(free):
            if text == match.group(0):
                del free[k]
                return SENTINELS[i]
        return match.group(0)

    return masked_source, PATTERN.sub(claim, target), originals


def restore(output: str, originals: list[str]) -> str:
    """The output with each sentinel replaced by its source placeholder: a sentinel the
    source lacks or one already used is dropped. A placeholder the output lost takes the
    place of a stray one of its kind (one the source does not hold, such as a meta-variable
    the model translated: ``<Zahl>`` for the source's ``<size>``), else it is appended at
    the end; so the result holds every placeholder of the source once."""
    used: set[int] = set()
    dropped = False

    def back(match: re.Match) -> str:
        nonlocal dropped
        i = int(match.group(1)) - 1
        if i >= len(originals) or i in used:
            dropped = True
            return ""
        used.add(i)
        return originals[i]

    text = SENTINEL.sub(back, output)
    missing = [p for i, p in enumerate(originals) if i not in used]
    # a lost placeholder that the output wrote out as text is there after all
    written = Counter(find(text)) - Counter(originals[i] for i in used)
    for lost in list(missing):
        if written[lost]:
            written[lost] -= 1
            missing.remove(lost)
    if not missing:
        return re.sub(r" {2,}", " ", text).strip() if dropped else text
    own = set(originals)

    def in_place(match: re.Match) -> str:
        found = match.group(0)
        if found not in own:  # a stray: the first lost placeholder of its kind takes its place
            for k, lost in enumerate(missing):
                if lost[0] == found[0]:  # same kind: %, $, {, <, &
                    return missing.pop(k)
        return found

    text = PATTERN.sub(in_place, text)
    if missing:
        text = " ".join(part for part in (text.strip(), *missing) if part)
    return re.sub(r" {2,}", " ", text).strip()
