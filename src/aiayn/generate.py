"""`aiayn generate`: continue a prompt with a decoder-only language model checkpoint."""

from __future__ import annotations

from pathlib import Path

import torch

from .data.tokenizer import Tokenizer
from .decode.memory import reuse_freed_memory
from .decode.sampling import sample
from .errors import UserError
from .model import LanguageModel
from .train import checkpoint as ckpt


class Generator:
    """A trained LanguageModel with its tokenizer."""

    def __init__(self, model: LanguageModel, tokenizer: Tokenizer) -> None:
        self.model, self.tokenizer, self.cfg = model.eval(), tokenizer, model.cfg
        reuse_freed_memory()  # decoding steps reuse their buffers' pages (decode/memory.py)

    @classmethod
    def load(cls, path: str | Path) -> "Generator":
        directory = ckpt.resolve_checkpoint(path)
        if ckpt.load_arch(directory) != "decoder-only":
            raise UserError(f"{directory} holds an encoder-decoder (translation) model; generate "
                            "with a decoder-only checkpoint (train --arch decoder-only), or use "
                            "`aiayn translate`")
        return cls(ckpt.load_model(directory), Tokenizer.load(directory / ckpt.TOKENIZER))

    def generate(self, prompt: str, *, max_new_tokens: int = 50, temperature: float = 1.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int | None = None) -> str:
        """The prompt's continuation as text (BOS + prompt pieces condition the model)."""
        ids = [self.cfg.bos_id] + self.tokenizer.encode(prompt)
        if len(ids) >= self.cfg.max_len:
            raise UserError(f"the prompt has {len(ids)} tokens; the model reads at most "
                            f"{self.cfg.max_len - 1}")
        try:
            out = sample(self.model, torch.tensor([ids]), max_new_tokens=max_new_tokens,
                         temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        except ValueError as err:
            raise UserError(str(err)) from None
        return self.tokenizer.decode(out[0])
