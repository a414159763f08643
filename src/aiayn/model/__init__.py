"""The Transformer's parts: masks, attention, embeddings, layers, decoding cache, models."""

from .attention import (
    Attention,
    MultiHeadAttention,
    reference_attention,
    scaled_dot_product_attention,
    softmax_rows,
)
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
    "ARCHS", "Attention", "AttentionWeights", "Decoder", "DecoderCache", "DecoderLayer",
    "Embeddings", "Encoder", "EncoderLayer", "EncoderModel", "EncoderOutput", "FeedForward",
    "LanguageModel", "LayerCache", "MultiHeadAttention", "PositionalEncoding", "Residual",
    "Transformer", "arch_of", "build_model", "causal_mask", "padding_mask",
    "reference_attention", "scaled_dot_product_attention", "sinusoidal_table", "softmax_rows",
]
