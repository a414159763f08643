"""`aiayn generate`: continue a prompt with a decoder-only language model checkpoint."""

from __future__ import annotations

from pathlib import Path

import torch

from . import checkpoint as ckpt
from . import cpu
from .data.tokenizer import Tokenizer
from .decode.sampling import sample
from .errors import UserError
from .model import LanguageModel


class Generator:
    """A trained LanguageModel with its tokenizer."""

    def __init__(self, model: LanguageModel, tokenizer: Tokenizer) -> None:
        self.model, self.tokenizer, self.cfg = model.eval(), tokenizer, model.cfg

    @classmethod
    def load(cls, path: str | Path) -> "Generator":
        directory = ckpt.resolve_checkpoint(path)
        if ckpt.load_arch(directory) != "decoder-only":
            raise UserError(f"{directory} holds an encoder-decoder (translation) model; generate "
                            "with a decoder-only checkpoint (train --arch decoder-only), or use "
                            "`aiayn translate`")
        cpu.reuse_freed_memory()  # decoding steps reuse their buffers' pages
        model = cpu.for_inference(ckpt.load_model(directory))
        return cls(model, ckpt.load_tokenizer(directory))

    def generate(self, prompt: str, *, max_new_tokens: int = 50, temperature: float = 1.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int | None = None) -> str:
        """The prompt's continuation as text (BOS + prompt pieces condition the model)."""
        ids = [self.cfg.start_id] + self.tokenizer.encode(prompt)
        if len(ids) >= self.cfg.max_len:
            raise UserError(f"the prompt has {len(ids)} tokens; the model reads at most "
                            f"{self.cfg.max_len - 1}")
        try:
            out = sample(self.model, torch.tensor([ids]), max_new_tokens=max_new_tokens,
                         temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        except ValueError as err:
            raise UserError(str(err)) from None
        return self.tokenizer.decode(out[0])
