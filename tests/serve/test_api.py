"""`aiayn serve` as LibreTranslate's clients and a browser meet it: a real server process on
127.0.0.1, real HTTP clients, and every bad request answered without hurting the server."""

import shutil
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from aiayn.translate import load
from tests.conftest import toy_pairs
from tests.serve.server import Server

SENTENCES = [s for s, _ in toy_pairs(12, seed=11)]


@pytest.fixture(scope="module")
def server(toy_model):
    running = Server(toy_model, "--char-limit", "2000", "--batch-limit", "20")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def reference(toy_model):
    """What `aiayn translate` gives (beam 4) for each sentence alone."""
    translator = load(toy_model)
    return {s: translator.translate([s])[0] for s in SENTENCES}


def test_libretranslatepy_client(server, reference):
    from libretranslatepy import LibreTranslateAPI
    client = LibreTranslateAPI(server.url + "/")
    for sentence in SENTENCES[:4]:
        assert client.translate(sentence, "en", "es") == reference[sentence]
    languages = {lang["code"]: lang for lang in client.languages()}
    assert languages["en"]["targets"] == ["es"] and languages["en"]["name"] == "English"


def test_libretranslate_aio_client(server, reference):
    import asyncio

    from libretranslate_aio import AsyncLibreTranslate, LibreTranslate

    async def use():
        async with AsyncLibreTranslate(server.url) as client:
            return (await client.translate(SENTENCES[0], source="en", target="es"),
                    await client.translate(SENTENCES[:3], source="en", target="es"),
                    await client.languages(), await client.frontend_settings(),
                    await client.health())
    one, three, languages, settings, healthy = asyncio.run(use())
    assert one.translated_text == reference[SENTENCES[0]]
    assert three.translated_text == [reference[s] for s in SENTENCES[:3]]
    assert [lang.code for lang in languages] == ["en", "es"] and healthy
    assert settings.char_limit == 2000 and settings.language.source.code == "en"
    with LibreTranslate(server.url) as client:
        assert client.translate(SENTENCES[1], "en", "es").translated_text == \
            reference[SENTENCES[1]]


def test_answers_equal_translate_and_do_not_depend_on_batching(server, reference):
    status, answer = server.post("/translate", {"q": SENTENCES, "source": "en", "target": "es"})
    assert status == 200 and answer["translatedText"] == [reference[s] for s in SENTENCES]
    with ThreadPoolExecutor(8) as pool:  # concurrent requests share decoding rounds
        answers = list(pool.map(lambda s: server.post(
            "/translate", {"q": s, "source": "en", "target": "es"}), SENTENCES * 2))
    assert [a["translatedText"] for _, a in answers] == [reference[s] for s in SENTENCES * 2]


def test_form_fields_paragraphs_html_and_alternatives(server, reference):
    a, b = SENTENCES[:2]
    body = f"q={a}.%20{b}.&source=en&target=es".encode()
    status, answer = server.request("POST", "/translate", body,
                                    "application/x-www-form-urlencoded")
    assert status == 200 and answer["translatedText"]
    status, answer = server.post("/translate", {"q": f"<p class='x'>{a}</p><br/><b>{b}</b>",
                                                "source": "en", "target": "es",
                                                "format": "html"})
    assert status == 200
    assert answer["translatedText"] == (f"<p class='x'>{reference[a]}</p><br/>"
                                        f"<b>{reference[b]}</b>")
    status, answer = server.post("/translate", {"q": a, "source": "en", "target": "es",
                                                "alternatives": 2})
    assert status == 200 and answer["translatedText"] == reference[a]
    assert len(answer["alternatives"]) == 2
    status, answer = server.post("/translate", {"q": a, "source": "auto", "target": "es"})
    assert answer["detectedLanguage"]["language"] == "en"


