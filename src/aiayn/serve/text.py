"""What a request's text becomes before and after decoding: sentences, and HTML's text nodes.

A text is cut into lines, each line into sentences (``sentencex``, Wikimedia's segmenter for
~300 languages); the translated sentences are joined back with a space and the lines with their
newlines. HTML (``format=html``) keeps its markup: every text node outside ``script`` and
``style`` is translated on its own, and the tags, attributes, comments and entities around them
are written back unchanged.
"""

from __future__ import annotations

from html import escape
from html.parser import HTMLParser

from ..codec import join, sentences

# ISO 639-1 codes with English names (LibreTranslate's /languages shows names)
LANGUAGE_NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "ca": "Catalan", "cs": "Czech", "da": "Danish",
    "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "eu": "Basque", "fi": "Finnish", "fr": "French", "ga": "Irish",
    "gl": "Galician", "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian", "id": "Indonesian",
    "it": "Italian", "ja": "Japanese", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian",
    "nb": "Norwegian", "nl": "Dutch", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian",
    "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sv": "Swedish", "th": "Thai",
    "tr": "Turkish", "uk": "Ukrainian", "vi": "Vietnamese", "zh": "Chinese",
}


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def split_sentences(text: str, language: str) -> list[list[str]]:
    """Lines of sentences (``aiayn.codec.sentences``, as `aiayn translate --split-sentences`
    splits them); an empty line is an empty list."""
    return [sentences(line, language) if line.strip() else [] for line in text.split("\n")]


def join_sentences(lines: list[list[str]]) -> str:
    return "\n".join(join(translations) for translations in lines)


class _Pieces(HTMLParser):
    """Markup as a list of (is_text, string): translatable text (outside script/style, not
    only whitespace, entities decoded), or anything else as written."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[tuple[bool, str]] = []
        self.raw = 0  # inside script or style

    def handle_starttag(self, tag, attrs):
        self.pieces.append((False, self.get_starttag_text()))
        if tag in ("script", "style"):
            self.raw += 1

    def handle_startendtag(self, tag, attrs):
        self.pieces.append((False, self.get_starttag_text()))

    def handle_endtag(self, tag):
        self.pieces.append((False, f"</{tag}>"))
        if tag in ("script", "style") and self.raw:
            self.raw -= 1

    def handle_data(self, data):
        self.pieces.append((not self.raw and bool(data.strip()), data))

    def handle_comment(self, data):
        self.pieces.append((False, f"<!--{data}-->"))

    def handle_decl(self, decl):
        self.pieces.append((False, f"<!{decl}>"))

    def handle_pi(self, data):
        self.pieces.append((False, f"<?{data}>"))


def html_texts(markup: str) -> list[tuple[bool, str]]:
    parser = _Pieces()
    parser.feed(markup)
    parser.close()
    return parser.pieces


def rebuild_html(pieces: list[tuple[bool, str]], translations: list[str]) -> str:
    """The markup with each translatable text replaced by its translation (escaped), keeping
    the text's leading and trailing whitespace."""
    out, it = [], iter(translations)
    for is_text, text in pieces:
        if is_text:
            lead = text[:len(text) - len(text.lstrip())]
            trail = text[len(text.rstrip()):]
            out.append(lead + escape(next(it), quote=False) + trail)
        else:  # markup, script/style contents and whitespace, as they were
            out.append(text)
    return "".join(out)
