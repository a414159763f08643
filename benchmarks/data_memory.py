"""Resident memory of data loading: a synthetic prepared corpus of up to 4 million pairs.

Writes prepared-data directories (random ids, 5-60 tokens a side) of each size, then, in a fresh
process per size, opens the corpus, plans an epoch of token batches and collates every batch,
sampling the process's resident memory (anonymous, and file-backed pages of the memory map) as
it goes. Run by hand:

    .venv/bin/python benchmarks/data_memory.py [--sizes 500000 1000000 4000000] [--dir /tmp/mem]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np


def write_corpus(directory: Path, pairs: int) -> None:
    if (directory / "stats.json").is_file():
        return
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for side in ("src", "tgt"):
        lengths = rng.integers(5, 61, size=pairs)
        offsets = np.zeros(pairs + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ids = np.lib.format.open_memmap(directory / f"train.{side}.ids.npy", mode="w+",
                                        dtype=np.uint16, shape=(int(offsets[-1]),))
        chunk = 50_000_000
        for start in range(0, len(ids), chunk):
            ids[start:start + chunk] = rng.integers(4, 8000, size=min(chunk, len(ids) - start))
        ids.flush()
        del ids
        np.save(directory / f"train.{side}.offsets.npy", offsets)
    (directory / "stats.json").write_text(json.dumps({"splits": {"train": {"pairs": pairs}}}))


MEASURE = r"""
import sys, json
from aiayn.config import ModelConfig
from aiayn.data.corpus import ParallelCorpus, token_batches

cfg = ModelConfig()

def rss():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return {k: int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "RssAnon", "RssFile")}

samples = {"start": rss()}
corpus = ParallelCorpus(sys.argv[1], "train")
samples["opened"] = rss()
batches = token_batches(corpus.sizes, 4000, seed=1, epoch=0)
samples["planned"] = rss()
peak_anon = 0.0
for i, b in enumerate(batches):
    corpus.collate(b, cfg)
    if i % 2000 == 0:
        peak_anon = max(peak_anon, rss()["RssAnon"])
    if i == len(batches) // 2:
        samples["half epoch"] = rss()
samples["end of epoch"] = rss()
samples["peak anon during epoch"] = peak_anon
samples["batches"] = len(batches)
print(json.dumps(samples))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[500_000, 1_000_000, 4_000_000])
    parser.add_argument("--dir", default="/tmp/aiayn-mem")
    args = parser.parse_args()
    print("| pairs | corpus on disk | anon RSS: after imports | after epoch plan | half epoch | "
          "end of epoch | peak | file-backed RSS at end |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for pairs in args.sizes:
        directory = Path(args.dir) / str(pairs)
        write_corpus(directory, pairs)
        disk = sum(p.stat().st_size for p in directory.glob("*.npy")) / 2 ** 20
        out = subprocess.run([sys.executable, "-c", MEASURE, str(directory)], check=True,
                             capture_output=True, text=True).stdout
        s = json.loads(out)
        half = s.get("half epoch", s["end of epoch"])
        print(f"| {pairs:,} | {disk:,.0f} MiB | {s['start']['RssAnon']:.0f} MiB "
              f"| {s['planned']['RssAnon']:.0f} MiB "
              f"| {half['RssAnon']:.0f} MiB | {s['end of epoch']['RssAnon']:.0f} MiB "
              f"| {s['peak anon during epoch']:.0f} MiB "
              f"| {s['end of epoch']['RssFile']:.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()
