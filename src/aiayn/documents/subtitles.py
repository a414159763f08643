"""Subtitles: SubRip (.srt) and WebVTT (.vtt, HTML5 video's). Each cue's text is translated as
one paragraph, its number (or identifier) and timing kept, and the translation wrapped over as
many lines as the cue had. WebVTT's header, NOTE comments and STYLE and REGION blocks stay as
written; a cue's tags (``<i>``, ``<c.yellow>``, a voice ``<v Roger>`` with its speaker's name, a
timestamp ``<00:00:05.000>``) are placeholders the translation keeps, one it lost put back at
its end. Into a language written right to left, each line with such letters is marked as
right-to-left text (``direction.embedded``), as players need it."""

from __future__ import annotations

import re

from ..data import charset
from ..errors import UserError
from . import Job, direction, put_back

_TIMING = re.compile(r"^\d+:\d\d:\d\d[,.]\d+\s*-->\s*\d+:\d\d:\d\d[,.]\d+")


def translate_srt(data: bytes, job: Job) -> bytes:
    text, encoding = charset.read(data, "SubRip file")
    newline = "\r\n" if "\r\n" in text else "\n"  # Windows' line ends stay
    text = text.replace("\r\n", "\n")
    blocks = [b for b in re.split(r"\n\s*\n", text.strip("\n")) if b.strip()]
    cues = []
    for number, block in enumerate(blocks, 1):
        lines = block.split("\n")
        at = 1 if len(lines) > 1 and _TIMING.match(lines[1].strip()) else 0
        if not _TIMING.match(lines[at].strip()):
            raise UserError(f"not a SubRip file: cue {number} has no 'HH:MM:SS,mmm --> "
                            "HH:MM:SS,mmm' timing line")
        cues.append((lines[:at + 1], lines[at + 1:]))
    texts = [_cue_texts(body) for _, body in cues]
    done = iter(job.lines([t for cue in texts for t in cue]))
    written = []
    for (head, body), cue in zip(cues, texts):
        written.append("\n".join(head + _directed(_cue_lines([next(done) for _ in cue], body),
                                                   job)))
    return encoding.write(("\n\n".join(written) + "\n").replace("\n", newline))


def _cue_texts(body: list[str]) -> list[str]:
    """What of a cue is translated: its lines apart where each is whole (each ends a
    sentence, or is a speaker's line after a dash, or a sound in brackets), else its lines
    joined (a sentence broken over them)."""
    lines = [t.strip() for t in body if t.strip()]
    whole = len(lines) > 1 and all(t[-1] in ".!?…)]»\"'’" or t[0] in "-–—[(" for t in lines)
    return lines if whole else [" ".join(lines)] if lines else []


def _cue_lines(translated: list[str], body: list[str]) -> list[str]:
    """A cue's translation on as many lines as it had: its lines' translations, or the
    translation of its joined lines wrapped."""
    if len(translated) > 1:
        return translated
    return wrap(translated[0], max(1, sum(1 for t in body if t.strip()))) if translated else []


_VTT_TIMING = re.compile(r"^(?:\d+:)?\d\d:\d\d\.\d{3}\s+-->\s+(?:\d+:)?\d\d:\d\d\.\d{3}")
# a cue's tags: a class (<c.loud>), a voice (<v Roger Bingham>), a timestamp (<00:01.500>),
# and the HTML-like ones
_VTT_TAG = re.compile(r"</?[A-Za-z]+(?:\.[\w.-]+)*(?:\s[^<>]*)?>|<(?:\d+:)?\d\d:\d\d\.\d{3}>")


def translate_vtt(data: bytes, job: Job) -> bytes:
    text, encoding = charset.read(data, "WebVTT file")
    newline = "\r\n" if "\r\n" in text else "\n"
    text = text.replace("\r\n", "\n")
    if not re.match(r"WEBVTT(?:[ \t\n]|$)", text):
        raise UserError("not a WebVTT file: it does not begin with 'WEBVTT'")
    blocks = re.split(r"\n[ \t]*\n", text.strip("\n"))
    cues: list[tuple[int, list[str], list[str]]] = []  # block, head lines, text lines
    for k, block in enumerate(blocks[1:], 1):
        lines = block.split("\n")
        if re.match(r"(?:NOTE|STYLE|REGION)(?:\s|$)", lines[0]) or not block.strip():
            continue
        at = 1 if len(lines) > 1 and "-->" not in lines[0] else 0
        if not _VTT_TIMING.match(lines[at].strip()):
            raise UserError(f"not a WebVTT file: block {k} is neither a cue with an 'MM:SS.mmm "
                            f"--> MM:SS.mmm' timing line nor a NOTE, STYLE or REGION")
        cues.append((k, lines[:at + 1], lines[at + 1:]))
    hidden = [[_hidden(t) for t in _cue_texts(body)] for _, _, body in cues]
    done = iter(job.lines([masked for cue in hidden for masked, _ in cue]))
    for (k, head, body), cue in zip(cues, hidden):
        shown = [_shown(next(done), tags) for _, tags in cue]
        blocks[k] = "\n".join(head + _directed(_cue_lines(shown, body), job))
    return encoding.write(("\n\n".join(blocks) + "\n").replace("\n", newline))


def _directed(lines: list[str], job: Job) -> list[str]:
    """A cue's translated lines, each marked right to left where the target is written so
    (``direction.embedded``)."""
    return [direction.embedded(line) for line in lines] if job.target_right_to_left else lines


def _hidden(text: str) -> tuple[str, list[str]]:
    """A cue's text with each tag a ``{__aK}`` placeholder, and the tags."""
    tags: list[str] = []

    def hide(match: re.Match) -> str:
        tags.append(match.group(0))
        return f"{{__a{len(tags) - 1}}}"
    return _VTT_TAG.sub(hide, text), tags


def _shown(translation: str, tags: list[str]) -> str:
    """The tags put back in place of their placeholders (``documents.put_back``)."""
    return "".join(tags[piece] if isinstance(piece, int) else piece
                   for piece in put_back(translation, len(tags)))


def wrap(text: str, lines: int) -> list[str]:
    """``text`` over ``lines`` lines of about equal length, broken between words."""
    words = text.split()
    if lines <= 1 or len(words) < 2:
        return [text] if text else []
    out, rest = [], words
    for k in range(lines - 1, 0, -1):
        target = len(" ".join(rest)) / (k + 1)
        cut, length = 1, len(rest[0])
        while cut < len(rest) - k and length + 1 + len(rest[cut]) <= target + 1:
            length += 1 + len(rest[cut])
            cut += 1
        out.append(" ".join(rest[:cut]))
        rest = rest[cut:]
        if not rest:
            break
    if rest:
        out.append(" ".join(rest))
    return out
