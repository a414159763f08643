"""`aiayn generate`: continue a prompt with a decoder-only language model checkpoint."""

from __future__ import annotations

from pathlib import Path

import torch

from .checkpoint import Checkpoint
from .data.tokenizer import AnyTokenizer
from .decode.sampling import sample
from .errors import UserError
from .model import LanguageModel
from .runtime import cpu


class Generator:
    """A trained LanguageModel with its tokenizer."""

    def __init__(self, model: LanguageModel, tokenizer: AnyTokenizer) -> None:
        self.model, self.tokenizer, self.cfg = model.eval(), tokenizer, model.cfg

    @classmethod
    def load(cls, path: str | Path) -> "Generator":
        checkpoint = Checkpoint.open(path).require(
            "decoder-only", "generate with a decoder-only checkpoint (train --arch "
            "decoder-only), or use `aiayn translate`")
        cpu.reuse_freed_memory()  # decoding steps reuse their buffers' pages
        return cls(cpu.for_inference(checkpoint.model(LanguageModel)), checkpoint.tokenizer)

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
