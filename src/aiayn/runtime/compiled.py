"""Compiled decoding steps on the CPU: one for one sentence at a time, one for many rows.

A decoding step is two kinds of work: the products (at one sentence, reading every weight once)
and about 150 small operations between them (norms, head reshapes, attention, the residuals,
the log-softmax), each dispatched on its own. ``CompiledSteps`` wraps an inference model
(``aiayn.runtime.cpu.for_inference``) and runs its steps as code compiled ahead of time by
AOTInductor
(Inductor's C++ backend, loaded as a shared library): the whole step becomes a few dozen
generated loops and product calls, called from C++ with no Python in between. Each step is
written for compilation, one function over the cache's buffers with the position a tensor, and
its results equal the eager step's to float32 rounding (tested within 1e-5).

- One row (``decoder_step``): each product is a generated loop too (``CpuLinear.
  traced_product``: a vectorized dot product of the row with every weight row); this step's
  keys and values are written into the preallocated cache and the attention runs over all of
  its positions, the unwritten ones masked. Greedy search of one sentence runs almost wholly
  in the compiled code: the step also makes the search's choice under its rules
  (``greedy_choice``) and writes the token where the next step reads it, so the search's loop
  only calls the library and reads the token back (``greedy_sentence``).
- Two rows or more (``rows_step``: batches, a sentence's beams): the products are oneDNN's, as
  in the eager step (``CpuLinear``'s copy of each weight in oneDNN's layout, bound like the
  weights), and everything between them is generated code; each row reads its history through
  the cache's ancestry table inside the attention's own loop, so a beam search's reorder moves
  nothing and no gathered copy is written. Rows, sentences, positions, source and cache
  lengths are symbolic: one compilation serves greedy search and beams of any batch.
- Other searches than one-sentence greedy read the steps' log-probabilities.
- A compiled step holds no weights: it reads the model's own tensors, bound at load. So one
  compilation serves every model of the same shape; it is kept on disk (in Inductor's cache
  directory, ``TORCHINDUCTOR_CACHE_DIR``), keyed by the shape, the thread count, this PyTorch
  and the code of the step, and a later process loads it in milliseconds.
- Where compilation is not available (no C++ compiler, a PyTorch without Inductor for this
  platform), the first step warns once and every step runs eagerly: same results, slower.

Why each pays, and why compiled ahead of time rather than through ``torch.compile``:
docs/design.md ("Speed lives beside the model", "Experiments behind the decisions"), and the
sections "The compiled one-sentence step", "The step compiled ahead of time" and "Compiled
steps of many rows" of docs/benchmarks.md at commit c60e5eb.
"""

from __future__ import annotations

import getpass
import hashlib
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn

from ..config import ModelConfig
from ..model import (
    DecoderCache,
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    Residual,
    Transformer,
    padding_mask,
)
from ..model.attention import merge_heads, reference_attention
from .cpu import CpuLinear, Int8Linear, onednn_available, onednn_linear

# Inductor settings for the step (measured: docs/design.md, "Speed lives beside the model").
# The step's inputs always have the strides they were compiled for (the cache's own contiguous
# buffers), so the generated wrapper's ~100 stride checks a call are left out; and every result
# of more than two operations is written out once instead of being recomputed inside the loops
# that read it: without that a normalized row is recomputed for every weight row of the
# product after it.
INDUCTOR_OPTIONS = {"size_asserts": False, "realize_opcount_threshold": 2}


def compile_available() -> bool:
    """Whether this PyTorch can compile ahead of time here (``torch.export``, Inductor and the
    AOTInductor loader exist), seen without importing Inductor (a second's import that a
    process loading its compiled steps from disk does not need); whether Dynamo supports this
    Python and a C++ compiler works shows at the first compilation."""
    return (hasattr(torch, "export") and hasattr(torch._C, "_aoti")
            and importlib.util.find_spec("torch._inductor") is not None)


def _cache_root() -> Path:
    """Inductor's cache directory (``TORCHINDUCTOR_CACHE_DIR``, else its default in the
    temporary directory), found as Inductor finds it without importing it."""
    named = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if named:
        return Path(named).resolve()
    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    return Path(tempfile.gettempdir()) / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def _load_package(path: Path) -> Any:
    """The compiled library of a package, by AOTInductor's loader itself (``run`` on a flat
    list of tensors, ``get_constant_fqns``, ``load_constants``), without importing Inductor."""
    loader = getattr(torch._C._aoti, "AOTIModelPackageLoader", None)
    if loader is None:  # another PyTorch: through Inductor's own wrapper
        return torch._inductor.aoti_load_package(str(path)).loader
    return loader(str(path), "model", False, 1, -1)


def cxx_compiler() -> str | None:
    """The C++ compiler Inductor would call (``CXX``, else g++, c++ or clang++ on the path),
    or None."""
    named = os.environ.get("CXX")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    return next((found for name in ("g++", "c++", "clang++") if (found := shutil.which(name))),
                None)


