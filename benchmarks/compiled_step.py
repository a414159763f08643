"""Does a compiled decoder step pay on this CPU? The eager step against torch.compile's.

aiayn's decoding step runs eagerly (``aiayn.runtime.cpu.for_inference``: split few-row products, a
packed output projection). This script compiles the same step with Inductor's C++ backend in
the form that suits compilation best: one function over fixed-shape buffers (the position a
tensor, every layer's keys and values written into a preallocated (B, H, L, Dh) cache, attention
over all L positions with the unwritten ones masked), the output log-softmax included, so one
compiled graph serves every step. Variants: symbolic shapes (one graph for every batch),
static shapes, Inductor's ``freezing`` (weights as constants, MKL-packed linear layers), and
static shapes with every product written as the eager step's own one-row product
(``CpuLinear.split_product``: one block of output features per thread, a batched product),
so that only what lies between the products is compiled.

Each variant runs in a fresh process; the figure is microseconds per step (median of
``--rounds`` runs of 300 steps after 50 warm-up steps), random-weight ``small`` model, 26
source tokens, step 5 of a 60-position cache. The compiled step is checked against the eager
one (largest log-probability difference printed). Run by hand:

    .venv/bin/python benchmarks/compiled_step.py [--batches 1 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time

VARIANTS = ("eager (aiayn)", "compiled, symbolic shapes", "compiled, static shapes",
            "compiled, static, freezing", "compiled, static, split products")


def decoder_step(model, tokens, position, self_k, self_v, cross_k, cross_v, src_mask,
                 linear=None):
    """One decoding step over fixed-shape buffers: tokens (B, 1), position () int64, self_k /
    self_v per layer (B, H, L, Dh) written at ``position``, cross_k / cross_v per layer
    (B, H, S, Dh), src_mask (B, 1, 1, S) -> (B, V) log-probabilities. ``linear(layer, x)``
    computes each product (default: the layer itself)."""
    import torch
    lin = linear or (lambda layer, x: layer(x))
    embed, at = model.tgt_embed, position.view(1)
    x = embed.token(tokens) * embed.scale + embed.positions.table.index_select(0, at)
    visible = torch.arange(self_k[0].size(2)) <= position  # (L,)

    def attend(q, k, v, mask):
        scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.size(-1)))
        return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v

    def merge(y):
        b, h, t, dh = y.shape
        return y.transpose(1, 2).reshape(b, t, h * dh)

    for i, layer in enumerate(model.decoder.layers):
        attn = layer.self_attn
        q, k, v = attn._heads(lin(attn.qkv_proj, layer.self_block.enter(x)), 3)
        self_k[i].index_copy_(2, at, k)
        self_v[i].index_copy_(2, at, v)
        x = layer.self_block.leave(x, lin(attn.out_proj, merge(attend(q, self_k[i], self_v[i],
                                                                      visible))))
        attn = layer.cross_attn
        q = attn._heads(lin(attn.q_proj, layer.cross_block.enter(x)), 1)[0]
        x = layer.cross_block.leave(x, lin(attn.out_proj, merge(attend(q, cross_k[i],
                                                                       cross_v[i], src_mask))))
        ffn = layer.ffn  # (ReLU, no dropout in eval)
        h = lin(ffn.linear1, layer.ffn_block.enter(x)).relu()
        x = layer.ffn_block.leave(x, lin(ffn.linear2, h))
    return lin(model.output_proj, x[:, 0]).float().log_softmax(-1)


def worker(variant: str, batch: int) -> None:
    import torch
    import torch._inductor.config as inductor
    from torch import nn

    from aiayn import ModelConfig, Transformer
    from aiayn.runtime.cpu import CpuLinear, for_inference, reuse_freed_memory

    reuse_freed_memory()
    torch.manual_seed(0)
    model = Transformer(ModelConfig.preset("small", vocab_size=8000)).eval()
    src = torch.randint(4, 8000, (batch, 26))
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        cache = model.init_cache(memory, src_mask, 60)
        for layer in cache.layers:  # unwritten positions are read with weight 0: no NaN there
            layer.self_k.zero_()
            layer.self_v.zero_()
        tokens = torch.full((batch, 1), 2)
        eager = for_inference(model)
        want = eager.decode_step(tokens, model.init_cache(memory, src_mask, 60))[:, 0]
        if variant == "eager (aiayn)":
            def step():
                cache.length = 5
                eager.decode_step(tokens, cache)
            diff = 0.0
        else:
            inductor.freezing = variant.endswith("freezing")
            split = variant.endswith("split products")
            if split:  # the weight blocks of every product, at any batch
                for layer in eager.modules():
                    if isinstance(layer, CpuLinear):
                        layer._split(layer.weight)

            class Step(nn.Module):  # the weights as the module's own: freezing can fold them
                def __init__(self):
                    super().__init__()
                    self.model = eager if split else model

                def forward(self, *args):
                    if split:
                        return decoder_step(self.model, *args,
                                            linear=lambda layer, x: layer.split_product(x))
                    return decoder_step(self.model, *args)
            compiled = torch.compile(Step(), dynamic=variant.endswith("symbolic shapes"),
                                     fullgraph=True)
            layers = cache.layers
            args = [tokens, torch.tensor(0), [c.self_k for c in layers],
                    [c.self_v for c in layers], [c.cross_k for c in layers],
                    [c.cross_v for c in layers], cache.src_mask]
            got = compiled(*args)
            diff = float((got - want.log_softmax(-1)).abs().max())
            args[1] = torch.tensor(5)

            def step():
                compiled(*args)
        for _ in range(50):
            step()
        start = time.perf_counter()
        for _ in range(300):
            step()
        print(f"{(time.perf_counter() - start) / 300 * 1e6} {diff}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.batch)
        return
    import torch
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; small, 26 source "
          f"tokens; us per decoding step, median of {args.rounds} fresh processes")
    print("| batch | " + " | ".join(VARIANTS) + " | largest difference from eager |")
    print("|---:|" + "---:|" * (len(VARIANTS) + 1))
    for batch in args.batches:
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        diffs = []
        for _ in range(args.rounds):
            for variant in VARIANTS:
                out = subprocess.run([sys.executable, __file__, "--worker", variant, "--batch",
                                      str(batch)], check=True, capture_output=True,
                                     text=True).stdout.split()
                times[variant].append(float(out[-2]))
                diffs.append(float(out[-1]))
        cells = " | ".join(f"{statistics.median(t):,.0f}" for t in times.values())
        print(f"| {batch} | {cells} | {max(diffs):.1e} |", flush=True)


if __name__ == "__main__":
    main()
