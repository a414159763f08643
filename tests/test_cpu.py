import os
import platform
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from aiayn import ModelConfig, Transformer
from aiayn.model import padding_mask, scaled_dot_product_attention
from aiayn.runtime import cpu
from aiayn.runtime.cpu import (
    SHORT_ROW,
    CpuAttention,
    CpuFeedForward,
    CpuLinear,
    Int8Linear,
    for_inference,
    onednn_available,
    onednn_bf16_available,
    top_k,
)
from tests.conftest import assert_float32_close, random_tokens


@pytest.fixture
def threads():
    """Run with a chosen thread count (the split path needs at least 2), restored after."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.fixture
def no_onednn(monkeypatch):
    """Products without oneDNN, as on a PyTorch built without it."""
    monkeypatch.setattr(torch.backends.mkldnn, "enabled", False)


@pytest.mark.parametrize("t", [2, 4])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("rows", [(1,), (1, 1), (3, 1), (2, 5)])
def test_split_product_equals_f_linear(threads, no_onednn, t, bias, pack, rows):
    threads(t)
    layer = nn.Linear(24, 40, bias=bias)
    split = CpuLinear(layer, pack=pack)
    x = torch.randn(*rows, 24)
    with torch.inference_mode():
        got = split(x)
    assert split.blocks == t  # the split path ran
    torch.testing.assert_close(got, F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
    assert got.shape == (*rows, 40)


needs_onednn = pytest.mark.skipif(not onednn_available(), reason="PyTorch built without oneDNN")


@needs_onednn
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows", [(2,), (3, 1), (2, 5), (4, 1000), (7, 3, 2)])
def test_onednn_product_equals_f_linear(threads, bias, rows):
    threads(2)
    layer = nn.Linear(24, 40, bias=bias)
    fast = CpuLinear(layer)
    x = torch.randn(*rows, 24)
    with torch.inference_mode():
        got = fast(x)
        strided = fast(x.transpose(0, -2) if x.dim() > 2 else x)
    assert fast.reordered is not None and fast.blocks == 0  # oneDNN ran, the split did not
    torch.testing.assert_close(got, F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
    expected = F.linear(x.transpose(0, -2) if x.dim() > 2 else x, layer.weight, layer.bias)
    torch.testing.assert_close(strided, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("rows", [(1,), (2,), (3, 5)])
def test_relu_product_equals_relu_of_f_linear(threads, rows):
    threads(2)
    layer = nn.Linear(24, 40)
    fast = CpuLinear(layer)
    x = torch.randn(*rows, 24)
    with torch.inference_mode():
        got = fast.relu_product(x)
    assert (fast.reordered is not None) == (x.numel() > 24)  # oneDNN from two rows on
    torch.testing.assert_close(got, F.linear(x, layer.weight, layer.bias).relu(), atol=1e-5,
                               rtol=1e-5)
    trained = fast.relu_product(x)  # with gradients: the plain product and ReLU
    trained.sum().backward()
    assert layer.weight.grad is not None


@pytest.mark.parametrize("rows", [1, 6])
def test_copies_follow_in_place_updates(threads, rows):
    threads(2)
    layer = nn.Linear(8, 16, bias=False)
    fast = CpuLinear(layer, pack=True)  # rows 1: the packed split; 6: oneDNN's copy
    x = torch.randn(rows, 8)
    with torch.inference_mode():
        fast(x)
    with torch.no_grad():
        layer.weight.mul_(-2.0)  # an optimizer step, load_state_dict: in place
    with torch.inference_mode():
        got = fast(x)
    torch.testing.assert_close(got, F.linear(x, layer.weight), atol=1e-5, rtol=1e-5)


def test_outputs_split_into_the_most_even_blocks_up_to_the_thread_count(threads, no_onednn):
    threads(3)
    layer = CpuLinear(nn.Linear(8, 16), pack=True)  # 16 outputs do not split into 3: 2 of 8
    x = torch.randn(2, 8)
    with torch.inference_mode():
        got = layer(x)
    assert layer.weight_blocks.shape == (2, 8, 8) and layer.weight_blocks.is_contiguous()
    torch.testing.assert_close(got, F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
    prime = CpuLinear(nn.Linear(8, 17))  # no even split at all: the plain product
    with torch.inference_mode():
        got = prime(x)
    assert prime.blocks == 0
    torch.testing.assert_close(got, F.linear(x, prime.weight, prime.bias))


def test_many_rows_without_onednn_and_training_use_the_plain_product(threads, no_onednn):
    threads(2)
    wide = CpuLinear(nn.Linear(8, 16))
    with torch.inference_mode():
        wide(torch.randn(1000, 8))  # many rows: one product already uses every core
    assert wide.blocks == 0 and wide.reordered is None
    x = torch.randn(2, 8, requires_grad=True)
    wide(x).sum().backward()  # training: the plain product, gradients flow
    assert wide.weight.grad is not None and x.grad is not None
    assert wide.blocks == 0 and wide.reordered is None


@pytest.mark.parametrize("saturating", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_int8_product_is_the_product_of_the_quantized_rows_and_weights(bias, saturating,
                                                                        monkeypatch):
    torch.manual_seed(0)
    # saturating: as on a CPU whose int8 products add byte pairs in 16 bits (inputs of 7 bits)
    if cpu.int8_pairs_saturate() and not saturating:
        pytest.skip("this CPU's int8 products saturate: 8-bit inputs are never used here")
    monkeypatch.setattr(cpu, "int8_pairs_saturate", lambda: saturating)
    layer = nn.Linear(64, 48, bias=bias)
    int8 = Int8Linear(layer)
    x = torch.randn(2, 5, 64)
    with torch.inference_mode():
        got, relu = int8(x), int8.relu_product(x)
        want = layer(x)
    # what the int8 product computes, in float64 from the definitions: weights rounded to 255
    # levels of their own largest magnitude, each row to 255 (or 127) of its own
    levels = 63 if saturating else 127
    assert int8.input_levels == levels
    w = layer.weight.double()
    w_scale = w.abs().amax(1, keepdim=True) / 127
    rows = x.reshape(-1, 64).double()
    x_scale = rows.abs().amax(1, keepdim=True) / levels
    exact = ((rows / x_scale).round() * x_scale) @ ((w / w_scale).round() * w_scale).T
    if bias:
        exact = exact + layer.bias.double()
    assert got.shape == (2, 5, 48) and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), exact.view(2, 5, 48), rtol=0, atol=1e-5)
    torch.testing.assert_close(relu, got.relu())
    assert (got - want).abs().max() < 0.02 * want.abs().max()  # close to float32, not equal
    assert int8.weight_int8.dtype == torch.int8 and int8.weight_int8.abs().max() == 127


def test_int8_rows_do_not_depend_on_their_batch_and_the_traced_product_agrees():
    torch.manual_seed(1)
    int8 = Int8Linear(nn.Linear(32, 40))
    x = torch.randn(6, 32) * torch.logspace(-2, 2, 6)[:, None]  # rows of very different sizes
    with torch.inference_mode():
        batch = int8(x)
        alone = torch.cat([int8(row[None]) for row in x])
        traced = int8.traced_product(x)
    assert torch.equal(batch, alone)
    torch.testing.assert_close(traced, batch, rtol=1e-6, atol=1e-6)
    zero = int8(torch.zeros(1, 32))  # an all-zero row: the bias, no division by zero
    torch.testing.assert_close(zero[0], int8.bias.detach())


def test_int8_sums_are_exact_where_byte_pairs_would_saturate():
    # rows and weights of one sign and full size: 16-bit pair sums would overflow (oneDNN's
    # AVX2 kernels); the layer's inputs are 7 bits there, its sums exact here whatever the CPU
    int8 = Int8Linear(nn.Linear(64, 40, bias=False))
    with torch.no_grad():
        int8.weight_int8.fill_(127)
        int8.scale.fill_(1.0)
    x = torch.full((3, 64), 2.0)
    with torch.inference_mode():
        got = int8(x)
    # each row: 64 levels of 127 times weights of 127, scaled back: 64 x 127 x 2.0
    torch.testing.assert_close(got, torch.full((3, 40), 64 * 127 * 2.0), rtol=1e-6, atol=0)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 oneDNN ISA")
def test_int8_products_held_to_avx2_stay_exact_with_7_bits_where_pairs_saturate():
    code = ("import torch; from torch import nn; from aiayn.runtime import cpu\n"
            "levels = 63 if cpu.int8_pairs_saturate() else 127\n"
            "int8 = cpu.Int8Linear(nn.Linear(64, 40, bias=False))\n"
            "assert int8.input_levels == levels\n"
            "x = torch.randn(7, 64).abs()\n"
            "q, s = cpu.quantized_rows(x, levels)\n"
            "exact = (q.double() @ int8.weight_int8.double().T) * s.double() * int8.scale\n"
            "assert (int8(x).double() - exact).abs().max() < 1e-4\n")
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]


def test_int8_inference_copy_keeps_only_int8_copies_of_the_linear_weights(tiny_cfg):
    model = Transformer(tiny_cfg)
    int8 = for_inference(model, int8=True)
    linears = [m for m in int8.modules() if isinstance(m, (nn.Linear, CpuLinear))]
    quantized = [m for m in int8.modules() if isinstance(m, Int8Linear)]
    assert not linears and len(quantized) == len(
        [m for m in model.modules() if isinstance(m, nn.Linear)])
    assert isinstance(int8.output_proj, Int8Linear)
    assert all(not hasattr(m, "weight") for m in quantized)  # no float32 copy kept
    assert {type(m) for m in model.modules()} >= {nn.Linear}  # the model itself unchanged


def test_inference_copy_shares_the_weights_and_leaves_the_model_alone(threads):
    threads(2)
    model = Transformer(ModelConfig.preset("tiny", vocab_size=40)).train()
    fast = for_inference(model)
    assert not fast.training and model.training
    assert type(model.output_proj) is nn.Linear  # the model itself unchanged
    assert type(fast.output_proj) is CpuLinear and fast.output_proj.pack
    assert fast.output_proj.weight is model.output_proj.weight is model.tgt_embed.token.weight
    assert all(type(m) is not nn.Linear for m in fast.modules())
    src, tgt = torch.randint(4, 40, (1, 5)), torch.randint(4, 40, (1, 4))
    with torch.inference_mode():
        assert_float32_close(fast(src, tgt), model.eval()(src, tgt))


@pytest.mark.parametrize("rows,vocab,k", [(1, 8000, 1), (128, 8000, 8), (5, 1000, 8),
                                          (3, 1030, 3), (4, 50, 8)])
def test_blocked_top_k_equals_torch_topk(rows, vocab, k):
    torch.manual_seed(rows + vocab)
    x = torch.randn(rows, vocab)
    x[:, :2] = float("-inf")  # masked tokens
    x[0, -1] = 100.0  # the best entry in the partial last block (vocab % 64 != 0)
    values, indices = top_k(x, k)
    expected_values, expected_indices = x.topk(k, dim=-1)
    assert torch.equal(values, expected_values)
    assert torch.equal(indices, expected_indices)  # no ties among random floats


H = 4


@pytest.mark.parametrize("keys", [20, 11])  # 11: rows shorter than a vector, padded
@pytest.mark.parametrize("queries,masked", [(1, False), (4, True), (8, True)])
def test_decoding_steps_on_the_cpu_take_the_reference_path_with_the_same_result(
        monkeypatch, queries, masked, keys):
    # a decoding step: few queries per head, many heads in the batch, no gradients
    q = torch.randn(64, H, queries, 8)
    k, v = torch.randn(64, H, keys, 8), torch.randn(64, H, keys, 8)
    mask = padding_mask(random_tokens(64, keys, lengths=[keys, 7] * 32), 0) if masked else None
    calls, pads = [], []
    fused_kernel = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **kw: calls.append(1) or fused_kernel(*a, **kw))
    pad = torch.nn.functional.pad
    monkeypatch.setattr(torch.nn.functional, "pad",
                        lambda *a, **kw: pads.append(1) or pad(*a, **kw))
    attention = CpuAttention()
    with torch.inference_mode():
        fast, _ = attention(q, k, v, mask)
    assert not calls  # the reference computation ran
    assert bool(pads) == (keys < SHORT_ROW)  # short rows padded for the softmax
    fused, _ = attention(q, k, v, mask)  # with gradients: the fused kernel
    assert calls
    assert_float32_close(fast, fused)
    assert_float32_close(fast, scaled_dot_product_attention(q, k, v, mask)[0])  # the model's


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("masking", ["causal", "padding", "none"])
@pytest.mark.parametrize("keys", [7, cpu.SOFTMAX16_ROW + 8])  # short rows and vectorized ones
def test_16_bit_training_attention_on_the_cpu_matches_pytorchs_in_value_and_gradient(
        monkeypatch, dtype, masking, keys):
    calls = []
    fused_kernel = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **kw: calls.append(1) or fused_kernel(*a, **kw))
    queries = keys if masking == "causal" else 5  # (cross-attention: other lengths)
    mask = (padding_mask(random_tokens(3, keys, lengths=[keys, 4, 2]), 0)
            if masking == "padding" else None)
    torch.manual_seed(0)
    # heads as the model hands them over: views of one (B, T, 3 x D) projection
    x = torch.randn(3, max(queries, keys), 3 * H * 16)
    grad = torch.randn(3, H, queries, 16)

    def attend(x, attention):
        x = x.detach().requires_grad_()
        q, k, v = x.view(3, -1, 3, H, 16).permute(2, 0, 3, 1, 4).unbind(0)
        out, weights = attention(q[:, :, :queries], k[:, :, :keys], v[:, :, :keys], mask,
                                 is_causal=masking == "causal")
        assert weights is None
        out.float().backward(grad)
        return out.float(), x.grad.float()
    out, grad_x = attend(x.to(dtype), CpuAttention())
    assert not calls  # not the fused kernel, which is slower in 16 bits
    wanted, wanted_grad = attend(x, scaled_dot_product_attention)
    assert calls
    tolerance = 2e-2 if dtype == torch.bfloat16 else 2e-3
    torch.testing.assert_close(out, wanted, atol=tolerance, rtol=tolerance)
    torch.testing.assert_close(grad_x, wanted_grad, atol=2 * tolerance, rtol=2 * tolerance)


def test_inference_and_cpu_training_models_hold_the_cpu_modules(tiny_cfg):
    from aiayn.model import Attention, FeedForward
    model = Transformer(tiny_cfg)
    fast = for_inference(model)
    kinds = {type(m) for m in fast.modules()}
    assert CpuAttention in kinds and CpuFeedForward in kinds
    assert Attention not in kinds and FeedForward not in kinds
    assert {type(m) for m in model.modules()} >= {Attention, FeedForward}  # left as it was
    assert CpuAttention in {type(m) for m in for_inference(model, int8=True).modules()}


@pytest.mark.parametrize("p", [0.0, 0.3])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("onednn", [False, True])
def test_training_feed_forward_equals_the_models_with_the_same_masks(p, training, onednn):
    from aiayn.model import FeedForward
    if onednn and not onednn_available():
        pytest.skip("this PyTorch has no oneDNN")
    torch.manual_seed(0)
    ffn = FeedForward(16, 64, dropout=p).train(training)
    fast = CpuFeedForward(ffn)
    if onednn:  # its products through oneDNN, as float32 training's where they measured faster
        fast.linear1, fast.linear2 = (CpuLinear(m, onednn_training=True)
                                      for m in (ffn.linear1, ffn.linear2))
        assert fast(torch.randn(2, 16, requires_grad=True)).grad_fn.name() \
            == "_ReluFeedForwardBackward"
    x = torch.randn(3, 70, 16, requires_grad=True)  # 210 x 64 hidden: masks in two halves
    grad = torch.randn(3, 70, 16)
    results = []
    for module in (ffn, fast):
        torch.manual_seed(1)  # the same dropout masks
        out = module(x)
        out.backward(grad)
        results.append((out.detach(), *(t.grad for t in (x, *ffn.parameters()))))
        x.grad = None
        ffn.zero_grad(set_to_none=True)
    for want, got in zip(*results):
        assert_float32_close(got, want)
    with torch.no_grad():  # with dropout at work the masks mattered
        assert torch.equal(ffn.eval()(x), results[0][0]) == (not (p and training))


@pytest.mark.skipif(not onednn_available(), reason="this PyTorch has no oneDNN")
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows, d_in, d_out", [((3, 70), 16, 40), ((210,), 40, 16),
                                               ((2, 5), 8, 8)])
def test_onednn_training_products_equal_f_linear(rows, d_in, d_out, bias):
    """float32 training's products through oneDNN (both ways of writing the weight's gradient:
    a wider input, a wider output): values and gradients as ``F.linear``'s, the weight tied
    to another layer's accumulating both gradients."""
    layer = nn.Linear(d_in, d_out, bias=bias)
    fast = CpuLinear(layer, onednn_training=True)
    x = torch.randn(*rows, d_in, requires_grad=True)
    grad = torch.randn(*rows, d_out)
    results = []
    for module in (layer, fast):
        out = module(x)
        (out * grad).sum().backward()
        (layer.weight.sum() * 0.5).backward()  # a tied use of the weight, accumulated
        results.append((out.detach(), x.grad, layer.weight.grad,
                        None if layer.bias is None else layer.bias.grad))
        x.grad = None
        layer.zero_grad(set_to_none=True)
    assert fast(x).grad_fn.name() == "_OnednnLinearBackward"
    for got, want in zip(results[1], results[0]):
        if want is None:
            assert got is None
        else:
            assert_float32_close(got, want)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # 16-bit training: PyTorch's product
        assert fast(x).grad_fn.name() != "_OnednnLinearBackward"
    assert CpuLinear(layer)(x).grad_fn.name() != "_OnednnLinearBackward"  # not asked for
    with torch.no_grad():  # inference: the reordered weight's product, as before
        assert_float32_close(fast(x), results[0][0])


