"""What a vocabulary shortlist gains on an OPUS-MT-shaped model (vocabulary 58,101, d_model
512, 6+6 layers), random weights: decoding steps over the full vocabulary against the same
steps over a shortlist, float32, eager and compiled (``aiayn.runtime.compiled``, what the
commands decode with by default: steps of many rows compiled over the shortlist, steps of
one row eager over it), forced 30 tokens per sentence from 25-token sources; medians of 3
timed runs after a warm-up (which compiles, or loads the compiled steps from disk).

    .venv/bin/python benchmarks/shortlist_speed.py [--eager-only]

The shortlist sizes stand for what `aiayn shortlist` gives such a model with its defaults (50
target tokens per source token, 500 frequent ones): about 1,700 tokens for one sentence of 25
tokens, and 10,000 for a batch of 32 (the union over its sources). Speed depends on the size
only, so random ids of that count are used.
"""

import statistics
import sys
import time

import torch
from machine import header

from aiayn import ModelConfig, Transformer
from aiayn.decode.search import beam_search, greedy_search
from aiayn.decode.shortlist import Shortlisted
from aiayn.runtime.compiled import CompiledSteps
from aiayn.runtime.cpu import for_inference
from aiayn.runtime.threads import use_available_cores

use_available_cores()
print(header())
cfg = ModelConfig.preset("base", vocab_size=58101)
torch.manual_seed(0)
model = for_inference(Transformer(cfg))
models = {"eager": model}
if "--eager-only" not in sys.argv:
    models["compiled"] = CompiledSteps(model)
g = torch.Generator().manual_seed(1)
rows = {"32 greedy": (32, 1), "32 beam 4": (32, 4), "1 greedy": (1, 1)}
print("| batch, mode | steps | vocabulary | generated tokens/s |\n|---|---|---|---:|")
for name, (batch, beam) in rows.items():
    src = torch.randint(4, 58000, (batch, 25), generator=g)
    src = torch.cat([src, torch.full((batch, 1), cfg.eos_id)], 1)
    k = 1700 if batch == 1 else 10000
    vocab = torch.unique(torch.cat([torch.randperm(58101, generator=g)[:k],
                                    torch.tensor([cfg.eos_id])]))
    for (steps, base), label in ((kind, label) for kind in models.items()
                                 for label in ("full", f"shortlist of {len(vocab):,}")):
        m = base if label == "full" else Shortlisted(base, vocab)
        def run():
            if beam == 1:
                greedy_search(m, src, min_len=29, max_len_a=0, max_len_b=30)
            else:
                beam_search(m, src, beam=beam, lenpen=1.0, min_len=29, max_len_a=0,
                            max_len_b=30)
        run()
        times = []
        for _ in range(3):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        print(f"| {name} | {steps} | {label} | {batch * 30 / statistics.median(times):,.0f} |",
              flush=True)
