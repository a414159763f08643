"""Training throughput and model FLOPs utilization on a GPU, by hand on a GPU machine.

Each configuration (preset x precision x ``--compile``) trains in its own process, built by the
trainer's own ``setup`` (the model, fused Adam, the loss scaler, DDP or ``torch.compile`` as
``aiayn train`` builds them) and stepped by its ``fitting_step`` over its own batches
(``--max-tokens`` padded tokens per side). ``--warmup`` steps run untimed (a compiled model
compiles in them; their seconds are printed), then ``--steps`` timed ones between two device
synchronizations. Printed per configuration: target tokens/s, milliseconds a step, the step's
model FLOPs (``aiayn.train.metrics.training_flops``, as the training log counts them) per
second, and MFU twice: over the product rate measured on this GPU in that precision (the
training log's denominator, ``peak_flops``) and over the card's nominal dense peak where it is
known (NVIDIA's datasheet: 989 TFLOP/s bf16 and fp16 for the H100 SXM and the H200).
``--profile`` adds, per configuration, the operators that take the host's and the device's time
over three more steps (torch.profiler; how the cuDNN attention's per-shape cost was found), and
from those steps' Chrome trace the device's milliseconds and kernel count a step by kind of
kernel (products, attention, LayerNorm, copies and casts...: ``kernel_summary``) and the
costliest kernels; ``--trace DIR`` keeps the trace, where the device's idle gaps show.
``--variants autocast now`` times a GPU's bf16 step as it was (under autocast) beside the step
as the trainer takes it (on 16-bit weight copies, ``aiayn.train.copies``); ``copies`` runs the
step on the weight copies compiled too (``aiayn train --compile`` compiles the autocast step).

    PYTHONPATH=src python3 benchmarks/gpu_train.py --data DIR --sizes base big \\
        --precisions bf16 fp16 --compile no yes --max-tokens 25000
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOMINAL = {"H100": {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12},
           "H200": {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12}}


KERNEL_KINDS = [  # (kind, pattern over a kernel's name), the first match counts
    ("attention", r"flash|fmha|attention|mem_eff"),
    ("matrix product", r"gemm|nvjet|cutlass|xmma|sm90_|cublas"),
    ("layer norm", r"layer_norm|LayerNorm|GammaBeta|RowwiseMoments|layernorm"),
    ("softmax and loss", r"softmax|nll|cross_entropy"),
    ("optimizer", r"multi_tensor|adam|Adam|foreach"),
    ("dropout", r"dropout|philox|bernoulli"),
    ("copy and cast", r"copy"),
    ("reduction", r"reduce"),
    ("fused (Inductor)", r"triton"),
    ("elementwise", r"elementwise"),
]


def kernel_summary(trace: Path, steps: int) -> list[str]:
    """Lines: per step, the device's milliseconds and kernel count by kind of kernel, from a
    Chrome trace (its kernels, copies and memsets), then the 15 costliest kernels."""
    import re
    from collections import Counter
    events = json.loads(trace.read_text())["traceEvents"]
    kinds: Counter = Counter()
    counts: Counter = Counter()
    names: Counter = Counter()
    for e in events:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset") or "dur" not in e:
            continue
        name = e["name"]
        kind = ("memcpy/memset" if e["cat"] != "kernel" else
                next((k for k, pattern in KERNEL_KINDS if re.search(pattern, name)), "other"))
        kinds[kind] += e["dur"] / 1000 / steps
        counts[kind] += 1 / steps
        names[name[:110]] += e["dur"] / 1000 / steps
    lines = [f"device busy {sum(kinds.values()):.1f} ms a step, {sum(counts.values()):.0f} "
             "kernels:"]
    lines += [f"  {kind:<18} {ms:6.2f} ms  {counts[kind]:5.0f}" for kind, ms in
              kinds.most_common()]
    lines += ["costliest kernels (ms a step):"]
    lines += [f"  {ms:6.2f}  {name}" for name, ms in names.most_common(15)]
    return lines


def apply_variant(variant: str, run) -> None:
    """The step as trained ("now"), a GPU's bf16 step under autocast, as it was trained
    before the 16-bit weight copies ("autocast"), or on the weight copies whether compiled or
    not ("copies")."""
    if variant == "autocast":
        run.copies = None
    elif variant == "copies" and run.copies is None:
        from aiayn.train.copies import Weights16
        run.copies = Weights16(run.model, run=run.net)


def worker(shape: dict) -> dict:
    import torch

    from aiayn.runtime.hardware import peak_flops
    from aiayn.train.metrics import training_flops
    from aiayn.train.recipe import TrainConfig
    from aiayn.train.setup import setup
    from aiayn.train.step import fitting_step
    from aiayn.train.trainer import _micro_batches

    cfg = TrainConfig(preset=shape["size"], precision=shape["precision"],
                      max_tokens=shape["max_tokens"], grad_accum=shape["grad_accum"],
                      compile=shape["compile"] == "yes", valid_bleu_sentences=0,
                      device=shape["device"])
    with tempfile.TemporaryDirectory() as tmp:
        run = setup(Path(shape["data"]), Path(tmp) / "run", cfg, resume=False,
                    log=lambda line: print(line, file=sys.stderr))
        device = run.device
        cuda = device.type == "cuda"
        batches = _micro_batches(run)
        variant = shape["variant"]
        apply_variant(variant, run)

        def synchronize() -> None:
            if cuda:
                torch.cuda.synchronize(device)

        def step() -> tuple[int, float]:
            """One step as the training loop takes it: its target tokens and model FLOPs."""
            epoch, position, micro = next(batches)
            _, _, step_tokens, _ = fitting_step(run, micro, 1e-4, print)
            run.state.epoch, run.state.batch = epoch, position  # (as the training loop does)
            return step_tokens, sum(training_flops(cfg.arch, run.model_cfg,
                                                   tuple(b.src.shape), tuple(b.tgt_in.shape))
                                    for b in micro)
        synchronize()
        start = time.perf_counter()
        for _ in range(shape["warmup"]):
            step()
        synchronize()
        warm_seconds = time.perf_counter() - start
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        timed = [step() for _ in range(shape["steps"])]
        synchronize()
        seconds = time.perf_counter() - start
        tokens, flops = sum(t for t, _ in timed), sum(f for _, f in timed)
        if shape["profile"]:  # where three more steps go, on the host and on the device
            from torch.profiler import ProfilerActivity, profile
            kinds = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
            with profile(activities=kinds) as prof:
                for _ in range(3):
                    step()
                synchronize()
            table = prof.key_averages()
            for key in ("self_cpu_time_total", "self_device_time_total")[:len(kinds)]:
                print(table.table(sort_by=key, row_limit=25, max_name_column_width=48),
                      file=sys.stderr)
            # the kernels of the trace (the table's operator rows count them again), in the
            # run's temporary directory unless --trace keeps them
            trace = Path(shape["trace"] or tmp) / (
                f"{shape['size']}-{shape['precision']}-{shape['compile']}-"
                f"{shape['max_tokens']}-{variant}.json")
            trace.parent.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(trace))
            if cuda:
                print("\n".join(kernel_summary(trace, 3)), file=sys.stderr)
        name = torch.cuda.get_device_name(device) if cuda else "cpu"
        peak = peak_flops(device, run.cfg.precision)
        nominal = next((v[run.cfg.precision] for k, v in NOMINAL.items() if k in name), None)
        return {**{k: shape[k] for k in ("size", "precision", "compile", "max_tokens")},
                "variant": variant,
                "device": name, "tokens_per_s": tokens / seconds,
                "step_ms": 1000 * seconds / shape["steps"], "tflops": flops / seconds / 1e12,
                "mfu": flops / seconds / peak, "peak_tflops": peak / 1e12,
                "mfu_nominal": flops / seconds / nominal if nominal else None,
                "warmup_s": warm_seconds,
                "memory_gib": torch.cuda.max_memory_allocated(device) / 2 ** 30 if cuda else 0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="a directory written by `aiayn prepare`")
    ap.add_argument("--sizes", nargs="+", default=["base", "big"])
    ap.add_argument("--precisions", nargs="+", default=["bf16", "fp16"])
    ap.add_argument("--compile", nargs="+", default=["no", "yes"], choices=["no", "yes"],
                    help="eager (no), `aiayn train --compile` (yes), or both")
    ap.add_argument("--max-tokens", type=int, nargs="+", default=[25000])
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--variants", nargs="+", default=["now"],
                    choices=["now", "autocast", "copies"],
                    help="the step as trained, or without a part of it (``apply_variant``)")
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to try the script")
    ap.add_argument("--profile", action="store_true",
                    help="after the timed steps, three more under torch.profiler: the "
                         "operators that take the host's and the device's time (stderr)")
    ap.add_argument("--trace", metavar="DIR",
                    help="with --profile: write each configuration's profiled steps to DIR "
                         "as a Chrome trace (chrome://tracing, Perfetto)")
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    print("| preset | precision | variant | compiled | max tokens | target tok/s | ms/step | model "
          "TFLOP/s | MFU (measured peak) | MFU (nominal) | warm-up s | memory GiB |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    for size, precision, compiled, max_tokens, variant in itertools.product(
            args.sizes, args.precisions, args.compile, args.max_tokens, args.variants):
        shape = {"variant": variant, "data": args.data, "size": size, "precision": precision,
                 "compile": compiled, "max_tokens": max_tokens, "grad_accum": args.grad_accum,
                 "device": args.device,
                 "profile": args.profile, "trace": args.trace,
                 "warmup": args.warmup, "steps": args.steps}
        done = subprocess.run([sys.executable, __file__, "--worker", json.dumps(shape)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"| {size} | {precision} | {variant} | {compiled} | {max_tokens} | failed: "
                  f"{done.stderr.strip().splitlines()[-1:]} |", flush=True)
            print(done.stderr[-3000:], file=sys.stderr)
            continue
        if args.profile:
            print(f"{size} {precision} {variant} compiled={compiled} {max_tokens}:\n"
                  + "\n".join(line for line in done.stderr.splitlines()
                              if not line.startswith(("model:", "precision:", "USDT"))),
                  file=sys.stderr)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        nominal = f"{r['mfu_nominal']:.1%}" if r["mfu_nominal"] else "-"
        print(f"| {size} | {precision} | {variant} | {compiled} | {max_tokens:,} | "
              f"{r['tokens_per_s']:,.0f} | {r['step_ms']:.1f} | {r['tflops']:.1f} | "
              f"{r['mfu']:.1%} of {r['peak_tflops']:.0f} | {nominal} | {r['warmup_s']:.1f} | "
              f"{r['memory_gib']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
