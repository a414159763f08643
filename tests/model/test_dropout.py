import multiprocessing

import pytest
import torch

from aiayn.model import dropout as dropout_module
from aiayn.model.dropout import HALVES_FROM, Dropout, dropout, dropout_add, random_words


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout_zeroes_a_fraction_p_and_rescales_the_rest(p):
    x = torch.ones(1000, 1000)
    y = dropout(x, p)
    kept = y != 0
    assert abs(kept.float().mean().item() - (1 - p)) < 0.003
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - p)))
    assert abs(y.mean().item() - 1.0) < 0.01  # expectation preserved


def test_dropout_masks_follow_the_torch_seed_and_differ_between_calls():
    x = torch.randn(64, 64)
    torch.manual_seed(3)
    a, b = dropout(x, 0.2), dropout(x, 0.2)
    torch.manual_seed(3)
    assert torch.equal(dropout(x, 0.2), a) and not torch.equal(a, b)


def test_dropout_is_identity_in_eval_mode_and_at_zero():
    layer = Dropout(0.5).eval()
    x = torch.randn(10, 10)
    assert layer(x) is x and dropout(x, 0.0) is x


def test_dropout_gradient_uses_the_same_mask():
    x = torch.randn(50, 50, requires_grad=True)
    y = dropout(x, 0.3)
    y.sum().backward()
    torch.testing.assert_close(x.grad, (y != 0).float() / 0.7)


def test_bf16_dropout_keeps_its_dtype_and_the_float32_mask_of_the_same_seed():
    x = torch.randn(300, 300, requires_grad=True)
    xb = x.detach().bfloat16().requires_grad_()
    torch.manual_seed(5)
    y = dropout(x, 0.1)
    torch.manual_seed(5)
    yb = dropout(xb, 0.1)
    assert yb.dtype == torch.bfloat16 and torch.equal(yb != 0, y != 0)
    torch.testing.assert_close(yb.float(), y, atol=0, rtol=1e-2)  # bf16 rounding of x / 0.9
    yb.float().sum().backward()
    assert xb.grad.dtype == torch.bfloat16
    torch.testing.assert_close(xb.grad.float(), (y != 0).float() / 0.9, atol=0, rtol=1e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_add_is_x_plus_the_dropout_of_y_with_the_same_mask_and_gradients(dtype):
    x = torch.randn(40, 70, dtype=dtype, requires_grad=True)
    y = torch.randn(40, 70, dtype=dtype, requires_grad=True)
    grad = torch.randn(40, 70, dtype=dtype)
    torch.manual_seed(11)
    fused = dropout_add(x, y, 0.1)
    fused.backward(grad)
    fused_grads = x.grad, y.grad
    x.grad = y.grad = None
    torch.manual_seed(11)
    dropped = dropout(y, 0.1)
    (x + dropped).backward(grad)
    # one rounding (a fused multiply-add) where the sum of two passes rounds twice
    tolerance = {} if dtype == torch.float32 else {"atol": 1e-2, "rtol": 1e-2}
    torch.testing.assert_close(fused, x + dropped, **tolerance)
    assert torch.equal(fused_grads[0], grad)
    torch.testing.assert_close(fused_grads[1], y.grad, **tolerance)
    assert torch.equal(fused_grads[1] == 0, dropped == 0)
    assert 0.05 < (dropped == 0).float().mean() < 0.15


def test_dropout_add_is_the_plain_sum_in_eval_mode_and_at_zero():
    x, y = torch.randn(5, 6), torch.randn(5, 6)
    assert torch.equal(dropout_add(x, y, 0.3, training=False), x + y)
    assert torch.equal(dropout_add(x, y, 0.0), x + y)


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def test_large_masks_are_the_same_on_one_thread_as_on_two_and_follow_the_seed(threads):
    x = torch.randn(4 * HALVES_FROM + 10, 3)  # 3 x HALVES_FROM words and more: two halves
    masks = []
    for count in (1, 2, 2):
        threads(count)
        torch.manual_seed(7)
        masks.append(dropout(x, 0.1) != 0)
    assert torch.equal(masks[0], masks[1]) and torch.equal(masks[1], masks[2])
    assert not torch.equal(dropout(x, 0.1) != 0, masks[0])
    assert abs((~masks[0]).float().mean().item() - 0.1) < 0.003


@pytest.mark.parametrize("n", [HALVES_FROM - 1, 3 * HALVES_FROM + 1])
def test_random_words_set_every_bit_half_the_time_in_both_halves(threads, n):
    threads(2)
    torch.manual_seed(1)
    words = random_words(n)
    assert words.shape == (n,) and words.dtype == torch.int64
    for half in (words[:n // 2], words[n // 2:]):
        bits = (half[:, None] >> torch.arange(64)) & 1  # every bit position, the sign's too
        assert ((bits.float().mean(0) - 0.5).abs() < 0.02).all()
    assert not torch.equal(words[:n // 2][:100], words[n // 2:][:100])


def _draw_in_child(queue) -> None:
    words = random_words(2 * HALVES_FROM)
    # (a small slice: PyTorch's parallel loops do not run in a child forked after they ran)
    queue.put(int(words[-1000:].ne(0).sum()))


def test_a_forked_child_draws_large_masks_too(threads):
    threads(2)
    random_words(2 * HALVES_FROM)  # the parent's helper thread exists
    assert dropout_module._HELPER
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_draw_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0 and queue.get(timeout=5) > 990
