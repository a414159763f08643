"""Language detection (lingua) among the models' languages: what it reads of a text."""

import pytest

from aiayn.detect import LanguageDetector, language_words

pytest.importorskip("lingua")


@pytest.fixture(scope="module")
def detector():
    return LanguageDetector(["en", "de"])


@pytest.mark.parametrize("text, code", [
    ("Insert HTML File", "en"),  # HTML read as a word made it German
    ("Save the %s file to {0}", "en"),
    ("<b>Speichern</b> unter %s", "de"),
    ("DATEI NICHT GEFUNDEN", "de"),  # all in capitals: the words are kept
    ("FILE NOT FOUND", "en"),
])
def test_placeholders_markup_and_acronyms_are_not_read_as_words(detector, text, code):
    found = detector.detect(text)
    assert found[0][0] == code, found
    assert {c for c, _ in found} <= {"en", "de"}


@pytest.mark.parametrize("text, read", [
    ("Insert HTML File", "Insert   File"),
    ("<b>%d</b> mine", "    mine"),
    ("FILE NOT FOUND", "FILE NOT FOUND"),  # all in capitals: the words are kept
    ("HTML %s", "HTML  "),
    ("%s %d", "%s %d"),  # nothing left but what was taken out: the text as it is
])
def test_lingua_reads_the_words_without_placeholders_markup_and_acronyms(text, read):
    assert language_words(text) == read


def test_one_language_is_the_answer_with_full_confidence():
    assert LanguageDetector(["en"]).detect("Hallo Welt") == [("en", 100.0)]
