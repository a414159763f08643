import itertools
import math

import pytest
import torch

from aiayn import ModelConfig, Transformer
from aiayn.decode.search import beam_search, greedy_search, length_penalty
from aiayn.model import DecoderCache, LayerCache
from tests.conftest import random_tokens

PAD, UNK, BOS, EOS = 0, 1, 2, 3
A, B, C = 4, 5, 6


class TableModel:
    """A stand-in decoder whose next-token distribution is read from a table keyed by the prefix
    (tokens after BOS). It keeps the prefix in the cache, so beam reordering is exercised."""

    def __init__(self, table: dict[tuple, dict[int, float]], vocab: int = 7) -> None:
        self.cfg = ModelConfig.preset("tiny", vocab_size=vocab)
        self.table = table

    def encode(self, src):
        return torch.zeros(src.size(0), src.size(1), 1), (src != PAD)[:, None, None, :], []

    def init_cache(self, memory, src_mask, max_len, beam=1):
        buf = torch.zeros(memory.size(0) * beam, 1, max_len + 1, 1)
        rows = torch.arange(memory.size(0)).repeat_interleave(beam)
        return DecoderCache([LayerCache(buf, buf.clone())], src_mask=src_mask, src_rows=rows,
                            group=beam)

    def decode_step(self, tokens, cache):
        keys, _ = cache.append(0, tokens[:, None, :, None].float(),
                               tokens[:, None, :, None].float())  # (rows, 1, length, 1)
        cache.length += tokens.size(1)
        logits = torch.full((tokens.size(0), 1, self.cfg.vocab_size), float("-inf"))
        for row in range(tokens.size(0)):
            prefix = tuple(int(t) for t in keys[row, 0, 1:, 0])
            for token, p in self.table.get(prefix, {EOS: 1.0}).items():
                logits[row, 0, token] = math.log(p)
        return logits


def src(n_tokens: int = 3, batch: int = 1):
    return torch.full((batch, n_tokens), A)


def search(table, **kw):
    kw = {"lenpen": 0.0, "max_len_b": 10, "max_len_a": 0.0, **kw}
    return beam_search(TableModel(table), src(), **kw)[0]


def test_beam_keeps_the_best_prefixes_not_the_greedy_path():
    # greedy takes A (0.6) then must end badly; the beam keeps B (0.4), whose continuation wins
    table = {(): {A: 0.6, B: 0.4}, (A,): {A: 0.3, B: 0.3, C: 0.4}, (A, C): {EOS: 0.6, A: 0.4},
             (B,): {EOS: 0.95, C: 0.05}}
    assert greedy_search(TableModel(table), src(), max_len_a=0, max_len_b=10)[0].tokens == [A, C]
    best = search(table, beam=2)[0]
    assert best.tokens == [B]
    assert best.score == pytest.approx(math.log(0.4 * 0.95))


def test_beam_does_not_emit_eos_before_min_len():
    table = {(): {EOS: 0.9, A: 0.1}, (A,): {EOS: 0.9, B: 0.1}, (A, B): {EOS: 1.0}}
    assert search(table, beam=2, min_len=0)[0].tokens == []
    assert search(table, beam=2, min_len=1)[0].tokens == [A]
    assert search(table, beam=2, min_len=2)[0].tokens == [A, B]


def test_finished_hypotheses_do_not_starve_the_beam():
    # EOS is the best first token; taking 2k candidates keeps k = 2 live prefixes (A and B)
    # beside it, and B, which would have been cut with only k candidates, finishes second
    table = {(): {EOS: 0.5, A: 0.3, B: 0.2}, (A,): {EOS: 0.2, C: 0.8}, (B,): {EOS: 0.95, C: 0.05}}
    hyps = search(table, beam=2, nbest=2)
    assert [h.tokens for h in hyps] == [[], [B]]
    assert hyps[1].score == pytest.approx(math.log(0.2 * 0.95))


def test_length_penalty_can_prefer_the_longer_hypothesis():
    table = {(): {EOS: 0.52, A: 0.48}, (A,): {B: 0.95, EOS: 0.05}, (A, B): {EOS: 1.0}}
    assert [h.tokens for h in search(table, beam=3, nbest=2)] == [[], [A, B]]
    assert [h.tokens for h in search(table, beam=3, nbest=2, lenpen=2.0)] == [[A, B], []]


