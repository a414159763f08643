"""Greedy decoding and beam search over the cached decoder step (§6.1).

Shapes: N sentences still decoding, V vocabulary, S source length.

Both work on a batch of source sentences and return, per sentence, hypotheses of token ids
(without BOS/EOS) with their scores. Each sentence has its own length limit, derived from its
own source length, and finished sentences leave the batch, so a sentence's result does not
depend on the batch it is decoded in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from ..config import ModelConfig
from ..model import DecoderCache
from ..runtime.cpu import top_k
from .sampling import filter_logits


class Seq2Seq(Protocol):
    """What a search needs from a model: ``Transformer`` is one; tests pass stand-ins."""

    cfg: ModelConfig

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, list[Tensor]]:
        """src (N, S) -> memory (N, S, D), src_mask (N, 1, 1, S), weights."""

    def init_cache(self, memory: Tensor, src_mask: Tensor, max_len: int, *,
                   beam: int = 1) -> DecoderCache:
        """A cache for ``beam`` rows per sentence and up to ``max_len`` target positions."""

    def decode_step(self, tgt: Tensor, cache: DecoderCache) -> Tensor:
        """tgt (rows, t) -> logits (rows, t, V); the cache advances by t."""


# the paper's decoding (§6.1): beam 4, length penalty 0.6, outputs up to input + 50; every
# default of the searches and of DecodeOptions is one of these
BEAM, LENPEN, MAX_LEN_A, MAX_LEN_B = 4, 0.6, 1.0, 50
LENGTH_PENALTIES = ("gnmt", "hf", "simple")
# How a search ends its hypotheses: aiayn's own (fairseq's) rules or Hugging Face generate's
BEAM_RULES = ("aiayn", "hf")


@dataclass
class Hypothesis:
    """tokens: ids without BOS/EOS; score: log-probability / length penalty (sum for greedy)."""

    tokens: list[int]
    score: float


def length_penalty(length: int, alpha: float, form: str = "gnmt") -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^alpha (the paper's, alpha = 0.6), or ``hf``: |Y|^alpha,
    Hugging Face generate's (``simple`` is another name for it).

    |Y| counts the generated tokens including EOS.
    """
    if form == "gnmt":
        return ((5.0 + length) / 6.0) ** alpha
    if form in ("hf", "simple"):
        return float(length) ** alpha
    raise ValueError(f"length penalty form ({form!r}) must be one of {', '.join(LENGTH_PENALTIES)}")


def max_output_lengths(src: Tensor, pad_id: int, a: float, b: int, cap: int) -> Tensor:
    """Per sentence: a * (source tokens) + b generated tokens (§6.1: input + 50), at most
    ``cap``."""
    src_len = (src != pad_id).sum(1)  # (N,)
    return (src_len.float() * a + b).long().clamp(1, cap)


def _next_log_probs(model: Seq2Seq, tokens: Tensor, cache, step: int, max_lens: Tensor,
                    min_len: int, rules: str = "aiayn", prefix: Tensor | None = None) -> Tensor:
    """Next-token log-probabilities (rows, V), normalised over the whole vocabulary, with the
    rules every search follows applied (-inf): never PAD or BOS, no EOS before ``min_len``
    tokens, only EOS at a row's length limit (with its own log-probability; with the "hf"
    rules 0, as Hugging Face's forced EOS), and only the prefix's token where a row's target
    prefix (``prefix`` (rows, P), padded with -1) has not ended."""
    cfg = model.cfg
    lprobs = model.decode_step(tokens, cache)[:, -1].float()  # (rows, V), the step's own
    if not getattr(model, "returns_log_probs", False):
        torch.log_softmax(lprobs, -1, out=lprobs)  # in place: no fresh (rows, V) tensor
    lprobs[:, cfg.pad_id] = float("-inf")
    if cfg.bos_id is not None:
        lprobs[:, cfg.bos_id] = float("-inf")
    if step < min_len:
        lprobs[:, cfg.eos_id] = float("-inf")
    at_limit = step + 1 >= max_lens  # (rows,)
    if at_limit.any():
        eos = lprobs[:, cfg.eos_id].clone()
        lprobs[at_limit] = float("-inf")
        # a model that rules EOS out entirely (-inf) still has to stop: log-probability 0
        forced = torch.isinf(eos) | (rules == "hf")
        lprobs[at_limit, cfg.eos_id] = torch.where(forced, 0.0, eos)[at_limit]
    if prefix is not None and step < prefix.size(1):
        token = prefix[:, step]  # (rows,), -1 where the prefix has ended
        rows = (token >= 0).nonzero().squeeze(1)
        if len(rows):
            keep = lprobs[rows, token[rows]].clone()
            lprobs[rows] = float("-inf")
            lprobs[rows, token[rows]] = keep
    return lprobs


