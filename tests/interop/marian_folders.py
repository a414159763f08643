"""Tiny Hugging Face Marian folders built offline: SentencePiece trained on the demo corpus,
vocab.json laid out as OPUS-MT's (</s> 0, <unk> 1, pieces, language tokens, <pad> last), a random
``MarianMTModel`` from a ``MarianConfig``, both written by ``save_pretrained``."""

from __future__ import annotations

import gzip
import json
import os
import sys
from importlib.resources import files
from pathlib import Path

import pytest
import sentencepiece as spm
import torch

transformers = pytest.importorskip("transformers")

LANGUAGE_TOKENS = [">>spa<<", ">>fra<<"]


def demo_lines(side: str, count: int = 400, split: str = "train") -> list[str]:
    path = files("aiayn") / "data" / "demo" / f"{split}.{side}.gz"
    with gzip.open(str(path), "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for _, line in zip(range(count), handle)]


def train_spm(lines: list[str], prefix: Path, vocab_size: int) -> Path:
    with open(os.devnull, "w") as quiet:
        spm.SentencePieceTrainer.Train(
            sentence_iterator=iter(lines), model_prefix=str(prefix), vocab_size=vocab_size,
            model_type="unigram", character_coverage=0.98, unk_id=0, bos_id=-1, eos_id=1,
            pad_id=-1, hard_vocab_limit=False, minloglevel=2,
            logstream=quiet if hasattr(sys.stderr, "fileno") else None)
    return prefix.with_suffix(".model")


def marian_vocab(model: Path, extra: list[str]) -> dict[str, int]:
    sp = spm.SentencePieceProcessor(model_file=str(model))
    pieces = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]
    vocab = {"</s>": 0, "<unk>": 1}
    for piece in pieces + extra:
        vocab.setdefault(piece, len(vocab))
    vocab["<pad>"] = len(vocab)
    return vocab


def build(root: Path, *, activation: str = "swish", separate: bool = False,
          logits_bias: bool = False, language_tokens: bool = False, d_model: int = 32,
          layers: int = 2, init_std: float = 0.02, seed: int = 0) -> Path:
    """Write a Marian folder under ``root`` and return it."""
    folder = root / "marian"
    folder.mkdir(parents=True)
    work = root / "spm"
    work.mkdir()
    en, es = demo_lines("en"), demo_lines("es")
    extra = LANGUAGE_TOKENS if language_tokens else []
    if separate:
        source_model = train_spm(en, work / "source", 120)
        target_model = train_spm(es, work / "target", 140)
        vocab, target_vocab = marian_vocab(source_model, extra), marian_vocab(target_model, [])
        # Marian's separate vocabularies share the pad id: the larger size holds it
        size = max(len(vocab), len(target_vocab))
        for v in (vocab, target_vocab):
            del v["<pad>"]
        vocab["<pad>"] = target_vocab["<pad>"] = size - 1
        (folder / "target_vocab.json").write_text(json.dumps(target_vocab))
    else:
        source_model = target_model = train_spm(en + es, work / "joint", 150)
        vocab = marian_vocab(source_model, extra)
        target_vocab = vocab
    (folder / "vocab.json").write_text(json.dumps(vocab))
    for model, name in ((source_model, "source.spm"), (target_model, "target.spm")):
        (folder / name).write_bytes(model.read_bytes())
    tokenizer = transformers.MarianTokenizer(
        str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"),
        target_vocab_file=str(folder / "target_vocab.json") if separate else None,
        separate_vocabs=separate)
    tokenizer.save_pretrained(str(folder))

    pad = vocab["<pad>"]
    config = transformers.MarianConfig(
        # separate: the decoder's embedding has rows no piece uses, so the sizes differ
        vocab_size=max(vocab.values()) + 1,
        decoder_vocab_size=max(target_vocab.values()) + 1 + (7 if separate else 0),
        share_encoder_decoder_embeddings=not separate, d_model=d_model, encoder_layers=layers,
        decoder_layers=layers, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=2 * d_model, decoder_ffn_dim=2 * d_model, activation_function=activation,
        max_position_embeddings=128, scale_embedding=True, pad_token_id=pad, eos_token_id=0,
        forced_eos_token_id=0, decoder_start_token_id=pad, init_std=init_std, dropout=0.1)
    torch.manual_seed(seed)
    model = transformers.MarianMTModel(config).eval()
    if logits_bias:
        model.final_logits_bias.normal_(0.0, 1.0)
    model.save_pretrained(str(folder))
    return folder


def hf_model(folder: Path):
    return transformers.MarianMTModel.from_pretrained(str(folder),
                                                      attn_implementation="eager").eval()
