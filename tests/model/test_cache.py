import pytest
import torch

from aiayn import LanguageModel, ModelConfig, Transformer
from tests.conftest import VOCAB, assert_float32_close, random_tokens


@pytest.mark.parametrize("norm", ["post", "pre", "sandwich"])
def test_cached_decoding_equals_full_forward(norm):
    cfg = ModelConfig.preset("tiny", vocab_size=VOCAB, norm=norm)
    model = Transformer(cfg).eval()
    src, tgt = random_tokens(3, 7, lengths=[7, 5, 3]), random_tokens(3, 6)
    full = model(src, tgt)
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        cache = model.init_cache(memory, src_mask, max_len=10)
        steps = [model.decode_step(tgt[:, :2], cache)]  # a two-token prefix, then one at a time
        steps += [model.decode_step(tgt[:, t:t + 1], cache) for t in range(2, 6)]
    assert_float32_close(torch.cat(steps, 1), full)
    assert cache.length == 6


def test_language_model_cached_decoding_equals_full_forward(tiny_cfg):
    model = LanguageModel(tiny_cfg).eval()
    tokens = random_tokens(2, 7)
    full = model(tokens)
    with torch.no_grad():
        cache = model.init_cache(2, 16)
        steps = [model.decode_step(tokens[:, :3], cache)]
        steps += [model.decode_step(tokens[:, t:t + 1], cache) for t in range(3, 7)]
    assert_float32_close(torch.cat(steps, 1), full)


def test_cache_reorder_moves_self_attention_state_with_the_beam(tiny_cfg):
    model = Transformer(tiny_cfg).eval()
    src = random_tokens(1, 5)
    tgt = random_tokens(3, 4)  # three beams of one sentence
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        cache = model.init_cache(memory, src_mask, max_len=8, beam=3)
        assert cache.layers[0].cross_k.size(0) == 1  # the memory is kept once, not per beam
        model.decode_step(tgt[:, :3], cache)
        cross_before = cache.layers[0].cross_k
        order = torch.tensor([2, 2, 0])
        cache.reorder(order)
        assert cache.layers[0].cross_k is cross_before  # same source: cross K/V untouched
        step = model.decode_step(tgt[order, 3:4], cache)
    assert_float32_close(step, model(src.repeat(3, 1), tgt[order])[:, 3:4])


def test_cache_with_beams_drops_finished_sentences(tiny_cfg):
    model = Transformer(tiny_cfg).eval()
    src = random_tokens(3, 6, lengths=[6, 4, 2])
    tgt = random_tokens(6, 4)  # two beams for each of three sentences
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        cache = model.init_cache(memory, src_mask, max_len=8, beam=2)
        model.decode_step(tgt[:, :3], cache)
        keep = torch.tensor([5, 4, 1, 1])  # sentence 1 is done; beams of 2 and 0 swap rows
        cache.reorder(keep)
        step = model.decode_step(tgt[keep, 3:4], cache)
    rows = torch.tensor([2, 2, 0, 0])
    assert_float32_close(step, model(src[rows], tgt[keep])[:, 3:4])


def test_cache_expands_one_row_per_sentence_to_its_beams(tiny_cfg):
    model = Transformer(tiny_cfg).eval()
    src = random_tokens(2, 5, lengths=[5, 3])
    tgt = random_tokens(2, 4)
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        cache = model.init_cache(memory, src_mask, max_len=8)  # the first step: one row each
        model.decode_step(tgt[:, :1], cache)
        rows = torch.tensor([0, 0, 0, 1, 1, 1])  # three beams per sentence from here on
        cache.reorder(rows, group=3)
        assert cache.group == 3 and cache.layers[0].cross_k.size(0) == 2  # memory kept once
        step = model.decode_step(tgt[rows, 1:2], cache)
    assert_float32_close(step, model(src[rows], tgt[rows, :2])[:, 1:2])


def test_gather_pending_moves_every_layer_at_once(tiny_cfg):
    model = Transformer(tiny_cfg).eval()
    src, tgt = random_tokens(2, 5), random_tokens(2, 3)
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        cache = model.init_cache(memory, src_mask, max_len=8)
        model.decode_step(tgt, cache)
        before = [layer.self_v.clone() for layer in cache.layers]
        cache.reorder(torch.tensor([1])).gather_pending()
    assert cache.ancestry is None
    for layer, old in zip(cache.layers, before):
        assert layer.self_v.size(0) == 1
        assert torch.equal(layer.self_v[:, :, :3], old[1:, :, :3])


@pytest.mark.parametrize("reorders", [[[2, 0]], [[2, 2, 0], [1, 2]]])  # the second: [2, 0]
def test_cache_reorder_drops_finished_rows(tiny_cfg, reorders):
    model = Transformer(tiny_cfg).eval()
    src, tgt = random_tokens(3, 5, lengths=[5, 4, 2]), random_tokens(3, 4)
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        cache = model.init_cache(memory, src_mask, max_len=8)
        model.decode_step(tgt[:, :3], cache)
        before = cache.layers[0].self_k.clone()
        for order in reorders:  # several reorders before a step compose
            cache.reorder(torch.tensor(order))
        keep = torch.tensor([2, 0])
        assert torch.equal(cache.ancestry[:, :3], keep[:, None].expand(2, 3))
        step = model.decode_step(tgt[keep, 3:4], cache)
        # the written positions never move; each row's history is read where it lies
        assert torch.equal(cache.layers[0].self_k[:, :, :3], before[:, :, :3])
        cache.gather_pending()
        assert torch.equal(cache.layers[0].self_k[:, :, :3], before[keep, :, :3])
    assert_float32_close(step, model(src[keep], tgt[keep])[:, 3:4])


def test_beam_histories_read_through_the_ancestry_equal_a_gathered_cache(tiny_cfg):
    """Rows that grow, swap, repeat and leave over several steps: every step equals the
    uncached model on the rows' whole histories."""
    torch.manual_seed(3)
    model = Transformer(tiny_cfg).eval()
    src = random_tokens(2, 5, lengths=[5, 3])
    tgt = random_tokens(2, 6)
    tokens = tgt[:, :1]
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        cache = model.init_cache(memory, src_mask, max_len=8)
        model.decode_step(tokens, cache)
        orders = [torch.tensor([0, 0, 0, 1, 1, 1]), torch.tensor([2, 0, 0, 4, 3, 3]),
                  torch.tensor([1, 1, 2, 5, 4, 3]), torch.tensor([0, 0, 4, 4])]
        for step, order in enumerate(orders, start=1):
            cache.reorder(order, group=len(order) // 2)
            tokens = torch.cat([tokens[order], tgt[cache.src_rows, step:step + 1]], dim=1)
            got = model.decode_step(tokens[:, -1:], cache)
            want = model(src[cache.src_rows], tokens)[:, -1:]
            assert_float32_close(got, want)


def test_more_rows_than_the_cache_holds_need_a_reorder(tiny_cfg):
    cache = Transformer(tiny_cfg).eval().init_cache(torch.zeros(2, 3, tiny_cfg.d_model),
                                                     torch.ones(2, 1, 1, 3, dtype=torch.bool),
                                                     max_len=4)
    k = torch.zeros(3, tiny_cfg.n_heads, 1, tiny_cfg.head_dim)
    with pytest.raises(ValueError, match="3 rows of keys and values for a cache of 2 rows"):
        cache.append(0, k, k)
    cache.reorder(torch.tensor([0, 0, 1]))  # a reorder may grow the rows: the slots follow
    keys, _ = cache.append(0, k, k)
    assert keys.shape == (3, tiny_cfg.n_heads, 1, tiny_cfg.head_dim)
