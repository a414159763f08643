"""Hugging Face Marian (OPUS-MT) folders in and out.

``import_marian`` reads a folder that ``MarianMTModel.save_pretrained`` and
``MarianTokenizer.save_pretrained`` wrote and writes an ordinary aiayn checkpoint: Marian's
departures from the paper become ``ModelConfig`` options (halved sinusoids, swish, the logits
bias, separate vocabularies, the pad id as decoder start), its tokenizer files are kept as they
are (``aiayn.data.tokenizer.MarianVocab``) and the weights are renamed, the query, key and value
projections stacked as aiayn keeps them.

``export_hf`` writes the reverse. aiayn's own models lay their sinusoids out interleaved where
Marian lays them in halves; the export permutes the model dimension so that the halved table is
the interleaved one: every weight that reads the residual stream has its input columns permuted,
every one that writes it its output rows, every LayerNorm its entries. LayerNorm, attention and
the feed-forward network commute with such a permutation, so the exported model computes the
same function.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_model
from torch import Tensor

from .. import checkpoint as ckpt
from ..checkpoint import Checkpoint
from ..config import ConfigError, ModelConfig
from ..data.tokenizer import MarianVocab, Tokenizer
from ..errors import UserError
from ..integrity import write_checksums
from ..model import Transformer
from . import ALIGNER_LEFT, require

# Marian's FFN activations that aiayn has (Hugging Face's ACT2FN names)
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "swish", "silu": "swish"}
IMPORT_INFO = "imported.json"  # where an imported checkpoint came from, beside config.json


def _layer_map(side: str, index: int) -> list[tuple[str, list[str]]]:
    """(aiayn parameter prefix, Marian prefixes stacked into it) for one layer."""
    ours, theirs = f"{side}.layers.{index}.", f"model.{side}.layers.{index}."
    pairs = [
        ("self_attn.qkv_proj", [f"self_attn.{p}_proj" for p in "qkv"]),
        ("self_attn.out_proj", ["self_attn.out_proj"]),
        ("ffn.linear1", ["fc1"]),
        ("ffn.linear2", ["fc2"]),
        ("ffn_block.norm", ["final_layer_norm"]),
    ]
    if side == "encoder":
        pairs.append(("attn_block.norm", ["self_attn_layer_norm"]))
    else:
        pairs += [
            ("self_block.norm", ["self_attn_layer_norm"]),
            ("cross_attn.q_proj", ["encoder_attn.q_proj"]),
            ("cross_attn.kv_proj", ["encoder_attn.k_proj", "encoder_attn.v_proj"]),
            ("cross_attn.out_proj", ["encoder_attn.out_proj"]),
            ("cross_block.norm", ["encoder_attn_layer_norm"]),
        ]
    return [(ours + a, [theirs + m for m in ms]) for a, ms in pairs]


def parameter_map(cfg: ModelConfig) -> list[tuple[str, list[str]]]:
    """Every layer parameter prefix of aiayn's Transformer and the Marian ones it stacks."""
    return [pair for side, n in (("encoder", cfg.n_encoder_layers),
                                 ("decoder", cfg.n_decoder_layers))
            for i in range(n) for pair in _layer_map(side, i)]


# ------------------------------------------------------------------------------------ import
def _read_json(path: Path, what: str) -> dict:
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: missing; {what}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(values, dict):
        raise UserError(f"{path}: expected a JSON object")
    return values


