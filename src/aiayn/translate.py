"""Load a checkpoint and translate text: the Python API behind `aiayn translate` and `evaluate`.

Example::

    translator = aiayn.load("runs/en-es")          # a run (its best checkpoint) or a checkpoint
    translator.translate(["In the beginning God created the heavens and the earth."])
    translator.translate(lines, DecodeOptions(beam=5, nbest=3))   # [(text, score), ...] each
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, cast

import numpy as np
import torch

from .checkpoint import Checkpoint
from .codec import Source, TextCodec
from .config import ModelConfig
from .data.corpus import token_batches
from .data.tokenizer import AnyTokenizer
from .decode.constraints import constrained_beam_search
from .decode.ensemble import Ensemble
from .decode.options import DecodeOptions
from .decode.search import (
    Hypothesis,
    beam_search,
    greedy_search,
    length_penalty,
    max_output_lengths,
    sample_search,
)
from .decode.shortlist import Shortlist, Shortlisted
from .errors import UserError
from .glossary import Glossary
from .model import Transformer
from .runtime import cpu
from .runtime.compiled import CompiledSteps, auto_compile
from .runtime.hardware import shape_free_attention
from .runtime.threads import use_available_cores

if TYPE_CHECKING:
    from .inspect import AttentionMaps

_SAID: set[str] = set()  # lines about the decoding path, said once per process


@dataclass(frozen=True)
class PairScore:
    """A target's teacher-forced log-probability given its source.

    total: the sum over the target's tokens and EOS; tokens: how many that is; normalized:
    total divided by the length penalty, the score beam search reports for the same output.
    """

    total: float
    tokens: int
    normalized: float

    @property
    def per_token(self) -> float:
        return self.total / self.tokens


class Translator:
    """A trained encoder-decoder model with its tokenizer, ready to translate sentences.

    ``model`` is used as given; ``Translator.load`` prepares it for CPU inference
    (``aiayn.runtime.cpu.for_inference``).
    """

    def __init__(self, model: Any, tokenizer: AnyTokenizer, *,
                 warn: Callable[[str], None] | None = None, placeholders: bool = False,
                 language: str = "en") -> None:
        self.model, self.tokenizer = model.eval(), tokenizer
        self.cfg: ModelConfig = model.cfg
        self.device = next(model.parameters()).device
        # placeholders: masked as the training data was (``aiayn.placeholders``); language:
        # the source's, for splitting lines past the model's length limit into sentences
        self.codec = TextCodec(tokenizer, self.cfg, placeholders=placeholders,
                               language=language, warn=warn)
        # the checkpoint's pair ({"source": "en", "target": "es"}) when it knows it
        self.languages: dict[str, str] | None = None
        self.shortlist: Shortlist | None = None  # see use_shortlist

    @classmethod
    def load(cls, path: str | Path | Checkpoint | list, *, device: str = "cpu",
             int8: bool = False, compile: bool | None = None) -> "Translator":
        """Load from a checkpoint directory or a run directory (its average, else best, else
        last checkpoint) or an opened ``Checkpoint``; several make an ensemble
        (``aiayn.decode.ensemble``), which needs one vocabulary.

        ``int8``: int8 products in every linear layer (``aiayn.runtime.cpu.Int8Linear``; CPU
        only).
        ``compile``: decoding steps run as compiled code (``aiayn.runtime.compiled``; CPU).
        None (the default): where the machine can (``auto_compile``: a C++ compiler, the
        CPU), each step kind built in the background the first time a model
        shape decodes, eager steps meanwhile; True: compiled in this process before the first
        step that needs it; False: eager steps.
        """
        kind = device.split(":")[0]
        if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
            raise UserError(f"--device {device}: expected cpu or cuda (cuda:N for one GPU)")
        if kind == "cuda" and not torch.cuda.is_available():
            raise UserError(f"--device {device}: no CUDA device is available; use --device cpu")
        if int8 and device != "cpu":
            raise UserError("--int8 runs on the CPU only; drop --device or --int8")
        if compile and device != "cpu":
            raise UserError("--compile compiles the CPU's decoding steps; drop --device or "
                            "--compile")
        paths = list(path) if isinstance(path, (list, tuple)) else [path]
        checkpoints = [one if isinstance(one, Checkpoint) else Checkpoint.open(one)
                       for one in paths]
        for one in checkpoints:
            one.require("encoder-decoder", "translate with an encoder-decoder checkpoint, or "
                                           "use `aiayn generate`")
            if one.tokenizer.fingerprint() != checkpoints[0].tokenizer.fingerprint():
                raise UserError(f"{one.path}: its vocabulary differs from "
                                f"{checkpoints[0].path}'s; an ensemble needs models trained on "
                                "the same prepared data")
        models: list[Any] = [one.model(Transformer) for one in checkpoints]  # Seq2Seq modules
        protect = any(one.placeholders for one in checkpoints)
        if kind == "cuda":
            shape_free_attention()
        if device == "cpu":
            use_available_cores()  # one thread per core this process may use
            cpu.reuse_freed_memory()  # decoding steps reuse their buffers' pages
            models = [cpu.for_inference(m, int8=int8) for m in models]
        background = compile is None
        if compile is None:
            compile, why = auto_compile(device)
            if why and why not in _SAID:
                _SAID.add(why)
                print(f"aiayn: {why}", file=sys.stderr)
        if compile:
            models = [CompiledSteps(m, background=background) for m in models]
        model = models[0] if len(models) == 1 else Ensemble(models)
        languages = checkpoints[0].languages or {"source": "en"}
        translator = cls(model.to(device), checkpoints[0].tokenizer, placeholders=protect,
                         language=languages["source"])
        translator.languages = checkpoints[0].languages
        return translator

    def name_pair(self, source: str, target: str) -> None:
        """Take the model to translate ``source`` into ``target`` (``aiayn serve
        en-es=DIR``): the sentence rules of ``source`` split its lines, and the files it
        translates say they are in ``target`` and are checked against the pair."""
        self.languages = {"source": source, "target": target}
        self.codec.language = source

    def _pad(self, rows: list[list[int]], fill: int | None = None) -> torch.Tensor:
        fill = self.cfg.pad_id if fill is None else fill
        out = torch.full((len(rows), max(len(r) for r in rows)), fill, dtype=torch.long)
        for i, row in enumerate(rows):
            out[i, :len(row)] = torch.tensor(row)
        return out.to(self.device)

    # -------------------------------------------------------------- translating
    def translate_ids(self, sources: list[list[int]], options: DecodeOptions | None = None, *,
                      on_batch: Callable[[int], None] | None = None,
                      prefixes: list[list[int]] | None = None,
                      constraints: list[list[list[int]]] | None = None
                      ) -> list[list[Hypothesis]]:
        """Decode token-id sources in length-sorted, token-bounded batches; input order kept.

        ``prefixes``: per source, target ids every output starts with ([] for none).
        ``constraints``: per source, terms (target ids each) every output must contain
        ([] for none): those sources are decoded by constrained beam search."""
        o = options or DecodeOptions()
        if prefixes is not None and len(prefixes) != len(sources):
            raise UserError(f"{len(prefixes)} prefixes for {len(sources)} sentences; give one "
                            "per sentence (an empty line for none)")
        if constraints is not None and (o.sample or prefixes is not None):
            raise UserError("a glossary works with beam search; drop --sample and "
                            "--prefix-file, or the glossary")
        results: list[list[Hypothesis]] = [[] for _ in sources]
        todo = [i for i, s in enumerate(sources) if len(s) > 1]  # only EOS: nothing to translate
        for i in set(range(len(sources))) - set(todo):
            results[i] = [Hypothesis([], 0.0)]
        if not todo:
            return results
        # a batch's padded size counts the beam rows: (sentences x beam) x longest source
        sizes = np.array([len(sources[i]) for i in todo]) * (1 if o.sample else o.beam)
        limit = max(o.batch_tokens, int(sizes.max()))
        for batch in token_batches(sizes, limit, seed=0, epoch=0, shuffle=False):
            rows = [todo[j] for j in batch]
            src = self._pad([sources[i] for i in rows])
            prefix = None
            if prefixes is not None and any(prefixes[i] for i in rows):
                prefix = self._pad([prefixes[i] or [-1] for i in rows], fill=-1)
            model = self._step_model(rows, sources, prefixes, constraints)
            bound = {i for i in rows if constraints and constraints[i]}
            if bound:  # sentences with terms to write: constrained beam search, apart
                ordered = sorted(bound)
                found = constrained_beam_search(
                    model, self._pad([sources[i] for i in ordered]),
                    [constraints[i] for i in ordered] if constraints else [], beam=o.beam,
                    lenpen=o.lenpen, lenpen_form=o.lenpen_form, nbest=o.nbest,
                    max_len_a=o.max_len_a, max_len_b=o.max_len_b)
                for i, h in zip(ordered, found):
                    results[i] = h
                rows = [i for i in rows if i not in bound]
                if not rows:
                    if on_batch is not None:
                        on_batch(len(bound))
                    continue
                src = self._pad([sources[i] for i in rows])
            if o.sample:  # each sentence's own generator: seed and input position
                seeds = [o.seed * 1_000_003 + i for i in rows]
                hyps = [[h] for h in sample_search(
                    model, src, seeds=seeds, temperature=o.temperature, top_k=o.top_k,
                    top_p=o.top_p, max_len_a=o.max_len_a, max_len_b=o.max_len_b,
                    prefix=prefix)]
            elif o.beam == 1 and o.nbest == 1:
                hyps = [[h] for h in greedy_search(model, src, max_len_a=o.max_len_a,
                                                   max_len_b=o.max_len_b, rules=o.beam_rules,
                                                   prefix=prefix)]
            else:
                hyps = beam_search(model, src, beam=o.beam, lenpen=o.lenpen,
                                   lenpen_form=o.lenpen_form, nbest=o.nbest,
                                   max_len_a=o.max_len_a, max_len_b=o.max_len_b,
                                   rules=o.beam_rules, prefix=prefix)
            for i, h in zip(rows, hyps):
                results[i] = h
            if on_batch is not None:
                on_batch(len(rows) + len(bound))
        return results

    def _step_model(self, rows: list[int], sources: list[list[int]],
                    prefixes: list[list[int]] | None,
                    constraints: list[list[list[int]]] | None) -> Any:
        """The model the batch ``rows`` decodes with: the translator's, or with a
        ``shortlist`` the model scoring only the batch's shortlist (plus EOS and the tokens a
        prefix or a glossary term forces)."""
        if self.shortlist is None:
            return self.model
        forced = [self.cfg.eos_id]
        for i in rows:
            forced += prefixes[i] if prefixes else []
            forced += [t for term in (constraints[i] if constraints else []) for t in term]
        vocab = self.shortlist.vocabulary([sources[i] for i in rows], forced)
        return Shortlisted(self.model, vocab.to(self.device))

    def use_shortlist(self, path: str | Path) -> None:
        """Decode over a vocabulary shortlist (``aiayn.decode.shortlist``) read from ``path``;
        one model only; its steps of many rows run compiled where the model's do."""
        if isinstance(self.model, Ensemble):
            raise UserError("--shortlist works with one --checkpoint, not an ensemble")
        self.shortlist = Shortlist.load(path, self.tokenizer.fingerprint())

    def constraints(self, sources: list[Source], glossary: Glossary,
                    options: DecodeOptions) -> list[list[list[int]]]:
        """Per source, the target ids of the glossary terms found in it; terms that would not
        fit its length limit together are dropped, each with a warning naming it."""
        out: list[list[list[int]]] = []
        for source in sources:
            terms = glossary.found(source.text)
            if not terms:
                out.append([])
                continue
            limit = int(max_output_lengths(torch.tensor([source.ids]), self.cfg.pad_id,
                                           options.max_len_a, options.max_len_b,
                                           self.cfg.max_len)[0]) - 1  # room for EOS
            kept, used = [], 0
            for term in terms:
                ids = self.codec.encode_target(term, source, limit=10**9)
                if used + len(ids) > limit:
                    self.codec.warn(f"glossary term {term!r} does not fit the length limit of "
                                    f"{source.text[:40]!r}...; dropped")
                    continue
                kept.append(ids)
                used += len(ids)
            out.append(kept)
        return out

    def translate(self, sentences: Iterable[str], options: DecodeOptions | None = None, *,
                  on_batch: Callable[[float], None] | None = None,
                  prefixes: Iterable[str] | None = None, split_sentences: bool = False,
                  glossary: Glossary | None = None,
                  ) -> list[str] | list[list[tuple[str, float]]]:
        """Translate lines. nbest 1: one string each; else lists of (text, score).

        An empty line gives an empty translation. Nothing is cut: a line past the model's
        length limit is translated sentence by sentence (a sentence still too long in pieces
        between words, with a warning) and joined back (``aiayn.codec``); ``split_sentences``
        splits every line so, as the server splits paragraphs. ``prefixes``: per line, target
        text the translation starts with ("" for none); decoding continues after it.
        ``glossary``: the target terms of the glossary's terms found in a sentence are written
        in its translation (lexically constrained beam search, ``aiayn.decode.constraints``).
        """
        o, codec = options or DecodeOptions(), self.codec
        groups = [codec.encode_text(s, i + 1, split=split_sentences)
                  for i, s in enumerate(sentences)]
        sources = [source for group in groups for source in group]
        prefix_ids = None
        if prefixes is not None:
            prefixes = list(prefixes)
            if len(prefixes) != len(groups):
                raise UserError(f"{len(prefixes)} prefixes for {len(groups)} sentences; give "
                                "one per sentence (an empty line for none)")
            # a line's prefix starts its first sentence
            prefix_ids = [codec.encode_target(p, g[0], limit=self.cfg.max_len - 2) if k == 0
                          else [] for p, g in zip(prefixes, groups) for k in range(len(g))]
        share = len(groups) / max(1, len(sources))  # a split line is several rows

        def progress(rows: int) -> None:  # reported in lines
            if on_batch is not None:
                on_batch(rows * share)
        constraints = self.constraints(sources, glossary, o) if glossary else None
        hyps = self.translate_ids([s.ids for s in sources], o, prefixes=prefix_ids,
                                  on_batch=progress, constraints=constraints)
        lines = codec.decode_lines(groups, hyps)
        if o.nbest == 1:
            return [nbest[0][0] for nbest in lines]
        return lines

    # ------------------------------------------------------------------ scoring
    @torch.inference_mode()
    def score_ids(self, sources: list[list[int]], targets: list[list[int]],
                  options: DecodeOptions | None = None) -> list[PairScore]:
        """Teacher-forced scores of (source ids + EOS, target ids) pairs, in length-sorted,
        token-bounded batches; input order kept. ``options`` gives the length penalty and
        ``batch_tokens``."""
        o, cfg = options or DecodeOptions(), self.cfg
        if len(sources) != len(targets):
            raise UserError(f"{len(sources)} sources but {len(targets)} targets; score needs "
                            "one target per source")
        out: list[PairScore | None] = [None] * len(sources)
        sizes = np.array([max(len(s), len(t) + 1) for s, t in zip(sources, targets)])
        if not len(sizes):
            return []
        # every batch's (tokens, vocabulary) log-probabilities stay below the allocator's
        # threshold for fresh pages (cpu.MMAP_THRESHOLD), so that batches reuse one buffer
        logit_tokens = cpu.MMAP_THRESHOLD // (4 * cfg.target_vocab_size)
        limit = max(min(o.batch_tokens, logit_tokens), int(sizes.max()))
        for batch in token_batches(sizes, limit, seed=0, epoch=0, shuffle=False):
            src = self._pad([sources[i] for i in batch])
            tgt_in = self._pad([[cfg.start_id] + targets[i] for i in batch])
            tgt_out = self._pad([targets[i] + [cfg.eos_id] for i in batch])
            lprobs = self.model(src, tgt_in).float()  # (B, T, V)
            if not getattr(self.model, "returns_log_probs", False):
                lprobs = lprobs.log_softmax(-1)
            picked = lprobs.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)  # (B, T)
            real = torch.zeros_like(tgt_out, dtype=torch.bool)
            for row, i in enumerate(batch):
                real[row, :len(targets[i]) + 1] = True
            totals = picked.masked_fill(~real, 0.0).sum(1).tolist()
            for row, i in enumerate(batch):
                n = len(targets[i]) + 1
                out[i] = PairScore(totals[row], n,
                                   totals[row] / length_penalty(n, o.lenpen, o.lenpen_form))
        return [score for score in out if score is not None]  # (every pair has its score)

    def score(self, sources: Iterable[str], targets: Iterable[str],
              options: DecodeOptions | None = None) -> list[PairScore]:
        """Teacher-forced scores of sentence pairs (``aiayn score``): how probable each target
        is as a translation of its source."""
        sources, targets = list(sources), list(targets)
        if len(sources) != len(targets):
            raise UserError(f"{len(sources)} sources but {len(targets)} targets; score needs "
                            "one target per source")
        encoded = [self.codec.encode(s, i + 1) for i, s in enumerate(sources)]
        tgt = [self.codec.encode_target(t, s) for t, s in zip(targets, encoded)]
        return self.score_ids([s.ids for s in encoded], tgt, options)

    # --------------------------------------------------------------- inspecting
    def attention(self, source: str, target: str | None = None) -> "AttentionMaps":
        """Attention maps of one sentence: teacher-forced on ``target`` when given, otherwise on
        the model's own translation (beam 4)."""
        from .inspect import attention_maps
        if isinstance(self.model, Ensemble):
            raise UserError("attention maps and alignments come from one model; pass one "
                            "--checkpoint")
        encoded = self.codec.encode(source)
        if target is None:
            tgt_ids = self.translate_ids([encoded.ids])[0][0].tokens
        else:
            tgt_ids = self.codec.encode_target(target, encoded)
        model = self.model.model if isinstance(self.model, CompiledSteps) else self.model
        return attention_maps(model, self.tokenizer, encoded.ids, tgt_ids)  # (the model's own)

    def word_links(self, pairs: list[tuple[str, str]], *, sure_first: bool = False
                   ) -> list[list[tuple[int, int]]]:
        """(source word, target word) links of (source, translation) pairs, words split at
        whitespace, from cross-attention (``aiayn.inspect.model_alignments``, ``sure_first``
        passed on; an ensemble's first model aligns). A pair the model cannot read whole gets
        none."""
        from .inspect import model_alignments
        return [[] if maps is None else model_alignments(maps, cfg, sure_first=sure_first)
                for maps, cfg in self._pair_maps(pairs)]

    def tag_links(self, pairs: list[tuple[str, str]]
                  ) -> list[tuple[list[tuple[int, int]], list[tuple[int, int]]]]:
        """What inline tags are placed by, per (source, translation) pair: the links of
        ``word_links`` with ``sure_first``, and each source word's strongest target word
        (``aiayn.inspect.strongest_targets``), for a tag whose words have no link."""
        from .inspect import model_alignments, strongest_targets
        return [([], []) if maps is None else
                (model_alignments(maps, cfg, sure_first=True), strongest_targets(maps, cfg))
                for maps, cfg in self._pair_maps(pairs)]

    def _pair_maps(self, pairs: list[tuple[str, str]]
                   ) -> list[tuple[AttentionMaps | None, ModelConfig]]:
        """Each pair's attention maps from the model that aligns (an ensemble's first), with
        its configuration; None for a pair it cannot read whole. The pairs it can read go
        through the model in padded batches (``inspect.batched_attention_maps``)."""
        from .inspect import batched_attention_maps
        model = self.model.models[0] if isinstance(self.model, Ensemble) else self.model
        model = model.model if isinstance(model, CompiledSteps) else model
        ids: dict[int, tuple[list[int], list[int]]] = {}
        for k, (source, translation) in enumerate(pairs):
            if not (source.strip() and translation.strip() and self.codec.fits(source)):
                continue
            encoded = self.codec.encode(source)
            target = self.codec.encode_target(translation, encoded, limit=10**9)
            if len(target) <= self.cfg.max_len - 1:
                ids[k] = (encoded.ids, target)
        maps = dict(zip(ids, batched_attention_maps(model, self.tokenizer, list(ids.values()))))
        return [(maps.get(k), model.cfg) for k in range(len(pairs))]

    def translate_markup(self, documents: Iterable[str], fmt: str = "html",
                         options: DecodeOptions | None = None, *,
                         glossary: Glossary | None = None, fragments: bool = False
                         ) -> list[str]:
        """Translate HTML or XML documents sentence by sentence, inline tags placed on the
        target words aligned to the words they covered (``aiayn.markup``). ``fragments``:
        the documents are pieces of a larger one (a Markdown file's HTML blocks, which blank
        lines end), so a tag one leaves open or closes from before is no warning."""
        from .markup import FORMATS, Document
        o = options or DecodeOptions()
        if fmt not in FORMATS:
            raise UserError(f"unknown markup format {fmt!r}; use html or xml")
        if o.nbest != 1 or o.sample:
            raise UserError("markup is translated with the best translation; drop --nbest and "
                            "--sample")
        target = (self.languages or {}).get("target")
        docs = [Document(d, fmt, language=self.codec.language, target=target)
                for d in documents]
        for k, doc in enumerate(docs):
            for problem in [] if fragments else doc.problems:
                where = f"document {k + 1}: " if len(docs) > 1 else ""
                self.codec.warn(f"{where}{problem}; translated as well as it can be")
        translations = cast("list[str]", self.translate(
            [s for doc in docs for s in doc.sources], o, glossary=glossary))
        per_doc, at = [], 0
        for doc in docs:
            per_doc.append(translations[at:at + len(doc.sources)])
            at += len(doc.sources)
        # every document's sentences with tags aligned together: batches across documents
        found = iter(self.tag_links([(doc.sources[i], mine[i]) for doc, mine
                                     in zip(docs, per_doc) for i in doc.aligned]))
        out = []
        for doc, mine in zip(docs, per_doc):
            placing = {i: next(found) for i in doc.aligned}
            out.append(doc.render(mine, {i: p[0] for i, p in placing.items()},
                                  {i: p[1] for i, p in placing.items()}))
        return out

    def align(self, source: str, translation: str) -> str:
        """Pharaoh 'i-j' word alignments of a translation, from cross-attention."""
        return self.align_all([(source, translation)])[0]

    def align_all(self, pairs: list[tuple[str, str]]) -> list[str]:
        """``align`` of many (source, translation) pairs, their attention read in padded
        batches (``inspect.batched_attention_maps``); a source longer than the model reads is
        cut, with a warning, as for ``attention``."""
        from .inspect import batched_attention_maps, model_alignments, pharaoh
        if isinstance(self.model, Ensemble):
            raise UserError("attention maps and alignments come from one model; pass one "
                            "--checkpoint")
        model = self.model.model if isinstance(self.model, CompiledSteps) else self.model
        todo = [k for k, (s, t) in enumerate(pairs) if s.strip() and t.strip()]
        ids = []
        for k in todo:
            encoded = self.codec.encode(pairs[k][0])
            ids.append((encoded.ids, self.codec.encode_target(pairs[k][1], encoded)))
        out = [""] * len(pairs)
        for k, maps in zip(todo, batched_attention_maps(model, self.tokenizer, ids)):
            out[k] = pharaoh(model_alignments(maps, self.cfg))
        return out


def load(path: str | Path | Checkpoint | list, *, device: str = "cpu", int8: bool = False,
         compile: bool | None = None) -> Translator:
    """Load a translator from a checkpoint or run directory (several: an ensemble)."""
    return Translator.load(path, device=device, int8=int8, compile=compile)
