import pytest
import torch
from torch import nn

from aiayn.model import (
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)
from tests.conftest import assert_float32_close, random_tokens

D, H = 32, 4


def copy_from_torch(ref: nn.MultiheadAttention, self_attention: bool = True) -> MultiHeadAttention:
    ours = MultiHeadAttention(D, H, self_attention=self_attention)
    copy_attention(ours, ref)
    return ours


def copy_attention(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    """nn.MultiheadAttention stacks W^Q; W^K; W^V in in_proj_weight, as we do."""
    w, b = ref.in_proj_weight, ref.in_proj_bias
    with torch.no_grad():
        if ours.self_attention:
            ours.qkv_proj.weight.copy_(w)
            ours.qkv_proj.bias.copy_(b)
        else:
            ours.q_proj.weight.copy_(w[:D])
            ours.q_proj.bias.copy_(b[:D])
            ours.kv_proj.weight.copy_(w[D:])
            ours.kv_proj.bias.copy_(b[D:])
        ours.out_proj.weight.copy_(ref.out_proj.weight)
        ours.out_proj.bias.copy_(ref.out_proj.bias)


@pytest.mark.parametrize("use_padding", [False, True])
def test_self_attention_equals_torch_multihead_attention(use_padding):
    ref = nn.MultiheadAttention(D, H, batch_first=True)
    ours = copy_from_torch(ref)
    x = torch.randn(3, 7, D)
    tokens = random_tokens(3, 7, lengths=[7, 4, 2] if use_padding else None)
    mask = padding_mask(tokens, 0)  # True = may attend
    expected, expected_w = ref(x, x, x, key_padding_mask=~mask[:, 0, 0], average_attn_weights=False)
    got, _ = ours(x, x, x, mask)
    got_ref, weights = ours(x, x, x, mask, return_weights=True)
    assert_float32_close(got, expected)
    assert_float32_close(got_ref, expected)
    assert_float32_close(weights, expected_w)


def test_cross_attention_equals_torch_multihead_attention():
    ref = nn.MultiheadAttention(D, H, batch_first=True)
    ours = copy_from_torch(ref, self_attention=False)
    query, memory = torch.randn(2, 5, D), torch.randn(2, 9, D)
    mask = padding_mask(random_tokens(2, 9, lengths=[9, 3]), 0)
    expected, _ = ref(query, memory, memory, key_padding_mask=~mask[:, 0, 0])
    got, _ = ours(query, memory, memory, mask)
    assert_float32_close(got, expected)


@pytest.mark.parametrize("self_attention", [True, False])
@pytest.mark.parametrize("return_weights", [False, True])
def test_attention_gradients_equal_torch_multihead_attentions(self_attention, return_weights):
    # the heads' gradients are written back into the projections' layout by hand
    ref = nn.MultiheadAttention(D, H, batch_first=True)
    ours = copy_from_torch(ref, self_attention=self_attention)
    query = torch.randn(3, 6, D, requires_grad=True)
    memory = query if self_attention else torch.randn(3, 8, D, requires_grad=True)
    mask = padding_mask(random_tokens(3, memory.size(1), lengths=[memory.size(1), 4, 2]), 0)
    grad = torch.randn(3, 6, D)
    expected, _ = ref(query, memory, memory, key_padding_mask=~mask[:, 0, 0])
    expected_grads = torch.autograd.grad(expected, [query, memory, *ref.parameters()], grad)
    got, _ = ours(query, memory, memory, mask, return_weights=return_weights)
    got_grads = torch.autograd.grad(got, [query, memory, *ours.parameters()], grad)
    if not self_attention:  # ours keeps W^Q and [W^K; W^V] apart: stacked as torch has them
        q_w, q_b, kv_w, kv_b = got_grads[2:6]
        got_grads = (*got_grads[:2], torch.cat([q_w, kv_w]), torch.cat([q_b, kv_b]),
                     *got_grads[6:])
    for got_grad, expected_grad in zip(got_grads, expected_grads, strict=True):
        assert_float32_close(got_grad, expected_grad)


def test_inputs_must_fit_the_kind_of_attention():
    x, y = torch.randn(2, 5, D), torch.randn(2, 6, D)
    with pytest.raises(ValueError, match="same tensor as query, key and value"):
        MultiHeadAttention(D, H)(x, y, y)
    with pytest.raises(ValueError, match="same tensor \\(memory\\) as key and value"):
        MultiHeadAttention(D, H, self_attention=False)(x, y, x)


def test_causal_self_attention_equals_torch_with_causal_mask():
    ref = nn.MultiheadAttention(D, H, batch_first=True)
    ours = copy_from_torch(ref)
    x = torch.randn(2, 6, D)
    expected, _ = ref(x, x, x, attn_mask=~causal_mask(6)[0, 0])
    assert_float32_close(ours(x, x, x, is_causal=True)[0], expected)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_path_equals_reference_path(causal):
    q, k, v = (torch.randn(2, H, 6, 8) for _ in range(3))
    mask = None if causal else padding_mask(random_tokens(2, 6, lengths=[6, 3]), 0)
    fused, none = scaled_dot_product_attention(q, k, v, mask, is_causal=causal)
    reference, weights = scaled_dot_product_attention(q, k, v, mask, is_causal=causal,
                                                      return_weights=True)
    assert none is None
    assert_float32_close(fused, reference)
    assert_float32_close(weights.sum(-1), torch.ones(2, H, 6))


def test_attention_weights_are_zero_at_masked_keys():
    q, k, v = (torch.randn(2, H, 5, 8) for _ in range(3))
    mask = padding_mask(random_tokens(2, 5, lengths=[5, 2]), 0)
    _, weights = scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    assert torch.all(weights[1, :, :, 2:] == 0)
    assert torch.all(weights[0] > 0)
    _, causal = scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True)
    assert torch.all(causal.triu(diagonal=1) == 0)


def test_scores_are_scaled_by_sqrt_dk():
    # with one key position weights are trivially 1; with two, the softmax of q.k / sqrt(d_k)
    q = torch.ones(1, 1, 1, 16)
    k = torch.stack([torch.zeros(16), torch.ones(16)])[None, None]  # (1, 1, 2, 16)
    v = torch.eye(2)[None, None]
    _, w = scaled_dot_product_attention(q, k, v, return_weights=True)
    expected = torch.softmax(torch.tensor([0.0, 16 / 4]), 0)
    torch.testing.assert_close(w[0, 0, 0], expected)


def test_head_count_must_divide_width():
    with pytest.raises(ValueError, match=r"d_model \(30\) must be divisible by n_heads \(4\)"):
        MultiHeadAttention(30, 4)


@pytest.mark.parametrize("causal", [False, True])
def test_bf16_attention_matches_torch_in_float32_and_keeps_bf16(causal):
    # the reference computation in bf16 takes the softmax in float32 and keeps bf16
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, H, 63, D // H) for _ in range(3))  # 63: a slow bf16 softmax length
    mask = None if causal else padding_mask(random_tokens(2, 63, lengths=[63, 40]), 0)
    expected = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                          is_causal=causal)
    got, weights = scaled_dot_product_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), mask,
                                                is_causal=causal, return_weights=True)
    assert got.dtype == weights.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), expected, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(weights.float().sum(-1), torch.ones(2, H, 63), atol=1e-2, rtol=0)