def auto_compile(device: str) -> tuple[bool, str]:
    """Whether decoding takes the compiled steps when no flag says (``aiayn translate``,
    ``evaluate``, ``serve`` and ``aiayn.load`` without ``--compile`` or ``--no-compile``),
    and, when it does not on a CPU where it could, why in one line ("" where nothing needs
    saying). The compiled steps are CPU steps (float32 or int8): other devices decode
    eagerly; ``AIAYN_COMPILE=0`` turns the default off."""
    if device != "cpu" or os.environ.get("AIAYN_COMPILE", "").lower() in (
            "0", "off", "no", "false"):
        return False, ""
    if not compile_available():
        return False, ("decoding with the eager step: this PyTorch cannot compile ahead of "
                       "time here")
    if cxx_compiler() is None:
        return False, ("decoding with the eager step: no C++ compiler found (install g++ "
                       "for compiled decoding steps, faster on the CPU; --no-compile "
                       "silences this)")
    return True, ""


def _decoder_layers(model: Transformer) -> list[DecoderLayer]:
    """The decoder's layers, typed (an ``nn.ModuleList`` holds modules of any kind)."""
    return cast("list[DecoderLayer]", list(model.decoder.layers))


def _cross(layer: DecoderLayer) -> tuple[MultiHeadAttention, Residual]:
    """A translation decoder layer's cross-attention and its residual block."""
    assert layer.cross_attn is not None and layer.cross_block is not None
    return layer.cross_attn, layer.cross_block


def _attend(q: Tensor, k: Tensor, v: Tensor, visible: Tensor) -> Tensor:
    """The model's Eq. 1 over keys where ``visible`` (broadcast to the scores)."""
    return reference_attention(q, k, v, visible)[0]


def decoder_step(model: Transformer, tokens: Tensor, position: Tensor, self_k: list[Tensor],
                 self_v: list[Tensor], cross_k: list[Tensor], cross_v: list[Tensor],
                 src_mask: Tensor) -> Tensor:
    """One decoding step over the cache's buffers: tokens (B, 1), position () int64, per layer
    self_k / self_v (B, H, L, Dh) written at ``position``, cross_k / cross_v (B, H, S, Dh),
    src_mask (B, 1, 1, S) -> log-probabilities (B, V) (B = 1: one row, one sentence, whose
    cross-attention block is its own). The same computation as
    ``Transformer.decode_step`` in inference, the positions after ``position`` masked."""
    at = position.view(1)
    x = model.tgt_embed.at(tokens, position)  # (B, 1, D)
    visible = torch.arange(self_k[0].size(2), device=x.device) <= position  # (L,)
    for i, layer in enumerate(_decoder_layers(model)):
        attn = layer.self_attn
        q, k, v = attn.split_heads(attn.qkv_proj(layer.self_block.enter(x)), 3)  # (B, H, 1, Dh)
        self_k[i].index_copy_(2, at, k)
        self_v[i].index_copy_(2, at, v)
        # positions after this one hold zeros or stale rows from a reorder: weight 0, and
        # their values zeroed so that no stale NaN or inf reaches the sum
        values = self_v[i].masked_fill(~visible[:, None], 0.0)
        y = attn.out_proj(merge_heads(_attend(q, self_k[i], values, visible)))
        x = layer.self_block.leave(x, y)
        cross, block = _cross(layer)
        q = cross.split_heads(cross.q_proj(block.enter(x)), 1)[0]  # (B, H, 1, Dh)
        y = cross.out_proj(merge_heads(_attend(q, cross_k[i], cross_v[i], src_mask)))
        x = block.leave(x, y)
        x = layer.ffn_block.leave(x, layer.ffn(layer.ffn_block.enter(x)))
    if model.decoder.final_norm is not None:
        x = model.decoder.final_norm(x)
    return model.output_proj(x[:, 0]).float().log_softmax(-1)


