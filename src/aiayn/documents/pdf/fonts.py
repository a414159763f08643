"""The fonts a translation is set in on a PDF page: the PDF standard fonts (Helvetica, Times,
Courier, in their bold and italic), which every reader has, by the original font's kind; for
letters they lack (WinAnsi's), the DejaVu font that has them, embedded."""

from __future__ import annotations

import functools
from pathlib import Path

from ...errors import UserError

STANDARD = {("sans", False, False): "Helvetica", ("sans", True, False): "Helvetica-Bold",
            ("sans", False, True): "Helvetica-Oblique",
            ("sans", True, True): "Helvetica-BoldOblique",
            ("serif", False, False): "Times-Roman", ("serif", True, False): "Times-Bold",
            ("serif", False, True): "Times-Italic", ("serif", True, True): "Times-BoldItalic",
            ("mono", False, False): "Courier", ("mono", True, False): "Courier-Bold",
            ("mono", False, True): "Courier-Oblique", ("mono", True, True): "Courier-BoldOblique"}
# Unicode fonts for letters the standard fonts lack, by kind: Debian's fonts-dejavu-core and
# matplotlib's copy
_DEJAVU = {"sans": "DejaVuSans", "serif": "DejaVuSerif", "mono": "DejaVuSansMono"}
_SHAPES = {(False, False): "", (True, False): "-Bold", (False, True): "-Oblique",
           (True, True): "-BoldOblique"}


def latin(text: str) -> bool:
    """Whether the standard fonts (WinAnsi's characters) can write ``text``."""
    try:
        text.encode("cp1252")
        return True
    except UnicodeEncodeError:
        return False


@functools.cache
def _letters(path: Path) -> frozenset[int]:
    """The characters a font file draws (its cmap, read by fontTools, which matplotlib
    brings)."""
    from fontTools.ttLib import TTFont
    with TTFont(str(path), lazy=True) as font:
        return frozenset(font.getBestCmap() or {})


def folders() -> list[Path]:
    """Where DejaVu's fonts may be: Debian's fonts-dejavu-core, and matplotlib's copy."""
    import importlib.util
    folders = [Path("/usr/share/fonts/truetype/dejavu")]
    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.origin:
        folders.append(Path(spec.origin).parent / "mpl-data" / "fonts" / "ttf")
    return folders


def candidates(kind: str, bold: bool, italic: bool) -> list[Path]:
    """The DejaVu fonts a text of a kind and shape may be set in, the nearest first: its own,
    then the shape kept before the kind (DejaVu Serif has no Hebrew or Arabic letters,
    DejaVu Sans's slanted shapes no Arabic)."""
    shapes = dict.fromkeys([(bold, italic), (bold, False), (False, italic), (False, False)])
    names = [_DEJAVU[k] + _SHAPES[shape] for k in dict.fromkeys([kind, "sans"]) for shape in shapes]
    return [folder / f"{name}.ttf" for name in names for folder in folders()
            if (folder / f"{name}.ttf").is_file()]


def unicode_font(found: list[Path], text: str) -> Path:
    """The font of ``found`` (``candidates``) ``text`` is set in: the nearest that has all its
    letters, else the one that has the most."""
    letters = {ord(c) for c in text if not c.isspace()}
    if found:
        return max(found, key=lambda path: (len(letters & _letters(path)), -found.index(path)))
    raise UserError("the translation has letters the PDF standard fonts lack, and no Unicode "
                    "font was found to set them in; install the DejaVu fonts "
                    "(apt-get install fonts-dejavu-core)")
