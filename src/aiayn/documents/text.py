"""Plain text (paragraphs a line, translated sentence by sentence; empty lines kept) and HTML
or XML documents (``aiayn.markup``)."""

from __future__ import annotations

from . import Job, decode_utf8


def translate_text(data: bytes, job: Job) -> bytes:
    text = decode_utf8(data, "text file")
    lines = text.split("\n")
    todo = [i for i, line in enumerate(lines) if line.strip()]
    out = job.lines([lines[i].strip() for i in todo])
    for i, translation in zip(todo, out):
        line = lines[i]
        lead = line[:len(line) - len(line.lstrip())]
        trail = line[len(line.rstrip()):]  # a Windows line's \r stays
        lines[i] = lead + translation + trail
    return "\n".join(lines).encode("utf-8")


def translate_html(data: bytes, job: Job) -> bytes:
    return job.markup([decode_utf8(data, "HTML file")], "html")[0].encode("utf-8")


def translate_xml(data: bytes, job: Job) -> bytes:
    return job.markup([decode_utf8(data, "XML file")], "xml")[0].encode("utf-8")
