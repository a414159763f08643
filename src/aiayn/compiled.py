"""A compiled decoding step for one sentence at a time on the CPU.

At one sentence a decoding step is two kinds of work: reading every weight once (the products)
and about 150 small operations between them (norms, head reshapes, attention, the residuals,
the log-softmax), each dispatched on its own. ``CompiledSteps`` wraps an inference model
(``aiayn.cpu.for_inference``) and runs the step of one row through ``torch.compile`` (Inductor's
C++ backend): the whole step becomes a few dozen generated loops, each product one of them
(``CpuLinear.traced_product``: a vectorized dot product of the row with every weight row,
fused with the operations around it). The step is written for compilation: one function over the
cache's buffers, the position a tensor, this step's keys and values written into the
preallocated cache and attention over all of its positions with the unwritten ones masked.
Its results equal the eager step's to float32 rounding (tested within 1e-5).

- Steps of more rows than ``max_rows`` (batches, the beams of several sentences) run eagerly:
  there oneDNN's products win and per-operation dispatch is a small share of the step.
- Compilation happens once per process for each shape family (rows, beams per sentence); the
  source and cache lengths are symbolic. Inductor keeps what it compiled on disk (its cache
  directory, ``TORCHINDUCTOR_CACHE_DIR``), so a later process compiles in seconds.
- Where compilation is not available (no C++ compiler, a PyTorch without Inductor for this
  platform), the first step warns once and every step runs eagerly: same results, slower.

Why it pays at one sentence and not beyond: docs/benchmarks.md ("A compiled step").
"""

from __future__ import annotations

import functools
import math
import sys
import types
from collections.abc import Callable

import torch
from torch import Tensor, nn

from .cpu import CpuLinear
from .model import DecoderCache, Transformer

COMPILED_MAX_ROWS = 1  # the rows a step may have to run compiled (measured: docs/benchmarks.md)


def compile_available() -> bool:
    """Whether this PyTorch can compile at all here (``torch.compile`` exists and supports this
    Python); a missing C++ compiler shows only at the first compilation."""
    try:
        return hasattr(torch, "compile") and torch._dynamo.is_dynamo_supported()
    except (AttributeError, RuntimeError):
        return False


def _attend(q: Tensor, k: Tensor, v: Tensor, visible: Tensor) -> Tensor:
    """softmax(q k^T / sqrt(Dh)) v over keys where ``visible`` (broadcast to the scores)."""
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
    return scores.masked_fill(~visible, float("-inf")).softmax(-1) @ v


def _merge(y: Tensor) -> Tensor:
    """(B, H, T, Dh) -> (B, T, H * Dh)."""
    b, h, t, dh = y.shape
    return y.transpose(1, 2).reshape(b, t, h * dh)