def test_html_is_translated_as_aiayn_translate_format_html_does(server, toy_model):
    a, b = SENTENCES[2:4]
    words = b.split()
    page = (f"<div lang='en'><p title='{a}'>{a}. <i>{words[0]}</i> {' '.join(words[1:])}</p>"
            f"<ul><li>{b} <code>x = 1</code></li></ul><p>{a} <b>open</div>")
    status, answer = server.post("/translate", {"q": [page, a], "source": "en", "target": "es",
                                                "format": "html"})
    expected = load(toy_model).translate_markup([page, a])
    assert status == 200 and answer["translatedText"] == expected
    assert "<code>x = 1</code>" in expected[0]
    assert expected[0].startswith("<div lang='es'>")  # the page is in the target language now


def test_v1_translate_with_a_glossary(server, toy_model):
    from aiayn.glossary import Glossary
    a = SENTENCES[4]
    terms = [[a.split()[0], "PSI PSI"]]
    status, answer = server.post("/v1/translate", {"sentences": [a, SENTENCES[5]],
                                                   "source": "en", "target": "es",
                                                   "glossary": terms})
    expected = load(toy_model).translate([a, SENTENCES[5]],
                                         glossary=Glossary.from_pairs(terms))
    assert status == 200 and [t["text"] for t in answer["translations"]] == expected
    assert "PSI PSI" in expected[0]
    status, answer = server.post("/v1/translate", {"sentences": [a], "source": "en",
                                                   "target": "es", "glossary": [["x"]]})
    assert status == 400 and "term 1 is not a (source, target) pair" in answer["error"]


def test_v1_routes_take_the_only_model_when_the_request_names_no_pair(server, reference):
    a = SENTENCES[6]
    status, answer = server.post("/v1/translate", {"sentences": [a]})
    assert status == 200 and answer["model"] == "en-es"
    assert [t["text"] for t in answer["translations"]] == [reference[a]]
    status, answer = server.post("/v1/attention", {"text": a})
    assert status == 200 and answer["translation"] == reference[a]
    status, answer = server.post("/v1/translate", {"sentences": [a], "source": "en"})
    assert status == 400 and answer["error"] == ("Invalid request: missing target parameter "
                                                 "(this server has en-es)")


@pytest.mark.parametrize("payload,status,message", [
    ({"source": "en", "target": "es"}, 400, "Invalid request: missing q parameter"),
    ({"q": "alpha", "target": "es"}, 400, "Invalid request: missing source parameter"),
    ({"q": "alpha", "source": "en"}, 400, "Invalid request: missing target parameter"),
    ({"q": "alpha", "source": "xx", "target": "es"}, 400, "xx is not supported"),
    ({"q": "alpha " * 500, "source": "en", "target": "es"}, 400, "exceeds text limit (2000)"),
    ({"q": ["alpha"] * 21, "source": "en", "target": "es"}, 400, "exceeds text limit (20)"),
    ({"q": "alpha", "source": "en", "target": "es", "format": "pdf"}, 400, "format must be"),
])
def test_libretranslate_errors(server, payload, status, message):
    code, answer = server.post("/translate", payload)
    assert code == status and message in answer["error"]


def test_bad_requests_leave_the_server_healthy(server, reference):
    assert server.request("POST", "/translate", b"{not json")[0] == 400
    code, answer = server.request("POST", "/translate", b"x" * 10_000_000)
    assert code == 413 and "too large" in answer["error"]
    code, _ = server.post("/translate", {"q": "a" * 100_000, "source": "en", "target": "es"})
    assert code in (400, 413)
    code, answer = server.request("POST", "/translate", b"q=\xff\xfe&source=en&target=es",
                                  "application/x-www-form-urlencoded")
    assert code == 400 and "UTF-8" in answer["error"]
    code, answer = server.get("/no/such/route")
    assert code == 404 and "error" in answer
    code, answer = server.get("/translate")
    assert code == 405 and "error" in answer
    # a client that goes away in the middle of its body
    with socket.create_connection(("127.0.0.1", server.port)) as raw:
        raw.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n{\"q\": \"alp")
    # a GET with a body, as some clients send
    code, _ = server.request("GET", "/languages", b"{}")
    assert code == 200
    assert server.get("/health") == (200, {"status": "ok"})
    code, answer = server.post("/translate", {"q": SENTENCES[0], "source": "en", "target": "es"})
    assert code == 200 and answer["translatedText"] == reference[SENTENCES[0]]


