"""What a request's text becomes before and after decoding: lines of sentences.

A text is cut into lines, each line into sentences (``sentencex``, Wikimedia's segmenter for
~300 languages); the translated sentences are joined back with a space and the lines with their
newlines. HTML (``format=html``) is read by ``aiayn.markup``.
"""

from __future__ import annotations

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