def _prefix_lengths(prefix: Tensor | None, max_lens: Tensor, cap: int) -> Tensor:
    """Length limits that leave room for each row's prefix and one more token."""
    if prefix is None:
        return max_lens
    return torch.maximum(max_lens, (prefix >= 0).sum(1) + 1).clamp(max=cap)


def _token_by_token(model: Seq2Seq, src: Tensor, choose, *, max_len_a: float,
                    max_len_b: int, min_len: int, rules: str, prefix: Tensor | None
                    ) -> list[Hypothesis]:
    """One hypothesis per sentence, one token per step: ``choose(lprobs, rows)`` picks each
    remaining row's next token (rows: the sentence each row decodes); a row leaves at EOS.
    The score is the sum of the chosen tokens' log-probabilities."""
    cfg = model.cfg
    n = src.size(0)
    memory, src_mask, _ = model.encode(src)
    max_lens = max_output_lengths(src, cfg.pad_id, max_len_a, max_len_b, cfg.max_len)
    max_lens = _prefix_lengths(prefix, max_lens, cfg.max_len)
    cache = model.init_cache(memory, src_mask, int(max_lens.max()))
    rows = torch.arange(n)  # which sentence each remaining row is
    tokens = torch.full((n, 1), cfg.start_id, dtype=torch.long, device=src.device)
    out: list[list[int]] = [[] for _ in range(n)]
    scores = [0.0] * n
    step = 0
    while len(rows):
        lprobs = _next_log_probs(model, tokens, cache, step, max_lens, min_len, rules, prefix)
        chosen = choose(lprobs, rows)  # (rows,)
        picked = lprobs.gather(1, chosen[:, None])[:, 0]
        done = (chosen == cfg.eos_id).tolist()
        for sentence, token, lp, finished in zip(rows.tolist(), chosen.tolist(),
                                                 picked.tolist(), done):
            scores[sentence] += lp
            if not finished:
                out[sentence].append(token)
        if any(done):
            keep = torch.tensor([i for i, d in enumerate(done) if not d], dtype=torch.long,
                                device=chosen.device)
            rows, max_lens, chosen = rows[keep.cpu()], max_lens[keep], chosen[keep]
            prefix = prefix[keep] if prefix is not None else None
            cache.reorder(keep)
        tokens = chosen[:, None]
        step += 1
    return [Hypothesis(t, s) for t, s in zip(out, scores)]


@torch.inference_mode()
def greedy_search(model: Seq2Seq, src: Tensor, *, max_len_a: float = MAX_LEN_A,
                  max_len_b: int = MAX_LEN_B, min_len: int = 0, rules: str = "aiayn",
                  prefix: Tensor | None = None) -> list[Hypothesis]:
    """The most probable token at every step. src (N, S) -> one Hypothesis per sentence.

    ``prefix`` (N, P), padded with -1: target tokens each output starts with (forced, their
    log-probabilities counted)."""
    whole = getattr(model, "greedy_sentence", None)  # one sentence decoded in compiled code
    if whole is not None and src.size(0) == 1 and prefix is None and rules == "aiayn":
        cfg = model.cfg
        limit = max_output_lengths(src, cfg.pad_id, max_len_a, max_len_b, cfg.max_len)
        found = whole(src, max_len=int(limit[0]), min_len=min_len)
        if found is not None:
            return [Hypothesis(*found)]
    return _token_by_token(model, src, lambda lprobs, rows: top_k(lprobs, 1)[1][:, 0],
                           max_len_a=max_len_a, max_len_b=max_len_b, min_len=min_len,
                           rules=rules, prefix=prefix)


