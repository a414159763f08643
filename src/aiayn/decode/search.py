"""Greedy decoding and beam search over the cached decoder step (§6.1).

Shapes: N sentences still decoding, k beam size, V vocabulary, S source length.

Both work on a batch of source sentences and return, per sentence, hypotheses of token ids
(without BOS/EOS) with their scores. Each sentence has its own length limit, derived from its
own source length, and finished sentences leave the batch, so a sentence's result does not
depend on the batch it is decoded in.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..model import Transformer

LENGTH_PENALTIES = ("gnmt", "simple")


@dataclass
class Hypothesis:
    """tokens: ids without BOS/EOS; score: log-probability / length penalty (sum for greedy)."""

    tokens: list[int]
    score: float


def length_penalty(length: int, alpha: float, form: str = "gnmt") -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^alpha (the paper's, alpha = 0.6), or ``simple``: |Y|^alpha.

    |Y| counts the generated tokens including EOS.
    """
    if form == "gnmt":
        return ((5.0 + length) / 6.0) ** alpha
    if form == "simple":
        return float(length) ** alpha
    raise ValueError(f"length penalty form ({form!r}) must be one of {', '.join(LENGTH_PENALTIES)}")


def max_output_lengths(src: Tensor, pad_id: int, a: float, b: int, cap: int) -> Tensor:
    """Per sentence: a * (source tokens) + b generated tokens (§6.1: input + 50), at most ``cap``."""
    src_len = (src != pad_id).sum(1)  # (N,)
    return (src_len.float() * a + b).long().clamp(1, cap)


def top_k(x: Tensor, k: int, block: int = 64) -> tuple[Tensor, Tensor]:
    """``x.topk(k, dim=-1)`` (values and indices, best first) for x (rows, V), faster on CPU.

    PyTorch's CPU top-k (and ``max`` with indices) walk every element one at a time, while a
    plain maximum is vectorized: for 128 rows of 8,000 logits, topk(8) takes ~640 us and
    amax ~30 us here. So: take the maximum of every block of ``block`` entries; a row's k best
    entries lie in its k blocks with the largest maxima (a block holding one of them has a
    maximum at least as large as the k-th best; any other block's maximum is smaller); run the
    exact top-k on those k blocks only. Entries that tie may come back in another order than
    ``torch.topk``'s.
    """
    rows, v = x.shape
    n_blocks = v // block
    if n_blocks < 4 * k or not x.is_cpu:
        return x.topk(k, dim=-1)
    head = x[:, :n_blocks * block].reshape(rows, n_blocks, block)
    best_blocks = head.amax(-1).topk(k, dim=-1).indices  # (rows, k)
    cand = head.gather(1, best_blocks[:, :, None].expand(rows, k, block)).view(rows, k * block)
    cand_idx = (best_blocks[:, :, None] * block
                + torch.arange(block, device=x.device)).view(rows, k * block)
    if v > n_blocks * block:  # the last, partial block: always a candidate
        cand = torch.cat([cand, x[:, n_blocks * block:]], dim=1)
        cand_idx = torch.cat([cand_idx, torch.arange(n_blocks * block, v, device=x.device)
                              .expand(rows, -1)], dim=1)
    values, pos = cand.topk(k, dim=-1)
    return values, cand_idx.gather(1, pos)


def _next_log_probs(model: Transformer, tokens: Tensor, cache, step: int, max_lens: Tensor,
                    min_len: int) -> Tensor:
    """Next-token log-probabilities (rows, V), normalised over the whole vocabulary, with the
    rules every search follows applied (-inf): never PAD or BOS, no EOS before ``min_len``
    tokens, only EOS at a row's length limit."""
    cfg = model.cfg
    lprobs = model.decode_step(tokens, cache)[:, -1].float().log_softmax(-1)  # (rows, V)
    lprobs[:, cfg.pad_id] = float("-inf")
    lprobs[:, cfg.bos_id] = float("-inf")
    if step < min_len:
        lprobs[:, cfg.eos_id] = float("-inf")
    at_limit = step + 1 >= max_lens  # (rows,)
    if at_limit.any():
        eos = lprobs[:, cfg.eos_id].clone()
        lprobs[at_limit] = float("-inf")
        # a model that rules EOS out entirely (-inf) still has to stop: log-probability 0
        lprobs[at_limit, cfg.eos_id] = torch.where(torch.isinf(eos), 0.0, eos)[at_limit]
    return lprobs


@torch.inference_mode()
def greedy_search(model: Transformer, src: Tensor, *, max_len_a: float = 1.0,
                  max_len_b: int = 50, min_len: int = 0) -> list[Hypothesis]:
    """The most probable token at every step. src (N, S) -> one Hypothesis per sentence."""
    cfg = model.cfg
    n = src.size(0)
    memory, src_mask, _ = model.encode(src)
    max_lens = max_output_lengths(src, cfg.pad_id, max_len_a, max_len_b, cfg.max_len)
    cache = model.init_cache(memory, src_mask, int(max_lens.max()))
    rows = torch.arange(n)  # which sentence each remaining row is
    tokens = torch.full((n, 1), cfg.bos_id, dtype=torch.long, device=src.device)
    out: list[list[int]] = [[] for _ in range(n)]
    scores = [0.0] * n
    step = 0
    while len(rows):
        lprobs = _next_log_probs(model, tokens, cache, step, max_lens, min_len)
        best_lp, best = (t[:, 0] for t in top_k(lprobs, 1))  # (rows,)
        done = best == cfg.eos_id
        for sentence, token, lp, finished in zip(rows.tolist(), best.tolist(), best_lp.tolist(),
                                                 done.tolist()):
            scores[sentence] += lp
            if not finished:
                out[sentence].append(token)
        if done.any():
            keep = (~done).nonzero().squeeze(1)
            rows, max_lens, best = rows[keep.cpu()], max_lens[keep], best[keep]
            cache.reorder(keep)
        tokens = best[:, None]
        step += 1
    return [Hypothesis(t, s) for t, s in zip(out, scores)]


