"""Glossaries: terms found as whole words, forced into translations by constrained beam search,
the same whatever the batch; bad glossary files are one clear line."""

import pytest

from aiayn.decode.constraints import Progress, constrained_beam_search
from aiayn.errors import UserError
from aiayn.glossary import Glossary
from tests.conftest import toy_pairs


def contains(tokens: list[int], term: list[int]) -> bool:
    return any(tokens[i:i + len(term)] == term for i in range(len(tokens) - len(term) + 1))


def test_progress_through_multi_token_terms():
    state = Progress.start([[5, 6, 7], [9]])
    assert state.next_tokens() == {5, 9} and state.tokens_met == 0
    state = state.advance(5).advance(6)
    assert state.next_tokens() == {7} and state.tokens_met == 2 and not state.done
    state = state.advance(8)  # a term left half-written starts over
    assert state.tokens_met == 0 and state.next_tokens() == {5, 9}
    state = state.advance(5).advance(5)  # ...and a token may begin it again
    assert state.tokens_met == 1
    state = state.advance(6).advance(7).advance(9)
    assert state.done and state.tokens_met == 4 and state.next_tokens() == set()


def test_glossary_terms_are_whole_words_case_ignored_longest_first():
    g = Glossary.from_pairs([("New York", "Nueva York"), ("york", "Yorkshire"),
                             ("art", "arte")])
    assert g.found("I love new york and ART, not party.") == ["Nueva York", "arte"]
    assert g.found("York at last, york again") == ["Yorkshire", "Yorkshire"]
    assert g.found("nothing here") == []


@pytest.mark.parametrize("text,message", [
    ("alpha beta\n", "line 1 has no TAB"),
    ("# comment\n\nalpha\t\n", "line 3 needs one source term"),
    ("# only a comment\n\n", "no terms"),
])
def test_bad_glossary_files_are_one_line(tmp_path, text, message):
    path = tmp_path / "terms.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        Glossary.read(path)
    with pytest.raises(UserError, match="no such file"):
        Glossary.read(tmp_path / "missing.tsv")


def test_terms_are_forced_and_results_do_not_depend_on_the_batch(toy_model):
    from aiayn.translate import load
    translator = load(toy_model, compile=False)
    tok = translator.tokenizer
    sources = [s for s, _ in toy_pairs(6, seed=21)]
    ids = [translator.codec.encode(s).ids for s in sources]
    terms = [[tok.encode_target("ZETA")], [tok.encode_target("OMEGA ALPHA")], [],
             [tok.encode_target("MU"), tok.encode_target("NU")], [tok.encode_target("PSI")],
             [tok.encode_target("KAPPA")]]
    together = translator.translate_ids(ids, constraints=terms)
    for i in range(len(ids)):
        alone = translator.translate_ids([ids[i]], constraints=[terms[i]])
        assert alone[0][0].tokens == together[i][0].tokens
        for term in terms[i]:
            assert contains(together[i][0].tokens, term), (sources[i], term)
    plain = translator.translate_ids([ids[2]])  # no term: plain beam search
    assert plain[0][0].tokens == together[2][0].tokens


def test_a_term_that_cannot_fit_is_dropped_with_a_warning(toy_model):
    from aiayn.decode.options import DecodeOptions
    from aiayn.translate import load
    warnings = []
    translator = load(toy_model, compile=False)
    translator.codec.warn = warnings.append
    source = "alpha beta"
    long_term = " ".join(["OMEGA"] * 12)
    out = translator.translate([source], DecodeOptions(max_len_a=0, max_len_b=8),
                               glossary=Glossary.from_pairs([("alpha", long_term),
                                                             ("beta", "ZETA")]))
    assert "ZETA" in out[0]
    assert len(warnings) == 1 and "OMEGA OMEGA" in warnings[0] and "dropped" in warnings[0]


def test_search_without_any_term_is_beam_search(toy_model):
    from aiayn.decode.search import beam_search
    from aiayn.translate import load
    translator = load(toy_model, compile=False)
    src = translator._pad([translator.codec.encode(s).ids for s, _ in toy_pairs(3, seed=8)])
    plain = beam_search(translator.model, src, beam=4)
    forced = constrained_beam_search(translator.model, src, [[], [], []], beam=4)
    assert [h[0].tokens for h in plain] == [h[0].tokens for h in forced]


def test_glossary_on_the_command_line(toy_model, tmp_path, capsys):
    from aiayn.cli import main
    from tests.test_cli import fails
    sources = [s for s, _ in toy_pairs(4, seed=30)]
    (tmp_path / "in").write_text("".join(s + "\n" for s in sources))
    (tmp_path / "ref").write_text("".join(" ".join(reversed(s.upper().split())) + "\n"
                                          for s in sources))
    word = sources[0].split()[0]
    (tmp_path / "terms.tsv").write_text(f"# product names\n\n{word}\tPSI PSI\n")
    assert main(["translate", "--checkpoint", str(toy_model), "--no-compile", "--glossary",
                 str(tmp_path / "terms.tsv"), "-i", str(tmp_path / "in"),
                 "-o", str(tmp_path / "out")]) == 0
    lines = (tmp_path / "out").read_text().splitlines()
    assert "PSI PSI" in lines[0]
    assert all(("PSI PSI" in line) == (word in s.split()) for s, line in zip(sources, lines))
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", str(toy_model), "--no-compile", "--glossary",
                 str(tmp_path / "terms.tsv"), "--src", str(tmp_path / "in"),
                 "--ref", str(tmp_path / "ref")]) == 0
    assert "glossary terms kept = 100.0%" in capsys.readouterr().out
    (tmp_path / "bad.tsv").write_text("alpha PSI\n")
    fails(capsys, ["translate", "--checkpoint", str(toy_model), "--glossary",
                   str(tmp_path / "bad.tsv"), "-i", str(tmp_path / "in")],
          "bad.tsv: line 1 has no TAB")
    assert not (tmp_path / "never").exists()
