"""Language detection as LibreTranslate does it (lingua), limited to the served models'
languages: `POST /detect` among all of them, `source: auto` among the sources into the
target, through real clients."""

import pytest

from tests.serve.server import Server

pytest.importorskip("lingua")

ENGLISH = ["The Lord is my shepherd; I shall not want.",
           "Open the file and save your changes before you quit."]
GERMAN = ["Der Herr ist mein Hirte, mir wird nichts mangeln.",
          "Öffnen Sie die Datei und speichern Sie Ihre Änderungen, bevor Sie beenden."]
SPANISH = ["El Señor es mi pastor; nada me faltará.",
           "Abra el archivo y guarde los cambios antes de salir."]


@pytest.fixture(scope="module")
def server(toy_model):
    # two pairs into Spanish: /detect chooses among English, German and Spanish, source
    # auto between English and German
    running = Server(toy_model, "--checkpoint", f"de-es={toy_model}", name="en-es")
    yield running
    running.stop()


def test_detect_answers_as_libretranslate_among_the_models_languages(server):
    from libretranslatepy import LibreTranslateAPI
    client = LibreTranslateAPI(server.url + "/")
    for text, code in ([(t, "en") for t in ENGLISH] + [(t, "de") for t in GERMAN]
                       + [(t, "es") for t in SPANISH]):  # a target language is one too
        found = client.detect(text)
        assert found[0]["language"] == code and 50 < found[0]["confidence"] <= 100, found
        assert {f["language"] for f in found} <= {"en", "de", "es"}  # none no model knows


def test_source_auto_picks_the_model_of_the_detected_language(server):
    for text, code in ((ENGLISH[0], "en"), (GERMAN[0], "de")):
        status, auto = server.post("/translate", {"q": text, "source": "auto", "target": "es"})
        status_given, given = server.post("/translate", {"q": text, "source": code,
                                                         "target": "es"})
        assert status == status_given == 200
        assert auto["detectedLanguage"]["language"] == code
        assert auto["translatedText"] == given["translatedText"]
    status, auto = server.post("/translate", {"q": SPANISH[0], "source": "auto", "target": "es"})
    assert status == 200 and auto["detectedLanguage"]["language"] in ("en", "de")
    status, answer = server.post("/translate", {"q": ENGLISH[0], "source": "auto",
                                                "target": "fr"})
    assert status == 400 and "fr is not supported" in answer["error"]


def test_detect_refuses_what_it_cannot_read(server):
    for payload in ({"q": ""}, {"q": ["a", "b"]}, {"q": "x" * 6000}):
        status, answer = server.post("/detect", payload)
        assert status == 400 and "error" in answer
