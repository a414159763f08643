"""Plain text (paragraphs a line, translated sentence by sentence; empty lines kept) and HTML
or XML documents (``aiayn.markup``), each written back in the encoding it was read in
(``charset``)."""

from __future__ import annotations

from ..data import charset
from . import Job


def translate_text(data: bytes, job: Job) -> bytes:
    text, encoding = charset.read(data, "text file")
    lines = text.split("\n")
    todo = [i for i, line in enumerate(lines) if line.strip()]
    out = job.lines([lines[i].strip() for i in todo])
    for i, translation in zip(todo, out):
        line = lines[i]
        lead = line[:len(line) - len(line.lstrip())]
        trail = line[len(line.rstrip()):]  # a Windows line's \r stays
        lines[i] = lead + translation + trail
    return encoding.write("\n".join(lines))


def translate_html(data: bytes, job: Job) -> bytes:
    text, encoding = charset.read(data, "HTML file", "html")
    return encoding.write(job.markup([text], "html")[0])


def translate_xml(data: bytes, job: Job) -> bytes:
    text, encoding = charset.read(data, "XML file", "xml")
    return encoding.write(job.markup([text], "xml")[0])
