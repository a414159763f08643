"""Training throughput (target tokens/s): aiayn's trainer step against two peers, each alone.

- aiayn: ``aiayn.train.step.train_step`` (the step the trainer runs) on our Transformer.
- aiayn-compiled: the same step with the model through ``torch.compile(dynamic=True)``, as
  ``aiayn train --compile`` runs it (its compilations fall in the untimed steps).
- torch: a plain PyTorch loop: nn.Embedding x sqrt(d) + sinusoidal positions, nn.Transformer
  (its default dropout placement), tied output projection, F.cross_entropy with label smoothing.
- marian: Hugging Face ``MarianMTModel`` of the same size (ReLU, scaled and tied embeddings,
  sinusoidal positions), loss as the torch loop.

Each system trains in its own process, which loads nothing of the others: the parent cuts the
token batches once (``aiayn prepare`` output, ``--max-tokens`` padded tokens per side) into a
safetensors file, and every worker reads the same batches from it as plain tensors. Rounds
alternate the systems (the order rotates each round); a worker takes ``--warmup`` untimed steps,
then ``--steps`` timed ones, and the table gives medians over rounds. By default each timed
batch is first run once untimed (``--shapes seen``): a run meets the same few dozen batch shapes
every epoch, and in bfloat16 oneDNN makes its kernels for a product's shape the first time it
meets it (about 65 ms of a `small` step on the Xeon with AMX); ``--shapes new`` times first
meetings, as a run's first epoch has them. The same Adam settings
(fused for aiayn and Marian, as aiayn's trainer and Hugging Face's Trainer build it; PyTorch's
default for the plain loop) and label smoothing 0.1; every worker runs with the OpenMP spin and
glibc allocator settings that ``aiayn train`` uses. float32 and bf16 autocast. Each rate is also
given as matrix-product GFLOP/s (the products of forward and backward counted from the padded
shapes: ``matmul_flops``) and as a share of this CPU's ceiling, the rate of one large matrix
product in that precision (the faster of PyTorch's product and oneDNN's), measured in its own
process at the start of every round (its best of five timings; where a size's first
feed-forward product at the batches' token count, timed beside it, ran faster, that rate:
a round whose square product met a neighbour's work then still has the machine's ceiling),
the median over rounds. Beside it the log gives, per round, the best and median timings of
those products: a host whose neighbours take memory bandwidth or cores slows those medians
and the steps while the best square product stays. Run by hand (needs
the bench extra: ``pip install transformers``):

    .venv/bin/python benchmarks/train_throughput.py --data runs/quality/data [--sizes small base]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

SYSTEMS = ("aiayn", "aiayn-compiled", "torch", "marian")
# the OpenMP spin that ``aiayn train`` runs with (aiayn.runtime.threads.SHARED_SPIN_COUNT),
# for every
# worker, set before PyTorch loads, unless the user chose a policy
SPIN = {"GOMP_SPINCOUNT": "3000"}
ENV = dict(os.environ)  # as given, before importing aiayn sets a spin for this process


# ------------------------------------------------------------------ workers (one system each)
def load_batches(path: str) -> list[tuple]:
    from safetensors.torch import load_file
    tensors = load_file(path)
    n = len(tensors) // 3
    return [(tensors[f"{i}.src"], tensors[f"{i}.tgt_in"], tensors[f"{i}.tgt_out"])
            for i in range(n)]


def use_aiayn_allocator(shape: dict) -> None:
    """glibc's thresholds as ``aiayn.runtime.cpu.reuse_freed_memory`` sets them (the parent passes
    aiayn's values in ``shape["malloc"]``), without loading aiayn in a peer's process."""
    import ctypes
    import ctypes.util
    if sys.platform.startswith("linux") and os.environ.get("AIAYN_KEEP_MALLOC") != "1":
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
        for option, value in shape["malloc"]:
            mallopt(option, value)


def aiayn_worker(shape: dict, precision: str, compiled: bool = False):
    import torch

    from aiayn import ModelConfig, Transformer
    from aiayn.data.corpus import Batch
    from aiayn.runtime.cpu import TRAIN_MMAP_THRESHOLD, reuse_freed_memory
    from aiayn.train.recipe import TrainConfig
    from aiayn.train.setup import cpu_training_layers
    from aiayn.train.step import train_step

    reuse_freed_memory(mmap_threshold=TRAIN_MMAP_THRESHOLD)  # as `aiayn train` does on the CPU
    cfg = ModelConfig.preset(shape["size"], vocab_size=shape["vocab"])
    model = Transformer(cfg).train()
    train_cfg = TrainConfig(preset=shape["size"], precision=precision, compile=compiled)
    cpu_training_layers(model, torch.device("cpu"), train_cfg)  # as `aiayn train` does
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, fused=True)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    cpu = torch.device("cpu")
    net = torch.compile(model, dynamic=True) if compiled else model  # as `train/setup.py`

    def step(batch):
        train_step(net, opt, scaler, [Batch(*batch, pad_id=0)], lr=1e-4, cfg=train_cfg,
                   device=cpu)
    return step


def sinusoids(max_len: int, d: int):
    """``aiayn.model.sinusoidal_table``'s values, written again so that a peer loads no aiayn."""
    import torch
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-torch.log(torch.tensor(1e4))
                                                                    / d))
    table = torch.zeros(max_len, d)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return table