@torch.inference_mode()
def sample_search(model: Seq2Seq, src: Tensor, *, seeds: list[int], temperature: float = 1.0,
                  top_k: int = 0, top_p: float = 1.0, max_len_a: float = MAX_LEN_A,
                  max_len_b: int = MAX_LEN_B, prefix: Tensor | None = None) -> list[Hypothesis]:
    """One sampled output per sentence (back-translation: Edunov et al., 2018): each step draws
    from the tempered next-token distribution, cut to the top ``top_k`` tokens and to the
    nucleus of mass ``top_p``. Sentence i draws from its own generator seeded ``seeds[i]``, so
    its sample does not depend on the batch it is decoded in. The score is the sample's
    log-probability under the model (untempered)."""
    if temperature <= 0:
        raise ValueError(f"temperature ({temperature}) must be positive; use beam 1 for greedy")
    generators = [torch.Generator(device=src.device).manual_seed(s) for s in seeds]

    def draw(lprobs: Tensor, rows: Tensor) -> Tensor:
        probs = filter_logits(lprobs / temperature, top_k=top_k, top_p=top_p).softmax(-1)
        return torch.stack([torch.multinomial(probs[r], 1, generator=generators[int(s)])[0]
                            for r, s in enumerate(rows.tolist())])
    return _token_by_token(model, src, draw, max_len_a=max_len_a, max_len_b=max_len_b,
                           min_len=0, rules="aiayn", prefix=prefix)


@dataclass
class _Candidates:
    """The best continuations of each sentence's beams, best first: (N, C) each."""

    scores: Tensor  # running log-probability of the continued prefix
    beam: Tensor  # which of the sentence's beams it continues
    token: Tensor  # the token it appends

    def take(self, index: Tensor) -> "_Candidates":
        return _Candidates(self.scores.gather(1, index), self.beam.gather(1, index),
                           self.token.gather(1, index))


