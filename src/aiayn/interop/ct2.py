"""aiayn checkpoints as CTranslate2 models: ``aiayn export CKPT --to ctranslate2``.

The model is described with CTranslate2's own specification API
(``ctranslate2.specs.TransformerSpec.from_config``), weight by weight: aiayn's stacked query,
key and value projections are CTranslate2's fused ones, the position table is set explicitly
(so interleaved, halved and learned positions all carry over) and the vocabularies are the
checkpoint's pieces in id order. The source's EOS is added by CTranslate2 itself
(``add_source_eos``), so a caller passes the SentencePiece pieces alone.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from .. import checkpoint as ckpt
from ..checkpoint import Checkpoint
from ..config import ModelConfig
from ..errors import UserError
from ..model import Transformer
from . import ALIGNER_LEFT, require

QUANTIZATIONS = ("int8", "int8_float32", "int16", "float16", "bfloat16", "int8_float16",
                 "int8_bfloat16")


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().contiguous().numpy()


def _linear(spec, layer) -> None:
    spec.weight = _array(layer.weight)
    if layer.bias is not None:
        spec.bias = _array(layer.bias)


def _norm(spec, norm) -> None:
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _vocabulary(tokenizer, size: int, side: str) -> list[str]:
    """The pieces of ids 0..size-1; ids without a piece get a unique placeholder."""
    pieces = tokenizer.pieces(range(size), side=side)
    seen: set[str] = set()
    out = []
    for i, piece in enumerate(pieces):
        out.append(piece if piece not in seen else f"<unused{i}>")
        seen.add(piece)
    return out


def transformer_spec(model, tokenizer):
    """The ``TransformerSpec`` of an aiayn ``Transformer`` and its vocabulary."""
    require("ctranslate2", "export --to ctranslate2")
    from ctranslate2.specs import common_spec
    from ctranslate2.specs import transformer_spec as ts

    cfg: ModelConfig = model.cfg
    if cfg.norm == "sandwich":
        raise UserError("CTranslate2 has no sandwich-norm layers; this model cannot be exported")
    activation = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU,
                  "swish": common_spec.Activation.SWISH}[cfg.activation]
    # a model trained with guided alignment: CTranslate2's return_alignment reads its head
    guided = {} if cfg.alignment_layer is None else {"alignment_layer": cfg.alignment_layer,
                                                     "alignment_heads": 1}
    spec = ts.TransformerSpec.from_config((cfg.n_encoder_layers, cfg.n_decoder_layers),
                                          cfg.n_heads, pre_norm=cfg.norm == "pre",
                                          activation=activation, **guided)
    scale = math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0
    for side, embed in ((spec.encoder, model.src_embed), (spec.decoder, model.tgt_embed)):
        side.scale_embeddings = scale
        side.position_encodings.encodings = _array(embed.positions.table)
    spec.encoder.embeddings[0].weight = _array(model.src_embed.token.weight)
    spec.decoder.embeddings.weight = _array(model.tgt_embed.token.weight)
    _linear(spec.decoder.projection, model.output_proj)
    for layer_spec, layer in zip(spec.encoder.layer, model.encoder.layers):
        _linear(layer_spec.self_attention.linear[0], layer.self_attn.qkv_proj)
        _linear(layer_spec.self_attention.linear[1], layer.self_attn.out_proj)
        _norm(layer_spec.self_attention.layer_norm, layer.attn_block.norm)
        _linear(layer_spec.ffn.linear_0, layer.ffn.linear1)
        _linear(layer_spec.ffn.linear_1, layer.ffn.linear2)
        _norm(layer_spec.ffn.layer_norm, layer.ffn_block.norm)
    for layer_spec, layer in zip(spec.decoder.layer, model.decoder.layers):
        _linear(layer_spec.self_attention.linear[0], layer.self_attn.qkv_proj)
        _linear(layer_spec.self_attention.linear[1], layer.self_attn.out_proj)
        _norm(layer_spec.self_attention.layer_norm, layer.self_block.norm)
        _linear(layer_spec.attention.linear[0], layer.cross_attn.q_proj)
        _linear(layer_spec.attention.linear[1], layer.cross_attn.kv_proj)
        _linear(layer_spec.attention.linear[2], layer.cross_attn.out_proj)
        _norm(layer_spec.attention.layer_norm, layer.cross_block.norm)
        _linear(layer_spec.ffn.linear_0, layer.ffn.linear1)
        _linear(layer_spec.ffn.linear_1, layer.ffn.linear2)
        _norm(layer_spec.ffn.layer_norm, layer.ffn_block.norm)
    if cfg.norm == "pre":
        _norm(spec.encoder.layer_norm, model.encoder.final_norm)
        _norm(spec.decoder.layer_norm, model.decoder.final_norm)

    source = _vocabulary(tokenizer, cfg.vocab_size, "source")
    target = _vocabulary(tokenizer, cfg.target_vocab_size, "target")
    spec.register_source_vocabulary(source)
    spec.register_target_vocabulary(target)
    config = spec.config
    config.unk_token, config.eos_token = target[cfg.unk_id], target[cfg.eos_id]
    config.bos_token = target[cfg.start_id]
    config.decoder_start_token = target[cfg.start_id]
    config.add_source_bos, config.add_source_eos = False, True
    config.layer_norm_epsilon = cfg.layer_norm_eps
    return spec


def export_ctranslate2(checkpoint: str | Path, out: str | Path, *,
                       quantization: str | None = None, log=print) -> Path:
    """Write a folder that ``ctranslate2.Translator`` loads; ``out`` must not exist."""
    out = Path(out)
    if out.exists():
        raise UserError(f"{out} already exists; choose another --out (nothing was overwritten)")
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise UserError(f"--quantization ({quantization!r}) must be one of "
                        f"{', '.join(QUANTIZATIONS)}")
    opened = Checkpoint.open(checkpoint).require(
        "encoder-decoder", "only translation models export to CTranslate2 here")
    model, tokenizer = opened.model(Transformer).eval(), opened.tokenizer
    spec = transformer_spec(model, tokenizer)
    spec.validate()
    spec.optimize(quantization=quantization)
    with ckpt.new_directory(out) as tmp:
        spec.save(str(tmp))
    log(f"exported {opened.path} -> {out} (CTranslate2, {quantization or 'float32'})")
    if model.aligner is not None:
        log(ALIGNER_LEFT.format(to="CTranslate2"))
    return out
