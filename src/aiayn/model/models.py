"""The three models, composed from the same parts: encoder-decoder, decoder-only, encoder-only.

Shapes: B batch, S source length, T target length, D d_model, H heads, Dh head dim, V vocab.
Token tensors are int64, padded with ``cfg.pad_id``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import torch
from torch import Tensor, nn

from ..config import ModelConfig
from .cache import DecoderCache
from .embeddings import Embeddings, PositionalEncoding, token_embedding
from .layers import Decoder, DecoderLayer, Encoder
from .masks import causal_padding_mask, padding_mask


@dataclass
class AttentionWeights:
    """Per-layer attention weights, each (B, H, T_query, T_key); empty lists where absent."""

    encoder: list[Tensor] = field(default_factory=list)
    decoder: list[Tensor] = field(default_factory=list)
    cross: list[Tensor] = field(default_factory=list)
    aligner: Tensor | None = None  # (B, T, S): the aligner's weights, where the model has one


def _positions(cfg: ModelConfig) -> PositionalEncoding:
    return PositionalEncoding(cfg.d_model, cfg.max_len, kind=cfg.positions, base=cfg.pos_base,
                              layout=cfg.sinusoid_layout, dropout=cfg.dropout)


def _embeddings(cfg: ModelConfig, token: nn.Embedding) -> Embeddings:
    return Embeddings(token, _positions(cfg), scale=cfg.scale_embeddings)


def _init_linear_weights(model: nn.Module) -> None:
    """Xavier-uniform projections and zero biases (as nn.Transformer); embeddings keep theirs."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)


def _output_projection(cfg: ModelConfig, embedding: nn.Embedding) -> nn.Linear:
    """The pre-softmax linear transformation, sharing the target embedding when tied (§3.4);
    with ``output_bias`` it adds a bias to the logits (Marian's ``final_logits_bias``)."""
    proj = nn.Linear(cfg.d_model, embedding.num_embeddings, bias=cfg.output_bias)
    if proj.bias is not None:
        nn.init.zeros_(proj.bias)
    if cfg.tie_output:
        proj.weight = embedding.weight
    else:
        nn.init.normal_(proj.weight, 0.0, cfg.d_model ** -0.5)
    return proj


