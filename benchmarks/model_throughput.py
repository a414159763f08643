"""Forward+backward throughput: aiayn's Transformer against torch.nn.Transformer.

Both models get the same embeddings (token x sqrt(d_model) + sinusoidal positions, shared and
tied to the output projection) and the same loss; only the encoder-decoder stacks differ. The two
run alternately in the same process on the same batches, and the ratio of their median step
times is printed. Run by hand:

    .venv/bin/python benchmarks/model_throughput.py [--sizes small base] [--steps 10]

Rows:
- "paper dropout": ours applies dropout where §5.4 says (sub-layer outputs, embedding sums);
  nn.Transformer with its defaults also drops attention weights and FFN activations.
- "same dropout": ours with attn_dropout = ffn_dropout = dropout, the same placements as
  nn.Transformer.
- "no dropout": both with dropout 0 (the pure cost of the layers).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from aiayn import ModelConfig, Transformer
from aiayn.model import causal_mask


class TorchTransformerMT(nn.Module):
    """nn.Transformer with our model's embeddings and tied output projection."""

    def __init__(self, ours: Transformer, dropout: float) -> None:
        super().__init__()
        cfg = ours.cfg
        self.src_embed, self.tgt_embed = ours.src_embed, ours.tgt_embed  # same modules, same cost
        self.core = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers,
                                   cfg.n_decoder_layers, cfg.d_ff, dropout=dropout,
                                   batch_first=True)
        self.output_proj = ours.output_proj
        self.pad_id = cfg.pad_id

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        t = tgt_in.size(1)
        src_pad = src == self.pad_id
        out = self.core(self.src_embed(src), self.tgt_embed(tgt_in),
                        src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad,
                        tgt_mask=~causal_mask(t)[0, 0], tgt_is_causal=True)
        return self.output_proj(out)


def make_batch(batch: int, length: int, vocab: int, gen: torch.Generator):
    """Sentences of mixed lengths (60-100% of ``length``), right-padded, like a bucketed batch."""
    lengths = torch.randint(int(0.6 * length), length + 1, (batch,), generator=gen)
    src = torch.randint(4, vocab, (batch, length), generator=gen)
    tgt = torch.randint(4, vocab, (batch, length + 1), generator=gen)
    for row, n in enumerate(lengths.tolist()):
        src[row, n:] = 0
        tgt[row, n + 1:] = 0
    return src, tgt[:, :-1], tgt[:, 1:]


def step(model: nn.Module, opt: torch.optim.Optimizer, batch) -> None:
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def bench(size: str, steps: int, batch: int, length: int, vocab: int, mode: str) -> dict:
    dropout = ModelConfig.preset(size).dropout
    extra = dict(attn_dropout=dropout, ffn_dropout=dropout) if mode == "same dropout" else {}
    if mode == "no dropout":
        dropout, extra = 0.0, dict(dropout=0.0)
    torch.manual_seed(0)
    ours = Transformer(ModelConfig.preset(size, vocab_size=vocab, **extra)).train()
    peer = TorchTransformerMT(ours, dropout).train()
    models = {"aiayn": ours, "nn.Transformer": peer}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-4) for k, m in models.items()}
    gen = torch.Generator().manual_seed(0)
    batches = [make_batch(batch, length, vocab, gen) for _ in range(4)]
    tokens = sum(int((b[2] != 0).sum()) for b in batches) / len(batches)
    times: dict[str, list[float]] = {k: [] for k in models}
    for i in range(steps + 2):  # two warm-up rounds
        for name, model in models.items():  # alternate, so drift hits both alike
            start = time.perf_counter()
            step(model, opts[name], batches[i % len(batches)])
            if i >= 2:
                times[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return dict(size=size, mode=mode, ours=tokens / med["aiayn"],
                peer=tokens / med["nn.Transformer"], ratio=med["nn.Transformer"] / med["aiayn"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["small", "base"])
    parser.add_argument("--modes", nargs="+",
                        default=["paper dropout", "same dropout", "no dropout"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64, help="sentences per batch")
    parser.add_argument("--length", type=int, default=32, help="longest sentence, tokens")
    parser.add_argument("--vocab", type=int, default=8000)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, "
          f"batch {args.batch} x <= {args.length} tokens, vocab {args.vocab}")
    print("| size | dropout | aiayn tgt tok/s | nn.Transformer tgt tok/s | ratio |")
    print("|---|---|---:|---:|---:|")
    for size in args.sizes:
        for mode in args.modes:
            r = bench(size, args.steps, args.batch, args.length, args.vocab, mode)
            print(f"| {r['size']} | {r['mode']} | {r['ours']:,.0f} | {r['peer']:,.0f} "
                  f"| {r['ratio']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