def rows_step(model: Transformer, linear: Callable[..., Tensor], tokens: Tensor,
              position: Tensor, slots: Tensor, self_k: list[Tensor], self_v: list[Tensor],
              cross_k: list[Tensor], cross_v: list[Tensor], src_mask: Tensor,
              output: tuple[Tensor, Tensor] | None = None) -> Tensor:
    """One decoding step of many rows over the cache's buffers, read through the ancestry:
    tokens (N, g), the next input of the g rows (beams) of each of N sentences, row-major;
    position () int64; slots (N, g, position + 1), the buffer slot that holds each row's keys
    and values at each position (``DecoderCache.history_slots``); per layer self_k / self_v
    (slots, H, L, Dh), this step's keys and values written at ``position`` into each row's own
    slot, and cross_k / cross_v (N, H, S, Dh), a sentence's memory shared by its g rows;
    src_mask (N, 1, 1, S) -> log-probabilities (N * g, V). ``linear(layer, x, activation)``
    computes the model's linear ``layer`` ("relu" or "none" after it). The same computation as
    ``Transformer.decode_step`` in inference. ``output``: (K, D) weight rows and (K,) biases
    of the output projection that the step scores instead of the whole vocabulary (a
    shortlist's, ``aiayn.decode.shortlist``) -> log-probabilities (N * g, K) over them."""
    n, g = tokens.shape
    b, t = n * g, slots.size(2)
    x = model.tgt_embed.at(tokens.reshape(b, 1), position)  # (B, 1, D)
    _, heads, capacity, dh = self_k[0].shape
    # rows of a buffer viewed as (slots * H * L, Dh): each row's history in (B, H, t) order
    # (as ``DecoderCache._history_index`` makes it for the eager step), and where this step's
    # keys and values go (each row's own slot at ``position``)
    heads_at = torch.arange(heads).view(1, heads, 1)
    history = ((slots.reshape(b, 1, t) * heads + heads_at) * capacity
               + torch.arange(t)).reshape(-1)
    new = ((torch.arange(b).view(b, 1, 1) * heads + heads_at) * capacity + position).reshape(-1)
    for i, layer in enumerate(_decoder_layers(model)):
        attn = layer.self_attn
        q, k, v = attn.split_heads(linear(attn.qkv_proj, layer.self_block.enter(x)), 3)
        self_k[i].view(-1, dh).index_copy_(0, new, k.reshape(-1, dh))
        self_v[i].view(-1, dh).index_copy_(0, new, v.reshape(-1, dh))
        # written as elementwise products and sums, not matrix products, so that Inductor
        # reads each key and value where it lies inside the attention's own loops instead of
        # gathering a copy for a product library (0.73 of the eager step against 0.83)
        keys = self_k[i].view(-1, dh)[history].view(b, heads, t, dh)
        values = self_v[i].view(-1, dh)[history].view(b, heads, t, dh)
        scores = (q * keys).sum(-1, keepdim=True).transpose(-2, -1) * (1.0 / math.sqrt(dh))
        attended = (scores.softmax(-1).transpose(-2, -1) * values).sum(-2, keepdim=True)
        y = linear(attn.out_proj, merge_heads(attended))
        x = layer.self_block.leave(x, y)
        cross, block = _cross(layer)
        q = linear(cross.q_proj, block.enter(x)).view(n, g, heads, dh).transpose(1, 2)
        y = _attend(q, cross_k[i], cross_v[i], src_mask)  # (N, H, g, Dh): a sentence's rows
        x = block.leave(x, linear(cross.out_proj, merge_heads(y).view(b, 1, heads * dh)))
        x = layer.ffn_block.leave(x, _ffn(layer.ffn, linear, layer.ffn_block.enter(x)))
    if model.decoder.final_norm is not None:
        x = model.decoder.final_norm(x)
    if output is not None:  # a shortlist's rows of the output projection
        weight, bias = output
        return torch.addmm(bias, x[:, 0], weight.t()).float().log_softmax(-1)  # (B, K)
    return linear(model.output_proj, x[:, 0]).float().log_softmax(-1)


def encoder_rows(model: Transformer, linear: Callable[..., Tensor], src: Tensor) -> Tensor:
    """The encoder over src (B, S), its products through ``linear`` (as ``rows_step``'s):
    memory (B, S, D), the same computation as ``Transformer.encode`` in inference."""
    src_mask = padding_mask(src, model.cfg.pad_id)  # (B, 1, 1, S)
    x = model.src_embed(src)  # (B, S, D)
    for layer in cast("list[EncoderLayer]", list(model.encoder.layers)):
        attn = layer.self_attn
        q, k, v = attn.split_heads(linear(attn.qkv_proj, layer.attn_block.enter(x)), 3)
        y = linear(attn.out_proj, merge_heads(_attend(q, k, v, src_mask)))
        x = layer.attn_block.leave(x, y)
        x = layer.ffn_block.leave(x, _ffn(layer.ffn, linear, layer.ffn_block.enter(x)))
    if model.encoder.final_norm is not None:
        x = model.encoder.final_norm(x)
    return x


def _ffn(ffn: FeedForward, linear: Callable[..., Tensor], x: Tensor) -> Tensor:
    """The feed-forward network through ``linear``: the paper's ReLU applied as the product
    writes its output, another activation (GELU, swish) after it."""
    if ffn.activation is None:
        return linear(ffn.linear2, linear(ffn.linear1, x, "relu"))
    return linear(ffn.linear2, ffn.activation(linear(ffn.linear1, x)))


def greedy_choice(lprobs: Tensor, position: Tensor, limits: Tensor, cfg: ModelConfig
                  ) -> tuple[Tensor, Tensor]:
    """Greedy search's next token for one row under the search's rules (``aiayn.decode.search``,
    its own "aiayn" rules): never PAD or BOS, no EOS before ``min_len`` tokens, only EOS at the
    length limit (with its own log-probability, 0 where it is ruled out); then the most
    probable token, the first of equal ones. lprobs (1, V), position () the step, limits (2,):
    min_len and the length limit -> token (1,), its log-probability (1,)."""
    vocab = torch.arange(lprobs.size(-1), device=lprobs.device)
    is_eos = vocab == cfg.eos_id
    banned = (vocab == cfg.pad_id) | (is_eos & (position < limits[0]))
    if cfg.bos_id is not None:
        banned = banned | (vocab == cfg.bos_id)
    at_limit = position + 1 >= limits[1]
    masked = lprobs.masked_fill(banned | (at_limit & ~is_eos), float("-inf"))
    masked = torch.where(at_limit & is_eos & torch.isinf(masked), 0.0, masked)
    lp, token = masked.max(-1)
    return token, lp