class Aligner(nn.Module):
    """Word alignments as one attention head beside the model (``ModelConfig.aligner``): its
    own query and key projections, over the decoder's output (row t + 1, fed target piece t,
    aligns piece t: the query knows the word it aligns) and the encoder's. Its output goes
    nowhere, so no translation head gives up its attention to it; guided alignment trains it
    and, through its inputs, the states it reads."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        _init_linear_weights(self)

    def forward(self, states: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        """states (B, T, D), memory (B, S, D), src_mask (B, 1, 1, S) -> weights (B, T, S)."""
        q, k = self.q_proj(states), self.k_proj(memory)  # (B, T, D), (B, S, D)
        scores = q @ k.transpose(1, 2) * q.size(-1) ** -0.5  # (B, T, S), Eq. 1
        return scores.masked_fill(~src_mask[:, 0], float("-inf")).softmax(-1)  # (B, 1, S) mask


class Transformer(nn.Module):
    """The encoder-decoder Transformer (§3, Figure 1).

    Example::

        cfg = ModelConfig.preset("base", vocab_size=37000)
        logits = Transformer(cfg)(src, tgt_in)  # (B, S), (B, T) -> (B, T, V)
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        src_token = token_embedding(cfg.vocab_size, cfg.d_model, cfg.pad_id)
        tgt_token = (src_token if cfg.share_embeddings
                     else token_embedding(cfg.target_vocab_size, cfg.d_model, cfg.pad_id))
        self.src_embed = _embeddings(cfg, src_token)
        self.tgt_embed = _embeddings(cfg, tgt_token)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.output_proj = _output_projection(cfg, tgt_token)
        _init_linear_weights(self.encoder)
        _init_linear_weights(self.decoder)
        self.aligner = Aligner(cfg.d_model) if cfg.aligner else None
        self.source_aligner = Aligner(cfg.d_model) if cfg.source_aligner else None

    def encode(self, src: Tensor, *, return_weights: bool = False
               ) -> tuple[Tensor, Tensor, list[Tensor]]:
        """src (B, S) -> memory (B, S, D), src_mask (B, 1, 1, S), encoder weights."""
        src_mask = padding_mask(src, self.cfg.pad_id)
        memory, weights = self.encoder(self.src_embed(src), src_mask,
                                       return_weights=return_weights)
        return memory, src_mask, weights

    def forward(self, src: Tensor, tgt_in: Tensor, *, return_weights: bool = False,
                return_alignment: bool = False
                ) -> (Tensor | tuple[Tensor, AttentionWeights]
                      | tuple[Tensor, Tensor, Tensor | None]):
        """src (B, S), tgt_in (B, T) -> logits (B, T, V) [and AttentionWeights]. Target padding
        needs no mask: pads sit after the real tokens and the causal mask already hides every
        later position.

        ``return_alignment``: logits, the (B, T, S) weights of the alignment head (the
        aligner, or the first cross-attention head of ``cfg.alignment_layer``), which guided
        alignment trains, and the source aligner's (B, S, T) weights where the model has one
        (``source_align``), else None.
        """
        head = return_alignment and self.aligner is None  # (the alignment layer's weights)
        if head and self.cfg.alignment_layer is None:
            raise ValueError("return_alignment needs a model with an aligner or an "
                             "alignment_layer")
        memory, src_mask, enc_w = self.encode(src, return_weights=return_weights)
        x, self_w, cross_w = self.decoder(self.tgt_embed(tgt_in), memory, src_mask,
                                          return_weights=return_weights,
                                          weights_of=self.cfg.alignment_layer if head else None)
        logits = self.output_proj(x)
        aligned = (self.aligner(x, memory, src_mask) if self.aligner is not None
                   and (return_alignment or return_weights) else None)
        if return_alignment:
            if aligned is None:  # (every layer's weights when return_weights asks too)
                return (logits, cross_w[self.cfg.alignment_layer if return_weights else 0][:, 0],
                        None)
            return logits, aligned, self.source_align(memory, x, src_mask, tgt_in)
        if return_weights:
            return logits, AttentionWeights(enc_w, self_w, cross_w, aligned)
        return logits

    def align(self, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor | None]:
        """The aligner's (B, T, S) weights for teacher-forced targets, and the source aligner's
        (B, S, T) where the model has one, without the logits: what ``aiayn train
        --aligner-only`` trains, the rest of the model run without gradients."""
        if self.aligner is None:
            raise ValueError("align needs a model with an aligner")
        with torch.no_grad():
            memory, src_mask, _ = self.encode(src)
            x, _, _ = self.decoder(self.tgt_embed(tgt_in), memory, src_mask)
        return self.aligner(x, memory, src_mask), self.source_align(memory, x, src_mask, tgt_in)

    def source_align(self, memory: Tensor, states: Tensor, src_mask: Tensor, tgt_in: Tensor
                     ) -> Tensor | None:
        """The source aligner's (B, S, T) weights (``ModelConfig.source_aligner``; None without
        one): source piece s's attention over the decoder's rows, row 0 (fed the start piece)
        its empty word and row t + 1 target piece t. It reads the states detached, so its
        loss trains it alone and the translation learns nothing from it."""
        if self.source_aligner is None:
            return None
        rows = tgt_in != self.cfg.pad_id
        rows[:, 0] = True  # (Marian's start piece is the pad id)
        weights = self.source_aligner(memory.detach(), states.detach(), rows[:, None, None, :])
        return weights.masked_fill(~src_mask[:, 0, 0, :, None], 0.0)  # (padded sources: 0)

    # ------------------------------------------------------------ incremental decoding
    def init_cache(self, memory: Tensor, src_mask: Tensor, max_len: int, *,
                   beam: int = 1) -> DecoderCache:
        """A cache for up to ``max_len`` target positions of ``beam`` rows per sentence, with
        every layer's cross-attention keys and values projected from ``memory`` (B, S, D) once
        per sentence and shared by its rows (stored contiguous, so that no step copies them)."""
        b = memory.size(0)
        cache = DecoderCache.allocate(self.cfg.n_decoder_layers, b * beam, self.cfg.n_heads,
                                      max_len, self.cfg.head_dim, memory)
        cache.src_rows = torch.arange(b, device=memory.device).repeat_interleave(beam)
        cache.src_mask, cache.group = src_mask, beam
        for layer, layer_cache in zip(self.decoder.layers, cache.layers):
            cross = cast(DecoderLayer, layer).cross_attn
            assert cross is not None  # a translation model's decoder attends to the memory
            k, v = cross.project_kv(memory)  # (B, H, S, Dh) views of one product
            layer_cache.cross_k, layer_cache.cross_v = k.contiguous(), v.contiguous()
        return cache

    def decode_step(self, tgt: Tensor, cache: DecoderCache) -> Tensor:
        """Decode the next positions: tgt (B, t) -> logits (B, t, V); the cache advances by t."""
        x, _, _ = self.decoder(self.tgt_embed(tgt, offset=cache.length), cache=cache)
        return self.output_proj(x)


