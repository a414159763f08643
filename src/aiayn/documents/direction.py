"""Documents translated into a language written right to left (``Job.right_to_left``), made
to read so in each format's own terms: Word's paragraphs and runs (``word``), OpenDocument's
paragraph styles (``opendocument``), DrawingML's paragraphs and list styles, PowerPoint's
and charts' (``drawingml``), Excel's text cells (``spreadsheet``), and a subtitle's lines
(``embedded``). A web page's and a book's direction is the markup path's
(``markup.Document``, ``documents.epub``); a PDF's, its drawing's (``documents.pdf.visual``).

Alignment follows the direction, where each format means the sides of the page by it: Word
reads its left and right by the paragraph's direction, so they stay; DrawingML's and Excel's
left and right are the page's, so they are mirrored; OpenDocument's are written as the
page's sides (LibreOffice sets a right-to-left paragraph's "start" at the left).
"""

from __future__ import annotations

import copy
import re
import unicodedata

from . import local_name

EMBEDDING = "\u202b", "\u202c"  # RIGHT-TO-LEFT EMBEDDING ... POP DIRECTIONAL FORMATTING


def right_to_left_letters(text: str) -> bool:
    """Whether ``text`` has a letter written right to left (Hebrew, Arabic, Syriac...)."""
    return any(unicodedata.bidirectional(c) in ("R", "AL") for c in text)


def embedded(line: str) -> str:
    """A line of plain text (a subtitle's) with letters written right to left, between a
    right-to-left embedding and its end (U+202B, U+202C), as Subtitle Edit's "fix RTL"
    writes it: libass (what mpv and ffmpeg draw subtitles with) lays every line out left to
    right whatever its letters, so an Arabic line's full stop and a Latin name in it would
    stand at the wrong end; a browser finds a line's direction by itself and reads it the
    same. Tags at the line's start and end (``<v Roger>``, ``<i>``, an override such as
    ``{\\an8}``) stay outside, where readers look for a cue's speaker. Other lines, and lines
    already so, are as they were."""
    if not right_to_left_letters(line) or EMBEDDING[0] in line:
        return line
    start = re.match(r"(?:<[^<>]*>|\{\\[^{}]*\})*", line).end()  # type: ignore[union-attr]
    end = re.search(r"(?:</[^<>]*>)*$", line).start()  # type: ignore[union-attr]
    return line[:start] + EMBEDDING[0] + line[start:end] + EMBEDDING[1] + line[end:]

# the children of w:pPr and w:rPr that come after the ones written here, in the schema's
# order (Word refuses a document whose properties are out of order)
_AFTER_BIDI = ("adjustRightInd", "snapToGrid", "spacing", "ind", "contextualSpacing",
               "mirrorIndents", "suppressOverlap", "jc", "textDirection", "textAlignment",
               "textboxTightWrap", "outlineLvl", "divId", "cnfStyle", "rPr", "sectPr",
               "pPrChange")
_RUN_ORDER = ("rStyle", "rFonts", "b", "bCs", "i", "iCs", "caps", "smallCaps", "strike",
              "dstrike", "outline", "shadow", "emboss", "imprint", "noProof", "snapToGrid",
              "vanish", "webHidden", "color", "spacing", "w", "kern", "position", "sz", "szCs",
              "highlight", "u", "effect", "bdr", "shd", "fitText", "vertAlign", "rtl", "cs",
              "em", "lang", "eastAsianLayout", "specVanish", "oMath", "rPrChange")
# right-to-left text is a complex script's: Word formats it by these, not by b, i and sz
_COMPLEX = {"b": "bCs", "i": "iCs", "sz": "szCs"}


