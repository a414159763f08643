"""Load a checkpoint and translate text: the Python API behind `aiayn translate` and `evaluate`.

Example::

    translator = aiayn.load("runs/en-es")          # a run (its best checkpoint) or a checkpoint
    translator.translate(["In the beginning God created the heavens and the earth."])
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np
import torch

from .data.corpus import token_batches
from .data.tokenizer import Tokenizer
from .decode.memory import reuse_freed_memory
from .decode.search import Hypothesis, beam_search, greedy_search
from .errors import UserError
from .model import Transformer
from .train import checkpoint as ckpt

if TYPE_CHECKING:
    from .inspect import AttentionMaps


class Translator:
    """A trained encoder-decoder model with its tokenizer, ready to translate sentences."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, *,
                 warn: Callable[[str], None] | None = None) -> None:
        self.model, self.tokenizer = model.eval(), tokenizer
        self.cfg = model.cfg
        self.device = next(model.parameters()).device
        self.warn = warn or (lambda msg: print(f"aiayn: warning: {msg}", file=sys.stderr))
        reuse_freed_memory()  # decoding steps reuse their buffers' pages (decode/memory.py)

    @classmethod
    def load(cls, path: str | Path, *, device: str = "cpu", int8: bool = False) -> "Translator":
        """Load from a checkpoint directory or a run directory (its best, else last checkpoint).

        ``int8``: PyTorch's dynamic int8 quantization of every linear layer (CPU only): weights
        stored as int8, activations quantized on the fly; embeddings stay float32.
        """
        directory = ckpt.resolve_checkpoint(path)
        if ckpt.load_arch(directory) != "encoder-decoder":
            raise UserError(f"{directory} holds a decoder-only language model; translate with an "
                            "encoder-decoder checkpoint, or use `aiayn generate`")
        model = ckpt.load_model(directory)
        tokenizer = Tokenizer.load(directory / ckpt.TOKENIZER)
        if tokenizer.vocab_size > model.cfg.vocab_size:
            raise UserError(f"{directory}: tokenizer has {tokenizer.vocab_size} pieces but the "
                            f"model {model.cfg.vocab_size}; the checkpoint is inconsistent")
        if int8:
            if device != "cpu":
                raise UserError("--int8 runs on the CPU only; drop --device or --int8")
            model = quantize_int8(model.eval())
        return cls(model.to(device), tokenizer)

    # ---------------------------------------------------------------- encoding
    def encode_source(self, sentence: str, line: int | None = None) -> list[int]:
        """Subword ids plus EOS, truncated (with a warning) to the model's maximum length."""
        ids = self.tokenizer.encode(sentence)
        limit = self.cfg.max_len - 1
        if len(ids) > limit:
            where = f"line {line}: " if line is not None else ""
            self.warn(f"{where}input of {len(ids)} tokens truncated to {limit}")
            ids = ids[:limit]
        return ids + [self.cfg.eos_id]

    def _pad(self, rows: list[list[int]]) -> torch.Tensor:
        out = torch.full((len(rows), max(len(r) for r in rows)), self.cfg.pad_id, dtype=torch.long)
        for i, row in enumerate(rows):
            out[i, :len(row)] = torch.tensor(row)
        return out.to(self.device)

    # -------------------------------------------------------------- translating
    def translate_ids(self, sources: list[list[int]], *, beam: int = 4, lenpen: float = 0.6,
                      lenpen_form: str = "gnmt", nbest: int = 1, max_tokens: int = 4096,
                      max_len_a: float = 1.0, max_len_b: int = 50,
                      on_batch: Callable[[int], None] | None = None) -> list[list[Hypothesis]]:
        """Decode token-id sources in length-sorted, token-bounded batches; input order kept."""
        if beam < 1:
            raise UserError(f"--beam ({beam}) must be at least 1")
        results: list[list[Hypothesis]] = [[] for _ in sources]
        todo = [i for i, s in enumerate(sources) if len(s) > 1]  # only EOS: nothing to translate
        for i in set(range(len(sources))) - set(todo):
            results[i] = [Hypothesis([], 0.0)]
        if not todo:
            return results
        # a batch's padded size counts the beam rows: (sentences x beam) x longest source
        sizes = np.array([len(sources[i]) for i in todo]) * beam
        limit = max(max_tokens, int(sizes.max()))
        for batch in token_batches(sizes, limit, seed=0, epoch=0, shuffle=False):
            rows = [todo[j] for j in batch]
            src = self._pad([sources[i] for i in rows])
            if beam == 1 and nbest == 1:
                hyps = [[h] for h in greedy_search(self.model, src, max_len_a=max_len_a,
                                                   max_len_b=max_len_b)]
            else:
                hyps = beam_search(self.model, src, beam=beam, lenpen=lenpen,
                                   lenpen_form=lenpen_form, nbest=nbest, max_len_a=max_len_a,
                                   max_len_b=max_len_b)
            for i, h in zip(rows, hyps):
                results[i] = h
            if on_batch is not None:
                on_batch(len(rows))
        return results

    def translate(self, sentences: Iterable[str], *, beam: int = 4, lenpen: float = 0.6,
                  nbest: int = 1, **options) -> list[str] | list[list[tuple[str, float]]]:
        """Translate sentences. nbest == 1: one string each; else lists of (text, score).

        An empty sentence gives an empty translation. ``options`` go to ``translate_ids``.
        """
        sentences = list(sentences)
        sources = [self.encode_source(s, i + 1) if s.strip() else [self.cfg.eos_id]
                   for i, s in enumerate(sentences)]
        hyps = self.translate_ids(sources, beam=beam, lenpen=lenpen, nbest=nbest, **options)
        if nbest == 1:
            return [self.tokenizer.decode(h[0].tokens) for h in hyps]
        return [[(self.tokenizer.decode(x.tokens), x.score) for x in h] for h in hyps]


    # --------------------------------------------------------------- inspecting
    def attention(self, source: str, target: str | None = None) -> "AttentionMaps":
        """Attention maps of one sentence: teacher-forced on ``target`` when given, otherwise on
        the model's own translation (beam 4)."""
        from .inspect import attention_maps
        src_ids = self.encode_source(source)
        if target is None:
            tgt_ids = self.translate_ids([src_ids])[0][0].tokens
        else:
            tgt_ids = self.tokenizer.encode(target)[: self.cfg.max_len - 1]
        return attention_maps(self.model, self.tokenizer, src_ids, tgt_ids)

    def align(self, source: str, translation: str) -> str:
        """Pharaoh 'i-j' word alignments of a translation, from cross-attention."""
        from .inspect import pharaoh, word_alignments
        if not source.strip() or not translation.strip():
            return ""
        return pharaoh(word_alignments(self.attention(source, translation)))


def quantize_int8(model: Transformer) -> Transformer:
    """Dynamic int8 quantization of every ``nn.Linear`` (torch.ao.quantization.quantize_dynamic)."""
    with warnings.catch_warnings():  # torch marks the eager quantization API deprecated
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def load(path: str | Path, *, device: str = "cpu", int8: bool = False) -> Translator:
    """Load a translator from a checkpoint or run directory."""
    return Translator.load(path, device=device, int8=int8)