def torch_loop(shape: dict):
    import torch
    from torch import nn

    class TorchLoop(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            d = shape["d_model"]
            self.scale = d ** 0.5
            self.embed = nn.Embedding(shape["vocab"], d, padding_idx=0)
            self.register_buffer("pe", sinusoids(shape["max_len"], d))
            self.core = nn.Transformer(d, shape["heads"], shape["layers"], shape["layers"],
                                       shape["d_ff"], dropout=shape["dropout"], batch_first=True)
            self.drop = nn.Dropout(shape["dropout"])

        def embed_tokens(self, x):
            return self.drop(self.embed(x) * self.scale + self.pe[: x.size(1)])

        def forward(self, src, tgt_in):
            pad = src == 0
            t = tgt_in.size(1)
            causal = torch.ones(t, t, dtype=torch.bool).triu(1)  # True = may not attend
            out = self.core(self.embed_tokens(src), self.embed_tokens(tgt_in),
                            src_key_padding_mask=pad, memory_key_padding_mask=pad,
                            tgt_mask=causal, tgt_is_causal=True)
            return nn.functional.linear(out, self.embed.weight)
    return TorchLoop()


def marian(shape: dict):
    from torch import nn
    from transformers import MarianConfig, MarianMTModel
    conf = MarianConfig(vocab_size=shape["vocab"], d_model=shape["d_model"],
                        encoder_layers=shape["layers"], decoder_layers=shape["layers"],
                        encoder_attention_heads=shape["heads"],
                        decoder_attention_heads=shape["heads"], encoder_ffn_dim=shape["d_ff"],
                        decoder_ffn_dim=shape["d_ff"], dropout=shape["dropout"],
                        attention_dropout=0.0, activation_dropout=0.0, activation_function="relu",
                        max_position_embeddings=shape["max_len"], scale_embedding=True,
                        pad_token_id=0, eos_token_id=3, decoder_start_token_id=2,
                        share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    model = MarianMTModel(conf)

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, src, tgt_in):
            return self.m(input_ids=src, attention_mask=src != 0, decoder_input_ids=tgt_in,
                          decoder_attention_mask=tgt_in != 0, use_cache=False).logits
    return Wrap()


def peer_worker(system: str, shape: dict, precision: str):
    import torch
    import torch.nn.functional as F

    use_aiayn_allocator(shape)
    model = (torch_loop(shape) if system == "torch" else marian(shape)).train()
    # each system's Adam as its toolkit builds it: Hugging Face's Trainer (its default for
    # torch >= 2.8, adamw_torch_fused) the fused kernel, a plain loop PyTorch's default
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9,
                           fused=system == "marian")
    bf16 = precision == "bf16"

    def step(batch):
        src, tgt_in, tgt_out = batch
        with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext():
            logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.float().flatten(0, 1), tgt_out.flatten(), ignore_index=0,
                               label_smoothing=0.1, reduction="sum")
        opt.zero_grad(set_to_none=True)
        (loss / (tgt_out != 0).sum()).backward()
        opt.step()
    return step


