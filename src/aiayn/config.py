"""Model configuration: one frozen dataclass, validated, with the paper's presets.

Table 3 of *Attention Is All You Need* gives the two reference sizes:

=====  ===  =======  ===  ====  =======
name   N    d_model  h    d_ff  dropout
=====  ===  =======  ===  ====  =======
base   6    512      8    2048  0.1
big    6    1024     16   4096  0.3
=====  ===  =======  ===  ====  =======

``small`` (3+3 layers, d_model 256) is sized for CPU training and ``tiny`` for tests.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

# The special token ids, the same in every vocabulary aiayn trains (SentencePiece is told them)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3

NORMS = ("post", "pre", "sandwich")
POSITIONS = ("sinusoidal", "learned")
SINUSOID_LAYOUTS = ("interleaved", "halves")
ACTIVATIONS = ("relu", "gelu", "swish")
DECODER_STARTS = ("bos", "pad")

PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2,
                 dropout=0.0, max_len=256),
    "small": dict(d_model=256, n_heads=4, d_ff=1024, n_encoder_layers=3, n_decoder_layers=3,
                  dropout=0.1),
    "base": dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6,
                 dropout=0.1),
    "big": dict(d_model=1024, n_heads=16, d_ff=4096, n_encoder_layers=6, n_decoder_layers=6,
                dropout=0.3),
}


class ConfigError(ValueError):
    """A configuration value or key is invalid; the message names it."""


@dataclass(frozen=True)
class ModelConfig:
    """Every shape and option of the model (§3, Table 3).

    Args:
        vocab_size: source vocabulary size (the shared vocabulary when ``tgt_vocab_size`` is None).
        tgt_vocab_size: target vocabulary size; None means one vocabulary shared by both sides.
        d_model: model width (§3.1).
        n_heads: number of attention heads h; d_k = d_v = d_model / h (§3.2.2).
        d_ff: inner width of the position-wise feed-forward network (§3.3).
        n_encoder_layers, n_decoder_layers: N for each stack (§3.1).
        dropout: residual dropout on every sub-layer output and on embedding sums (§5.4).
        attn_dropout: dropout on attention weights (not in the paper; tensor2tensor option).
        ffn_dropout: dropout after the FFN activation (not in the paper; fairseq's relu_dropout).
        activation: "relu" (the paper, Eq. 2), "gelu" or "swish" (SiLU, x * sigmoid(x);
            departure: OPUS-MT's).
        norm: "post" (the paper: LayerNorm(x + Sublayer(x))), "pre" (x + Sublayer(LayerNorm(x)),
            with a final LayerNorm on each stack) or "sandwich" (x + LN(Sublayer(LN(x)))).
        positions: "sinusoidal" (§3.5) or "learned" absolute position embeddings.
        pos_base: the base of the sinusoid wavelengths (10000 in §3.5).
        sinusoid_layout: "interleaved" (§3.5: sine at even dimensions, cosine at odd ones) or
            "halves" (departure, Marian's: all sines, then all cosines).
        max_len: the longest sequence the position table holds.
        share_embeddings: one embedding matrix for source and target (needs a shared vocabulary).
        tie_output: the target embedding is also the pre-softmax projection (§3.4).
        scale_embeddings: multiply token embeddings by sqrt(d_model) (§3.4); departure when off.
        output_bias: a bias on the output logits (departure: Marian's ``final_logits_bias``).
        layer_norm_eps: epsilon of every LayerNorm.
        pad_id, unk_id, bos_id, eos_id: special token ids; ``bos_id`` may be null when the
            decoder starts from the pad id.
        decoder_start: the first decoder input, "bos" (aiayn) or "pad" (departure, Marian's).
        alignment_layer: the decoder layer (from 0) whose first cross-attention head is trained
            on word alignments (guided alignment, Garg et al. 2019; Marian's
            ``--guided-alignment``) and gives ``--alignments`` and inline tags their links;
            None: not trained, the links come from every layer and head averaged.
        aligner: a separate attention head beside the model (``Transformer.aligner``), trained
            on word alignments and read for them in place of ``alignment_layer``'s head: its
            own projections over the decoder's output and the encoder's, its output unused;
            the row fed target piece t aligns piece t (Chen et al. 2020's shift).
        source_aligner: a second aligner beside ``aligner``, read the other way
            (``Transformer.source_aligner``): each source piece's weights over the rows fed
            the target pieces, the row fed the start piece standing for no counterpart (an
            IBM model's empty word). It reads the model's states without training them.
    """

    vocab_size: int = 8000
    tgt_vocab_size: int | None = None
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    dropout: float = 0.1
    attn_dropout: float = 0.0
    ffn_dropout: float = 0.0
    activation: str = "relu"
    norm: str = "post"
    positions: str = "sinusoidal"
    pos_base: float = 10000.0
    sinusoid_layout: str = "interleaved"
    max_len: int = 1024
    share_embeddings: bool = True
    tie_output: bool = True
    scale_embeddings: bool = True
    output_bias: bool = False
    layer_norm_eps: float = 1e-5
    pad_id: int = PAD_ID
    unk_id: int = UNK_ID
    bos_id: int | None = BOS_ID
    eos_id: int = EOS_ID
    decoder_start: str = "bos"
    alignment_layer: int | None = None
    aligner: bool = False
    source_aligner: bool = False

    def __post_init__(self) -> None:
        def fail(name: str, why: str) -> None:
            raise ConfigError(f"{name} ({getattr(self, name)!r}) {why}")

        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                fail(name, "must be a positive integer")
        if self.tgt_vocab_size is not None and (
            not isinstance(self.tgt_vocab_size, int) or self.tgt_vocab_size < 1
        ):
            fail("tgt_vocab_size", "must be a positive integer or null")
        for name in ("n_encoder_layers", "n_decoder_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                fail(name, "must be a non-negative integer")
        if self.d_model % self.n_heads:
            raise ConfigError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        for name in ("dropout", "attn_dropout", "ffn_dropout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                fail(name, "must be in [0, 1)")
        for name, allowed in (("norm", NORMS), ("positions", POSITIONS),
                              ("sinusoid_layout", SINUSOID_LAYOUTS),
                              ("activation", ACTIVATIONS), ("decoder_start", DECODER_STARTS)):
            if getattr(self, name) not in allowed:
                fail(name, f"must be one of {', '.join(allowed)}")
        if not (finite_number(self.pos_base) and self.pos_base > 1):
            fail("pos_base", "must be a finite number greater than 1")
        if not (finite_number(self.layer_norm_eps) and self.layer_norm_eps > 0):
            fail("layer_norm_eps", "must be a finite positive number")
        if self.sinusoid_layout == "halves" and self.d_model % 2:
            fail("sinusoid_layout", "'halves' needs an even d_model")
        for name in ("share_embeddings", "tie_output", "scale_embeddings", "output_bias",
                     "aligner", "source_aligner"):
            if not isinstance(getattr(self, name), bool):
                fail(name, "must be true or false")
        if self.share_embeddings and self.tgt_vocab_size not in (None, self.vocab_size):
            fail("share_embeddings", "needs one shared vocabulary: set tgt_vocab_size to null")
        if self.alignment_layer is not None and (
            not isinstance(self.alignment_layer, int) or isinstance(self.alignment_layer, bool)
            or not 0 <= self.alignment_layer < max(1, self.n_decoder_layers)
        ):
            fail("alignment_layer", f"must be a decoder layer in [0, {self.n_decoder_layers}) "
                 "or null")
        if self.aligner and self.alignment_layer is not None:
            fail("aligner", "and alignment_layer are two places for one alignment: set one")
        if self.source_aligner and not self.aligner:
            fail("source_aligner", "reads beside an aligner: set aligner to true as well")
        if self.bos_id is None and self.decoder_start == "bos":
            fail("bos_id", "may be null only with decoder_start 'pad'")
        ids = {"pad_id": self.pad_id, "unk_id": self.unk_id, "bos_id": self.bos_id,
               "eos_id": self.eos_id}
        if self.bos_id is None:
            del ids["bos_id"]
        smallest = min(self.vocab_size, self.target_vocab_size)
        for name, value in ids.items():
            if not isinstance(value, int) or not 0 <= value < smallest:
                fail(name, f"must be a token id in [0, {smallest})")
        if len(set(ids.values())) != len(ids):
            raise ConfigError(f"special token ids must differ, got {ids}")

    # ------------------------------------------------------------------ derived
    @property
    def target_vocab_size(self) -> int:
        return self.vocab_size if self.tgt_vocab_size is None else self.tgt_vocab_size

    @property
    def start_id(self) -> int:
        """The first decoder input of every target: BOS, or the pad id (Marian)."""
        start = self.pad_id if self.decoder_start == "pad" else self.bos_id
        assert start is not None  # __post_init__: decoder_start "bos" has a bos_id
        return start

    def departures(self) -> list[str]:
        """The options set away from the paper's model, as ``name=value`` (for summaries)."""
        paper = {"activation": "relu", "norm": "post", "positions": "sinusoidal",
                 "sinusoid_layout": "interleaved", "scale_embeddings": True,
                 "output_bias": False, "decoder_start": "bos", "tie_output": True,
                 "share_embeddings": True}
        return [f"{name}={getattr(self, name)}" for name, value in paper.items()
                if getattr(self, name) != value]

    @property
    def head_dim(self) -> int:
        """d_k = d_v = d_model / h (§3.2.2)."""
        return self.d_model // self.n_heads

    # ------------------------------------------------------------- construction
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "ModelConfig":
        """A named preset (``tiny``, ``small``, ``base``, ``big``) with overrides applied."""
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
        return cls.from_dict({**PRESETS[name], **overrides})

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "ModelConfig":
        """Build from a mapping, naming any unknown key and the nearest valid one."""
        check_keys(values, [f.name for f in fields(cls)], what="model config")
        return cls(**values)

    def replace(self, **changes: Any) -> "ModelConfig":
        check_keys(changes, [f.name for f in fields(self)], what="model config")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "ModelConfig":
        return cls.from_dict(json.loads(Path(path).read_text()))


def check_keys(values: dict[str, Any], valid: list[str], *, what: str) -> None:
    """Raise ConfigError for the first key not in ``valid``, suggesting the nearest one."""
    for key in values:
        if key not in valid:
            near = difflib.get_close_matches(key, valid, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; valid keys: {', '.join(valid)}"
            raise ConfigError(f"unknown {what} key {key!r}{hint}")


def finite_number(value: Any) -> bool:
    """Whether ``value`` is an int or float other than a bool, NaN or an infinity (what a
    setting read from YAML or a flag must be before it is compared or used)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
