"""EPUB books (a zip of XHTML; LibreTranslate's file translation reads them too): every content
document the package's manifest lists (``application/xhtml+xml``, EPUB 3's navigation document
among them) is translated as XHTML through the markup path, the labels of EPUB 2's table of
contents (the NCX) and the book's title and description line by line, and the book's
``dc:language`` becomes the target where it named the source. Every other member (styles,
pictures, fonts) is copied as it was, in its order, the ``mimetype`` first and stored as the
format requires.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
import zlib
from urllib.parse import unquote

from ..data import charset
from ..errors import UserError, require
from . import Job, repack

_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"


def translate_epub(data: bytes, job: Job) -> bytes:
    require("lxml", "EPUB books", "documents")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise UserError("not an EPUB book: it is not a zip archive") from None
    try:
        return _translate(archive, job)
    except (zipfile.BadZipFile, zlib.error, EOFError) as err:  # a member that does not read
        raise UserError(f"not an EPUB book: {err}") from None


def _translate(archive: zipfile.ZipFile, job: Job) -> bytes:
    names = set(archive.namelist())
    if "mimetype" not in names or \
            archive.read("mimetype").strip() != b"application/epub+zip":
        raise UserError("not an EPUB book: its mimetype member is not application/epub+zip")
    if "META-INF/container.xml" not in names:
        raise UserError("not an EPUB book: it has no META-INF/container.xml")
    container = _parse(archive, "META-INF/container.xml")
    rootfile = container.find(f".//{_CONTAINER}rootfile")
    package = rootfile.get("full-path") if rootfile is not None else None
    if not package or package not in names:
        raise UserError("not an EPUB book: its container names no package document in it")
    opf = _parse(archive, package)
    base = posixpath.dirname(package)
    items = [(posixpath.normpath(posixpath.join(base, unquote(item.get("href") or ""))),
              item.get("media-type")) for item in opf.iter(f"{_OPF}item")]
    pages = [path for path, kind in items if kind == "application/xhtml+xml" and path in names]
    tables = [path for path, kind in items if kind == "application/x-dtbncx+xml"
              and path in names]
    written = {}
    read = [charset.read(archive.read(path), path, "xml") for path in pages]
    for path, (text, encoding), out in zip(pages, read, job.markup([t for t, _ in read], "xml")):
        written[path] = encoding.write(out)
    for path in tables:
        written[path] = _translate_ncx(archive, path, job)
    changed = False
    for language in opf.iter(f"{_DC}language"):
        target = job.relabeled((language.text or "").strip())
        if target is not None:
            language.text, changed = target, True
    spine = opf.find(f"{_OPF}spine")
    if job.right_to_left and spine is not None and \
            spine.get("page-progression-direction") in (None, "ltr", "default"):
        # pages turn as the language reads (EPUB 3; readers of EPUB 2 ignore it)
        spine.set("page-progression-direction", "rtl")
        changed = True
    told = [e for name in ("title", "description") for e in opf.iter(f"{_DC}{name}")
            if (e.text or "").strip() and not len(e)]
    for element, translation in zip(told, job.lines([e.text.strip() for e in told])):
        element.text, changed = translation, True
    if changed:
        written[package] = _serialize(opf)
    return repack(archive, written)


def _parse(archive: zipfile.ZipFile, name: str):
    from lxml import etree
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    try:
        return etree.fromstring(archive.read(name), parser)
    except etree.XMLSyntaxError as err:
        raise UserError(f"not an EPUB book: its {name} is not well-formed XML ({err})") \
            from None


def _serialize(root) -> bytes:
    from lxml import etree
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def _translate_ncx(archive: zipfile.ZipFile, path: str, job: Job) -> bytes:
    """EPUB 2's table of contents with its title and labels translated."""
    ncx = _parse(archive, path)
    texts = [t for t in ncx.iter(f"{_NCX}text") if (t.text or "").strip()]
    for element, translation in zip(texts, job.lines([t.text.strip() for t in texts])):
        element.text = translation
    return _serialize(ncx)