@torch.inference_mode()
def beam_search(model: Transformer, src: Tensor, *, beam: int = 4, lenpen: float = 0.6,
                lenpen_form: str = "gnmt", nbest: int = 1, max_len_a: float = 1.0,
                max_len_b: int = 50, min_len: int = 0) -> list[list[Hypothesis]]:
    """Beam search with a length penalty (§6.1: beam 4, alpha 0.6, max length input + 50).

    Each step takes the 2k best continuations of the k beams, so that beams ending in EOS do not
    starve the search; EOS candidates ranked within the first k are finished (score divided by
    the length penalty), the best k others carry on. A sentence stops once k hypotheses have
    finished (or at its length limit), and leaves the batch.

    Returns, per sentence, the ``nbest`` best finished hypotheses, best first.
    """
    if not 1 <= nbest <= beam:
        raise ValueError(f"nbest ({nbest}) must be between 1 and the beam size ({beam})")
    length_penalty(1, lenpen, lenpen_form)  # validates the form
    cfg = model.cfg
    n, k, device = src.size(0), beam, src.device
    memory, src_mask, _ = model.encode(src)
    max_lens = max_output_lengths(src, cfg.pad_id, max_len_a, max_len_b, cfg.max_len)
    # At the start all k beams of a sentence would be the same: decode one row per sentence,
    # k from the first step on (k dead beams at -inf only if the vocabulary cannot fill k).
    width = 1 if cfg.target_vocab_size >= k else k  # beams per sentence
    # cross-attention keys/values are projected and kept once per sentence, shared by its beams
    cache = model.init_cache(memory, src_mask, int(max_lens.max()), beam=width)
    max_lens = max_lens.repeat_interleave(width)  # (N*width,)

    sentences = torch.arange(n)  # which input sentence each active group decodes
    scores = torch.full((n, width), float("-inf"), device=device)
    scores[:, 0] = 0.0
    history = torch.full((n * width, 0), 0, dtype=torch.long, device=device)  # (N*width, t)
    tokens = torch.full((n * width, 1), cfg.bos_id, dtype=torch.long, device=device)
    finished: list[list[Hypothesis]] = [[] for _ in range(n)]
    step = 0
    while len(sentences):
        active = len(sentences)
        lprobs = _next_log_probs(model, tokens, cache, step, max_lens, min_len)
        # the 2k best continuations of all beams are among each beam's own 2k best tokens
        c = min(2 * k, lprobs.size(-1))
        row_lprobs, row_tokens = top_k(lprobs, c)  # (N*width, c)
        cand = (scores[:, :, None] + row_lprobs.view(active, width, c)).view(active, width * c)
        top_scores, top_idx = cand.topk(min(2 * k, width * c), dim=1)  # (N, 2k)
        top_beam = top_idx // c
        top_token = row_tokens.view(active, width * c).gather(1, top_idx)

        # 1) finish: EOS among the first k candidates, score normalised by the length penalty
        is_eos = top_token == cfg.eos_id
        eos_first_k = is_eos[:, :k] & torch.isfinite(top_scores[:, :k])
        if eos_first_k.any():
            lp = length_penalty(step + 1, lenpen, lenpen_form)
            for group, j in eos_first_k.nonzero().tolist():
                row = group * width + int(top_beam[group, j])
                sentence = int(sentences[group])
                if len(finished[sentence]) < k:
                    finished[sentence].append(Hypothesis(
                        history[row].tolist(), float(top_scores[group, j]) / lp))

        # 2) carry on: the best k candidates that are not EOS
        alive_rank = torch.where(is_eos, torch.full_like(top_idx, 10 ** 9),
                                 torch.arange(top_idx.size(1), device=device).expand_as(top_idx))
        pick = alive_rank.argsort(dim=1, stable=True)[:, :k]  # (N, k)
        new_beam = top_beam.gather(1, pick)
        new_token = top_token.gather(1, pick)
        scores = top_scores.gather(1, pick)

        # 3) sentences with k finished hypotheses (or at their limit) leave the batch
        at_limit = step + 1 >= max_lens.view(active, width)[:, 0]
        done = torch.tensor([len(finished[s]) >= k for s in sentences.tolist()],
                            device=device) | at_limit
        keep = (~done).nonzero().squeeze(1)  # (N',)
        rows = (keep[:, None] * width + new_beam[keep]).view(-1)  # (N'*k,) rows carried on
        history = torch.cat([history[rows], new_token[keep].view(-1, 1)], dim=1)
        tokens = new_token[keep].view(-1, 1)
        scores = scores[keep]
        max_lens = max_lens[rows]
        sentences = sentences[keep.cpu()]
        if len(sentences):
            cache.reorder(rows, group=k)
        width = k
        step += 1
    for hyps in finished:
        hyps.sort(key=lambda h: -h.score)
    return [hyps[:nbest] for hyps in finished]
