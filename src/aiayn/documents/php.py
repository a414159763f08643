"""PHP language files, as Weblate reads them: Laravel's ``return ['key' => '...'];``, the
assignments of Roundcube and older apps (``$labels['key'] = '...';``) and ``define('KEY',
'...')``.

A PHP file is code, so it is not parsed and written again (translate-toolkit's PHP store
writes its own layout, and drops what is not a string: ``'count' => 5``, ``$labels = [];``).
Its tokens are read by ``phply``'s lexer, a PHP lexer in Python, and only the string
literals that are a value are replaced, each in its own quotes: the right-hand side of ``=``
or ``=>``, an item of a list, ``define``'s second argument, where the literal is the whole
value (``'a' . $b`` is code, and stays). Everything else stays byte for byte: keys,
comments, numbers, layout. A double-quoted string's interpolations (``{$name}``, ``$name``)
are placeholders the translation keeps; heredocs and nowdocs stay as written, with a warning
saying how many.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UserError, require
from . import Job, put_back
from .resources import translated_values

# what follows a literal that is a whole value (a key is followed by "=>", a piece by ".")
_ENDS = {"SEMI", "COMMA", "RBRACKET", "RPAREN"}
_INDEXED = {"VARIABLE", "RBRACKET", "RPAREN", "RBRACE", "STRING"}  # `[` after these is an index
_SINGLE = re.compile(r"\\([\\'])")
_DOUBLE = re.compile(r"\\(?:([nrtvef\\$\"])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u\{([0-9A-Fa-f]+)\})")
_NAMED = {"n": "\n", "r": "\r", "t": "\t", "v": "\v", "e": "\x1b", "f": "\f"}


@dataclass
class _Value:
    start: int  # the literal's place in the file, its quotes included
    end: int
    quote: str  # ' or "
    pieces: list[str]  # texts (decoded) and, between them, interpolations as written
    # single-quoted: its "\\n" are line breaks for later (JavaScript's); double-quoted: its
    # line breaks are written as they are, not as "\\n"
    breaks: bool = False


def translate_php(data: bytes, job: Job) -> bytes:
    """A PHP language file with its string values translated."""
    require("phply.phplex", "PHP files", "documents")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"not a PHP file: not UTF-8 ({err.reason} at byte {err.start})") \
            from None
    if not text.lstrip("\ufeff \t\r\n").startswith("<?php"):
        raise UserError("not a PHP file: it does not begin with <?php")
    tokens = _tokens(text)
    values = _values(tokens, text)
    heredocs = sum(t.type in ("START_HEREDOC", "START_NOWDOC") for t in tokens)
    if heredocs:
        job.warn(f"{heredocs} heredoc or nowdoc string(s) left as written")
    texts = [_joined(value) for value in values]
    done = translated_values(texts, job)
    out = text
    for value, source, translation in reversed(list(zip(values, texts, done))):
        if translation != source:
            out = out[:value.start] + _written(value, translation) + out[value.end:]
    return out.encode("utf-8")


def _tokens(text: str) -> list:
    from phply import phplex
    lexer = phplex.lexer.clone()
    lexer.input(text)
    tokens = []
    try:
        while (token := lexer.token()) is not None:
            tokens.append(token)
    except SyntaxError as err:
        raise UserError(f"not a PHP file: line {err.lineno}: {err.msg}") from None
    return tokens


def _values(tokens: list, text: str) -> list[_Value]:
    """The string literals that are values, in the file's order."""
    values: list[_Value] = []
    openers: list[str] = []  # "array", "index", "define" or "call", innermost last
    arguments: list[int] = []  # how many commas each open bracket has seen
    k = 0
    while k < len(tokens):
        token, before = tokens[k], tokens[k - 1].type if k else ""
        if token.type in ("LBRACKET", "LPAREN"):
            openers.append("index" if token.type == "LBRACKET" and before in _INDEXED else
                           "array" if token.type == "LBRACKET" or before == "ARRAY" else
                           "define" if k and tokens[k - 1].value.lower() == "define" else "call")
            arguments.append(0)
        elif token.type in ("RBRACKET", "RPAREN") and openers:
            openers.pop()
            arguments.pop()
        elif token.type == "COMMA" and arguments:
            arguments[-1] += 1
        if token.type not in ("CONSTANT_ENCAPSED_STRING", "QUOTE"):
            k += 1
            continue
        end = k if token.type != "QUOTE" else next(
            (j for j in range(k + 1, len(tokens)) if tokens[j].type == "QUOTE"), -1)
        if end < 0:
            raise UserError(f"not a PHP file: line {token.lineno}: a double-quoted string is "
                            "never closed")
        after = tokens[end + 1].type if end + 1 < len(tokens) else ""
        inside = openers[-1] if openers else ""
        if after in _ENDS and (before in ("EQUALS", "DOUBLE_ARROW")
                      or (inside == "array" and before in ("LBRACKET", "LPAREN", "COMMA"))
                      or (inside == "define" and before == "COMMA" and arguments[-1] == 1)):
            values.append(_value(tokens[k:end + 1], text))
        k = end + 1
    return values