def test_settings_health_metrics_and_native_api(server, reference):
    code, settings = server.get("/frontend/settings")
    assert code == 200 and settings["charLimit"] == 2000 and settings["keyRequired"] is False
    code, answer = server.post("/suggest", {"q": "alpha", "s": "ALFA", "source": "en",
                                            "target": "es"})
    assert settings["suggestions"] is False and code == 403  # as LibreTranslate without them
    assert answer == {"error": "Suggestions are disabled on this server."}
    code, answer = server.post("/v1/translate", {"sentences": SENTENCES[:3], "source": "en",
                                                 "target": "es", "nbest": 2,
                                                 "alignments": True})
    assert code == 200 and answer["model"] == "en-es"
    first = answer["translations"][0]
    assert first["text"] == reference[SENTENCES[0]] and len(first["alternatives"]) == 1
    assert first["score"] <= 0 and "-" in first["alignment"]
    code, maps = server.post("/v1/attention", {"text": SENTENCES[0], "source": "en",
                                               "target": "es"})
    assert code == 200 and maps["translation"] == reference[SENTENCES[0]]
    layers, heads = len(maps["cross"]), len(maps["cross"][0])
    assert layers == 2 and heads == 4
    rows = maps["cross"][0][0]
    assert len(rows) == len(maps["target_tokens"]) and len(rows[0]) == len(maps["source_tokens"])
    assert all(abs(sum(row) - 1) < 1e-3 for row in rows)
    code, text = server.get("/metrics")
    for name in ("aiayn_requests_total", "aiayn_sentences_total", "aiayn_queue_depth",
                 "aiayn_batch_sentences_bucket", "aiayn_request_seconds_bucket"):
        assert name in text


