"""Real WebVTT subtitles translated and read back by webvtt-py, a reader aiayn does not use:
every cue there with its identifier and timing, its text translated on as many lines, its
tags kept, comments and styles as they were?

    python benchmarks/subtitles_roundtrip.py --checkpoint RUN FILE.vtt [FILE.vtt ...]

video.js's npm package carries the Blender Foundation's "Elephants Dream" captions, chapters
and descriptions and a sample of captions for the hearing impaired (``npm pack video.js``,
``dist/examples/``).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from machine import header

_TAG = re.compile(r"<[^>]+>")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("files", nargs="+", type=Path)
    args = p.parse_args()

    import webvtt

    import aiayn
    from aiayn.documents import translate_document
    print(header(), flush=True)
    translator = aiayn.load(args.checkpoint)
    print("\n| file | cues | identifiers and timings as they were | texts changed | "
          "lines per cue as they were | tags kept | NOTE and STYLE blocks as they were | "
          "seconds |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for path in args.files:
        data = path.read_bytes()
        t0 = time.perf_counter()
        out = translate_document(translator, data, ".vtt").decode("utf-8")
        seconds = time.perf_counter() - t0
        before, after = webvtt.from_string(data.decode("utf-8")), webvtt.from_string(out)
        pairs = list(zip(before, after))
        same = sum((a.identifier, a.start, a.end) == (b.identifier, b.start, b.end)
                   for a, b in pairs)
        changed = sum(a.text != b.text for a, b in pairs)
        lines = sum(len(a.lines) == len(b.lines) for a, b in pairs)
        tags = sum(sorted(_TAG.findall(a.raw_text)) == sorted(_TAG.findall(b.raw_text))
                   for a, b in pairs)
        blocks = [re.findall(r"(?:^|\n\n)((?:NOTE|STYLE)\b.*?)(?=\n\n|$)", t, re.S)
                  for t in (data.decode("utf-8"), out)]
        print(f"| {path.parent.name}/{path.name} | {len(after)}/{len(before)} | {same} | "
              f"{changed} | {lines} | {tags} | "
              f"{'yes' if blocks[0] == blocks[1] else 'NO'} ({len(blocks[0])}) | "
              f"{seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
