"""Our encoder-decoder stack equals torch.nn.Transformer given mapped weights."""

import warnings

import pytest
import torch
from torch import nn

from aiayn import ModelConfig, Transformer
from aiayn.model import causal_mask
from tests.conftest import assert_float32_close, random_tokens
from tests.model.test_attention import copy_attention


def map_weights(ours: Transformer, ref: nn.Transformer) -> None:
    """Copy nn.Transformer's weights into ours (the names differ, the shapes agree)."""
    pairs = []
    for mine, theirs in zip(ours.encoder.layers, ref.encoder.layers):
        pairs += [(mine.self_attn, theirs.self_attn), (mine.ffn.linear1, theirs.linear1),
                  (mine.ffn.linear2, theirs.linear2), (mine.attn_block.norm, theirs.norm1),
                  (mine.ffn_block.norm, theirs.norm2)]
    for mine, theirs in zip(ours.decoder.layers, ref.decoder.layers):
        pairs += [(mine.self_attn, theirs.self_attn), (mine.cross_attn, theirs.multihead_attn),
                  (mine.ffn.linear1, theirs.linear1), (mine.ffn.linear2, theirs.linear2),
                  (mine.self_block.norm, theirs.norm1), (mine.cross_block.norm, theirs.norm2),
                  (mine.ffn_block.norm, theirs.norm3)]
    if ours.encoder.final_norm is not None:
        pairs += [(ours.encoder.final_norm, ref.encoder.norm),
                  (ours.decoder.final_norm, ref.decoder.norm)]
    with torch.no_grad():
        for mine, theirs in pairs:
            if isinstance(theirs, nn.MultiheadAttention):
                copy_attention(mine, theirs)
            else:
                mine.weight.copy_(theirs.weight)
                mine.bias.copy_(theirs.bias)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("padded", [False, True])
def test_encoder_decoder_equals_torch_transformer(norm, padded):
    cfg = ModelConfig.preset("tiny", vocab_size=40, norm=norm, n_encoder_layers=2,
                             n_decoder_layers=3)
    ours = Transformer(cfg)
    with warnings.catch_warnings():  # nested tensors are off for norm_first; torch says so
        warnings.simplefilter("ignore")
        ref = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers, cfg.n_decoder_layers,
                             cfg.d_ff, dropout=0.0, batch_first=True, norm_first=(norm == "pre"))
    if norm == "post":
        # nn.Transformer always adds a final LayerNorm to each stack; the paper's post-norm has none
        ref.encoder.norm = None
        ref.decoder.norm = None
    map_weights(ours, ref)
    ours.train(), ref.train()  # dropout is 0; train mode keeps nn.Transformer off its fast path

    src = random_tokens(3, 9, lengths=[9, 5, 2] if padded else None)
    tgt_in = random_tokens(3, 6, lengths=[6, 6, 3] if padded else None)
    src_x, tgt_x = ours.src_embed(src), ours.tgt_embed(tgt_in)
    src_pad = src == cfg.pad_id  # nn.Transformer: True = masked
    expected = ref(src_x, tgt_x, src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad,
                   tgt_mask=~causal_mask(6)[0, 0], tgt_is_causal=True)

    memory, src_mask, _ = ours.encode(src)
    got, _, _ = ours.decoder(tgt_x, memory, src_mask)
    real = tgt_in != cfg.pad_id
    assert_float32_close(got[real], expected[real])
    assert_float32_close(
        memory[src != 0], ref.encoder(src_x, src_key_padding_mask=src_pad)[src != 0])