def test_search_stops_once_k_hypotheses_have_finished():
    calls = []

    class Counting(TableModel):
        def decode_step(self, tokens, cache):
            calls.append(tokens.size(0))
            return super().decode_step(tokens, cache)

    table = {(): {EOS: 0.4, A: 0.35, B: 0.25}, (A,): {EOS: 1.0}, (B,): {EOS: 0.6, C: 0.4}}
    hyps = beam_search(Counting(table), src(), beam=2, lenpen=0.0, max_len_a=0, max_len_b=50)
    assert hyps[0][0].tokens == []
    assert len(calls) == 2  # step 0 finishes [], step 1 finishes [A]: two done, stop


def test_length_limit_forces_eos():
    table = {(): {A: 1.0}, (A,): {A: 1.0}, (A, A): {A: 1.0}, (A, A, A): {A: 1.0}}
    hyp = beam_search(TableModel(table), src(2), beam=2, max_len_a=1.0, max_len_b=1)[0][0]
    assert hyp.tokens == [A, A]  # 2 source tokens + 1 = 3 tokens out, the last one EOS


def test_nbest_is_sorted_by_score():
    table = {(): {A: 0.5, B: 0.3, C: 0.2}, (A,): {EOS: 1.0}, (B,): {EOS: 1.0}, (C,): {EOS: 1.0}}
    hyps = search(table, beam=3, nbest=3)
    assert [h.tokens for h in hyps] == [[A], [B], [C]]
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


def test_length_penalty_forms():
    assert length_penalty(7, 0.6) == pytest.approx((12 / 6) ** 0.6)
    assert length_penalty(7, 0.6, "simple") == pytest.approx(7 ** 0.6)
    assert length_penalty(7, 0.0) == 1.0
    with pytest.raises(ValueError, match="length penalty form"):
        length_penalty(3, 0.6, "wu")


# ------------------------------------------------------------ real (random) tiny models


def tiny_model(vocab: int = 20, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    model = Transformer(ModelConfig.preset("tiny", vocab_size=vocab)).eval()
    with torch.no_grad():  # sharpen the distributions so that searches differ
        model.output_proj.weight.mul_(8)
    return model


def test_beam_size_one_equals_greedy():
    model = tiny_model()
    source = random_tokens(6, 7, vocab=20, lengths=[7, 6, 5, 4, 3, 2])
    greedy = greedy_search(model, source, max_len_b=10)
    beam = beam_search(model, source, beam=1, lenpen=0.6, max_len_b=10)
    for g, b in zip(greedy, beam):
        assert g.tokens == b[0].tokens
        assert g.score == pytest.approx(b[0].score * length_penalty(len(g.tokens) + 1, 0.6),
                                        abs=1e-4)


@pytest.mark.parametrize("lenpen", [0.0, 0.6, 1.5])
def test_wide_beam_finds_the_exhaustive_best_sequence(lenpen):
    vocab = 7  # specials + A, B, C
    model = tiny_model(vocab=vocab, seed=1)
    source = random_tokens(1, 4, vocab=vocab)
    max_out = 4  # max_len_a=0, max_len_b=4: at most 3 tokens then EOS
    best_score, best_tokens = -math.inf, None
    for length in range(0, max_out):
        for body in itertools.product([A, B, C], repeat=length):
            tgt_in = torch.tensor([[BOS, *body]])
            with torch.no_grad():
                lprobs = model(source, tgt_in).log_softmax(-1)[0]
            score = sum(lprobs[t, tok].item() for t, tok in enumerate([*body, EOS]))
            score /= length_penalty(length + 1, lenpen)
            if score > best_score:
                best_score, best_tokens = score, list(body)
    hyp = beam_search(model, source, beam=64, lenpen=lenpen, max_len_a=0, max_len_b=max_out)[0][0]
    assert hyp.tokens == best_tokens
    assert hyp.score == pytest.approx(best_score, abs=1e-4)


def test_a_sentence_decodes_the_same_alone_and_in_a_batch_of_32():
    model = tiny_model()
    torch.manual_seed(5)
    lengths = torch.randint(2, 15, (32,)).tolist()
    batch = random_tokens(32, 15, vocab=20, lengths=lengths)
    together = beam_search(model, batch, beam=4, nbest=2)
    for i in (0, 7, 31):
        alone = beam_search(model, batch[i:i + 1, :lengths[i]], beam=4, nbest=2)[0]
        for a, b in zip(alone, together[i]):
            assert a.tokens == b.tokens
            assert a.score == pytest.approx(b.score, abs=1e-5)
    greedy_together = greedy_search(model, batch)
    for i in (3, 12):
        alone = greedy_search(model, batch[i:i + 1, :lengths[i]])[0]
        assert alone.tokens == greedy_together[i].tokens