def _value(tokens: list, text: str) -> _Value:
    """A literal's texts: a single-quoted one's, or a double-quoted one's around its
    interpolations."""
    first, last = tokens[0], tokens[-1]
    start, end = first.lexpos, last.lexpos + len(last.value)
    if first.type == "CONSTANT_ENCAPSED_STRING":
        quote, body = first.value[0], first.value[1:-1]
        text = _decoded(body, quote)
        # Roundcube's messages go to JavaScript, which reads '\n' as a line break: each
        # line is translated apart, as a real line break is
        breaks = quote == "'" and "\\n" in text and "\n" not in text
        return _Value(start, end, quote, [text.replace("\\n", "\n") if breaks else text],
                      breaks)
    # a literal written over several lines keeps its line breaks as they are written
    written = "\n" in text[start:end] and "\\n" not in text[start:end]
    pieces, at = [""], start + 1  # after the opening quote
    for token in tokens[1:]:
        if token.type == "ENCAPSED_AND_WHITESPACE" or token is last:
            if token.lexpos > at:  # an interpolation, as written
                pieces += [text[at:token.lexpos], ""]
            if token is not last:
                pieces[-1] += _decoded(token.value, '"')
            at = token.lexpos + len(token.value)
    return _Value(start, end, '"', pieces, written)


def _decoded(body: str, quote: str) -> str:
    if quote == "'":
        return _SINGLE.sub(r"\1", body)

    def escape(match: re.Match) -> str:
        named, octal, hexadecimal, code = match.groups()
        if named:
            return _NAMED.get(named, named)
        return chr(int(octal, 8) % 256 if octal else int(hexadecimal or code, 16))
    return _DOUBLE.sub(escape, body)


def _joined(value: _Value) -> str:
    """A value's text, each interpolation a ``{__aK}`` placeholder."""
    return "".join(piece if k % 2 == 0 else f"{{__a{k // 2}}}"
                   for k, piece in enumerate(value.pieces))


def _written(value: _Value, translation: str) -> str:
    """A translation as a literal in the value's quotes, its interpolations put back (one it
    lost at its end)."""
    interpolations = value.pieces[1::2]
    if value.quote == "'":  # a backslash escaped only before a quote or a backslash
        if value.breaks:
            translation = translation.replace("\n", "\\n")
        return "'" + re.sub(r"\\(?=[\\']|$)", r"\\\\", translation).replace("'", "\\'") + "'"
    out = [interpolations[piece] if isinstance(piece, int) else
           piece.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
           .replace("\r", "\\r").replace("\t", "\\t")
           .replace("\n", "\n" if value.breaks else "\\n")
           for piece in put_back(translation, len(interpolations))]
    return '"' + "".join(out) + '"'