def ceiling(precision: str, shape: tuple[int, int, int] = (2048, 2048, 2048),
            repeats: int = 5) -> tuple[float, float]:
    """GFLOP/s of one (m x k) by (k x n) matrix product in ``precision``: the best and the
    median of ``repeats`` timings (after one untimed), of the faster of two libraries:
    PyTorch's own product (MKL in float32, oneDNN in bfloat16 on x86) and oneDNN's linear
    product (which PyTorch does not use for float32 training)."""
    import torch

    from aiayn.runtime.cpu import (
        onednn_available,
        onednn_bf16_available,
        onednn_linear,
        onednn_reorder,
    )
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    m, k, n = shape
    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
    products = [lambda: a @ b]
    if onednn_bf16_available() if precision == "bf16" else onednn_available():
        reordered = onednn_reorder(b.t().contiguous(), m)
        products.append(lambda: onednn_linear(a, reordered, None))
    best, median = float("inf"), float("inf")
    for product in products:
        product()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            product()
            times.append(time.perf_counter() - start)
        best, median = min(best, min(times)), min(median, statistics.median(times))
    flops = 2 * m * k * n / 1e9
    return flops / best, flops / median


def worker(args: argparse.Namespace) -> None:
    """One system's run, printed as one JSON line: seconds of each timed step."""
    import torch
    if args.worker == "ceiling":  # the square product, then each size's feed-forward shape
        best, median = ceiling(args.precision)
        layers = [ceiling(args.precision, tuple(shape)) for shape in json.loads(args.shape)]
        print(json.dumps({"gflops": best, "median": median, "layers": layers}))
        return
    shape = json.loads(args.shape)
    batches = load_batches(args.batches)
    torch.manual_seed(0)
    step = (aiayn_worker(shape, args.precision, compiled=args.worker == "aiayn-compiled")
            if args.worker.startswith("aiayn") else peer_worker(args.worker, shape, args.precision))
    if args.shapes == "seen":  # the timed batches once untimed first: their shapes known
        batches = batches[:args.warmup] + batches[args.warmup:] * 2
        args.warmup = len(batches) - (len(batches) - args.warmup) // 2
    times, cpu = [], 0.0
    for i, batch in enumerate(batches):
        start, start_cpu = time.perf_counter(), time.process_time()
        step(batch)
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
            cpu += time.process_time() - start_cpu
    print(json.dumps({"seconds": times, "cpu_seconds": cpu, "threads": torch.get_num_threads(),
                      "aiayn_loaded": "aiayn" in sys.modules}))


# ------------------------------------------------------------------ parent
def matmul_flops(shape: dict, src_shape, tgt_shape) -> float:
    """FLOPs of the matrix products of one training step on a batch (padded shapes): every
    projection, the attention products (full T x T for causal self-attention, as computed) and
    the output projection; forward 2 x multiply-adds, backward twice the forward."""
    b, s = src_shape
    t = tgt_shape[1]
    d, f, v = shape["d_model"], shape["d_ff"], shape["vocab"]
    encoder = b * s * (4 * d * d + 2 * d * f) + 2 * b * s * s * d
    decoder = (b * t * (6 * d * d + 2 * d * f) + b * s * 2 * d * d  # + cross K, V of memory
               + 2 * b * t * t * d + 2 * b * t * s * d)
    macs = shape["layers"] * (encoder + decoder) + b * t * d * v
    return 3 * 2 * macs