def marian_config(hf: dict, vocab: MarianVocab, bias: Tensor | None) -> ModelConfig:
    """The ``ModelConfig`` of a Marian ``config.json`` (a UserError for what aiayn lacks)."""
    def need(key: str):
        if key not in hf:
            raise UserError(f"config.json: no {key!r}; it is not a complete Marian config")
        return hf[key]

    for ours, theirs in (("encoder_attention_heads", "decoder_attention_heads"),
                         ("encoder_ffn_dim", "decoder_ffn_dim")):
        if need(ours) != need(theirs):
            raise UserError(f"config.json: {ours} ({hf[ours]}) differs from {theirs} "
                            f"({hf[theirs]}); aiayn's encoder and decoder share these sizes")
    activation = need("activation_function")
    if activation not in ACTIVATIONS:
        raise UserError(f"config.json: activation_function {activation!r} is not one aiayn "
                        f"has ({', '.join(ACTIVATIONS)})")
    if hf.get("normalize_before") or hf.get("normalize_embedding"):
        raise UserError("config.json: normalize_before/normalize_embedding are not Marian's "
                        "post-norm layout; aiayn imports Marian models only")
    shared = hf.get("share_encoder_decoder_embeddings", True)
    vocab_size = need("vocab_size")
    tgt_vocab = None if shared else (hf.get("decoder_vocab_size") or vocab_size)
    pad, eos, start = need("pad_token_id"), need("eos_token_id"), need("decoder_start_token_id")
    if isinstance(eos, list):
        eos = eos[0]
    values = dict(
        vocab_size=vocab_size, tgt_vocab_size=tgt_vocab, d_model=need("d_model"),
        n_heads=hf["encoder_attention_heads"], d_ff=hf["encoder_ffn_dim"],
        n_encoder_layers=need("encoder_layers"), n_decoder_layers=need("decoder_layers"),
        dropout=float(hf.get("dropout", 0.1)), attn_dropout=float(hf.get("attention_dropout", 0)),
        ffn_dropout=float(hf.get("activation_dropout", 0)), activation=ACTIVATIONS[activation],
        norm="post", positions="sinusoidal", sinusoid_layout="halves",
        max_len=need("max_position_embeddings"), share_embeddings=shared,
        tie_output=bool(hf.get("tie_word_embeddings", True)),
        scale_embeddings=bool(hf.get("scale_embedding", False)),
        output_bias=bias is not None and bool(bias.any()),
        layer_norm_eps=1e-5, pad_id=pad, unk_id=vocab.unk_id, eos_id=eos,
        bos_id=None if start == pad else start, decoder_start="pad" if start == pad else "bos",
    )
    try:
        return ModelConfig(**values)
    except ConfigError as err:
        raise UserError(f"config.json: {err}") from None


