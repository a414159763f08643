"""`aiayn attend` and `aiayn positions`: pictures of what a model attends to and of the positional
encoding."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import finite_number
from ..errors import UserError
from ..outputs import output_directory, picture_file
from .common import Renamed


def add_inspection(sub) -> None:
    p = sub.add_parser("attend", help="attention heat maps (PNG) and an HTML browser")
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="a checkpoint or run directory")
    p.add_argument("source", help="the source sentence")
    p.add_argument("--target", help="teacher-force this reference (default: the translation)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.set_defaults(command_fn=attend_command)

    p = sub.add_parser("positions", help="the sinusoidal positional encoding as a picture")
    p.add_argument("--d-model", type=int, default=512, help="model width (default: 512)")
    p.add_argument("--length", type=int, default=100, metavar="POSITIONS",
                   help="positions to draw (default: 100)")
    p.add_argument("--max-len", dest="length", type=int, action=Renamed, new="--length")
    p.add_argument("--base", type=float, default=10000.0,
                   help="the sinusoids' base (default: 10000, §3.5)")
    p.add_argument("--out", required=True, metavar="PNG", help="the picture to write")
    p.set_defaults(command_fn=positions_command)


def attend_command(args: argparse.Namespace) -> None:
    from ..inspect import plot_attention, write_html
    from ..translate import load
    output_directory(args.out, "--out", args.checkpoint)
    translator = load(args.checkpoint)
    maps = translator.attention(args.source, args.target)
    # the model's own translation (the same beam search the maps were taken on)
    target = (args.target if args.target is not None
              else str(translator.translate([args.source])[0]))
    written = plot_attention(maps, args.out)
    written.append(write_html(maps, Path(args.out) / "index.html", source=args.source,
                              target=target))
    print(f"wrote {len(written)} files to {args.out} (open {Path(args.out) / 'index.html'})")


POSITIONS_DRAWN = 1 << 24  # values of the table a picture of 1,100 x 850 pixels draws at most


def positions_command(args: argparse.Namespace) -> None:
    from ..inspect import plot_positions
    if args.d_model < 2 or args.length < 1:
        raise UserError("--d-model must be at least 2 and --length at least 1")
    if args.d_model * args.length > POSITIONS_DRAWN:
        raise UserError(f"--d-model {args.d_model} x --length {args.length} is "
                        f"{args.d_model * args.length:,} values, more than a picture shows "
                        f"({POSITIONS_DRAWN:,}); lower --d-model or --length")
    if not (finite_number(args.base) and args.base > 1):
        raise UserError(f"--base ({args.base}) must be a finite number above 1 (the paper: "
                        "10000)")
    picture_file(args.out, "--out")
    print(f"wrote {plot_positions(args.d_model, args.length, args.out, args.base)}")