class _Step(nn.Module):
    """``decoder_step`` as a module for ``torch.export`` (the model's weights are its own), with
    greedy search's choice made in the same compiled code: the step's token is written into
    ``tokens`` (the next step's input), into ``chosen`` and its log-probability into
    ``chosen_lp`` at ``position``, and ``position`` advances. So a whole greedy decoding of one
    sentence calls the same compiled function with the same tensors step after step
    (``CompiledSteps.greedy_sentence``); other searches read the returned log-probabilities."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, tokens: Tensor, position: Tensor, limits: Tensor, self_k: list[Tensor],
                self_v: list[Tensor], cross_k: list[Tensor], cross_v: list[Tensor],
                src_mask: Tensor, chosen: Tensor, chosen_lp: Tensor) -> Tensor:
        lprobs = decoder_step(self.model, tokens, position, self_k, self_v, cross_k, cross_v,
                              src_mask)
        token, lp = greedy_choice(lprobs, position, limits, self.model.cfg)
        at = position.view(1)
        chosen.index_copy_(0, at, token)
        chosen_lp.index_copy_(0, at, lp)
        tokens.copy_(token.view(1, 1))
        position.add_(1)
        return lprobs


class _RowsStep(nn.Module):
    """``rows_step`` as a module for ``torch.export``, its products oneDNN's: besides the model
    it holds, as parameters, each linear layer's weight in oneDNN's layout (``CpuLinear``'s own
    copy), under the layer's name, which it writes into the layer (``onednn_name``: export
    traces the layers through stand-ins, so they are found by name, not by identity). The
    compiled step keeps no weights of either kind: both are bound at load. An int8 model's
    products are its ``Int8Linear`` layers' own."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model
        self.onednn = nn.ParameterDict()
        for name, layer in model.named_modules():
            if isinstance(layer, CpuLinear):
                layer.onednn_name = _onednn_key(name)
                self.onednn[layer.onednn_name] = nn.Parameter(layer.onednn_weight(),
                                                              requires_grad=False)

    def linear(self, layer: CpuLinear | Int8Linear, x: Tensor, activation: str = "none"
               ) -> Tensor:
        if isinstance(layer, Int8Linear):
            return layer.int8_product(x, activation)
        return onednn_linear(x, self.onednn[layer.onednn_name], layer.bias, activation)

    def forward(self, tokens: Tensor, position: Tensor, slots: Tensor, self_k: list[Tensor],
                self_v: list[Tensor], cross_k: list[Tensor], cross_v: list[Tensor],
                src_mask: Tensor) -> Tensor:
        return rows_step(self.model, self.linear, tokens, position, slots, self_k, self_v,
                         cross_k, cross_v, src_mask)


class _EncodeStep(_RowsStep):
    """``encoder_rows`` as a module for ``torch.export``, its products as ``_RowsStep``'s."""

    def forward(self, src: Tensor) -> Tensor:  # type: ignore[override]
        return encoder_rows(self.model, self.linear, src)


class _ShortlistStep(_RowsStep):
    """``rows_step`` over a shortlist's rows of the output projection, given as arguments."""

    def forward(self, tokens: Tensor, position: Tensor, slots: Tensor,  # type: ignore[override]
                self_k: list[Tensor], self_v: list[Tensor], cross_k: list[Tensor],
                cross_v: list[Tensor], src_mask: Tensor, weight: Tensor, bias: Tensor
                ) -> Tensor:
        return rows_step(self.model, self.linear, tokens, position, slots, self_k, self_v,
                         cross_k, cross_v, src_mask, (weight, bias))


STEPS: dict[str, type[nn.Module]] = {"step": _Step, "rows": _RowsStep, "encode": _EncodeStep,
                                     "shortlist": _ShortlistStep}
ONEDNN_KINDS = ("rows", "encode", "shortlist")  # the kinds that read oneDNN weight copies


def _onednn_key(name: str) -> str:
    return name.replace(".", "-")  # a ParameterDict key holds no dots


def _weights(step: nn.Module) -> dict[str, Tensor]:
    """Every parameter and buffer by name, tied ones under each of their names."""
    return {**dict(step.named_parameters(remove_duplicate=False)),
            **dict(step.named_buffers(remove_duplicate=False))}


def _package_path(model: Transformer, threads: int, kind: str = "step") -> Path:
    """Where the compiled step of this kind ("step": one row, "rows": many, "encode": the
    encoder) and shape is kept:
    named by everything it depends on."""
    here = Path(__file__).resolve().parent
    key = hashlib.sha256()
    for part in (kind, repr(model.cfg), threads, torch.__version__, platform.machine(),
                 torch.backends.cpu.get_cpu_capability(), sorted(INDUCTOR_OPTIONS.items()),
                 sorted((n, tuple(t.shape), str(t.dtype)) for n, t in _weights(model).items()),
                 sorted({m.input_levels for m in model.modules() if isinstance(m, Int8Linear)})):
        key.update(repr(part).encode())
    model_files = (here.parent / "model").glob("*.py")
    for source in sorted([here / "compiled.py", here / "cpu.py", *model_files]):
        key.update(source.read_bytes())
    return _cache_root() / "aiayn-steps" / f"{kind}-{key.hexdigest()[:24]}.pt2"