def _expand(lprobs: Tensor, scores: Tensor, beam: int) -> _Candidates:
    """The 2 x beam best continuations of every sentence: they are among each beam's own
    2 x beam best tokens. lprobs (N * w, V) for w beams a sentence, scores (N, w)."""
    n, w = scores.shape
    c = min(2 * beam, lprobs.size(-1))
    row_lprobs, row_tokens = top_k(lprobs, c)  # (N * w, c)
    totals = (scores[:, :, None] + row_lprobs.view(n, w, c)).view(n, w * c)
    best, index = totals.topk(min(2 * beam, w * c), dim=1)  # (N, 2 beam)
    return _Candidates(best, index // c, row_tokens.view(n, w * c).gather(1, index))


def _finish(cand: _Candidates, is_eos: Tensor, beam: int, w: int, history: Tensor,
            sentences: Tensor, finished: list[list[Hypothesis]], penalty: float,
            rules: str = "aiayn") -> None:
    """Rule 1: an EOS ranked among the first ``beam`` candidates ends a hypothesis, its score
    divided by the length penalty; a sentence keeps ``beam`` finished ones: the first ones
    (aiayn) or the best ones ("hf"). ``history`` holds the tokens of the w rows (beams so far)
    of every sentence."""
    ends = is_eos[:, :beam] & torch.isfinite(cand.scores[:, :beam])
    if not ends.any():
        return
    for group, j in ends.nonzero().tolist():
        sentence = int(sentences[group])
        if len(finished[sentence]) < beam or rules == "hf":
            row = group * w + int(cand.beam[group, j])
            finished[sentence].append(Hypothesis(history[row].tolist(),
                                                 float(cand.scores[group, j]) / penalty))
            if rules == "hf":  # the best `beam`, earlier ones first among equals
                finished[sentence].sort(key=lambda h: -h.score)
                del finished[sentence][beam:]


def _select(cand: _Candidates, is_eos: Tensor, beam: int) -> _Candidates:
    """Rule 2: the best ``beam`` candidates that do not end carry on (a stable sort puts the
    non-EOS candidates first, in rank order)."""
    return cand.take(is_eos.to(torch.uint8).argsort(dim=1, stable=True)[:, :beam])


def _sentences_done(finished: list[list[Hypothesis]], sentences: Tensor, beam: int,
                    at_limit: Tensor, best_open: Tensor, penalty: float,
                    rules: str = "aiayn") -> Tensor:
    """Rule 3: a sentence is done at its length limit, or with ``beam`` finished hypotheses;
    with the "hf" rules only once its best open beam, its score divided by the length penalty
    at the current length, cannot beat the worst finished one (Hugging Face's heuristic).
    ``best_open`` (N,): each sentence's best running score."""
    full = [len(finished[s]) >= beam for s in sentences.tolist()]
    if rules == "hf":
        full = [f and float(b) / penalty <= finished[s][-1].score
                for f, s, b in zip(full, sentences.tolist(), best_open.tolist())]
    return torch.tensor(full, device=at_limit.device) | at_limit


@torch.inference_mode()
def beam_search(model: Seq2Seq, src: Tensor, *, beam: int = BEAM, lenpen: float = LENPEN,
                lenpen_form: str = "gnmt", nbest: int = 1, max_len_a: float = MAX_LEN_A,
                max_len_b: int = MAX_LEN_B, min_len: int = 0, rules: str = "aiayn",
                prefix: Tensor | None = None) -> list[list[Hypothesis]]:
    """Beam search with a length penalty (§6.1: beam 4, alpha 0.6, max length input + 50).

    Each step takes the 2 x beam best continuations of a sentence's beams, so that beams
    ending in EOS do not starve the search, then applies three rules: finish (EOS within the
    first ``beam`` candidates), select (the best ``beam`` others carry on) and drop the
    sentences that are done, which leave the batch.

    ``rules`` "hf" follows Hugging Face ``generate`` (early_stopping False) instead: the best
    ``beam`` finished hypotheses are kept, a sentence goes on while its best open beam could
    still beat them, and EOS is forced with log-probability 0 at the length limit; with
    ``lenpen_form="hf"``, ``max_len_a=0`` and ``max_len_b=max_length - 1`` it reproduces
    ``generate(num_beams=beam, length_penalty=lenpen, max_length=max_length)``.

    ``prefix`` (N, P), padded with -1: target tokens every hypothesis of a sentence starts
    with (forced, their log-probabilities counted).

    Returns, per sentence, the ``nbest`` best finished hypotheses, best first.
    """
    if not 1 <= nbest <= beam:
        raise ValueError(f"nbest ({nbest}) must be between 1 and the beam size ({beam})")
    length_penalty(1, lenpen, lenpen_form)  # validates the form
    if rules not in BEAM_RULES:
        raise ValueError(f"rules ({rules!r}) must be one of {', '.join(BEAM_RULES)}")
    cfg = model.cfg
    n, device = src.size(0), src.device
    memory, src_mask, _ = model.encode(src)
    max_lens = max_output_lengths(src, cfg.pad_id, max_len_a, max_len_b, cfg.max_len)
    max_lens = _prefix_lengths(prefix, max_lens, cfg.max_len)
    # At the start all beams of a sentence would be the same: decode one row per sentence and
    # expand to the full beam at the first step (unless the vocabulary cannot fill the beam:
    # then every beam from the start, the missing ones at -inf).
    first = 1 if cfg.target_vocab_size >= beam else beam
    # cross-attention keys/values are projected and kept once per sentence, shared by its beams
    cache = model.init_cache(memory, src_mask, int(max_lens.max()), beam=first)

    sentences = torch.arange(n)  # which input sentence each active group decodes
    scores = torch.full((n, first), float("-inf"), device=device)  # (N, beams so far)
    scores[:, 0] = 0.0
    max_lens = max_lens.repeat_interleave(first)  # (N * beams,)
    if prefix is not None:
        prefix = prefix.repeat_interleave(first, dim=0)
    history = torch.zeros((n * first, 0), dtype=torch.long, device=device)  # tokens so far
    tokens = torch.full((n * first, 1), cfg.start_id, dtype=torch.long, device=device)
    finished: list[list[Hypothesis]] = [[] for _ in range(n)]
    step = 0
    while len(sentences):
        lprobs = _next_log_probs(model, tokens, cache, step, max_lens, min_len, rules, prefix)
        cand = _expand(lprobs, scores, beam)
        is_eos = cand.token == cfg.eos_id
        penalty = length_penalty(step + 1, lenpen, lenpen_form)
        _finish(cand, is_eos, beam, scores.size(1), history, sentences, finished, penalty, rules)
        cand = _select(cand, is_eos, beam)  # (N, beam)
        at_limit = step + 1 >= max_lens.view(len(sentences), -1)[:, 0]
        done = _sentences_done(finished, sentences, beam, at_limit, cand.scores[:, 0], penalty,
                               rules)
        keep = (~done).nonzero().squeeze(1)
        rows = (keep[:, None] * scores.size(1) + cand.beam[keep]).view(-1)  # rows carried on
        history = torch.cat([history[rows], cand.token[keep].view(-1, 1)], dim=1)
        tokens = cand.token[keep].view(-1, 1)
        scores = cand.scores[keep]
        max_lens = max_lens[rows]
        prefix = prefix[rows] if prefix is not None else None
        sentences = sentences[keep.cpu()]
        if len(sentences):
            cache.reorder(rows, group=beam)
        step += 1
    for hyps in finished:
        hyps.sort(key=lambda h: -h.score)
    return [hyps[:nbest] for hyps in finished]