def test_api_keys_and_rate_limit(toy_model, tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("secret\n")
    running = Server(toy_model, "--api-keys", str(keys), "--req-limit", "3")
    try:
        code, answer = running.post("/translate", {"q": "alpha", "source": "en",
                                                   "target": "es", "api_key": "wrong"})
        assert code == 403 and answer["error"] == "Invalid API key"
        ok = {"q": "alpha", "source": "en", "target": "es", "api_key": "secret"}
        assert [running.post("/translate", ok)[0] for _ in range(4)] == [200, 200, 200, 429]
        assert running.get("/frontend/settings")[1]["keyRequired"] is True
    finally:
        running.stop()


def test_sigterm_answers_every_request_in_flight_and_exits_0(toy_model):
    running = Server(toy_model)
    with ThreadPoolExecutor(16) as pool:
        flying = [pool.submit(running.post, "/translate",
                              {"q": SENTENCES, "source": "en", "target": "es"})
                  for _ in range(16)]
        time.sleep(0.3)
        assert running.stop() == 0  # a stop asked for is a clean exit
        answers = [f.result() for f in flying]
    assert all(code == 200 and len(answer["translatedText"]) == 12 for code, answer in answers)
    assert "stopped by SIGTERM" in running.log.read_text()


def test_a_lone_surrogate_escape_is_a_400_not_a_500(server, reference):
    for body in (b'{"q": "\\ud800", "source": "en", "target": "es"}',
                 b'{"q": ["alpha", "x\\udfff"], "source": "en", "target": "es"}'):
        code, answer = server.request("POST", "/translate", body)
        assert code == 400 and "surrogate" in answer["error"]
    code, answer = server.request("POST", "/v1/translate",
                                  b'{"sentences": ["\\ud83d"], "source": "en", "target": "es"}')
    assert code == 400 and "surrogate" in answer["error"]
    code, answer = server.post("/translate", {"q": SENTENCES[0], "source": "en", "target": "es"})
    assert code == 200 and answer["translatedText"] == reference[SENTENCES[0]]


def test_the_page_in_a_real_browser(server, reference, tmp_path):
    chromedriver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not shutil.which("chromium") or not shutil.os.path.exists(chromedriver):
        pytest.skip("Debian's chromium and chromium-driver are not installed "
                    "(apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=DriverService(chromedriver), options=options)
    try:
        browser.get(server.url + "/")
        WebDriverWait(browser, 30).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, "#pair option"))
        browser.find_element(By.ID, "source-text").send_keys(SENTENCES[0])
        browser.find_element(By.ID, "translate").click()
        WebDriverWait(browser, 60).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, "#heatmap td"))
        assert browser.find_element(By.ID, "translation").text == reference[SENTENCES[0]]
        # a translation into a language written right to left is laid out right to left
        direction = ("const e = document.getElementById(arguments[0]); e.textContent = "
                     "arguments[1]; return getComputedStyle(e).direction")
        assert browser.execute_script(direction, "translation", "שלום עולם") == "rtl"
        assert browser.execute_script(direction, "translation", "hola") == "ltr"
        cells = browser.find_elements(By.CSS_SELECTOR, "#heatmap td")
        rows = browser.find_elements(By.CSS_SELECTOR, "#heatmap tbody tr")
        heads = browser.find_elements(By.CSS_SELECTOR, "#head option")
        assert len(heads) == 5 and heads[0].text == "mean of heads"
        assert len(cells) % len(rows) == 0 and len(rows) >= 2
        weight = float(cells[0].get_attribute("data-weight"))
        assert 0 <= weight <= 1 and ":" in cells[0].get_attribute("title")
        # a whole file, as LibreTranslate's page translates one: uploaded, then downloaded
        assert ".pptx" in browser.find_element(By.ID, "file").get_attribute("accept")
        notes = tmp_path / "notes.txt"
        notes.write_text(f"{SENTENCES[1]}\n\n{SENTENCES[2]}\n", encoding="utf-8")
        browser.find_element(By.ID, "file").send_keys(str(notes))
        browser.find_element(By.ID, "translate-file").click()
        WebDriverWait(browser, 60).until(
            lambda b: b.find_element(By.ID, "download").is_displayed())
        link = browser.find_element(By.ID, "download")
        assert link.get_attribute("download") == "notes.es.txt"
        got = httpx.get(link.get_attribute("href")).text
        assert got == f"{reference[SENTENCES[1]]}\n\n{reference[SENTENCES[2]]}\n"
        scan = tmp_path / "scan.pdf"
        scan.write_bytes(b"%PDF-1.4")
        browser.find_element(By.ID, "file").send_keys(str(scan))
        browser.find_element(By.ID, "translate-file").click()
        WebDriverWait(browser, 60).until(
            lambda b: b.find_element(By.ID, "file-error").text)
        assert "not a PDF file" in browser.find_element(By.ID, "file-error").text
        assert not browser.find_element(By.ID, "download").is_displayed()
    finally:
        browser.quit()


def test_a_paragraph_gets_the_same_translation_from_the_command_line_and_the_server(
        server, toy_model, tmp_path):
    """`aiayn translate --split-sentences` segments a line as the server segments a text
    (sentencex), so a paragraph of several sentences comes back the same from both."""
    import subprocess
    import sys
    paragraph = ". ".join(SENTENCES[:3]) + "."
    status, answer = server.post("/translate", {"q": paragraph, "source": "en", "target": "es"})
    assert status == 200
    done = subprocess.run([sys.executable, "-m", "aiayn", "translate", "--checkpoint",
                           str(toy_model), "--split-sentences"], input=paragraph + "\n",
                          capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [answer["translatedText"]]
    whole = subprocess.run([sys.executable, "-m", "aiayn", "translate", "--checkpoint",
                            str(toy_model)], input=paragraph + "\n", capture_output=True,
                           text=True, check=True)
    assert len(whole.stdout.splitlines()) == 1  # (by default the line is one segment)