def _graph_names(t):
    """The names of every function in ``t``'s autograd graph."""
    names, todo = set(), [t.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is not None and fn.name() not in names:
            names.add(fn.name())
            todo.extend(next_fn for next_fn, _ in fn.next_functions)
    return names


def _bf16_results(module, x, grad, params):
    """module(x) under bf16 autocast, and the gradients of x and ``params`` for ``grad``."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = module(x)
    out.backward(grad)
    got = (out.detach(), *(t.grad for t in (x, *params)))
    for t in (x, *params):
        t.grad = None
    return got, out.grad_fn.name()


@pytest.mark.skipif(not onednn_bf16_available(), reason="oneDNN has no bf16 kernels here: "
                    "bf16 training takes autocast's products")
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows, d_in, d_out", [((3, 70), 16, 40), ((210,), 40, 16),
                                               ((2, 5), 8, 8)])
def test_bf16_training_products_equal_autocasts(rows, d_in, d_out, bias):
    """bf16 training's products with the bias added by oneDNN (``_Linear16``): values and
    gradients (in float32, as autocast returns them) as autocast's ``F.linear``, a tied use
    of the weight accumulating both gradients; without autocast, and in inference, the layer
    is ``F.linear`` and keeps no weight copy."""
    torch.manual_seed(0)
    layer = nn.Linear(d_in, d_out, bias=bias)
    fast = CpuLinear(layer, bf16_training=True)
    x = torch.randn(*rows, d_in, requires_grad=True)
    grad = torch.randn(*rows, d_out, dtype=torch.bfloat16)

    def tied(module):
        return lambda inputs: module(inputs) + layer.weight.sum().to(torch.bfloat16) * 0.5

    want, _ = _bf16_results(tied(layer), x, grad, list(layer.parameters()))
    got, name = _bf16_results(tied(fast), x, grad, list(layer.parameters()))
    assert name == "AddBackward0"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert fast(x).grad_fn.name() == "_Linear16Backward"
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=1.6e-2, atol=1e-2)
    assert fast(x).grad_fn.name() != "_Linear16Backward"  # float32: not asked for
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):  # (validation)
        torch.testing.assert_close(fast(x), F.linear(x, layer.weight, layer.bias).detach())
    assert fast.reordered is None and fast.weight_blocks is None
    assert not for_inference(nn.Sequential(fast))[0].bf16_training


@pytest.mark.skipif(not onednn_bf16_available(), reason="oneDNN has no bf16 kernels here: "
                    "bf16 training takes autocast's products")
@pytest.mark.parametrize("p", [0.0, 0.3])
def test_bf16_training_feed_forward_applies_the_relu_in_the_product(p):
    """The first product applying the ReLU as it writes its output: the feed-forward
    network's values and gradients as autocast computes ``FeedForward``'s, the same dropout
    masks drawn."""
    from aiayn.model import FeedForward
    torch.manual_seed(0)
    ffn = FeedForward(16, 64, dropout=p).train()
    fast = CpuFeedForward(ffn)
    fast.linear1, fast.linear2 = (CpuLinear(m, bf16_training=True)
                                  for m in (ffn.linear1, ffn.linear2))
    x = torch.randn(3, 70, 16, requires_grad=True)
    grad = torch.randn(3, 70, 16, dtype=torch.bfloat16)
    results = []
    for module in (ffn, fast):
        torch.manual_seed(1)  # the same dropout masks
        results.append(_bf16_results(module, x, grad, list(ffn.parameters()))[0])
    for got, want in zip(results[1], results[0]):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=1.6e-2, atol=1e-2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        names = _graph_names(fast(x))
    assert "_Linear16Backward" in names and "ReluBackward0" not in names


@pytest.mark.skipif(not onednn_bf16_available(), reason="oneDNN has no bf16 kernels here: "
                    "bf16 training takes autocast's products")
def test_bf16_training_steps_equal_autocasts(tiny_cfg):
    """Eager bf16 training on the CPU with the CPU's linear layers (``cpu_training_layers``)
    takes the steps autocast's layers take: the same losses over 8 steps to bf16 rounding,
    and validation through the same layers (inference under autocast)."""
    from aiayn.data.corpus import Batch
    from aiayn.train.recipe import TrainConfig, label_smoothed_nll
    from aiayn.train.setup import cpu_training_layers
    from aiayn.train.step import autocast, forward, train_step
    cfg = TrainConfig(preset="tiny", precision="bf16")
    torch.manual_seed(3)
    batches = [Batch(random_tokens(4, 9, lengths=[9, 7, 5, 9]), random_tokens(4, 8),
                     random_tokens(4, 8, lengths=[8, 8, 6, 3]), pad_id=0) for _ in range(8)]
    losses = []
    for swapped in (False, True):
        torch.manual_seed(0)
        model = Transformer(tiny_cfg).train()
        if swapped:
            cpu_training_layers(model, torch.device("cpu"), cfg)
            assert all(m.bf16_training for m in model.modules() if isinstance(m, CpuLinear))
            assert isinstance(model.output_proj, CpuLinear)
        else:
            cpu.cpu_layers(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
        scaler = torch.amp.GradScaler("cpu", enabled=False)
        run = []
        for batch in batches:
            torch.manual_seed(1)
            run.append(train_step(model, optimizer, scaler, [batch], lr=1e-3, cfg=cfg,
                                  device=torch.device("cpu"))[0])
        with torch.inference_mode(), autocast(torch.device("cpu"), "bf16"):  # (validation)
            logits = forward(model.eval(), batches[0])
            run.append(label_smoothed_nll(logits.flatten(0, 1), batches[0].tgt_out.flatten(),
                                          0.1, 0)[0].item())
        losses.append(run)
        if swapped:  # (the CPU's layers did the work)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                assert "_Linear16Backward" in _graph_names(forward(model.train(), batches[0]))
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-2, atol=0)


@pytest.mark.skipif(not onednn_available(), reason="this PyTorch has no oneDNN")
def test_a_used_cpu_linear_is_copied_without_its_weight_copies():
    """A layer that served inference holds oneDNN's copy of the weight, which cannot be
    copied: a copy of the model makes its own."""
    import copy
    layer = CpuLinear(nn.Linear(16, 24))
    x = torch.randn(5, 16)
    with torch.no_grad():
        want = layer(x)
    assert layer.reordered is not None
    twin = copy.deepcopy(layer)
    assert twin.reordered is None
    with torch.no_grad():
        torch.testing.assert_close(twin(x), want)
    assert layer.reordered is not None  # (the original keeps its own)


@pytest.mark.skipif(not onednn_available(), reason="this PyTorch has no oneDNN")
def test_a_training_models_layers_follow_the_optimizers_changes(tiny_cfg):
    """Fused Adam changes the weights in place without counting a version: a training
    model's layers, used in inference between steps (validation), keep no copy of them;
    an inference copy (``for_inference``) does keep its own."""
    from aiayn.runtime.cpu import cpu_linears
    model = cpu_linears(Transformer(tiny_cfg), onednn_training=True)
    layer = model.output_proj
    x = torch.randn(6, tiny_cfg.d_model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1, fused=True)
    for _ in range(2):
        with torch.no_grad():
            torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias))
        version = layer.weight._version
        layer(x).square().sum().backward()
        optimizer.step()
        assert layer.weight._version == version  # (unseen by the version counter)
    assert layer.reordered is None
    fast = for_inference(model)
    assert not any(m.onednn_training for m in fast.modules() if isinstance(m, CpuLinear))
    with torch.no_grad():
        assert_float32_close(fast.output_proj(x), F.linear(x, layer.weight, layer.bias))
    assert fast.output_proj.reordered is not None


def test_training_feed_forward_is_fused_in_float32_only():
    from aiayn.model import FeedForward
    fast = CpuFeedForward(FeedForward(8, 32, dropout=0.1).train())
    x = torch.randn(2, 5, 8, requires_grad=True)
    assert fast(x).grad_fn.name() == "_ReluFeedForwardBackward"
    with torch.autocast("cpu", dtype=torch.bfloat16):  # 16-bit training: autograd's way
        assert fast(x).grad_fn.name() != "_ReluFeedForwardBackward"
    assert CpuFeedForward(FeedForward(8, 32, activation="gelu")).train()(x).grad_fn.name() \
        != "_ReluFeedForwardBackward"
    with torch.no_grad():
        assert fast(x).grad_fn is None
