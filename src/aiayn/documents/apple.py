"""Apple's string files beyond .strings (which ``aiayn.documents.resources`` reads): Xcode's
string catalogs (.xcstrings) and plural dictionaries (.stringsdict).

An .xcstrings file is JSON of every language an app's strings are in, each string's
localizations side by side, as a gettext catalog holds its translations.

Each string without a localization in the model's target language gets one, its state
"needs_review" (Xcode's fuzzy), built like the source's: its text, or its plural and device
variations, each translated (a plural given the target language's categories, from "other").
The source text is the source language's localization where there is one, else the string's
key. A string marked ``shouldTranslate: false``, and one the target language has, stay (unless
``overwrite``). The file is written as Xcode writes it: keys sorted, two spaces, ``" : "``.

A .stringsdict file (a property list, read and written by Python's ``plistlib``) holds one
language: each plural rule's forms are translated and given the target language's categories
(from "other"), and a format key's words around its ``%#@name@`` variables too.
"""

from __future__ import annotations

import copy
import json
import plistlib

from ..errors import UserError
from . import Job
from .resources import fill_from_other, plural_categories, translated_values


def translate_xcstrings(data: bytes, job: Job) -> bytes:
    """An Xcode string catalog translated into the model's target language."""
    try:
        catalog = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"not an Xcode string catalog (.xcstrings): {err}") from None
    if not isinstance(catalog, dict) or not isinstance(catalog.get("strings"), dict):
        raise UserError("not an Xcode string catalog (.xcstrings): it has no \"strings\" object")
    pair = job.translator.languages
    if not pair:
        raise UserError("a string catalog holds every language by its code, and this model "
                        "names no target language; give a model whose data was prepared "
                        "with --src-lang and --tgt-lang")
    source = catalog.get("sourceLanguage") or pair["source"]
    job.check_languages("the string catalog", source=source)
    target = pair["target"]
    # (the new localization, each string unit in it, and the text it translates)
    todo: list[tuple[dict, dict, str]] = []
    for key, entry in catalog["strings"].items():
        if not isinstance(entry, dict) or entry.get("shouldTranslate") is False:
            continue
        localizations = entry.setdefault("localizations", {})
        if target in localizations and not job.overwrite:
            continue
        model = localizations.get(source) or {"stringUnit": {"state": "translated",
                                                             "value": key}}
        made = copy.deepcopy(model)
        todo += [(made, unit, unit.get("value", "")) for unit in _units(made)]
        localizations[target] = made
    done = translated_values([text for _, _, text in todo], job)
    for (_, unit, _), translation in zip(todo, done):
        unit["value"], unit["state"] = translation, "needs_review"
    tags = plural_categories(job) or []
    for made in {id(m): m for m, _, _ in todo}.values():
        _fill_plurals(made, tags)
    return (json.dumps(catalog, indent=2, separators=(",", " : "), sort_keys=True,
                       ensure_ascii=False) + "\n").encode("utf-8")


def _units(node) -> list[dict]:
    """The string units of a localization, its variations' included."""
    if not isinstance(node, dict):
        return []
    found = [node["stringUnit"]] if isinstance(node.get("stringUnit"), dict) else []
    for variation in (node.get("variations") or {}).values():
        for case in (variation or {}).values() if isinstance(variation, dict) else []:
            found += _units(case)
    return found


def _fill_plurals(node, tags: list[str]) -> None:
    """A localization's plural variations given the target language's missing categories,
    each a copy of "other"."""
    if not isinstance(node, dict):
        return
    variations = node.get("variations") or {}
    plural = variations.get("plural") if isinstance(variations, dict) else None
    if isinstance(plural, dict):
        fill_from_other(plural, tags)
    for variation in variations.values() if isinstance(variations, dict) else []:
        for case in (variation or {}).values() if isinstance(variation, dict) else []:
            _fill_plurals(case, tags)


_PLURALS = ("zero", "one", "two", "few", "many", "other")


def translate_stringsdict(data: bytes, job: Job) -> bytes:
    """A .stringsdict file translated: its plural rules' forms and its format keys' words."""
    try:
        tree = plistlib.loads(data)
    except Exception as err:  # noqa: BLE001 (plistlib's own errors, and expat's, as they come)
        raise UserError(f"not a .stringsdict property list: {err}") from None
    if not isinstance(tree, dict):
        raise UserError("not a .stringsdict property list: its top level is not a dictionary")
    slots: list[tuple[dict, str]] = []  # (dictionary, key) of each text to translate
    rules: list[dict] = []
    for entry in tree.values():
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("NSStringLocalizedFormatKey"), str):
            slots.append((entry, "NSStringLocalizedFormatKey"))
        for rule in entry.values():
            if isinstance(rule, dict) and rule.get("NSStringFormatSpecTypeKey") == \
                    "NSStringPluralRuleType":
                rules.append(rule)
                slots += [(rule, k) for k in _PLURALS if isinstance(rule.get(k), str)]
    done = translated_values([node[key] for node, key in slots], job)
    for (node, key), translation in zip(slots, done):
        node[key] = translation
    tags = plural_categories(job) or []
    for rule in rules:
        fill_from_other(rule, tags)
    binary = data.startswith(b"bplist")
    return plistlib.dumps(tree, fmt=plistlib.FMT_BINARY if binary else plistlib.FMT_XML,
                          sort_keys=False)
