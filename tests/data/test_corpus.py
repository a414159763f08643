import numpy as np
import pytest

from aiayn.config import ModelConfig
from aiayn.data.corpus import ParallelCorpus, token_batches
from aiayn.errors import UserError


@pytest.mark.parametrize("max_tokens", [40, 100, 1000])
def test_batches_stay_within_max_tokens_and_cover_every_sentence_once(max_tokens):
    sizes = np.random.default_rng(0).integers(1, 40, size=5000)
    for epoch in range(2):
        batches = token_batches(sizes, max_tokens, seed=3, epoch=epoch)
        for batch in batches:
            assert len(batch) * sizes[batch].max() <= max_tokens
        seen = np.concatenate(batches)
        assert np.array_equal(np.sort(seen), np.arange(5000))


def test_batch_order_depends_only_on_seed_and_epoch():
    sizes = np.random.default_rng(0).integers(1, 40, size=500)
    a = token_batches(sizes, 200, seed=1, epoch=0)
    b = token_batches(sizes, 200, seed=1, epoch=0)
    c = token_batches(sizes, 200, seed=1, epoch=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(len(x) == len(y) and np.array_equal(x, y) for x, y in zip(a, c))


def test_batches_group_similar_lengths():
    sizes = np.random.default_rng(0).integers(1, 100, size=2000)
    batches = token_batches(sizes, 800, seed=0, epoch=0)
    padded = sum(len(b) * sizes[b].max() for b in batches)
    assert sizes.sum() / padded > 0.9  # little padding


def test_a_sentence_longer_than_max_tokens_is_a_clear_error():
    with pytest.raises(UserError, match=r"--max-tokens \(10\) is smaller than the longest"):
        token_batches(np.array([5, 11]), 10, seed=0, epoch=0)


def test_collate_adds_bos_and_eos_and_pads(toy_data):
    corpus = ParallelCorpus(toy_data, "train")
    batch = corpus.collate(np.array([0, 1]), ModelConfig.preset("tiny", vocab_size=100))
    for row in range(2):
        src, tgt = corpus.ids("src", row).tolist(), corpus.ids("tgt", row).tolist()
        assert batch.src[row, :len(src) + 1].tolist() == src + [3]
        assert batch.tgt_in[row, :len(tgt) + 1].tolist() == [2] + tgt
        assert batch.tgt_out[row, :len(tgt) + 1].tolist() == tgt + [3]
        assert (batch.tgt_out[row, len(tgt) + 1:] == 0).all()


def test_collate_uses_the_model_s_special_ids(toy_data):
    """A Marian model: EOS 0, pad 99, and the decoder starts from the pad id."""
    cfg = ModelConfig.preset("tiny", vocab_size=100, eos_id=0, unk_id=1, pad_id=99, bos_id=None,
                             decoder_start="pad")
    corpus = ParallelCorpus(toy_data, "train")
    batch = corpus.collate(np.array([0, 1]), cfg)
    src, tgt = corpus.ids("src", 0).tolist(), corpus.ids("tgt", 0).tolist()
    assert batch.src[0, :len(src) + 1].tolist() == src + [0]
    assert batch.tgt_in[0, :len(tgt) + 1].tolist() == [99] + tgt
    assert batch.tgt_out[0, :len(tgt) + 1].tolist() == tgt + [0]
    assert batch.target_tokens == sum(len(corpus.ids("tgt", i)) + 1 for i in (0, 1))


def test_collate_of_scattered_sentences_matches_one_slice_a_sentence(toy_data):
    """The batch gathered in one pass equals the batch laid out sentence by sentence, for
    indices in any order and repeated (a batch's rows are sorted by length, not by index)."""
    corpus = ParallelCorpus(toy_data, "train")
    cfg = ModelConfig.preset("tiny", vocab_size=100)
    indices = np.random.default_rng(0).permutation(len(corpus))[:7]
    indices = np.concatenate([indices, indices[:2]])
    batch = corpus.collate(indices, cfg)
    rows = {name: [] for name in ("src", "tgt_in", "tgt_out")}
    for i in indices:
        src, tgt = corpus.ids("src", i).tolist(), corpus.ids("tgt", i).tolist()
        rows["src"].append(src + [cfg.eos_id])
        rows["tgt_in"].append([cfg.bos_id] + tgt)
        rows["tgt_out"].append(tgt + [cfg.eos_id])
    for name, expected in rows.items():
        width = max(map(len, expected))
        padded = [r + [cfg.pad_id] * (width - len(r)) for r in expected]
        assert getattr(batch, name).tolist() == padded, name