def decoder_step(model: Transformer, tokens: Tensor, position: Tensor, self_k: list[Tensor],
                 self_v: list[Tensor], cross_k: list[Tensor], cross_v: list[Tensor],
                 src_mask: Tensor, group: int) -> Tensor:
    """One decoding step over the cache's buffers: tokens (B, 1), position () int64, per layer
    self_k / self_v (B, H, L, Dh) written at ``position``, cross_k / cross_v (B / group, H, S,
    Dh), src_mask (B / group, 1, 1, S) -> log-probabilities (B, V). The same computation as
    ``Transformer.decode_step`` in inference, the positions after ``position`` masked."""
    embed, at = model.tgt_embed, position.view(1)
    x = embed.token(tokens) * embed.scale + embed.positions.table.index_select(0, at)
    b = x.size(0)
    visible = torch.arange(self_k[0].size(2), device=x.device) <= position  # (L,)
    for i, layer in enumerate(model.decoder.layers):
        attn = layer.self_attn
        q, k, v = attn._heads(attn.qkv_proj(layer.self_block.enter(x)), 3)  # (B, H, 1, Dh)
        self_k[i].index_copy_(2, at, k)
        self_v[i].index_copy_(2, at, v)
        # positions after this one hold zeros or stale rows from a reorder: weight 0, and
        # their values zeroed so that no stale NaN or inf reaches the sum
        values = self_v[i].masked_fill(~visible[:, None], 0.0)
        y = attn.out_proj(_merge(_attend(q, self_k[i], values, visible)))
        x = layer.self_block.leave(x, y)
        attn = layer.cross_attn  # a sentence's rows (its beams) as one block of queries
        query = layer.cross_block.enter(x).reshape(b // group, group, -1)
        q = attn._heads(attn.q_proj(query), 1)[0]  # (B / group, H, group, Dh)
        y = attn.out_proj(_merge(_attend(q, cross_k[i], cross_v[i], src_mask)))
        x = layer.cross_block.leave(x, y.reshape(b, 1, -1))
        x = layer.ffn_block.leave(x, layer.ffn(layer.ffn_block.enter(x)))
    if model.decoder.final_norm is not None:
        x = model.decoder.final_norm(x)
    return model.output_proj(x[:, 0]).float().log_softmax(-1)


class CompiledSteps(nn.Module):
    """An inference ``Transformer`` whose steps of at most ``max_rows`` rows run compiled; a
    ``Seq2Seq`` for the searches whose steps return log-probabilities.

    ``warn`` receives the one-line reason when compilation fails (default: standard error).
    """

    returns_log_probs = True
    _made = 0  # compiled steps made in this process (each gets its own code object)

    def __init__(self, model: Transformer, *, max_rows: int = COMPILED_MAX_ROWS,
                 warn: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.model, self.cfg, self.max_rows = model, model.cfg, max_rows
        self.warn = warn or (lambda msg: print(f"aiayn: warning: {msg}", file=sys.stderr))
        self.failed: str | None = None
        if not compile_available():
            self._give_up("torch.compile is not available for this platform")
        self.compiled_steps = 0  # how many steps ran compiled (for tests and benchmarks)
        self._steps: dict[int, Callable] = {}  # compiled step by thread count

    def _compiled(self) -> Callable:
        """The compiled step for the current thread count (generated loops are split among a
        fixed number of threads).

        Guards on the model's modules are left out, which saves ~0.1 ms a step: the model is an
        inference copy that keeps its structure and weight shapes, and each call still reads
        the weights as they are. torch.compile keeps compiled code per code object, so each step
        gets a code object of its own: another model never runs this model's compiled code."""
        threads = torch.get_num_threads()
        if threads not in self._steps:
            options = {}
            if hasattr(torch.compiler, "skip_guard_on_all_nn_modules_unsafe"):
                options["guard_filter_fn"] = torch.compiler.skip_guard_on_all_nn_modules_unsafe
            CompiledSteps._made += 1
            code = decoder_step.__code__.replace(co_name=f"decoder_step_{CompiledSteps._made}")
            step = types.FunctionType(code, decoder_step.__globals__, code.co_name)
            self._steps[threads] = torch.compile(functools.partial(step, self.model),
                                                 fullgraph=True, dynamic=False, options=options)
        return self._steps[threads]

    def _give_up(self, reason: str) -> None:
        """Decode eagerly from now on, and say why once."""
        self.failed = reason
        self.warn(f"the compiled decoding step is unavailable ({reason}); decoding without it")

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, list[Tensor]]:
        return self.model.encode(src)

    def init_cache(self, memory: Tensor, src_mask: Tensor, max_len: int, *,
                   beam: int = 1) -> DecoderCache:
        return self.model.init_cache(memory, src_mask, max_len, beam=beam)

    def decode_step(self, tgt: Tensor, cache: DecoderCache) -> Tensor:
        """tgt (rows, t) -> log-probabilities (rows, t, V); the cache advances by t."""
        if self._compilable(tgt, cache):
            layers = cache.layers
            args = (tgt, torch.tensor(cache.length), [c.self_k for c in layers],
                    [c.self_v for c in layers], [c.cross_k for c in layers],
                    [c.cross_v for c in layers], cache.src_mask, cache.group)
            for layer in layers:  # lengths vary by sentence: one compiled step for all
                torch._dynamo.maybe_mark_dynamic(layer.self_k, 2)
                torch._dynamo.maybe_mark_dynamic(layer.self_v, 2)
                torch._dynamo.maybe_mark_dynamic(layer.cross_k, 2)
                torch._dynamo.maybe_mark_dynamic(layer.cross_v, 2)
            torch._dynamo.maybe_mark_dynamic(cache.src_mask, 3)
            try:
                out = self._compiled()(*args)
            except Exception as exc:  # noqa: BLE001 - any compiler failure: decode eagerly
                self._give_up(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}")
            else:
                cache.length += 1
                self.compiled_steps += 1
                return out[:, None]
        return self.model.decode_step(tgt, cache).float().log_softmax(-1)

    def _compilable(self, tgt: Tensor, cache: DecoderCache) -> bool:
        """One new position of at most ``max_rows`` rows, float32 on the CPU, in inference, of
        a model with ``CpuLinear`` layers (not int8); and compilation has not failed."""
        if (self.failed is not None or tgt.size(1) != 1 or tgt.size(0) > self.max_rows
                or torch.is_grad_enabled() or not tgt.is_cpu or cache.length >= cache.capacity
                or cache.src_mask is None):
            return False
        first = cache.layers[0]
        return (first.self_k.dtype == torch.float32 and first.cross_k is not None
                and isinstance(self.model.output_proj, CpuLinear))

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced log-probabilities (B, T, V), as ``Ensemble`` returns them."""
        return self.model(src, tgt_in).float().log_softmax(-1)
