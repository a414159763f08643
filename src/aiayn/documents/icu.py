"""ICU MessageFormat messages (Flutter's .arb, FormatJS, i18next's ICU format): the text around
and inside ``plural`` and ``select`` arguments translated, the arguments kept.

    {count, plural, =0 {No files} one {# file} other {# files}} in {folder}

is the texts "{__a0} in {__a1}", "No files", "{__n} file" and "{__n} files" to translate: each
argument a placeholder the placeholder path keeps (``{__aK}``), the number sign ``#`` one too
(``{__n}``). The message is built again from the translations, each branch under its key; a
plural gets the forms the target language has and the source lacks ("few" and "many" for
Polish), each from its "other". A message the model returns with a placeholder lost gets it
back at its end, so the message keeps every argument.

html10n's plural macro, in Etherpad's strings (``{{num}} unnamed {[plural(num) one: author,
other: authors ]}``), is read the same way: a branching argument whose branches are texts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ARGUMENT = re.compile(r"\{\s*[\w-]+\s*,\s*(?:plural|select|selectordinal|number|date|time)\b"
                       r"|\{\[\s*\w+\(\w+\)")
_MACRO = re.compile(r"\{\[\s*(\w+)\((\w+)\)(.*?)\]\}", re.S)  # html10n's {[plural(n) one: x, ...]}
_MACRO_BRANCH = re.compile(r"\s*(\w+):\s?([^,]*?)\s*(?:,|$)")
_BRANCHING = ("plural", "select", "selectordinal")
_TOKEN = re.compile(r"\{__(?:a\d+|n)\}")
_OFFSET = re.compile(r"\s*(?:offset:\s*\d+\s*)?")  # (always matches)
_KEY = re.compile(r"\s*(=?[\w-]+)\s*\{")


def is_message(text: str) -> bool:
    """Whether ``text`` holds an ICU argument with a type (``{n, plural, ...}``)."""
    return _ARGUMENT.search(text) is not None


@dataclass
class _Argument:
    raw: str  # as written, for an argument without branches
    head: str = ""  # "count, plural, offset:1" for one with branches
    branches: list[tuple[str, "_Message"]] = field(default_factory=list)
    kind: str = ""
    macro: bool = False  # html10n's macro, not ICU's argument


@dataclass
class _Message:
    parts: list  # text, "#" (a plural's number), or an _Argument
    in_plural: bool = False


def texts(text: str) -> list[str] | None:
    """The texts of a message to translate, in order; None where it does not parse."""
    try:
        message = _parse(text)
    except ValueError:
        return None
    return _leaves(message)


def rebuild(text: str, translations: list[str], tags: list[str] | None) -> str:
    """The message ``text`` with its texts replaced by ``translations`` (as ``texts`` gave
    them, translated); ``tags``: the target language's plural categories, where known."""
    message = _parse(text)
    done = iter(translations)
    return _build(message, done, tags)


def _parse(text: str) -> _Message:
    message, at = _message(text, 0, False)
    if at != len(text):
        raise ValueError(f"an unmatched }} at {at}")
    return message


def _message(text: str, at: int, in_plural: bool) -> tuple[_Message, int]:
    parts: list = []
    buffer = ""
    while at < len(text):
        char = text[at]
        if char == "}":
            break
        if char == "{":
            if buffer:
                parts.append(buffer)
                buffer = ""
            argument, at = _macro(text, at) if text.startswith("{[", at) else \
                _argument(text, at)
            parts.append(argument)
            continue
        if char == "#" and in_plural:
            if buffer:
                parts.append(buffer)
                buffer = ""
            parts.append("#")
        else:
            buffer += char
        at += 1
    if buffer:
        parts.append(buffer)
    return _Message(parts, in_plural), at