def word(paragraphs: list, roots: list) -> None:
    """The translated ``paragraphs`` (w:p elements) read right to left: each marked
    ``w:bidi`` (its direction, and so its alignment, its indents' sides and its list
    markers' side), each of its runs ``w:rtl`` (the order of its digits and punctuation).
    Bold, italic and size set for other scripts are given to complex scripts too, in the
    runs and in the styles (under ``roots``), or right-to-left text would lose them."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    def put(parent, name: str, order: tuple[str, ...], like=None) -> None:
        if parent.find(qn(f"w:{name}")) is not None:
            return
        element = copy.deepcopy(like) if like is not None else OxmlElement(f"w:{name}")
        element.tag = qn(f"w:{name}")
        parent.insert_element_before(element, *(f"w:{n}" for n in order))

    def complex_scripts(rpr) -> None:
        for latin, complex_name in _COMPLEX.items():
            found = rpr.find(qn(f"w:{latin}"))
            if found is not None:
                later = _RUN_ORDER[_RUN_ORDER.index(complex_name) + 1:]
                put(rpr, complex_name, later, like=found)

    for p in paragraphs:
        put(p.get_or_add_pPr(), "bidi", _AFTER_BIDI)
        for run in p.iter(qn("w:r")):
            rpr = run.get_or_add_rPr()
            complex_scripts(rpr)
            put(rpr, "rtl", _RUN_ORDER[_RUN_ORDER.index("rtl") + 1:])
    for root in roots:
        if local_name(root.tag) == "styles":
            for rpr in root.iter(qn("w:rPr")):
                complex_scripts(rpr)


_STYLE_NS = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
_FO_NS = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
_WRITING_MODE, _TEXT_ALIGN = (_STYLE_NS, "writing-mode"), (_FO_NS, "text-align")
# an alignment to the side a paragraph starts on, or ends on, mirrored; written as "right" and
# "left", which LibreOffice and the rest read alike (LibreOffice sets "start" at the left of a
# right-to-left paragraph)
_SIDES = {None: "right", "start": "right", "left": "right", "end": "left", "right": "left"}


def opendocument(document) -> None:
    """The document's paragraphs read right to left: the paragraph styles' default direction
    (and each style's that says left to right, or the page's) right to left, and each
    paragraph style aligned to the other side than it was (its own alignment or the one it
    inherits: a paragraph that started at the left margin starts at the right); centred and
    justified ones stay."""
    from odf.style import DefaultStyle, ParagraphProperties, Style
    defaults = [d for d in document.getElementsByType(DefaultStyle)
                if d.getAttribute("family") == "paragraph"]
    if not defaults:
        defaults.append(DefaultStyle(family="paragraph"))
        document.styles.addElement(defaults[0])
    for default in defaults:
        if not any(getattr(c, "qname", None) == (_STYLE_NS, "paragraph-properties")
                   for c in default.childNodes):
            default.addElement(ParagraphProperties())
    styles = [s for s in document.getElementsByType(Style)
              if s.getAttribute("family") == "paragraph"]
    named = {s.getAttribute("name"): s for s in styles}

    def own(style):
        return next((c for c in style.childNodes
                     if getattr(c, "qname", None) == (_STYLE_NS, "paragraph-properties")), None)

    def inherited(style) -> str | None:
        seen = set()
        while style is not None and id(style) not in seen:
            seen.add(id(style))
            properties = own(style)
            if properties is not None and _TEXT_ALIGN in properties.attributes:
                return properties.attributes[_TEXT_ALIGN]
            style = named.get(style.getAttribute("parentstylename"))
        return None

    aligned = {id(style): _SIDES.get(inherited(style)) for style in styles}
    for style in styles:
        if aligned[id(style)] is not None:
            if own(style) is None:
                style.addElement(ParagraphProperties())
            own(style).attributes[_TEXT_ALIGN] = aligned[id(style)]
    for properties in document.getElementsByType(ParagraphProperties):
        attributes = properties.attributes
        parent = properties.parentNode
        default = parent.qname == (_STYLE_NS, "default-style")
        if attributes.get(_WRITING_MODE) in ("lr-tb", "lr", "page") or (
                default and _WRITING_MODE not in attributes):
            attributes[_WRITING_MODE] = "rl-tb"


_ALIGNS = {"l": "r", "r": "l"}


def drawingml(ppr, root: bool = False) -> None:
    """Paragraph properties (``a:pPr``, or a list style's ``a:lvlNpPr``) made right to left:
    ``rtl``, and the alignment mirrored, left for right. Where ``root`` (a master's text
    styles, where every paragraph's properties start) no alignment is left's, the default."""
    ppr.set("rtl", "1")
    align = ppr.get("algn") or ("l" if root else None)
    if align in _ALIGNS:
        ppr.set("algn", _ALIGNS[align])


_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_HORIZONTAL = {"left": "right", "right": "left"}


def spreadsheet(roots: dict, translated: list) -> set[str]:
    """The cells whose strings were translated (``translated``: their ``si`` or ``is``
    elements) read right to left: each given a copy of its cell format with
    ``readingOrder="2"`` (right to left; text aligned "general" then starts at the right)
    and a left or right alignment mirrored, the sheet's layout (its columns' order) left to
    its author. ``roots``: part name -> (kind, XML root), as ``documents.sheets`` reads
    them. The names of the parts changed."""
    styles_part, styles = next(((name, root) for name, (kind, root) in roots.items()
                                if kind == "styles"), (None, None))
    formats = styles.find(f"{_S}cellXfs") if styles is not None else None
    if formats is None:
        return set()
    xfs = formats.findall(f"{_S}xf")
    # (lxml gives an element the same proxy while one is held, as ``translated`` holds them)
    translated_ids = {id(item) for item in translated}
    shared = next((root for kind, root in roots.values() if kind == "strings"), None)
    indices = {str(k) for k, si in enumerate(shared.findall(f"{_S}si") if shared is not None
                                             else []) if id(si) in translated_ids}
    copies: dict[str, str] = {}  # a format's index -> its right-to-left copy's
    changed: set[str] = set()
    for name, (kind, root) in roots.items():
        if kind != "sheet":
            continue
        for cell in root.iter(f"{_S}c"):
            value, inline = cell.find(f"{_S}v"), cell.find(f"{_S}is")
            if not ((cell.get("t") == "s" and value is not None and value.text in indices)
                    or (cell.get("t") == "inlineStr" and inline is not None
                        and id(inline) in translated_ids)):
                continue
            given = cell.get("s", "0")
            if given not in copies:
                if not given.isdigit() or int(given) >= len(xfs):
                    continue
                xf = copy.deepcopy(xfs[int(given)])
                align = xf.find(f"{_S}alignment")
                if align is None:  # (the first child of a format)
                    align = xf.makeelement(f"{_S}alignment", {})
                    xf.insert(0, align)
                align.set("readingOrder", "2")
                if align.get("horizontal") in _HORIZONTAL:
                    align.set("horizontal", _HORIZONTAL[align.get("horizontal")])
                xf.set("applyAlignment", "1")
                copies[given] = str(len(xfs))
                xfs.append(xf)
                formats.append(xf)
                formats.set("count", str(len(xfs)))
            cell.set("s", copies[given])
            changed.add(name)
    if copies and styles_part is not None:
        changed.add(styles_part)
    return changed
