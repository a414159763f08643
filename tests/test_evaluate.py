import pytest
import sacrebleu

from aiayn.evaluate import evaluate, score
from aiayn.translate import DecodeOptions


def test_evaluate_equals_sacrebleu_on_the_same_strings(tiny_checkpoint):
    sources = ["alpha beta", "gamma delta epsilon", "pi rho"]
    references = ["BETA ALPHA", "EPSILON DELTA GAMMA", "RHO PI"]
    result = evaluate(tiny_checkpoint, sources, references, DecodeOptions(beam=2))
    hyps = result["hypotheses"]
    assert result["bleu"] == sacrebleu.corpus_bleu(hyps, [references]).score
    assert result["chrf"] == sacrebleu.corpus_chrf(hyps, [references]).score
    assert result["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    longer = ["EPSILON DELTA GAMMA BETA ALPHA", "OMEGA PSI CHI PHI"]
    assert score(longer, longer)["bleu"] == pytest.approx(100.0)
    half = ["EPSILON DELTA GAMMA BETA ALPHA", "OMEGA PSI"]
    assert score(half, longer)["bleu"] == sacrebleu.corpus_bleu(half, [longer]).score < 100