def write_batches(data: str, max_tokens: int, count: int, path: Path) -> list:
    """The first ``count`` token batches of epoch 0 as a safetensors file; their batches."""
    from safetensors.torch import save_file

    from aiayn import ModelConfig
    from aiayn.data.corpus import ParallelCorpus, token_batches
    corpus = ParallelCorpus(data, "train")
    cfg = ModelConfig.preset("small", vocab_size=8000)  # collate uses its pad and length cap
    batches = [corpus.collate(b, cfg) for b in token_batches(corpus.sizes, max_tokens, seed=1,
                                                             epoch=0)[:count]]
    tensors = {}
    for i, b in enumerate(batches):
        tensors.update({f"{i}.src": b.src.contiguous(), f"{i}.tgt_in": b.tgt_in.contiguous(),
                        f"{i}.tgt_out": b.tgt_out.contiguous()})
    save_file(tensors, str(path))
    vocab = max(8000, 1 + max(int(b.src.max()) for b in batches),
                1 + max(int(b.tgt_out.max()) for b in batches))
    return batches, vocab


def run_worker(argv: list[str]) -> dict:
    env = dict(ENV)
    if "OMP_WAIT_POLICY" not in env:
        env.update({k: v for k, v in SPIN.items() if k not in env})
    done = subprocess.run([sys.executable, __file__, *argv], env=env, capture_output=True,
                          text=True)
    if done.returncode:
        sys.exit(f"worker {' '.join(argv[:2])} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a prepared data directory")
    parser.add_argument("--sizes", nargs="+", default=["small", "base"])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per worker")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=4000)
    parser.add_argument("--shapes", choices=("seen", "new"), default="seen",
                        help="seen: each timed batch is first run once untimed, as a run's "
                             "batch shapes recur every epoch after its first (oneDNN's "
                             "primitives for them made); new: every timed step meets its "
                             "shapes for the first time")
    parser.add_argument("--worker", choices=(*SYSTEMS, "ceiling"), help=argparse.SUPPRESS)
    parser.add_argument("--shape", help=argparse.SUPPRESS)
    parser.add_argument("--precision", help=argparse.SUPPRESS)
    parser.add_argument("--batches", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if not args.data:
        parser.error("--data is required")

    from aiayn import ModelConfig
    from aiayn.runtime import cpu
    tmp = Path(tempfile.mkdtemp(prefix="train-throughput-"))
    batches, vocab = write_batches(args.data, args.max_tokens, args.warmup + args.steps,
                                   tmp / "batches.safetensors")
    timed = batches[args.warmup:]
    tokens = sum(b.target_tokens for b in timed)
    from machine import header
    print(header())
    print(f"{sys.executable}; batches of <= {args.max_tokens} padded tokens from {args.data}; "
          f"each system alone in its own process: {args.warmup} untimed, then {args.steps} "
          f"timed steps, shapes {args.shapes}; {args.rounds} rounds, order rotating; "
          f"GOMP_SPINCOUNT={ENV.get('GOMP_SPINCOUNT', SPIN['GOMP_SPINCOUNT'])}", flush=True)
    rows = [(size, precision) for size in args.sizes for precision in args.precisions]
    shapes = {}
    for size in args.sizes:
        cfg = ModelConfig.preset(size, vocab_size=vocab)
        shapes[size] = {"size": size, "vocab": vocab, "d_model": cfg.d_model,
                        "heads": cfg.n_heads, "layers": cfg.n_encoder_layers, "d_ff": cfg.d_ff,
                        "dropout": cfg.dropout, "max_len": cfg.max_len,
                        "malloc": [(cpu.M_MMAP_THRESHOLD, cpu.TRAIN_MMAP_THRESHOLD),
                                   (cpu.M_TRIM_THRESHOLD, cpu.TRIM_THRESHOLD)]}
    rates = {(row, s): [] for row in rows for s in args.systems}
    busy = {(row, s): [] for row in rows for s in args.systems}
    peaks = {p: [] for p in args.precisions}
    # the products alone, per round: the square one (the ceiling, its best timing, unless a
    # feed-forward one ran faster) and each size's first feed-forward product at the batches'
    # token count, best and median timing; what the host's neighbours take from a step shows
    # there, not in the best square one
    ffn_shapes = [(args.max_tokens, shapes[size]["d_model"], shapes[size]["d_ff"])
                  for size in args.sizes]
    alone = {p: [] for p in args.precisions}
    for r in range(args.rounds):
        for precision in args.precisions:
            out = run_worker(["--worker", "ceiling", "--precision", precision,
                              "--shape", json.dumps(ffn_shapes)])
            peaks[precision].append(max(out["gflops"], *(best for best, _ in out["layers"])))
            alone[precision].append(out)
        order = args.systems[r % len(args.systems):] + args.systems[:r % len(args.systems)]
        for size, precision in rows:
            for system in order:
                out = run_worker(["--worker", system, "--shape", json.dumps(shapes[size]),
                                  "--precision", precision, "--batches",
                                  str(tmp / "batches.safetensors"), "--warmup",
                                  str(args.warmup), "--shapes", args.shapes])
                if out["aiayn_loaded"] != system.startswith("aiayn"):
                    sys.exit(f"worker {system} loaded aiayn: {out['aiayn_loaded']}")
                rate = tokens / sum(out["seconds"])
                rates[(size, precision), system].append(rate)
                cores = out["cpu_seconds"] / sum(out["seconds"])
                busy[(size, precision), system].append(cores)
                print(f"round {r + 1} {size} {precision} {system}: {rate:,.0f} tgt tok/s "
                      f"({out['threads']} threads, {cores:.2f} CPU s per wall s; median step "
                      f"{statistics.median(out['seconds']):.3f} s)", flush=True)
    peak = {p: statistics.median(v) for p, v in peaks.items()}
    print("ceilings (the 2048^3 product or a feed-forward one if faster, per round): " + "; ".join(
        f"{p} " + ", ".join(f"{g:.0f}" for g in v) + " GFLOP/s" for p, v in peaks.items()))
    for p, outs in alone.items():
        print(f"{p} alone, per round, best / median of 5 timings: 2048^3 " + ", ".join(
            f"{o['gflops']:.0f} / {o['median']:.0f}" for o in outs) + " GFLOP/s" + "".join(
            f"; {size}'s feed-forward {m} x {k} x {n} " + ", ".join(
                f"{o['layers'][i][0]:.0f} / {o['layers'][i][1]:.0f}" for o in outs)
            for i, (size, (m, k, n)) in enumerate(zip(args.sizes, ffn_shapes))))
    print("\n| size | precision | " + " | ".join(f"{s} tgt tok/s" for s in args.systems)
          + " | aiayn / best peer (per round) | "
          + " | ".join(f"{s} % of ceiling" for s in args.systems)
          + " | " + " | ".join(f"{s} CPU s / wall s" for s in args.systems) + " |")
    print("|---|---|" + "---:|" * (3 * len(args.systems) + 1))
    for size, precision in rows:
        flops = sum(matmul_flops(shapes[size], b.src.shape, b.tgt_in.shape) for b in timed)
        med = {s: statistics.median(rates[(size, precision), s]) for s in args.systems}
        peers = [s for s in args.systems if not s.startswith("aiayn")]
        ratio = "-"
        if peers and "aiayn" in med:
            per_round = [rates[(size, precision), "aiayn"][r]
                         / max(rates[(size, precision), s][r] for s in peers)
                         for r in range(args.rounds)]
            ratio = (f"**{med['aiayn'] / max(med[s] for s in peers):.2f}** "
                     f"({min(per_round):.2f}-{max(per_round):.2f})")
        shares = " | ".join(f"{100 * flops * med[s] / tokens / 1e9 / peak[precision]:.0f}%"
                            for s in args.systems)
        cores = " | ".join(f"{statistics.median(busy[(size, precision), s]):.2f}"
                           for s in args.systems)
        print(f"| {size} | {precision} | " + " | ".join(f"{med[s]:,.0f}" for s in args.systems)
              + f" | {ratio} | {shares} | {cores} |", flush=True)


if __name__ == "__main__":
    main()
