import pytest
import torch
import torch.nn.functional as F
from torch import nn

from aiayn.model.linear import linear
from aiayn.translate import quantize_int8


@pytest.fixture
def threads():
    """Run with a chosen thread count (the split path needs at least 2), restored after."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.mark.parametrize("t", [2, 4])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("rows", [(1,), (3, 1), (2, 5)])
def test_split_product_equals_f_linear(threads, t, bias, pack, rows):
    threads(t)
    layer = nn.Linear(24, 40, bias=bias)
    x = torch.randn(*rows, 24)
    with torch.inference_mode():
        got = linear(x, layer, pack=pack)
    assert "_aiayn_blocks" in layer.__dict__  # the split path ran
    torch.testing.assert_close(got, F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
    assert got.shape == (*rows, 40)


def test_packed_copy_follows_in_place_updates(threads):
    threads(2)
    layer = nn.Linear(8, 16, bias=False)
    x = torch.randn(1, 8)
    with torch.inference_mode():
        linear(x, layer, pack=True)
    with torch.no_grad():
        layer.weight.mul_(-2.0)  # an optimizer step, load_state_dict: in place
    with torch.inference_mode():
        got = linear(x, layer, pack=True)
    torch.testing.assert_close(got, F.linear(x, layer.weight), atol=1e-5, rtol=1e-5)


def test_outputs_split_into_the_most_even_blocks_up_to_the_thread_count(threads):
    threads(3)
    layer = nn.Linear(8, 16)  # 16 outputs do not split into 3 blocks: 2 blocks of 8
    x = torch.randn(2, 8)
    with torch.inference_mode():
        got = linear(x, layer)
    assert layer.__dict__["_aiayn_blocks"][1][0].shape == (2, 8, 8)
    torch.testing.assert_close(got, F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
    prime = nn.Linear(8, 17)  # no even split at all: the plain layer
    with torch.inference_mode():
        got = linear(x, prime)
    assert prime.__dict__["_aiayn_blocks"][1] is None
    torch.testing.assert_close(got, F.linear(x, prime.weight, prime.bias))


def test_many_rows_and_training_use_the_layer(threads):
    threads(2)
    wide = nn.Linear(8, 16)
    with torch.inference_mode():
        linear(torch.randn(1000, 8), wide)  # many rows: one product already uses every core
    assert "_aiayn_blocks" not in wide.__dict__
    x = torch.randn(2, 8, requires_grad=True)
    linear(x, wide).sum().backward()  # training: the plain layer, gradients flow
    assert wide.weight.grad is not None and x.grad is not None
    assert "_aiayn_blocks" not in wide.__dict__


def test_quantized_layer_is_called_as_is(threads):
    threads(2)
    model = quantize_int8(nn.Sequential(nn.Linear(8, 16)))
    x = torch.randn(1, 8)
    with torch.inference_mode():
        torch.testing.assert_close(linear(x, model[0]), model[0](x))
