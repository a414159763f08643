"""Sampling from the decoder-only language model: temperature, top-k, top-p (nucleus), seeded.

Shapes: B prompts, T prompt length, V vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..model import LanguageModel


def filter_logits(logits: Tensor, *, top_k: int = 0, top_p: float = 1.0) -> Tensor:
    """Set to -inf every logit outside the top k and outside the smallest set of tokens whose
    probability reaches ``top_p`` (the most probable token always stays). logits (B, V)."""
    if top_k > 0 and top_k < logits.size(-1):
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        cumulative = sorted_logits.softmax(-1).cumsum(-1)
        # drop a token when the tokens before it already reach top_p
        drop_sorted = (cumulative - sorted_logits.softmax(-1)) >= top_p
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


@torch.inference_mode()
def sample(model: LanguageModel, prompt: Tensor, *, max_new_tokens: int = 50,
           temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
           seed: int | None = None, stop_at_eos: bool = True) -> list[list[int]]:
    """Continue each prompt (B, T) of equal length; returns the new tokens per prompt.

    ``temperature`` 0 means greedy. With ``seed`` the result is reproducible.
    """
    if temperature < 0:
        raise ValueError(f"temperature ({temperature}) must be >= 0")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p ({top_p}) must be in (0, 1]")
    if top_k < 0:
        raise ValueError(f"top_k ({top_k}) must be >= 0")
    cfg = model.cfg
    b, t = prompt.shape
    max_new_tokens = min(max_new_tokens, cfg.max_len - t)
    generator = torch.Generator(device=prompt.device)
    if seed is not None:
        generator.manual_seed(seed)
    else:
        generator.seed()
    cache = model.init_cache(b, t + max_new_tokens)
    logits = model.decode_step(prompt, cache)[:, -1]  # (B, V)
    out: list[list[int]] = [[] for _ in range(b)]
    done = torch.zeros(b, dtype=torch.bool, device=prompt.device)
    for _ in range(max_new_tokens):
        logits = logits.float()
        logits[:, cfg.pad_id] = float("-inf")
        if temperature == 0:
            token = logits.argmax(-1)
        else:
            filtered = filter_logits(logits / temperature, top_k=top_k, top_p=top_p)
            token = torch.multinomial(filtered.softmax(-1), 1, generator=generator).squeeze(1)
        for row in (~done).nonzero().squeeze(1).tolist():
            if stop_at_eos and token[row] == cfg.eos_id:
                done[row] = True
            else:
                out[row].append(int(token[row]))
        if bool(done.all()):
            break
        logits = model.decode_step(token[:, None], cache)[:, -1]
    return out
