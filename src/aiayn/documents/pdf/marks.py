"""A tagged PDF's marked content carried onto the translation. A tagged PDF (what screen readers
read, and what LibreOffice and Word write when asked for an accessible PDF) ties each piece of
its page content to an element of its structure tree by a mark around the drawing commands
(``/P <</MCID 3>> BDC ... EMC``). Text set anew has no mark, so the translated pages' text
belonged to no element: the tree's paragraphs and headings read as empty. Each new text object
of a paragraph gets the marks of the paragraph's text: those over most of its original text's
width (a paragraph's lines each have an MCID of their own, and a link's words one of the
link's), so the paragraph's element reads the whole translation.
"""

from __future__ import annotations

import ctypes
from typing import Any

Mark = tuple[str, tuple[tuple[str, Any], ...]]  # a mark's name, its parameters (int or text)


def read(obj, raw) -> tuple[Mark, ...]:
    """The marks on a page object, outermost first; parameters of other kinds (a
    dictionary, an array) are not kept."""
    marks = []
    for k in range(raw.FPDFPageObj_CountMarks(obj)):
        mark = raw.FPDFPageObj_GetMark(obj, k)
        params: list[tuple[str, Any]] = []
        for p in range(raw.FPDFPageObjMark_CountParams(mark)):
            key = _text(lambda buffer, size, out: raw.FPDFPageObjMark_GetParamKey(
                mark, p, buffer, size, out))
            kind = raw.FPDFPageObjMark_GetParamValueType(mark, key.encode())
            if kind == raw.FPDF_OBJECT_NUMBER:
                value = ctypes.c_int()
                if raw.FPDFPageObjMark_GetParamIntValue(mark, key.encode(), ctypes.byref(value)):
                    params.append((key, value.value))
            elif kind in (raw.FPDF_OBJECT_STRING, raw.FPDF_OBJECT_NAME):
                params.append((key, _text(lambda buffer, size, out: (
                    raw.FPDFPageObjMark_GetParamStringValue(mark, key.encode(), buffer, size,
                                                            out)))))
        name = _text(lambda buffer, size, out: raw.FPDFPageObjMark_GetName(
            mark, buffer, size, out))
        marks.append((name, tuple(params)))
    return tuple(marks)


def prevailing(objects: list, raw) -> tuple[Mark, ...]:
    """The marks over most of ``objects``' width (a paragraph's own, not its link's); none
    where none carries any."""
    widths: dict[tuple[Mark, ...], float] = {}
    for obj in objects:
        found = read(obj, raw)
        box = [ctypes.c_float() for _ in range(4)]
        if found and raw.FPDFPageObj_GetBounds(obj, *box):
            widths[found] = widths.get(found, 0.0) + max(0.0, box[2].value - box[0].value)
    return max(widths, key=lambda m: widths[m]) if widths else ()


def put(document, obj, marks: tuple[Mark, ...], raw) -> None:
    """``marks`` set on a new page object, outermost first."""
    for name, params in marks:
        mark = raw.FPDFPageObj_AddMark(obj, name.encode())
        for key, value in params:
            if isinstance(value, int):
                raw.FPDFPageObjMark_SetIntParam(document, obj, mark, key.encode(), value)
            else:
                raw.FPDFPageObjMark_SetStringParam(document, obj, mark, key.encode(),
                                                   value.encode())


def _text(call) -> str:
    """A UTF-16 text that a PDFium call writes into a buffer it is asked the size of."""
    size = ctypes.c_ulong()
    if not call(None, 0, ctypes.byref(size)) or size.value <= 2:
        return ""
    buffer = (ctypes.c_ushort * (size.value // 2))()
    call(buffer, size.value, ctypes.byref(size))
    return bytes(buffer)[:size.value - 2].decode("utf-16-le", "replace")
