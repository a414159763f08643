import pytest
import torch

from aiayn.model.dropout import Dropout, dropout, dropout_add


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
