"""SubRip subtitles (.srt): each cue's text translated as one paragraph, its number and timing
kept, and the translation wrapped over as many lines as the cue had."""

from __future__ import annotations

import re

from ..data import charset
from ..errors import UserError
from . import Job

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
    out = job.lines([" ".join(t.strip() for t in body if t.strip()) for _, body in cues])
    written = []
    for (head, body), translation in zip(cues, out):
        written.append("\n".join(head + wrap(translation, max(1, sum(
            1 for t in body if t.strip())))))
    return encoding.write(("\n\n".join(written) + "\n").replace("\n", newline))


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
