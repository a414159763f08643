"""The Transformer's parts: masks, attention, embeddings, layers, decoding cache, models."""

from .attention import MultiHeadAttention, scaled_dot_product_attention
from .cache import DecoderCache, LayerCache
from .embeddings import Embeddings, PositionalEncoding, sinusoidal_table
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward, Residual
from .masks import causal_mask, padding_mask
from .models import (
    ARCHS,
    AttentionWeights,
    EncoderModel,
    EncoderOutput,
    LanguageModel,
    Transformer,
    arch_of,
    build_model,
)

__all__ = [
    "ARCHS", "AttentionWeights", "Decoder", "DecoderCache", "DecoderLayer", "Embeddings", "Encoder",
    "EncoderLayer", "EncoderModel", "EncoderOutput", "FeedForward", "LanguageModel", "LayerCache",
    "MultiHeadAttention", "PositionalEncoding", "Residual", "Transformer", "causal_mask",
    "arch_of", "build_model", "padding_mask", "scaled_dot_product_attention",
    "sinusoidal_table",
]