def _argument(text: str, start: int) -> tuple[_Argument, int]:
    """The argument opened at ``start``: as written, or with its branches parsed."""
    at, depth = start + 1, 1
    while at < len(text) and depth:
        depth += (text[at] == "{") - (text[at] == "}")
        at += 1
    if depth:
        raise ValueError("an unclosed {")
    raw, end = text[start:at], at - 1  # (end: its closing brace)
    pieces = raw[1:-1].split(",", 2)
    if len(pieces) < 3 or pieces[1].strip() not in _BRANCHING:
        return _Argument(raw), at
    # name, kind, then (offset:N)? (key {message})+
    argument = _Argument(raw, kind=pieces[1].strip())
    head = _OFFSET.match(text, start + 1 + len(pieces[0]) + len(pieces[1]) + 2)
    argument.head = text[start + 1:head.end()].rstrip()  # type: ignore[union-attr]
    at = head.end()  # type: ignore[union-attr]
    while at < end:
        key = _KEY.match(text, at)
        if not key:
            if text[at:end].strip():
                raise ValueError(f"a branch without its key at {at}")
            break
        branch, at = _message(text, key.end(), argument.kind != "select")
        if at >= len(text) or text[at] != "}":
            raise ValueError("an unclosed branch")
        argument.branches.append((key.group(1), branch))
        at += 1
    return argument, end + 1


def _macro(text: str, start: int) -> tuple[_Argument, int]:
    """html10n's macro opened at ``start`` (Etherpad's strings): ``{[plural(num) one: author,
    other: authors ]}``, its branches plain texts."""
    match = _MACRO.match(text, start)
    if not match:
        raise ValueError(f"an unclosed {{[ at {start}")
    name, variable, body = match.groups()
    argument = _Argument(match.group(0), head=f"{name}({variable})", kind=name, macro=True)
    for branch in _MACRO_BRANCH.finditer(body.strip()):
        argument.branches.append((branch.group(1), _message(branch.group(2), 0, False)[0]))
    return argument, match.end()


def _template(message: _Message) -> str:
    """A message as one text to translate: each argument ``{__aK}``, a number sign
    ``{__n}``."""
    out, k = [], 0
    for part in message.parts:
        if isinstance(part, _Argument):
            out.append(f"{{__a{k}}}")
            k += 1
        else:
            out.append("{__n}" if part == "#" and message.in_plural else part)
    return "".join(out)


def _leaves(message: _Message) -> list[str]:
    found = [_template(message)]
    for part in message.parts:
        if isinstance(part, _Argument):
            for _, branch in part.branches:
                found += _leaves(branch)
    return found


def _build(message: _Message, done, tags: list[str] | None) -> str:
    translated = _restored(next(done), _template(message))
    arguments = []
    for part in message.parts:
        if not isinstance(part, _Argument):
            continue
        if not part.branches:
            arguments.append(part.raw)
            continue
        branches = [(key, _build(branch, done, tags)) for key, branch in part.branches]
        if part.kind == "plural" and tags:
            have = {key for key, _ in branches}
            other = next((b for key, b in branches if key == "other"), None)
            extra = [(tag, other) for tag in tags if tag not in have and other is not None]
            at = next((k for k, (key, _) in enumerate(branches) if key == "other"),
                      len(branches))
            branches[at:at] = extra
        arguments.append(
            "{[" + part.head + " " + ", ".join(f"{key}: {text}" for key, text in branches) +
            " ]}" if part.macro else
            "{" + part.head + " " + " ".join(f"{key} {{{text}}}" for key, text in branches) + "}")

    def back(match: re.Match) -> str:
        token = match.group(0)
        return "#" if token == "{__n}" else arguments[int(token[4:-1])]
    return _TOKEN.sub(back, translated)


def _restored(translation: str, template: str) -> str:
    """A translation with each of its template's placeholders once: a lost one put back at
    the end, a repeated one kept the first time."""
    wanted = _TOKEN.findall(template)
    seen: set[str] = set()

    def once(match: re.Match) -> str:
        token = match.group(0)
        if token not in wanted or token in seen:
            return ""
        seen.add(token)
        return token
    out = _TOKEN.sub(once, translation)
    missing = [t for t in dict.fromkeys(wanted) if t not in seen]
    return out + "".join((" " if out and not out.endswith(" ") else "") + t for t in missing)
