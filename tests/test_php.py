"""PHP language files translated in place: only the string literals that are values change, in
their own quotes; keys, numbers, comments, code and layout stay byte for byte. Read back by PHP
itself where it is installed."""

import json
import shutil
import subprocess

import pytest

from aiayn.documents import translate_document
from tests.test_documents import run
from tests.test_resources import SENTENCES, Dictionary, refused

LARAVEL = r"""<?php

// Authentication lines
return [
    'failed' => 'These credentials do not match.',
    'throttle' => 'Too many attempts. Try again in :seconds seconds.',
    'count' => 5,
    'nested' => [
        'hello' => "Hello {$user->name}, you have $count messages",
        'quote' => 'It\'s a path: C:\dir\\',
    ],
    'days' => array('Monday', "Tuesday\t"),
    'joined' => 'Sign' . ' in',
    'note' => <<<EOT
Left as written
EOT,
];
"""

WORDS = {"These credentials do not match.": "Te dane nie pasują.",
         "Too many attempts. Try again in :seconds seconds.":
             "Zbyt wiele prób. Spróbuj za :seconds sekund.",
         "Hello {__a0}, you have {__a1} messages": "Cześć {__a0}, masz {__a1} wiadomości",
         "It's a path: C:\\dir\\": "To ścieżka: C:\\dir\\ (l'été)",
         "Monday": "Poniedziałek", "Tuesday": "Wtorek $5"}  # (edge whitespace kept)


def test_php_values_are_replaced_in_place_and_the_rest_stays(tmp_path):
    class Warned(Dictionary):
        def __init__(self, words):
            super().__init__(words)
            self.codec = type("Codec", (), {"warn": lambda _, message: warnings.append(message)})()
    warnings: list[str] = []
    out = translate_document(Warned(WORDS), LARAVEL.encode(), ".php").decode()
    assert out == LARAVEL.replace(
        "'These credentials do not match.'", "'Te dane nie pasują.'").replace(
        "'Too many attempts. Try again in :seconds seconds.'",
        "'Zbyt wiele prób. Spróbuj za :seconds sekund.'").replace(
        '"Hello {$user->name}, you have $count messages"',
        '"Cześć {$user->name}, masz $count wiadomości"').replace(
        r"'It\'s a path: C:\dir\\'", r"'To ścieżka: C:\dir\ (l\'été)'").replace(
        "'Monday'", "'Poniedziałek'").replace('"Tuesday\\t"', '"Wtorek \\$5\\t"')
    assert warnings == ["1 heredoc or nowdoc string(s) left as written"]
    if shutil.which("php"):  # PHP reads the translation as it read the source
        (tmp_path / "pl.php").write_text(out, encoding="utf-8")
        read = json.loads(subprocess.run(
            ["php", "-r", "$user = (object) ['name' => 'Ann']; $count = 2; "
                          "echo json_encode(include $argv[1]);", str(tmp_path / "pl.php")],
            capture_output=True, text=True, check=True).stdout)
        assert read["nested"] == {"hello": "Cześć Ann, masz 2 wiadomości",
                                  "quote": "To ścieżka: C:\\dir\\ (l'été)"}
        assert (read["count"], read["days"], read["joined"]) == (5, ["Poniedziałek", "Wtorek $5\t"],
                                                                 "Sign in")


def test_assignments_defines_and_javascript_line_breaks():
    words = {"Server Error: $msg": "Błąd serwera: $msg", "Saved.": "Zapisano.",
             "Restore it?": "Przywrócić?", "Hello there": "Dzień dobry", "Lost {__a0}": "Brak",
             "Enter: open it.": "Enter: otwórz.", "Delete: remove it.": "Delete: usuń."}
    php = ("<?php\n$messages = [];\n$messages['servererror']  = 'Server Error: $msg';\n"
           "$messages['restore'] = 'Saved.\\n\\nRestore it?';\n"
           "define('GREETING', 'Hello there');\n$x = \"Lost {$file}\";\n"
           '$help = "Enter: open it.\nDelete: remove it.";\n')
    out = translate_document(Dictionary(words), php.encode(), ".php").decode()
    assert out == ("<?php\n$messages = [];\n$messages['servererror']  = 'Błąd serwera: $msg';\n"
                   "$messages['restore'] = 'Zapisano.\\n\\nPrzywrócić?';\n"
                   "define('GREETING', 'Dzień dobry');\n"
                   '$x = "Brak {$file}";\n'  # an interpolation lost comes back at the end
                   '$help = "Enter: otwórz.\nDelete: usuń.";\n')  # over lines, as it was


def test_php_file_through_the_command_line(toy_model, tmp_path):
    import aiayn
    translator = aiayn.load(toy_model)
    path = tmp_path / "en.php"
    path.write_text(f"<?php\n# {SENTENCES[5]}\nreturn ['a' => '{SENTENCES[0]}', 'n' => 3];\n")
    out = run(toy_model, path, tmp_path / "es.php").decode()
    t = translator.translate([SENTENCES[0]])[0]
    assert out == f"<?php\n# {SENTENCES[5]}\nreturn ['a' => '{t}', 'n' => 3];\n"


@pytest.mark.parametrize("data, message", [
    (b"return ['a' => 'b'];\n", r"not a PHP file: it does not begin with <\?php"),
    (b"<?php\nreturn ['a' => 'b];\n", "not a PHP file: line 2: "),
    (b"<?php\n$a = 'caf\xe9';\n", "not a PHP file: not UTF-8"),
    (b'<?php\n$a = array("x" => "Open', "not a PHP file: line 2: a double-quoted string is "
                                       "never closed"),
])
def test_bad_php_files_are_one_line_and_write_nothing(toy_model, tmp_path, data, message):
    refused(toy_model, tmp_path, data, ".php", message)
