"""`aiayn train`, `aiayn average` and `aiayn plot`."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import yaml

from ..errors import UserError
from ..outputs import output_directory, picture_file
from .common import log, read_text


def add_train(sub) -> None:
    from ..train.recipe import TrainConfig
    p = sub.add_parser("train", help="train a translation model or a language model")
    p.add_argument("--data", required=True, metavar="DIR",
                   help="the data directory written by `aiayn prepare`")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the run directory: checkpoints, metrics.jsonl, configs")
    p.add_argument("--config", metavar="YAML",
                   help="training settings (TrainConfig fields); flags override them")
    p.add_argument("--resume", action="store_true",
                   help="continue --out exactly from its checkpoints/last")
    p.add_argument("--model", action="append", default=[], metavar="KEY=VALUE",
                   help="a ModelConfig override, e.g. --model norm=pre (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    for f in dataclasses.fields(TrainConfig):  # one flag per setting, with the setting's help
        if f.metadata["flag"] and isinstance(f.default, bool):  # --name / --no-name
            p.add_argument("--" + f.name.replace("_", "-"), default=None,
                           action=argparse.BooleanOptionalAction,
                           help=f"{f.metadata['help']} (default: {f.default})".replace("%", "%%"))
        elif f.metadata["flag"]:
            p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=None,
                           choices=f.metadata["choices"], metavar=f.metadata["unit"],
                           help=f"{f.metadata['help']} (default: {f.default})".replace("%", "%%"))
    p.set_defaults(command_fn=train_command)


def _train_config(args: argparse.Namespace):
    from ..train.recipe import TrainConfig
    values: dict = {}
    if args.config:
        text = read_text(args.config, "--config")
        TrainConfig.from_yaml(args.config)  # names a bad key or value in the file itself
        values = yaml.safe_load(text) or {}
    for f in dataclasses.fields(TrainConfig):
        value = getattr(args, f.name, None) if f.metadata["flag"] else None
        if value is not None:
            values[f.name] = value
    model = dict(values.get("model", {}))
    for item in args.model:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--model {item!r}: expected KEY=VALUE, e.g. --model norm=pre")
        model[key.strip()] = yaml.safe_load(value)
    if model:
        values["model"] = model
    return TrainConfig.from_dict(values)


# exit status of a training stopped by SIGTERM/SIGINT after writing its checkpoint
# (EX_TEMPFAIL: run it again with --resume)
PREEMPTED = 75


def train_command(args: argparse.Namespace) -> int:
    from ..train.trainer import train
    output_directory(args.out, "--out", args.data, args.init)
    summary = train(args.data, args.out, _train_config(args), resume=args.resume,
                    progress=not args.no_progress, log=log)
    print(json.dumps(summary, indent=1))
    return PREEMPTED if summary["stopped"] == "signal" else 0


def add_average_plot(sub) -> None:
    p = sub.add_parser("average", help="average the last checkpoints of a run (§6.1)")
    p.add_argument("run", help="the run directory")
    p.add_argument("--last", type=int, default=5, metavar="N",
                   help="average the newest N step checkpoints (default: 5)")
    p.add_argument("--out", required=True, metavar="DIR", help="the checkpoint directory to write")
    p.set_defaults(command_fn=average_command)

    p = sub.add_parser("plot", help="PNG of training and validation curves")
    p.add_argument("run", help="the run directory")
    p.add_argument("--out", metavar="PNG", help="the picture to write (default: RUN/curves.png)")
    p.set_defaults(command_fn=plot_command)


def average_command(args: argparse.Namespace) -> None:
    from ..checkpoint import average_checkpoints, list_step_checkpoints
    if args.last < 1:
        raise UserError(f"--last ({args.last}) must be at least 1")
    if Path(args.run).is_file():
        raise UserError(f"{args.run}: is a file; give a training run's directory")
    steps = list_step_checkpoints(Path(args.run))
    if not steps:
        raise UserError(f"{args.run}: no step checkpoints in {args.run}/checkpoints")
    chosen = steps[-args.last:]
    output_directory(args.out, "--out", *chosen)
    average_checkpoints(chosen, Path(args.out))
    print(f"averaged {len(chosen)} checkpoints ({chosen[0].name} .. {chosen[-1].name}) "
          f"into {args.out}")


def plot_command(args: argparse.Namespace) -> None:
    from ..train.plot import plot_run
    run = Path(args.run)
    if not run.is_dir():
        raise UserError(f"{run}: " + ("is a file" if run.exists() else "no such directory")
                        + "; give a training run's directory")
    picture_file(args.out or run / "curves.png", "--out")
    print(f"wrote {plot_run(Path(args.run), args.out)}")
