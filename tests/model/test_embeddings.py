import math

import pytest
import torch

from aiayn import Transformer
from aiayn.model import sinusoidal_table
from tests.conftest import random_tokens


def test_sinusoidal_table_matches_the_formula():
    table = sinusoidal_table(100, 512)
    for pos in (0, 1, 7, 50, 99):
        for i in (0, 1, 10, 255):
            angle = pos / 10000 ** (2 * i / 512)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert torch.equal(table[0, 0::2], torch.zeros(256))
    assert torch.equal(table[0, 1::2], torch.ones(256))


def test_embeddings_are_scaled_by_sqrt_d_model(tiny_cfg):
    model = Transformer(tiny_cfg).eval()
    tokens = random_tokens(1, 3)
    expected = model.src_embed.token(tokens) * math.sqrt(32) + sinusoidal_table(3, 32)
    torch.testing.assert_close(model.src_embed(tokens), expected)


def test_sequence_longer_than_max_len_is_a_clear_error(tiny_cfg):
    model = Transformer(tiny_cfg.replace(max_len=8))
    with pytest.raises(ValueError, match="exceeds max_len"):
        model(random_tokens(1, 9), random_tokens(1, 3))


@pytest.mark.parametrize("dtype, stream", [(None, torch.float32), (torch.bfloat16, torch.bfloat16),
                                           (torch.float16, torch.float32)])
def test_the_residual_stream_is_bf16_under_bf16_autocast_only(tiny_cfg, dtype, stream):
    model = Transformer(tiny_cfg).eval()
    tokens = random_tokens(2, 6)
    expected = model.src_embed(tokens)
    with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        x = model.src_embed(tokens)
        layer_out, _ = model.encoder.layers[0](x, None)
    assert x.dtype == layer_out.dtype == stream
    torch.testing.assert_close(x.float(), expected, atol=0, rtol=2 ** -8)  # one rounding
