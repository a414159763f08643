"""Training's attention on a GPU by key length: SDPA's fused kernels against three batched
products (``_ShortAttention`` below), forward and backward, by hand on a GPU.

For each length L, a batch of ``--tokens`` // L sentences of L tokens, ``--heads`` heads of
64, in bf16: causal self-attention (SDPA takes flash attention) and attention under a padding
mask whose last sentence position is padding in every other sentence (SDPA takes the
memory-efficient kernel). Printed: the median milliseconds of ``--repeats`` forward and
backward passes, timed by CUDA events after ``--warmup`` untimed ones, and their ratio.
Flash attention computes in tiles of 128 queries by 128 keys, the memory-efficient kernel in
tiles of 64: a sentence of 30 pieces fills a sixteenth of a flash tile. The products won
alone at some short lengths, and lost inside whole training steps (docs/benchmarks.md, "GPU"):
training keeps SDPA.

    PYTHONPATH=src python3 benchmarks/gpu_attention.py --lengths 16 32 48 64 96 128
"""

from __future__ import annotations

import argparse
import functools
import statistics

import torch
import torch.nn.functional as F
from torch import Tensor


@functools.lru_cache(maxsize=64)
def _later_keys(size: int, device: torch.device) -> Tensor:
    """(1, 1, size, size) bool, True where a key comes after its query (the look-ahead)."""
    return torch.ones(size, size, dtype=torch.bool, device=device).triu(1)[None, None]


class _ShortAttention(torch.autograd.Function):
    """Eq. 1 as batched products: the scale rides on the scores' product, masked scores are
    set to -inf in place, the softmax runs in the inputs' dtype (PyTorch's GPU softmax
    accumulates in float32) and its probabilities are kept for backward, which needs no mask
    (the masked probabilities are 0). Arguments as ``scaled_dot_product_attention``'s. The
    CPU's ``aiayn.runtime.cpu._Attention16`` for a GPU: its softmax in 16 bits throughout
    (the CPU's takes float32 where PyTorch's 16-bit CPU softmax is slow), its look-ahead mask
    made on the inputs' device."""

    @staticmethod
    def forward(ctx, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
                is_causal: bool) -> Tensor:
        b, h, t, dh = query.shape
        scale = dh ** -0.5
        q, k, v = (x.reshape(b * h, -1, dh) for x in (query, key, value))  # (B * H, T or S, Dh)
        unread = q.new_empty(())  # (baddbmm's input, with beta 0)
        scores = torch.baddbmm(unread, q, k.transpose(1, 2), beta=0.0, alpha=scale)  # (B*H, T, S)
        grid = scores.view(b, h, t, -1)  # (B, H, T, S)
        if is_causal:
            grid.masked_fill_(_later_keys(t, scores.device), float("-inf"))
        elif mask is not None:
            grid.masked_fill_(mask.logical_not(), float("-inf"))
        weights = scores.softmax(-1)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return torch.bmm(weights, v).view(b, h, t, dh)  # (B, H, T, Dh)

    @staticmethod
    def backward(ctx, grad: Tensor):
        q, k, v, weights = ctx.saved_tensors
        b, h, t, dh = grad.shape
        g = grad.reshape(b * h, t, dh)  # (B * H, T, Dh)
        grad_v = torch.bmm(weights.transpose(1, 2), g)  # (B * H, S, Dh)
        grad_weights = torch.bmm(g, v.transpose(1, 2))  # (B * H, T, S)
        grad_scores = torch._softmax_backward_data(grad_weights, weights, -1, weights.dtype)
        unread = q.new_empty(())
        grad_q = torch.baddbmm(unread, grad_scores, k, beta=0.0, alpha=ctx.scale)  # (B*H, T, Dh)
        grad_k = torch.baddbmm(unread, grad_scores.transpose(1, 2), q, beta=0.0,
                               alpha=ctx.scale)  # (B * H, S, Dh)
        return (grad_q.view(b, h, t, dh), grad_k.view(b, h, -1, dh), grad_v.view(b, h, -1, dh),
                None, None)



def timed(fn, warmup: int, repeats: int) -> float:
    """Median milliseconds of ``fn()`` on the GPU."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[16, 24, 32, 48, 64, 96, 128])
    ap.add_argument("--tokens", type=int, default=25000)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    device = torch.device("cuda")
    torch.backends.cuda.enable_cudnn_sdp(False)  # (as training on CUDA runs it)
    print(f"# {torch.cuda.get_device_name(device)}, torch {torch.__version__}, bf16, "
          f"{args.tokens:,} tokens, {args.heads} heads of 64; forward and backward, ms")
    print("| keys | attention | SDPA | products | SDPA / products |")
    print("|---:|---|---:|---:|---:|")
    for length in args.lengths:
        b = args.tokens // length
        shape = (b, args.heads, length, 64)
        q, k, v = (torch.randn(shape, device=device, dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        grad = torch.randn(shape, device=device, dtype=torch.bfloat16)
        mask = torch.ones(b, 1, 1, length, dtype=torch.bool, device=device)
        mask[::2, ..., -1] = False
        cases = {
            "causal": (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                       lambda: _ShortAttention.apply(q, k, v, None, True)),
            "padding mask": (lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                             lambda: _ShortAttention.apply(q, k, v, mask, False)),
        }
        for name, (fused, products) in cases.items():
            ms = [timed(lambda f=f: f().backward(grad), args.warmup, args.repeats)
                  for f in (fused, products)]
            print(f"| {length} | {name} | {ms[0]:.3f} | {ms[1]:.3f} | {ms[0] / ms[1]:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