def _read_weights(folder: Path) -> dict[str, Tensor]:
    """The tensors of ``model.safetensors``, or of ``pytorch_model.bin`` loaded without
    unpickling arbitrary objects (``weights_only``)."""
    safetensors, binary = folder / "model.safetensors", folder / "pytorch_model.bin"
    if safetensors.is_file():
        try:
            return load_file(str(safetensors))
        except (SafetensorError, OSError) as err:
            raise UserError(f"{safetensors}: corrupt ({err})") from None
    if binary.is_file():
        try:
            state = torch.load(binary, map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as err:
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise UserError(f"{binary}: cannot be read without running pickled code ({first}); "
                            "save the model with safe_serialization=True (model.safetensors)"
                            ) from None
        if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
            raise UserError(f"{binary}: not a state dict of tensors")
        return state
    raise UserError(f"{folder}: no model.safetensors or pytorch_model.bin; pass a folder "
                    "written by MarianMTModel.save_pretrained")


def _pick(weights: dict[str, Tensor], *names: str) -> Tensor:
    for name in names:
        if name in weights:
            return weights[name]
    raise UserError(f"the weights have no {names[0]!r}; is this a MarianMTModel?")


def marian_to_aiayn(weights: dict[str, Tensor], cfg: ModelConfig) -> dict[str, Tensor]:
    """Marian's state dict (``MarianMTModel`` naming) as aiayn's ``Transformer`` state dict."""
    weights = {(k if k.startswith(("model.", "lm_head", "final_logits")) else "model." + k): v
               for k, v in weights.items()}
    state: dict[str, Tensor] = {}
    for ours, theirs in parameter_map(cfg):
        for part in ("weight", "bias"):
            state[f"{ours}.{part}"] = torch.cat([_pick(weights, f"{t}.{part}") for t in theirs])
    src = _pick(weights, "model.shared.weight", "model.encoder.embed_tokens.weight")
    tgt = src if cfg.share_embeddings else _pick(weights, "model.decoder.embed_tokens.weight")
    state["src_embed.token.weight"], state["tgt_embed.token.weight"] = src, tgt
    state["output_proj.weight"] = tgt if cfg.tie_output else _pick(weights, "lm_head.weight")
    if cfg.output_bias:
        state["output_proj.bias"] = _pick(weights, "final_logits_bias").reshape(-1)
    return {k: v.float().contiguous() for k, v in state.items()}


def import_marian(folder: str | Path, out: str | Path, *, log=print) -> Path:
    """Write the aiayn checkpoint ``out`` from a Hugging Face Marian folder; ``out`` must not
    exist (nothing is overwritten). Returns ``out``."""
    folder, out = Path(folder), Path(out)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "no such folder"
        raise UserError(f"{folder}: {what}; pass a folder written by save_pretrained")
    if out.exists():
        raise UserError(f"{out} already exists; choose another --out (nothing was overwritten)")
    hf = _read_json(folder / "config.json", "pass a folder written by save_pretrained")
    if hf.get("model_type") != "marian":
        raise UserError(f"{folder / 'config.json'}: model_type is {hf.get('model_type')!r}, "
                        "not 'marian'; aiayn imports Marian (OPUS-MT) models")
    for name in (MarianVocab.SOURCE_SPM, MarianVocab.TARGET_SPM, MarianVocab.VOCAB):
        if not (folder / name).is_file():
            raise UserError(f"{folder}: {name} is missing; save the MarianTokenizer into the "
                            "same folder (tokenizer.save_pretrained)")
    vocab = MarianVocab.load(folder)
    weights = _read_weights(folder)
    cfg = marian_config(hf, vocab, weights.get("final_logits_bias"))
    for side, ours, theirs in (("source", vocab.vocab_size, cfg.vocab_size),
                               ("target", vocab.target_vocab_size, cfg.target_vocab_size)):
        if ours > theirs:
            raise UserError(f"{folder}: the {side} vocabulary has {ours} entries but the model "
                            f"{theirs}; the tokenizer belongs to another model")
    model = Transformer(cfg)
    try:
        model.load_state_dict(marian_to_aiayn(weights, cfg))
    except RuntimeError as err:
        raise UserError(f"{folder}: the weights do not match config.json "
                        f"({str(err).splitlines()[1].strip()})") from None
    generation = {}
    if (folder / "generation_config.json").is_file():
        generation = _read_json(folder / "generation_config.json", "")
    languages = None
    if (folder / "tokenizer_config.json").is_file():
        tok_config = _read_json(folder / "tokenizer_config.json", "")
        if tok_config.get("source_lang") and tok_config.get("target_lang"):
            languages = {"source": tok_config["source_lang"], "target": tok_config["target_lang"]}
    _write_checkpoint(out, model, cfg, vocab, {"source": str(folder.resolve()),
                                               "generation_config": generation}, languages)
    log(f"imported {folder} -> {out}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M "
        f"parameters; departures from the paper: {', '.join(cfg.departures()) or 'none'}")
    return out


def _write_checkpoint(out: Path, model: Transformer, cfg: ModelConfig, vocab,
                      info: dict, languages: dict[str, str] | None) -> None:
    with ckpt.new_directory(out) as tmp:
        save_model(model, str(tmp / ckpt.WEIGHTS))
        extra = {"languages": languages} if languages else {}
        (tmp / ckpt.CONFIG).write_text(json.dumps({"arch": "encoder-decoder", **extra,
                                                   **cfg.to_dict()}, indent=2))
        (tmp / IMPORT_INFO).write_text(json.dumps(info, indent=2) + "\n")
        vocab.save(tmp)
        write_checksums(tmp)


# ------------------------------------------------------------------------------------ export
def residual_permutation(cfg: ModelConfig) -> Tensor | None:
    """The model-dimension order that turns aiayn's interleaved sinusoids into Marian's halves
    (even dimensions, then odd ones); None when the layout is already Marian's."""
    if cfg.sinusoid_layout == "halves":
        return None
    return torch.cat([torch.arange(0, cfg.d_model, 2), torch.arange(1, cfg.d_model, 2)])


def permute_residual(state: dict[str, Tensor], perm: Tensor) -> dict[str, Tensor]:
    """Apply a permutation of the model dimension to every tensor that touches the residual
    stream (aiayn naming): readers' input columns, writers' output rows, LayerNorm entries."""
    out = {}
    for key, value in state.items():
        if key.endswith("token.weight") or key == "output_proj.weight":
            value = value[:, perm]  # embeddings write it, the output projection reads it
        elif ".norm." in key or "final_norm" in key:
            value = value[perm]
        elif key.endswith(("out_proj.weight", "linear2.weight")):
            value = value[perm, :]
        elif key.endswith(("out_proj.bias", "linear2.bias")):
            value = value[perm]
        elif key.endswith(("qkv_proj.weight", "q_proj.weight", "kv_proj.weight",
                           "linear1.weight")):
            value = value[:, perm]
        out[key] = value
    return out


def _hf_config(cfg: ModelConfig) -> dict:
    """MarianConfig arguments for an aiayn model, or a UserError for what Marian cannot hold."""
    if cfg.norm != "post":
        raise UserError(f"Marian has post-norm layers only; this model is {cfg.norm}-norm: "
                        "export it with --to ctranslate2")
    if cfg.positions != "sinusoidal":
        raise UserError("Marian has sinusoidal positions only; this model learned its "
                        "positions: export it with --to ctranslate2")
    if cfg.pos_base != 10000.0 or cfg.layer_norm_eps != 1e-5:
        raise UserError("Marian fixes the sinusoid base (10000) and LayerNorm epsilon (1e-5); "
                        "this model sets others")
    start = cfg.start_id
    return dict(
        vocab_size=cfg.vocab_size, decoder_vocab_size=cfg.target_vocab_size,
        share_encoder_decoder_embeddings=cfg.share_embeddings,
        tie_word_embeddings=cfg.tie_output, d_model=cfg.d_model,
        encoder_layers=cfg.n_encoder_layers, decoder_layers=cfg.n_decoder_layers,
        encoder_attention_heads=cfg.n_heads, decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff, decoder_ffn_dim=cfg.d_ff, activation_function=cfg.activation,
        dropout=cfg.dropout, attention_dropout=cfg.attn_dropout,
        activation_dropout=cfg.ffn_dropout, max_position_embeddings=cfg.max_len,
        scale_embedding=cfg.scale_embeddings, pad_token_id=cfg.pad_id, eos_token_id=cfg.eos_id,
        forced_eos_token_id=cfg.eos_id, decoder_start_token_id=start, bos_token_id=cfg.bos_id,
    )


def aiayn_to_marian(model: Transformer) -> dict[str, Tensor]:
    """aiayn's weights in ``MarianMTModel`` naming, in Marian's sinusoid layout."""
    cfg = model.cfg
    state = {k: v.detach().float() for k, v in model.state_dict().items()}
    perm = residual_permutation(cfg)
    if perm is not None:
        state = permute_residual(state, perm)
    out: dict[str, Tensor] = {}
    for ours, theirs in parameter_map(cfg):
        for part in ("weight", "bias"):  # stacked projections split in equal parts
            for name, piece in zip(theirs, state[f"{ours}.{part}"].chunk(len(theirs))):
                out[f"{name}.{part}"] = piece
    if cfg.share_embeddings:
        out["model.shared.weight"] = state["src_embed.token.weight"]
    out["model.encoder.embed_tokens.weight"] = state["src_embed.token.weight"]
    out["model.decoder.embed_tokens.weight"] = state["tgt_embed.token.weight"]
    out["lm_head.weight"] = state["output_proj.weight"]
    bias = state.get("output_proj.bias", torch.zeros(cfg.target_vocab_size))
    out["final_logits_bias"] = bias.reshape(1, -1)
    return {k: v.contiguous() for k, v in out.items()}


def _write_marian_tokenizer(tokenizer, cfg: ModelConfig, out: Path) -> None:
    """The tokenizer files MarianTokenizer.from_pretrained reads."""
    transformers = require("transformers", "export --to hf")
    if isinstance(tokenizer, MarianVocab):
        tokenizer.save(out)
        separate = tokenizer.target_vocab is not None
        source_spm, target_spm, vocab = (out / MarianVocab.SOURCE_SPM,
                                         out / MarianVocab.TARGET_SPM, out / MarianVocab.VOCAB)
    else:
        separate = False
        source_spm = target_spm = out / MarianVocab.SOURCE_SPM
        shutil.copyfile(tokenizer.path, source_spm)
        shutil.copyfile(tokenizer.path, out / MarianVocab.TARGET_SPM)
        vocab = out / MarianVocab.VOCAB
        vocab.write_text(json.dumps({tokenizer.sp.IdToPiece(i): i
                                     for i in range(tokenizer.vocab_size)},
                                    ensure_ascii=False, indent=1))
    marian = transformers.MarianTokenizer(
        str(source_spm), str(target_spm), str(vocab),
        target_vocab_file=str(out / MarianVocab.TARGET_VOCAB) if separate else None,
        separate_vocabs=separate, model_max_length=cfg.max_len)
    marian.save_pretrained(str(out))


def export_hf(checkpoint: str | Path, out: str | Path, *, log=print) -> Path:
    """Write a folder that ``MarianMTModel.from_pretrained`` and
    ``MarianTokenizer.from_pretrained`` load, computing the checkpoint's function."""
    transformers = require("transformers", "export --to hf")
    out = Path(out)
    if out.exists():
        raise UserError(f"{out} already exists; choose another --out (nothing was overwritten)")
    opened = Checkpoint.open(checkpoint).require(
        "encoder-decoder", "only translation models export to Marian")
    model, tokenizer = opened.model(Transformer), opened.tokenizer
    cfg = model.cfg
    if isinstance(tokenizer, Tokenizer):
        names = [tokenizer.sp.IdToPiece(i) for i in (cfg.pad_id, cfg.unk_id, cfg.eos_id)]
        if names != ["<pad>", "<unk>", "</s>"]:
            raise UserError(f"{opened.path}: the vocabulary's special pieces are {names}, not "
                            "<pad>, <unk>, </s> as MarianTokenizer expects")
    config = transformers.MarianConfig(**_hf_config(cfg))
    hf_model = transformers.MarianMTModel(config)
    missing, unexpected = hf_model.load_state_dict(aiayn_to_marian(model), strict=False)
    missing = [k for k in missing if "embed_positions" not in k]
    if missing or unexpected:
        raise RuntimeError(f"Marian state mismatch: missing {missing}, unexpected {unexpected}")
    hf_model.generation_config.bad_words_ids = [[i] for i in {cfg.pad_id, cfg.start_id}]
    with ckpt.new_directory(out) as tmp:
        hf_model.save_pretrained(str(tmp))
        _write_marian_tokenizer(tokenizer, cfg, tmp)
    permuted = residual_permutation(cfg) is not None
    log(f"exported {opened.path} -> {out} (MarianMTModel"
        f"{', model dimension permuted to halved sinusoids' if permuted else ''})")
    if model.aligner is not None:
        log(ALIGNER_LEFT.format(to="MarianMTModel"))
    return out