def _compile_package(model: Transformer, path: Path, kind: str = "step") -> None:
    """Export the step of ``kind`` with symbolic sizes, compile it without its weights and
    write the package to ``path``."""
    if not torch._dynamo.is_dynamo_supported():
        raise RuntimeError(f"Dynamo does not support Python {platform.python_version()}")
    export = {"rows": _export_rows, "encode": _export_encode,
              "shortlist": lambda m: _export_rows(m, shortlist=True)}
    program = export.get(kind, _export_step)(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:  # complete, or not there at all
        built = torch._inductor.aoti_compile_and_package(
            program, package_path=os.path.join(tmp, path.name),
            inductor_configs={**INDUCTOR_OPTIONS, "aot_inductor.package_constants_in_so": False})
        os.replace(built, path)


def _export_rows(model: Transformer, shortlist: bool = False
                 ) -> torch.export.ExportedProgram:
    """The step of many rows, exported with symbolic sentences, rows per sentence, positions,
    buffer slots, cache and source lengths; with ``shortlist``, over output rows given as
    arguments, their number symbolic too."""
    from torch.export import Dim
    cfg = model.cfg
    layers, heads, dh = cfg.n_decoder_layers, cfg.n_heads, cfg.head_dim
    with torch.inference_mode(False), torch.no_grad():  # export traces plain tensors
        def zeros(rows: int, length: int) -> list[Tensor]:
            return [torch.zeros(rows, heads, length, dh) for _ in range(layers)]
        n, g, t, slots, capacity, source = 3, 2, 4, 7, 9, 5  # examples, all symbolic
        example: tuple[Any, ...] = (
                   torch.full((n, g), cfg.start_id, dtype=torch.long), torch.tensor(t - 1),
                   torch.zeros(n, g, t, dtype=torch.long), zeros(slots, capacity),
                   zeros(slots, capacity), zeros(n, source), zeros(n, source),
                   torch.ones(n, 1, 1, source, dtype=torch.bool))
        sentences, group = Dim("sentences", min=1), Dim("group", min=1)
        positions, length = Dim("positions", min=1, max=cfg.max_len), Dim("cache", min=1,
                                                                          max=cfg.max_len)
        buffers, src_len = Dim("slots", min=1), Dim("source", min=1)
        dynamic: tuple[Any, ...] = (
            {0: sentences, 1: group}, {}, {0: sentences, 1: group, 2: positions},
                   [{0: buffers, 2: length}] * layers, [{0: buffers, 2: length}] * layers,
                   [{0: sentences, 2: src_len}] * layers, [{0: sentences, 2: src_len}] * layers,
                   {0: sentences, 3: src_len})
        if not shortlist:
            return torch.export.export(_RowsStep(model), example, dynamic_shapes=dynamic)
        rows = Dim("shortlist", min=2)
        example += (torch.zeros(6, cfg.d_model), torch.zeros(6))
        dynamic += ({0: rows}, {0: rows})
        return torch.export.export(_ShortlistStep(model), example, dynamic_shapes=dynamic)


def _export_encode(model: Transformer) -> torch.export.ExportedProgram:
    """The encoder, exported with symbolic sentences and source length."""
    from torch.export import Dim
    with torch.inference_mode(False), torch.no_grad():  # export traces plain tensors
        example = torch.full((3, 5), 4, dtype=torch.long)
        example[0, -1] = model.cfg.pad_id  # a padded sentence among them
        dynamic = ({0: Dim("sentences", min=1), 1: Dim("source", min=1, max=model.cfg.max_len)},)
        return torch.export.export(_EncodeStep(model), (example,), dynamic_shapes=dynamic)


def _export_step(model: Transformer) -> torch.export.ExportedProgram:
    """The step of one row, exported with symbolic source and cache lengths."""
    from torch.export import Dim
    cfg = model.cfg
    layers, heads, dh = cfg.n_decoder_layers, cfg.n_heads, cfg.head_dim
    with torch.inference_mode(False), torch.no_grad():  # export traces plain tensors
        def zeros(length: int) -> list[Tensor]:
            return [torch.zeros(1, heads, length, dh) for _ in range(layers)]
        source, capacity = 7, 9  # example lengths, symbolic in the compiled step
        example = (torch.full((1, 1), cfg.start_id, dtype=torch.long), torch.tensor(0),
                   torch.tensor([0, capacity]), zeros(capacity), zeros(capacity), zeros(source),
                   zeros(source), torch.ones(1, 1, 1, source, dtype=torch.bool),
                   torch.zeros(capacity, dtype=torch.long), torch.zeros(capacity))
        length, src_len = Dim("cache", min=1, max=cfg.max_len), Dim("source", min=1)
        dynamic: tuple[Any, ...] = (
            {}, {}, {}, [{2: length}] * layers, [{2: length}] * layers,
                   [{2: src_len}] * layers, [{2: src_len}] * layers, {3: src_len},
                   {0: length}, {0: length})
        return torch.export.export(_Step(model), example, dynamic_shapes=dynamic)


class CompiledSteps(nn.Module):
    """An inference ``Transformer`` whose steps of one row run compiled; a ``Seq2Seq`` for
    the searches whose steps return log-probabilities.

    ``warn`` receives the one-line reason when compilation fails (default: standard error).
    With ``background`` (the default of the commands, ``auto_compile``) a step not yet
    compiled for this model's shape is built by a separate low-priority process that
    writes it where every later process finds it, and until it is there the steps run
    eagerly (same results); the process goes on when this one ends, so a short first run
    does not wait for it. Without, the first step compiles in this process (``--compile``).
    """

    returns_log_probs = True
    RECHECK = 1.0  # seconds between looks for a step being built in the background

    def __init__(self, model: Transformer, *, warn: Callable[[str], None] | None = None,
                 background: bool = False) -> None:
        super().__init__()
        self.model, self.cfg = model, model.cfg
        self.warn = warn or (lambda msg: print(f"aiayn: warning: {msg}", file=sys.stderr))
        self.background = background
        self.building: dict[tuple[str, int], tuple[Path, float]] = {}  # path, next look
        self.failed: str | None = None
        if not compile_available():
            self._give_up("ahead-of-time compilation is not available for this platform")
        self.compiled_steps = 0  # how many steps ran compiled (for tests and benchmarks)
        self._steps: dict[tuple[str, int], Callable] = {}  # by kind and thread count
        self._packages: dict[tuple[str, int], Any] = {}
        self._bound: dict[tuple[str, int], dict[str, Tensor]] = {}
        self._sources: dict[tuple[str, int], list[tuple[Tensor, tuple[int, int]]]] = {}

    def _compiled(self, kind: str = "step") -> Callable | None:
        """The compiled step of ``kind`` ("step", "rows", "encode") at the current thread
        count (generated loops are split among a fixed number of threads), compiled or loaded
        from disk the first time, with this model's weights bound; None while it is being
        built in the background."""
        key = (kind, torch.get_num_threads())
        if key not in self._steps:
            if key in self.building:
                path, look = self.building[key]
                if time.monotonic() < look:
                    return None
                if not path.exists():
                    self._check_build(path)
                    self.building[key] = (path, time.monotonic() + self.RECHECK)
                    return None
                del self.building[key]
            else:
                path = _package_path(self.model, key[1], kind)
            if not path.exists():
                if self.background:
                    if not self._check_build(path):
                        return None
                    self._build_in_background(kind, key[1], path)
                    self.building[key] = (path, time.monotonic() + self.RECHECK)
                    return None
                _compile_package(self.model, path, kind)
            self._packages[key] = _load_package(path)
            self._bind(key)
            # the loader's own entry point: a flat list of tensors in, one out (a package's
            # __call__ would parse its argument structure anew at every step)
            self._steps[key] = self._packages[key].run
        elif kind in ONEDNN_KINDS and any((w._version, w.data_ptr()) != made
                                    for w, made in self._sources[key]):
            self._bind(key)  # a weight changed since: its oneDNN copy is made again
        return self._steps[key]

    def _bind(self, key: tuple[str, int]) -> None:
        """Hand the compiled step of ``key`` the tensors it reads: the model's weights and, for
        the step of many rows, their oneDNN copies."""
        package = self._packages[key]
        step = STEPS[key[0]](self.model)
        weights = _weights(step)
        bound = {name: weights[name] for name in package.get_constant_fqns()}
        # the library reads these tensors where they are, so they are kept alive here
        # (the model's weights may be updated in place, not replaced)
        self._bound[key] = bound
        try:  # (constants, use_inactive, check_full_update, user_managed[, allow_h2d_copy])
            package.load_constants(bound, False, True, True, False)
        except TypeError:  # a loader without the last argument
            package.load_constants(bound, False, True, True)
        if key[0] in ONEDNN_KINDS:  # what the oneDNN copies were made from, checked each step
            self._sources[key] = [
                (layer.weight, (layer.weight._version, layer.weight.data_ptr()))
                for layer in self.model.modules()
                if isinstance(layer, CpuLinear) and f"onednn.{layer.onednn_name}" in bound]

    def _check_build(self, path: Path) -> bool:
        """False, and decoding eagerly from now on, where a build of ``path`` failed (its
        ``.failed`` file says why, for every later process too)."""
        failed = path.with_suffix(".failed")
        if not failed.exists():
            return True
        if self.failed is None:
            self._give_up(f"{failed.read_text().strip()}; remove {failed} to try again")
        return False

    def _build_in_background(self, kind: str, threads: int, path: Path) -> None:
        """Start the process that compiles the step of ``kind`` into ``path``, unless one is at
        it already (a lock file beside it, taken over when older than ``BUILD_TIMEOUT``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = path.with_suffix(".building")
        try:
            if lock.exists() and time.time() - lock.stat().st_mtime > BUILD_TIMEOUT:
                lock.unlink(missing_ok=True)  # a build that died
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return  # another process builds it; this one finds it when it is there
        except OSError as err:
            self._give_up(f"cannot write to {path.parent}: {err.strerror}")
            return
        os.close(fd)
        spec = {"config": self.cfg.to_dict(), "kind": kind, "threads": threads,
                "int8": isinstance(self.model.output_proj, Int8Linear),
                "path": str(path), "lock": str(lock)}
        log = path.with_suffix(".log").open("w")
        subprocess.Popen(
            [sys.executable, "-c", "from aiayn.runtime.compiled import build_main; build_main()",
             json.dumps(spec)], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, cwd=path.parent)
        log.close()
        if not _announced:
            _announced.append(kind)
            print(f"aiayn: compiling the decoding steps for this model's shape in the background "
                  f"(once per shape, about a minute; kept in {path.parent}); decoding goes on "
                  "meanwhile without them", file=sys.stderr)

    def _give_up(self, reason: str) -> None:
        """Decode eagerly from now on, and say why once."""
        self.failed = reason
        self.warn(f"the compiled decoding step is unavailable ({reason}); decoding without it")

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, list[Tensor]]:
        """src (B, S) -> memory, src_mask, [] as ``Transformer.encode``: the encoder compiled
        where the steps of many rows can run (oneDNN), in inference."""
        # built in the background, the encoder waits for a step kind: the steps gain more, and
        # a two-core machine then runs one build at a time, not three
        waits = self.background and not any(kind in ("step", "rows") for kind, _ in self._steps)
        if (self.failed is None and not waits and not torch.is_grad_enabled() and src.is_cpu
                and src.dim() == 2 and src.size(1) > 0 and onednn_available()
                and isinstance(self.model.output_proj, (CpuLinear, Int8Linear))):
            step = self._ready("encode")
            if step is not None:
                try:
                    memory, = step([src.contiguous()])
                except Exception as exc:  # noqa: BLE001 - any failure of the library: eager
                    self._give_up(f"{type(exc).__name__}: {_first_line(exc)}")
                else:
                    return memory, padding_mask(src, self.cfg.pad_id), []
        return self.model.encode(src)

    def init_cache(self, memory: Tensor, src_mask: Tensor, max_len: int, *,
                   beam: int = 1) -> DecoderCache:
        return self.model.init_cache(memory, src_mask, max_len, beam=beam)

    def decode_step(self, tgt: Tensor, cache: DecoderCache) -> Tensor:
        """tgt (rows, t) -> log-probabilities (rows, t, V); the cache advances by t."""
        kind = self._kind(tgt, cache)
        step = self._ready(kind) if kind is not None else None
        if step is not None:
            if kind == "rows":
                arguments = self._rows_arguments(tgt, cache)
            else:
                capacity = cache.capacity
                cache.gather_pending()  # the compiled step reads the buffers as they stand
                arguments = self._arguments(
                    tgt.clone(), torch.tensor(cache.length), torch.tensor([0, capacity]), cache,
                    torch.empty(capacity, dtype=torch.long), torch.empty(capacity))
            out = self._run(step, arguments, cache)
            if out is not None:
                return out[:, None]
        return self.model.decode_step(tgt, cache).float().log_softmax(-1)

    def shortlist_step(self, tgt: Tensor, cache: DecoderCache, weight: Tensor, bias: Tensor
                       ) -> Tensor | None:
        """A step of two rows or more scoring only the output rows ``weight`` (K, D),
        ``bias`` (K,): log-probabilities (rows, 1, K) over them, the cache advanced; None
        where no compiled step serves it (one row, or as ``decode_step`` decodes eagerly)."""
        if self._kind(tgt, cache) != "rows" or weight.size(0) < 2:
            return None
        step = self._ready("shortlist")
        if step is None:
            return None
        out = self._run(step, [*self._rows_arguments(tgt, cache), weight, bias], cache)
        return None if out is None else out[:, None]

    def _run(self, step: Callable, arguments: list[Any], cache: DecoderCache) -> Tensor | None:
        """The compiled step's output, the cache advanced; None (and eager from now on) where
        the library failed."""
        try:
            out, = step(arguments)
        except Exception as exc:  # noqa: BLE001 - any failure of the library: decode eagerly
            self._give_up(f"{type(exc).__name__}: {_first_line(exc)}")
            return None
        cache.length += 1
        self.compiled_steps += 1
        return out

    @staticmethod
    def _rows_arguments(tgt: Tensor, cache: DecoderCache) -> list[Any]:
        """The flat argument list of the step of many rows (``_RowsStep.forward``'s)."""
        rows, group, layers = tgt.size(0), cache.group, cache.layers
        slots = cache.history_slots(rows).view(rows // group, group, -1)
        return [tgt.reshape(rows // group, group).contiguous(), torch.tensor(cache.length),
                slots, *(c.self_k for c in layers), *(c.self_v for c in layers),
                *(c.cross_k for c in layers), *(c.cross_v for c in layers), cache.src_mask]

    def _ready(self, kind: str) -> Callable | None:
        """The compiled step of ``kind`` when it can run now: None while it is built in the
        background, and from now on where compiling or loading it failed."""
        try:
            return self._compiled(kind)
        except Exception as exc:  # noqa: BLE001 - any compiler failure: decode eagerly
            self._give_up(f"{type(exc).__name__}: {_first_line(exc)}")
            return None

    def greedy_sentence(self, src: Tensor, *, max_len: int, min_len: int
                        ) -> tuple[list[int], float] | None:
        """Greedy search of one sentence, src (1, S), every step compiled with its choice
        (``greedy_choice``): the same tokens and score as ``greedy_search`` with the "aiayn"
        rules and at most ``max_len`` tokens, EOS included. The loop only calls the compiled
        function and reads back the token, the search's bookkeeping runs in it. None where
        the step cannot run compiled (the search then decodes as usual)."""
        pending = self.building.get(("step", torch.get_num_threads()))
        if (self.failed is not None or torch.is_grad_enabled() or not src.is_cpu
                or (pending is not None and time.monotonic() < pending[1])):
            return None  # (before encoding, which the search then does as usual)
        memory, src_mask, _ = self.encode(src)
        cache = self.init_cache(memory, src_mask, max_len)
        tokens = torch.full((1, 1), self.cfg.start_id, dtype=torch.long, device=src.device)
        step = self._ready("step") if self._kind(tokens, cache) == "step" else None
        if step is None:
            return None
        chosen, chosen_lp = torch.empty(max_len, dtype=torch.long), torch.empty(max_len)
        arguments = self._arguments(tokens, torch.tensor(0), torch.tensor([min_len, max_len]),
                                    cache, chosen, chosen_lp)
        eos = self.cfg.eos_id
        try:
            for length in range(1, max_len + 1):  # EOS at the limit at the latest
                step(arguments)
                if tokens.item() == eos:
                    break
        except Exception as exc:  # noqa: BLE001 - any compiler failure: decode eagerly
            self._give_up(f"{type(exc).__name__}: {_first_line(exc)}")
            return None
        self.compiled_steps += length
        out = chosen[:length].tolist()
        if out[-1] == eos:
            out.pop()
        return out, sum(chosen_lp[:length].tolist())  # summed in order, as the search does

    @staticmethod
    def _arguments(tokens: Tensor, position: Tensor, limits: Tensor, cache: DecoderCache,
                   chosen: Tensor, chosen_lp: Tensor) -> list[Any]:
        """The compiled step's flat argument list (``_Step.forward``'s, in order)."""
        layers = cache.layers
        return [tokens, position, limits, *(c.self_k for c in layers),
                *(c.self_v for c in layers), *(c.cross_k for c in layers),
                *(c.cross_v for c in layers), cache.src_mask, chosen, chosen_lp]

    def _kind(self, tgt: Tensor, cache: DecoderCache) -> str | None:
        """Which compiled step serves this step: "step" for one new position of one row, "rows"
        for one of two rows or more where oneDNN's products run, None (eager) otherwise: only
        float32 on the CPU, in inference, a model with ``CpuLinear`` or ``Int8Linear`` layers,
        and while compilation has not failed."""
        if (self.failed is not None or tgt.dim() != 2 or tgt.size(1) != 1
                or torch.is_grad_enabled() or not tgt.is_cpu or cache.length >= cache.capacity
                or cache.src_mask is None):
            return None
        first = cache.layers[0]
        if not (first.self_k.dtype == torch.float32 and first.cross_k is not None
                and isinstance(self.model.output_proj, (CpuLinear, Int8Linear))):
            return None
        if tgt.size(0) == 1 and cache.group == 1:
            return "step"
        return "rows" if onednn_available() else None

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced log-probabilities (B, T, V), as ``Ensemble`` returns them."""
        return self.model(src, tgt_in).float().log_softmax(-1)


def _first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message, at most 200 characters."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else "")[:200]


BUILD_TIMEOUT = 1800  # seconds after which a build's lock is taken to be left by a dead one
_announced: list[str] = []  # the background build is announced once per process


def build_main() -> None:
    """The background builder (``CompiledSteps._build_in_background``): compile one step for
    a model of the configuration given as JSON in ``sys.argv[1]`` into the path given, at low
    priority, then remove the lock. Its compilation reads only the model's shapes (the
    library holds no weights), so a model of random weights of the same configuration
    serves; its own path is checked to be the one asked for. Prints the time and size."""
    from ..config import ModelConfig
    from .cpu import for_inference
    spec = json.loads(sys.argv[1])
    path, lock = Path(spec["path"]), Path(spec["lock"])
    try:
        os.nice(10)
        torch.set_num_threads(spec["threads"])
        start = time.perf_counter()
        with torch.no_grad():
            model = for_inference(Transformer(ModelConfig.from_dict(spec["config"])),
                                  int8=spec.get("int8", False))
        named = _package_path(model, spec["threads"], spec["kind"])
        if named != path:
            print(f"the model built here is named {named}, not {path}: not built")
            return
        _compile_package(model, path, spec["kind"])
        print(f"built {path.name} in {time.perf_counter() - start:.1f} s, "
              f"{path.stat().st_size / 2**20:.1f} MiB")
    except Exception as exc:  # noqa: BLE001 - said to every later process, then raised
        path.with_suffix(".failed").write_text(
            f"building the compiled decoding step failed ({type(exc).__name__}: "
            f"{_first_line(exc)})\n")
        raise
    finally:
        lock.unlink(missing_ok=True)
