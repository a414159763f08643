"""Decoding options are declared once: the command line's flags and the server's defaults
come from ``DecodeOptions``, and the searches' defaults are the paper's (§6.1)."""

import dataclasses
import inspect

import pytest

from aiayn.cli import build_parser
from aiayn.decode.options import DecodeOptions
from aiayn.decode.search import beam_search, greedy_search
from aiayn.errors import UserError


def parsed(*argv: str):
    return build_parser().parse_args(list(argv))


def test_translate_has_a_flag_for_every_option_with_its_default():
    args = parsed("translate", "--checkpoint", "x")
    for field in dataclasses.fields(DecodeOptions):
        assert getattr(args, field.name) == field.default, field.name
    assert DecodeOptions.from_flags(args) == DecodeOptions()


def test_flags_reach_the_options():
    args = parsed("translate", "--checkpoint", "x", "--beam", "6", "--nbest", "2",
                  "--lenpen-form", "hf", "--max-len-b", "10")
    assert DecodeOptions.from_flags(args) == DecodeOptions(beam=6, nbest=2, lenpen_form="hf",
                                                           max_len_b=10)
    score = parsed("score", "--checkpoint", "x", "--src", "a", "--tgt", "b", "--lenpen", "1")
    assert DecodeOptions.from_flags(score) == DecodeOptions(lenpen=1.0)


def test_sampling_flags_without_sample_are_refused():
    with pytest.raises(UserError, match="--top-k only apply to sampling"):
        DecodeOptions.from_flags(parsed("translate", "--checkpoint", "x", "--top-k", "5"))
    sampled = parsed("translate", "--checkpoint", "x", "--sample", "--top-k", "5")
    assert DecodeOptions.from_flags(sampled) == DecodeOptions(sample=True, top_k=5)


def test_the_server_and_the_searches_default_to_the_same_options():
    from aiayn.serve.app import Settings
    serve = parsed("serve", "--checkpoint", "x")
    assert serve.beam == Settings().beam == DecodeOptions().beam == 4
    beam = inspect.signature(beam_search).parameters
    assert (beam["beam"].default, beam["lenpen"].default) == (DecodeOptions().beam,
                                                              DecodeOptions().lenpen)
    for search in (beam_search, greedy_search):
        p = inspect.signature(search).parameters
        assert (p["max_len_a"].default, p["max_len_b"].default) == (1.0, 50)  # §6.1: +50
