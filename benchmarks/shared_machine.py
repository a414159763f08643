"""Training and translating on a shared machine: each alone, beside a busy process, and two
side by side.

Each scenario starts fresh processes: ``aiayn train`` (``--preset small --precision bf16`` on a
prepared data directory, a fixed number of steps, no validation) alone; the same beside one
single-threaded busy loop; two such trainings side by side. A training's rate is the median
``tokens_per_s`` of its ``metrics.jsonl`` windows after the first (the first holds start-up).
``--env KEY=VALUE`` runs every training with that environment (for example
``GOMP_SPINCOUNT=300000``, libgomp's own default). With ``--checkpoint`` and ``--src`` the same
three scenarios time translation too: a process loads the model, translates the first
``--sentences`` lines once to warm up, then again (beam 4), and reports sentences/s of the second
pass. Run by hand, on an otherwise idle machine:

    .venv/bin/python benchmarks/shared_machine.py --data runs/demo/data [--steps 60] \\
        [--checkpoint runs/demo/averaged --src runs/demo/dev.en]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BUSY = "while True: pass"


def training(data: str, out: Path, steps: int, env: dict[str, str]) -> subprocess.Popen:
    argv = [sys.executable, "-m", "aiayn", "train", "--data", data, "--out", str(out),
            "--preset", "small", "--precision", "bf16", "--max-steps", str(steps),
            "--valid-every", str(steps * 10), "--log-every", "5", "--no-progress",
            "--warmup", "100"]
    return subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL)


TRANSLATE = """
import sys, time
from pathlib import Path
from aiayn.translate import load
lines = Path(sys.argv[2]).read_text(encoding="utf-8").splitlines()[:int(sys.argv[3])]
translator = load(sys.argv[1])
translator.translate(lines)
start = time.perf_counter()
translator.translate(lines)
Path(sys.argv[4]).write_text(str(len(lines) / (time.perf_counter() - start)))
"""


def translating(args, out: Path, env: dict[str, str]) -> subprocess.Popen:
    argv = [sys.executable, "-c", TRANSLATE, args.checkpoint, args.src, str(args.sentences),
            str(out)]
    return subprocess.Popen(argv, env={**os.environ, **env})


def rate(out: Path) -> float:
    if out.suffix == ".rate":
        return float(out.read_text())
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rates = [r["tokens_per_s"] for r in rows if "tokens_per_s" in r][1:]
    return statistics.median(rates)


def scenario(what: str, name: str, args, env: dict[str, str], root: Path) -> list[float]:
    """The rate of each process of the scenario (one, or two side by side)."""
    busy = subprocess.Popen([sys.executable, "-c", BUSY]) if name == "busy" else None
    outs = [root / f"{what}-{name}-{i}{'.rate' if what == 'translate' else ''}"
            for i in range(2 if name == "two" else 1)]
    procs = [training(args.data, out, args.steps, env) if what == "train"
             else translating(args, out, env) for out in outs]
    try:
        for proc in procs:
            if proc.wait() != 0:
                raise SystemExit(f"a process of scenario {what} {name!r} failed")
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    return [rate(out) for out in outs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a data directory from `aiayn prepare`")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--checkpoint", help="also time translation with this model")
    parser.add_argument("--src", help="the sentences to translate")
    parser.add_argument("--sentences", type=int, default=100)
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    print(f"{os.cpu_count()} cores; environment {env or 'unchanged'}; {args.steps} steps each")
    print("| work | scenario | rate of each process | fraction of alone |")
    print("|---|---|---:|---:|")
    jobs = [("train", "tokens/s")] + ([("translate", "sentences/s")] if args.checkpoint else [])
    with tempfile.TemporaryDirectory() as tmp:
        for what, unit in jobs:
            alone = scenario(what, "alone", args, env, Path(tmp))[0]
            print(f"| {what} ({unit}) | alone | {alone:,.1f} | 1.00 |")
            for name, label in (("busy", "beside a busy single-thread process"),
                                ("two", "two side by side")):
                rates = scenario(what, name, args, env, Path(tmp))
                print(f"| {what} ({unit}) | {label} | {' / '.join(f'{r:,.1f}' for r in rates)} | "
                      f"{' / '.join(f'{r / alone:.2f}' for r in rates)} |", flush=True)


if __name__ == "__main__":
    main()
