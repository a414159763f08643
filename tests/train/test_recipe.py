import math
import re

import pytest
import torch

from aiayn.config import ConfigError
from aiayn.train.recipe import (
    LOSS_CHUNKS,
    TrainConfig,
    _SmoothedNLL,
    cpu_loss_chunk,
    label_smoothed_nll,
    loss_rows,
    noam_lr,
)


def test_label_smoothed_loss_equals_hand_computed_value():
    logits = torch.tensor([[2.0, 0.5, -1.0, 0.0], [0.1, 0.2, 0.3, 0.4], [9.0, 9.0, 9.0, 9.0]])
    target = torch.tensor([1, 3, 0])  # the last row is padding (pad_id 0)
    gold = target.tolist()
    eps, vocab = 0.1, 4
    expected_loss = expected_nll = 0.0
    for row in range(2):
        logp = [x - math.log(sum(math.exp(y) for y in logits[row].tolist()))
                for x in logits[row].tolist()]
        q = [eps / vocab + (1 - eps) * (v == gold[row]) for v in range(vocab)]
        expected_loss += -sum(qv * lp for qv, lp in zip(q, logp))
        expected_nll += -logp[gold[row]]
    loss, nll = label_smoothed_nll(logits, target, eps, pad_id=0)
    assert loss.item() == pytest.approx(expected_loss, rel=1e-6)
    assert nll.item() == pytest.approx(expected_nll, rel=1e-6)


def test_label_smoothing_zero_is_cross_entropy():
    logits, target = torch.randn(6, 10), torch.tensor([1, 2, 3, 4, 0, 0])
    loss, nll = label_smoothed_nll(logits, target, 0.0, pad_id=0)
    expected = torch.nn.functional.cross_entropy(logits, target, ignore_index=0, reduction="sum")
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(nll, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_loss_and_its_gradient_equal_pytorch_cross_entropy(monkeypatch, dtype, eps):
    monkeypatch.setattr("aiayn.train.recipe.LOSS_CHUNK", 3 * 50)  # blocks of 3 rows, and a rest
    monkeypatch.setattr("aiayn.train.recipe.cpu_loss_chunk", lambda vocab, dtype: 3 * 50)
    torch.manual_seed(0)
    logits = (3 * torch.randn(20, 50)).to(dtype).requires_grad_()
    target = torch.randint(1, 50, (20,))
    target[[4, 11, 19]] = 0  # padding
    loss, nll = label_smoothed_nll(logits, target, eps, pad_id=0)
    (2.0 * loss + 0.5 * nll).backward()  # both outputs take part in the gradient
    ours = logits.grad
    logits.grad = None
    ref = logits.float()
    expected_loss = torch.nn.functional.cross_entropy(ref, target, ignore_index=0,
                                                      label_smoothing=eps, reduction="sum")
    expected_nll = torch.nn.functional.cross_entropy(ref, target, ignore_index=0,
                                                     reduction="sum")
    (2.0 * expected_loss + 0.5 * expected_nll).backward()
    torch.testing.assert_close(loss, expected_loss, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(nll, expected_nll, rtol=1e-5, atol=1e-4)
    assert ours.dtype == dtype and ours[[4, 11, 19]].abs().max() == 0
    torch.testing.assert_close(ours, logits.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_loss_block_changes_no_value(dtype):
    """Whatever block the CPU measures fastest, every row's loss and gradient are the same."""
    torch.manual_seed(0)
    logits, target = (3 * torch.randn(37, 400)).to(dtype), torch.randint(0, 400, (37,))
    seen = []
    for rows in (1, 5, 16, 37):
        x = logits.clone().requires_grad_()
        loss, nll = _SmoothedNLL.apply(x, target, 0.1, 0, rows)
        (loss + 0.5 * nll).backward()
        seen.append((loss, nll, x.grad))
    for loss, nll, grad in seen[1:]:
        assert torch.equal(loss, seen[0][0]) and torch.equal(nll, seen[0][1])
        assert torch.equal(grad, seen[0][2])


def test_the_loss_block_is_measured_once_without_torch_s_random_stream(monkeypatch):
    monkeypatch.setattr("aiayn.train.recipe.LOSS_MEASURE_ENTRIES", 1 << 18)
    cpu_loss_chunk.cache_clear()
    state = torch.get_rng_state()
    try:
        with torch.inference_mode():  # as validation asks
            chunk = cpu_loss_chunk(1000, torch.bfloat16)
        assert chunk in LOSS_CHUNKS
        assert torch.equal(torch.get_rng_state(), state)  # a run's dropout stays as it was
        assert loss_rows(torch.zeros(4000, 1000, dtype=torch.bfloat16)) == chunk // 1000
        assert cpu_loss_chunk.cache_info().misses == 1
    finally:
        cpu_loss_chunk.cache_clear()
    # logits within the smallest block are one block: nothing is measured
    assert loss_rows(torch.zeros(100, 1000)) == 100 and cpu_loss_chunk.cache_info().misses == 0


def test_schedule_matches_the_formula_at_known_steps():
    # lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)  (Eq. 3)
    assert noam_lr(1, 512, 4000) == pytest.approx(512 ** -0.5 * 4000 ** -1.5)
    assert noam_lr(4000, 512, 4000) == pytest.approx(6.9877e-4, rel=1e-4)  # the peak
    assert noam_lr(16000, 512, 4000) == pytest.approx(512 ** -0.5 / 16000 ** 0.5)
    assert noam_lr(2000, 512, 4000) == pytest.approx(noam_lr(4000, 512, 4000) / 2)
    assert noam_lr(100, 256, 50, scale=2.0) == pytest.approx(2 * 256 ** -0.5 * 100 ** -0.5)


def test_train_config_defaults_are_the_paper_recipe():
    cfg = TrainConfig()
    assert cfg.adam_betas == (0.9, 0.98) and cfg.adam_eps == 1e-9
    assert cfg.warmup == 4000 and cfg.label_smoothing == 0.1
    assert cfg.model_config(37000).dropout == 0.1


def test_unknown_training_key_names_the_nearest(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("max_tokns: 100\n")
    with pytest.raises(ConfigError, match="unknown training config key 'max_tokns'; did you "
                                          "mean 'max_tokens'"):
        TrainConfig.from_yaml(path)
    with pytest.raises(ConfigError,
                       match="unknown model config key 'n_head'; did you mean 'n_heads'"):
        TrainConfig(model={"n_head": 4})


@pytest.mark.parametrize("setting,why", [
    ("lr_scale: abc", "lr_scale ('abc') must be a finite number"),
    ("lr_scale: .nan", "lr_scale (nan) must be a finite number"),
    ("max_minutes: .inf", "max_minutes (inf) must be a finite number"),
    ("clip_norm: [1]", "clip_norm ([1]) must be a finite number"),
    ("adam_eps: -1", "adam_eps (-1) must be positive"),
    ("adam_betas: [a, b]", "adam_betas (['a', 'b']) must be two numbers"),
    ("adam_betas: 3", "adam_betas (3) must be two numbers"),
    ("model: abc", "model ('abc') must be a mapping"),
    ("init: 5", "init (5) must be a string"),
])
def test_a_setting_of_the_wrong_kind_names_itself(tmp_path, setting, why):
    path = tmp_path / "run.yaml"
    path.write_text(setting + "\n")
    with pytest.raises(ConfigError, match=re.escape(why)):
        TrainConfig.from_yaml(path)