class LanguageModel(nn.Module):
    """A decoder-only Transformer: decoder layers without cross-attention, tied output."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        token = token_embedding(cfg.vocab_size, cfg.d_model, cfg.pad_id)
        self.embed = _embeddings(cfg, token)
        self.decoder = Decoder(cfg, cross_attention=False)
        self.output_proj = _output_projection(cfg, token)
        _init_linear_weights(self.decoder)

    def _self_mask(self, tokens: Tensor) -> Tensor | None:
        # left-padded prompts need pad keys hidden; otherwise the causal mask alone suffices
        if (tokens == self.cfg.pad_id).any():
            return causal_padding_mask(tokens, self.cfg.pad_id)
        return None

    def forward(self, tokens: Tensor, *, return_weights: bool = False
                ) -> Tensor | tuple[Tensor, AttentionWeights]:
        """tokens (B, T) -> next-token logits (B, T, V) [and AttentionWeights]."""
        x, self_w, _ = self.decoder(self.embed(tokens), self_mask=self._self_mask(tokens),
                                    return_weights=return_weights)
        logits = self.output_proj(x)
        return (logits, AttentionWeights(decoder=self_w)) if return_weights else logits

    def init_cache(self, batch_size: int, max_len: int) -> DecoderCache:
        return DecoderCache.allocate(self.cfg.n_decoder_layers, batch_size, self.cfg.n_heads,
                                     max_len, self.cfg.head_dim, self.output_proj.weight)

    def decode_step(self, tokens: Tensor, cache: DecoderCache) -> Tensor:
        """tokens (B, t), the next t positions -> logits (B, t, V); the cache advances by t."""
        x, _, _ = self.decoder(self.embed(tokens, offset=cache.length), cache=cache)
        return self.output_proj(x)


@dataclass
class EncoderOutput:
    """hidden (B, S, D); pooled (B, D): mean over real tokens; logits (B, C) or None."""

    hidden: Tensor
    pooled: Tensor
    logits: Tensor | None = None


class EncoderModel(nn.Module):
    """An encoder-only Transformer with a pooled output and an optional classifier.

    Args:
        cfg: the model config (its encoder fields are used).
        num_classes: size of the classification head on the pooled output, or None for none.
    """

    def __init__(self, cfg: ModelConfig, *, num_classes: int | None = None) -> None:
        super().__init__()
        if num_classes is not None and num_classes < 1:
            raise ValueError(f"num_classes ({num_classes}) must be a positive integer or None")
        self.cfg = cfg
        self.embed = _embeddings(cfg, token_embedding(cfg.vocab_size, cfg.d_model, cfg.pad_id))
        self.encoder = Encoder(cfg)
        self.classifier = nn.Linear(cfg.d_model, num_classes) if num_classes else None
        _init_linear_weights(self)

    def forward(self, src: Tensor, *, return_weights: bool = False
                ) -> EncoderOutput | tuple[EncoderOutput, AttentionWeights]:
        """src (B, S) -> EncoderOutput [and AttentionWeights]."""
        mask = padding_mask(src, self.cfg.pad_id)  # (B, 1, 1, S)
        hidden, weights = self.encoder(self.embed(src), mask, return_weights=return_weights)
        real = mask[:, 0, 0, :, None].to(hidden.dtype)  # (B, S, 1)
        pooled = (hidden * real).sum(1) / real.sum(1).clamp_min(1.0)  # (B, D)
        logits = self.classifier(pooled) if self.classifier is not None else None
        out = EncoderOutput(hidden, pooled, logits)
        return (out, AttentionWeights(encoder=weights)) if return_weights else out


ARCHS: dict[str, type[nn.Module]] = {"encoder-decoder": Transformer,
                                     "decoder-only": LanguageModel, "encoder": EncoderModel}


def build_model(arch: str, cfg: ModelConfig, *, num_classes: int | None = None) -> nn.Module:
    """The model of one architecture: "encoder-decoder" (``Transformer``, translation),
    "decoder-only" (``LanguageModel``) or "encoder" (``EncoderModel``, with a classifier of
    ``num_classes`` outputs)."""
    if arch not in ARCHS:
        raise ValueError(f"arch ({arch!r}) must be one of {', '.join(ARCHS)}")
    if arch == "encoder":
        return EncoderModel(cfg, num_classes=num_classes)
    return ARCHS[arch](cfg)


def arch_of(model: nn.Module) -> str:
    """The architecture name of a model built by ``build_model``."""
    for arch, cls in ARCHS.items():
        if isinstance(model, cls):
            return arch
    raise TypeError(f"not a model aiayn builds by architecture: {type(model).__name__}")
