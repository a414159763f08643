"""Teacher-forced scoring against beam search: sentences per second on the same pairs.

`aiayn score` reads each reference in one forward pass; `aiayn translate` searches for its
output step by step with a beam. Both run on the same sources in the same process, alternating,
``--rounds`` times; the table shows medians.

Beside the times, the arithmetic of each (the linear layers' multiply-adds, from the token
counts: ``linear_flops``): scoring projects every source token through the encoder and every
reference token through the decoder and the output layer once; beam search projects its
sources once and, at the least, ``beam`` rows a step for as many steps as its best output is
long. Their ratio bounds what scoring can gain at equal arithmetic speed. Run by hand:

    .venv/bin/python benchmarks/score_speed.py --checkpoint runs/demo/averaged \\
        --src dev.en --ref dev.es
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from aiayn.config import ModelConfig
from aiayn.translate import DecodeOptions, load


def linear_flops(cfg: ModelConfig, source_tokens: int, target_rows: int) -> float:
    """Multiply-adds x 2 of the linear layers: the encoder over ``source_tokens``, the
    cross-attention keys and values of every decoder layer over them, and the decoder layers
    and the output projection over ``target_rows`` (attention's own products not counted)."""
    d, f = cfg.d_model, cfg.d_ff
    encoder = cfg.n_encoder_layers * (4 * d * d + 2 * d * f)
    cross_kv = cfg.n_decoder_layers * 2 * d * d
    decoder = cfg.n_decoder_layers * (6 * d * d + 2 * d * f) + d * cfg.target_vocab_size
    return 2.0 * ((encoder + cross_kv) * source_tokens + decoder * target_rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--src", required=True)
    parser.add_argument("--ref", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sources = Path(args.src).read_text(encoding="utf-8").splitlines()
    references = Path(args.ref).read_text(encoding="utf-8").splitlines()
    translator = load(args.checkpoint)
    options = DecodeOptions()  # beam 4, length penalty 0.6
    work = {"score (teacher forcing)": lambda: translator.score(sources, references, options),
            "translate (beam 4)": lambda: translator.translate(sources, options)}
    times: dict[str, list[float]] = {name: [] for name in work}
    results = {name: fn() for name, fn in work.items()}  # warm-up; the outputs are counted below
    for _ in range(args.rounds):
        for name, fn in work.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    from machine import header
    print(header())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {len(sources)} "
          f"pairs; median of {args.rounds} alternating rounds")
    print("| | seconds | sentences/s |")
    print("|---|---:|---:|")
    rates = {}
    for name, t in times.items():
        rates[name] = len(sources) / statistics.median(t)
        print(f"| {name} | {statistics.median(t):.2f} | {rates[name]:,.0f} |")
    ratio = rates["score (teacher forcing)"] / rates["translate (beam 4)"]
    print(f"\nscore / translate: {ratio:.1f}x per sentence")
    src_tokens = sum(len(translator.encode_source(s)) for s in sources)
    ref_rows = sum(len(translator.tokenizer.encode_target(r)) + 1 for r in references)
    out_rows = options.beam * sum(len(translator.tokenizer.encode_target(o)) + 1
                                  for o in results["translate (beam 4)"])
    flops = {"score (teacher forcing)": linear_flops(translator.cfg, src_tokens, ref_rows),
             "translate (beam 4)": linear_flops(translator.cfg, src_tokens, out_rows)}
    print("\n| | linear-layer GFLOP | GFLOP/s |\n|---|---:|---:|")
    for name, f in flops.items():
        print(f"| {name} | {f / 1e9:.0f} | {f / 1e9 / statistics.median(times[name]):.0f} |")
    need = flops["translate (beam 4)"] / flops["score (teacher forcing)"]
    print(f"\nbeam search does at least {need:.1f}x scoring's arithmetic; at equal GFLOP/s "
          f"scoring would be {need:.1f}x faster, and {ratio:.1f}x means beam search runs at "
          f"{need / ratio:.0%} of scoring's rate")


if __name__ == "__main__":
    main()
