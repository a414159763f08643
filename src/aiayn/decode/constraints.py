"""Lexically constrained beam search: every hypothesis that ends carries the given target terms
(Post and Vilar 2018, dynamic beam allocation; fairseq's ``--constraints``).

Shapes: N sentences still decoding, w beams each (1 at the first step), V vocabulary.

A constraint is a term's token ids, which must appear contiguously in the output; a sentence
may have several, each of several tokens. Each hypothesis tracks which terms it has met and
how far into one it is (``Progress``). At each step the candidates of a sentence are its beams'
best continuations, every beam's own best token, and, for every beam, each token that would
advance a term. They are grouped into banks by the number of constraint tokens met, and the
beam is filled from the banks in turn, most advanced first, the best candidate of each bank at
a time, so that hypotheses which met more of their terms are not crowded out by likelier ones
that met fewer. A hypothesis ends (EOS) only once it has met every term, except at its length
limit, where a sentence's hypotheses that met all terms still rank first. Each sentence's
search reads only its own rows, so its result does not depend on the batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .search import (
    BEAM,
    LENPEN,
    MAX_LEN_A,
    MAX_LEN_B,
    Hypothesis,
    Seq2Seq,
    _next_log_probs,
    length_penalty,
    max_output_lengths,
)


@dataclass(frozen=True)
class Progress:
    """How far a hypothesis is through its sentence's terms.

    Attributes:
        terms: the terms, token ids each.
        met: per term, whether the hypothesis has written it.
        term, at: the term under way and how many of its tokens are written (-1, 0: none).
    """

    terms: tuple[tuple[int, ...], ...]
    met: tuple[bool, ...]
    term: int = -1
    at: int = 0

    @classmethod
    def start(cls, terms: list[list[int]]) -> "Progress":
        return cls(tuple(tuple(t) for t in terms), (False,) * len(terms))

    @property
    def done(self) -> bool:
        return all(self.met)

    @property
    def tokens_met(self) -> int:
        """Constraint tokens written: the bank of the hypothesis."""
        return sum(len(t) for t, m in zip(self.terms, self.met) if m) + self.at

    def next_tokens(self) -> set[int]:
        """The tokens that would advance a term."""
        if self.term >= 0:
            return {self.terms[self.term][self.at]}
        return {t[0] for t, m in zip(self.terms, self.met) if not m}

    def advance(self, token: int) -> "Progress":
        if self.term >= 0 and self.terms[self.term][self.at] == token:
            return self._written(self.term, self.at + 1)
        # not (or no longer) in a term: does the token begin one?
        for k, (term, met) in enumerate(zip(self.terms, self.met)):
            if not met and term[0] == token:
                return Progress(self.terms, self.met)._written(k, 1)
        return Progress(self.terms, self.met)

    def _written(self, term: int, at: int) -> "Progress":
        if at == len(self.terms[term]):
            met = tuple(m or k == term for k, m in enumerate(self.met))
            return Progress(self.terms, met)
        return Progress(self.terms, self.met, term, at)


@torch.inference_mode()
def constrained_beam_search(model: Seq2Seq, src: Tensor, constraints: list[list[list[int]]], *,
                            beam: int = BEAM, lenpen: float = LENPEN,
                            lenpen_form: str = "gnmt", nbest: int = 1,
                            max_len_a: float = MAX_LEN_A, max_len_b: int = MAX_LEN_B
                            ) -> list[list[Hypothesis]]:
    """Beam search whose outputs contain every term of ``constraints`` (per sentence, a list
    of terms, each a list of token ids; terms that cannot fit the sentence's length limit
    should be dropped before). src (N, S) -> per sentence the ``nbest`` best hypotheses, those
    that met all their terms first."""
    if not 1 <= nbest <= beam:
        raise ValueError(f"nbest ({nbest}) must be between 1 and the beam size ({beam})")
    cfg = model.cfg
    n, device = src.size(0), src.device
    memory, src_mask, _ = model.encode(src)
    max_lens = max_output_lengths(src, cfg.pad_id, max_len_a, max_len_b, cfg.max_len)
    cache = model.init_cache(memory, src_mask, int(max_lens.max()), beam=beam)
    # every sentence has `beam` rows from the start; all but the first at -inf
    scores = torch.full((n, beam), float("-inf"), device=device)
    scores[:, 0] = 0.0
    progress = [[Progress.start(c)] * beam for c in constraints]
    history: list[list[list[int]]] = [[[] for _ in range(beam)] for _ in range(n)]
    tokens = torch.full((n * beam, 1), cfg.start_id, dtype=torch.long, device=device)
    sentences = list(range(n))  # which input sentence each active group decodes
    row_lens = max_lens.repeat_interleave(beam)
    finished: list[list[tuple[bool, Hypothesis]]] = [[] for _ in range(n)]
    step = 0
    while sentences:
        lprobs = _next_log_probs(model, tokens, cache, step, row_lens, 0)  # (N * beam, V)
        totals = (scores.view(-1, 1) + lprobs).view(len(sentences), beam, -1)  # (N, beam, V)
        penalty = length_penalty(step + 1, lenpen, lenpen_form)
        offered = _offers(totals, [progress[sentence] for sentence in sentences], beam)
        rows, next_tokens, next_scores, keep = [], [], [], []
        new_progress, new_history = [], []
        for group, sentence in enumerate(sentences):
            at_limit = step + 1 >= int(max_lens[sentence])
            chosen = _allocate(offered[group], progress[sentence], cfg.eos_id, at_limit)
            ended = [c for c in chosen[:beam] if c[2] == cfg.eos_id]
            for score, b, _, state in ended:
                if len(finished[sentence]) < beam or at_limit:
                    finished[sentence].append((state.done, Hypothesis(
                        history[sentence][b], score / penalty)))
            going = [c for c in chosen if c[2] != cfg.eos_id][:beam]
            done = at_limit or not going or sum(ok for ok, _ in finished[sentence]) >= beam
            if done:
                continue
            going += [(float("-inf"), 0, cfg.pad_id, progress[sentence][0])] * \
                (beam - len(going))
            keep.append(sentence)
            rows += [group * beam + b for _, b, _, _ in going]
            next_tokens += [t for _, _, t, _ in going]
            next_scores.append([s for s, _, _, _ in going])
            new_progress.append([state for _, _, _, state in going])
            new_history.append([history[sentence][b] + [t] for _, b, t, _ in going])
        for sentence, states, past in zip(keep, new_progress, new_history):
            progress[sentence], history[sentence] = states, past
        sentences = keep
        if not sentences:
            break
        index = torch.tensor(rows, dtype=torch.long, device=device)
        cache.reorder(index, group=beam)
        row_lens = row_lens[index]
        tokens = torch.tensor(next_tokens, dtype=torch.long, device=device)[:, None]
        scores = torch.tensor(next_scores, device=device)
        step += 1
    out = []
    for hyps in finished:
        if not hyps:  # (only when every candidate of a step was impossible)
            hyps.append((False, Hypothesis([], float("-inf"))))
        hyps.sort(key=lambda h: (not h[0], -h[1].score))  # those that met all terms first
        out.append([h for _, h in hyps[:nbest]])
    return out


def _offers(totals: Tensor, progress: list[list[Progress]], beam: int
            ) -> list[list[tuple[float, int, int]]]:
    """Each sentence's candidates as (score, row, token), in the order they are offered: the
    best ``2 * beam`` of all its rows' continuations, every row's own best token, then every
    token that would advance a term, each once and none at -inf. totals (N, beam, V), read
    from the device in three passes for all sentences together (a pass a sentence made the
    search's bookkeeping cost as much as the model's steps)."""
    n, rows, width = totals.shape
    top_scores, top_index = totals.view(n, -1).topk(min(2 * beam, rows * width))
    best = totals.argmax(-1)  # (N, beam): every row's own best token
    best_scores = totals.gather(-1, best[..., None])[..., 0]
    wanted = [(g, b, t) for g, states in enumerate(progress) for b, state in enumerate(states)
              for t in state.next_tokens()]
    wanted_scores = (totals[[w[0] for w in wanted], [w[1] for w in wanted],
                            [w[2] for w in wanted]].tolist() if wanted else [])
    offers: list[list[tuple[float, int, int]]] = [[] for _ in range(n)]
    seen: list[set[tuple[int, int]]] = [set() for _ in range(n)]

    def add(g: int, score: float, b: int, t: int) -> None:
        if (b, t) not in seen[g] and score > float("-inf"):
            seen[g].add((b, t))
            offers[g].append((score, b, t))

    for g, (scores, index) in enumerate(zip(top_scores.tolist(), top_index.tolist())):
        for score, i in zip(scores, index):
            add(g, score, i // width, i % width)
    for g, (scores, tokens) in enumerate(zip(best_scores.tolist(), best.tolist())):
        for b, (score, t) in enumerate(zip(scores, tokens)):
            add(g, score, b, t)
    for (g, b, t), score in zip(wanted, wanted_scores):
        add(g, score, b, t)
    return offers


def _allocate(found: list[tuple[float, int, int]], progress: list[Progress], eos: int,
              at_limit: bool) -> list[tuple[float, int, int, Progress]]:
    """One sentence's candidates (``_offers``) as (score, row, token, progress), EOS ones
    included, in the order the beam takes them (dynamic beam allocation)."""
    candidates = []
    for score, b, t in found:
        state = progress[b]
        if t == eos:
            if state.done or at_limit:
                candidates.append((score, b, t, state))
            continue
        candidates.append((score, b, t, state.advance(t)))
    # the beam is filled bank by bank, the most advanced first, the best of each at a time
    # (an EOS candidate, of a hypothesis that met its terms, is in the top bank); the caller
    # ends the EOS candidates among the first `beam` and carries on the first `beam` others,
    # so that with one bank this is beam search's order
    banks: dict[int, list[tuple[float, int, int, Progress]]] = {}
    for c in sorted(candidates, key=lambda c: -c[0]):
        banks.setdefault(c[3].tokens_met, []).append(c)
    order: list[tuple[float, int, int, Progress]] = []
    ranked = sorted(banks, reverse=True)
    while any(banks[k] for k in ranked):
        for k in ranked:
            if banks[k]:
                order.append(banks[k].pop(0))
    return order
