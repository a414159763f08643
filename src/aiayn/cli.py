"""`aiayn`: the command line, a thin shell over the library.

Every user mistake ends in one line on stderr, ``aiayn: error: ...``, and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import yaml

from .config import ConfigError
from .errors import UserError

TRAIN_FLAGS = ("max_tokens", "grad_accum", "lr_scale", "warmup", "label_smoothing", "clip_norm",
               "max_steps", "max_epochs", "max_minutes", "precision", "valid_every",
               "valid_bleu_sentences", "keep_last", "patience", "log_every", "seed", "threads",
               "device", "preset", "arch")


def _add_decoding_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", required=True, help="checkpoint or run directory")
    p.add_argument("--beam", type=int, default=4, help="beam size; 1 = greedy (default 4)")
    p.add_argument("--lenpen", type=float, default=0.6, help="length penalty alpha (0.6)")
    p.add_argument("--lenpen-form", choices=["gnmt", "simple"], default="gnmt",
                   help="gnmt: ((5+|Y|)/6)^alpha (the paper's); simple: |Y|^alpha")
    p.add_argument("--max-tokens", type=int, default=4096,
                   help="source tokens x beam per decoding batch")
    p.add_argument("--max-len-b", type=int, default=50,
                   help="output may be this many tokens longer than the input (50)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--int8", action="store_true",
                   help="dynamic int8 quantization of the linear layers (CPU; faster, see docs)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aiayn", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare", help="check text, train the shared vocabulary, encode")
    p.add_argument("--train-src"), p.add_argument("--train-tgt")
    p.add_argument("--train-tsv", help="source<TAB>target file instead of two files")
    p.add_argument("--valid-src"), p.add_argument("--valid-tgt")
    p.add_argument("--valid-tsv")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--model-type", choices=["bpe", "unigram"], default="bpe")
    p.add_argument("--max-len", type=int, default=256,
                   help="drop pairs with a side longer than this many subword tokens")
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true")

    p = sub.add_parser("train", help="train a translation model")
    p.add_argument("--data", required=True, help="directory written by `aiayn prepare`")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--config", help="YAML file of training settings")
    p.add_argument("--resume", action="store_true", help="continue from RUN/checkpoints/last")
    p.add_argument("--model", action="append", default=[], metavar="KEY=VALUE",
                   help="model override, e.g. --model norm=pre (repeatable)")
    p.add_argument("--no-progress", action="store_true")
    from .train.recipe import TrainConfig
    for f in dataclasses.fields(TrainConfig):
        if f.name in TRAIN_FLAGS:
            kind = {"int": int, "float": float}.get(str(f.type), str)
            p.add_argument("--" + f.name.replace("_", "-"), type=kind, default=None,
                           help=f"(default {f.default})")

    p = sub.add_parser("average", help="average the last checkpoints of a run (§6.1)")
    p.add_argument("run")
    p.add_argument("--last", type=int, default=5)
    p.add_argument("--out", required=True)

    p = sub.add_parser("plot", help="PNG of training and validation curves")
    p.add_argument("run")
    p.add_argument("--out", help="PNG path (default RUN/curves.png)")

    p = sub.add_parser("translate", help="translate text, one sentence per line")
    _add_decoding_flags(p)
    p.add_argument("--nbest", type=int, default=1)
    p.add_argument("--alignments", action="store_true",
                   help="append a TAB and Pharaoh i-j word alignments to every line")
    p.add_argument("-i", "--input", help="input file (default stdin)")
    p.add_argument("-o", "--output", help="output file (default stdout)")

    p = sub.add_parser("evaluate", help="translate and score with sacreBLEU (BLEU, chrF)")
    _add_decoding_flags(p)
    p.add_argument("--src", required=True)
    p.add_argument("--ref", required=True)

    p = sub.add_parser("generate", help="continue a prompt with a decoder-only model")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("prompt")
    p.add_argument("--max-new-tokens", type=int, default=50)
    p.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=0, help="sample among the k likeliest (0: all)")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass")
    p.add_argument("--seed", type=int, help="make the sample reproducible")

    p = sub.add_parser("attend", help="attention heat maps (PNG) and an HTML browser")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("source", help="the source sentence")
    p.add_argument("--target", help="teacher-force this reference (default: the translation)")
    p.add_argument("--out", required=True, help="output directory")

    p = sub.add_parser("positions", help="the sinusoidal positional encoding as a picture")
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--max-len", type=int, default=100)
    p.add_argument("--base", type=float, default=10000.0)
    p.add_argument("--out", required=True, help="PNG path")
    return parser


def _train_config(args: argparse.Namespace):
    from .train.recipe import TrainConfig
    values: dict = {}
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise UserError(f"--config {path}: no such file")
        TrainConfig.from_yaml(path)  # names a bad key or value in the file itself
        values = yaml.safe_load(path.read_text()) or {}
    for name in TRAIN_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            values[name] = value
    model = dict(values.get("model", {}))
    for item in args.model:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--model {item!r}: expected KEY=VALUE, e.g. --model norm=pre")
        model[key.strip()] = yaml.safe_load(value)
    if model:
        values["model"] = model
    return TrainConfig.from_dict(values)


def _text_pair(prefix: str, args: argparse.Namespace, required: bool):
    from .data.prepare import TextPair
    src, tgt, tsv = (getattr(args, f"{prefix}_{k}") for k in ("src", "tgt", "tsv"))
    if tsv and (src or tgt):
        raise UserError(f"give either --{prefix}-tsv or --{prefix}-src/--{prefix}-tgt, not both")
    if tsv:
        return TextPair(Path(tsv))
    if src and tgt:
        return TextPair(Path(src), Path(tgt))
    if src or tgt:
        missing = f"--{prefix}-tgt" if src else f"--{prefix}-src"
        raise UserError(f"{missing} is missing: give both sides of the {prefix} split")
    if required:
        raise UserError(f"give --{prefix}-src and --{prefix}-tgt (or --{prefix}-tsv)")
    return None


def _log(message: str) -> None:
    """Progress messages go to stderr; stdout carries results."""
    print(message, file=sys.stderr, flush=True)


def _read_lines(path: str | None) -> list[str]:
    if path is None:
        return sys.stdin.read().splitlines()
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such file")
    try:
        return p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        line = p.read_bytes()[:err.start].count(b"\n") + 1
        raise UserError(f"{p}: line {line} is not valid UTF-8; convert the file to UTF-8") from None


def _decode_options(args: argparse.Namespace) -> dict:
    return dict(beam=args.beam, lenpen=args.lenpen, lenpen_form=args.lenpen_form,
                max_tokens=args.max_tokens, max_len_b=args.max_len_b)


def run(args: argparse.Namespace) -> int:
    if args.command == "prepare":
        from .data.prepare import prepare
        train = _text_pair("train", args, required=True)
        valid = _text_pair("valid", args, required=False)
        prepare(train, args.out, valid=valid, vocab_size=args.vocab_size,
                model_type=args.model_type, max_len=args.max_len, overwrite=args.overwrite,
                log=_log)
        print(f"prepared {args.out}")
    elif args.command == "train":
        from .train.trainer import train
        summary = train(args.data, args.out, _train_config(args), resume=args.resume,
                        progress=not args.no_progress, log=_log)
        print(json.dumps(summary, indent=1))
    elif args.command == "average":
        from .train.checkpoint import average_checkpoints, list_step_checkpoints
        if args.last < 1:
            raise UserError(f"--last ({args.last}) must be at least 1")
        steps = list_step_checkpoints(Path(args.run))
        if not steps:
            raise UserError(f"{args.run}: no step checkpoints in {args.run}/checkpoints")
        chosen = steps[-args.last:]
        average_checkpoints(chosen, Path(args.out))
        print(f"averaged {len(chosen)} checkpoints ({chosen[0].name} .. {chosen[-1].name}) "
              f"into {args.out}")
    elif args.command == "plot":
        from .train.plot import plot_run
        print(f"wrote {plot_run(Path(args.run), args.out)}")
    elif args.command == "translate":
        from .translate import load
        translator = load(args.checkpoint, device=args.device, int8=args.int8)  # fails first
        lines = _read_lines(args.input)
        bar = None
        if args.output:
            from tqdm import tqdm
            bar = tqdm(total=len(lines), unit="sent", file=sys.stderr)
        out = translator.translate(lines, nbest=args.nbest, **_decode_options(args),
                                   on_batch=bar.update if bar else None)
        if bar:
            bar.close()
        if args.alignments and args.nbest == 1:
            out = [f"{o}\t{translator.align(src, o)}" for src, o in zip(lines, out)]
        if args.nbest == 1:
            text = "".join(o + "\n" for o in out)
        else:  # "index<TAB>score<TAB>hypothesis", as in fairseq's n-best lists
            text = "".join(f"{i}\t{s:.4f}\t{t}\n" for i, o in enumerate(out) for t, s in o)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    elif args.command == "evaluate":
        from .evaluate import evaluate
        result = evaluate(args.checkpoint, _read_lines(args.src), _read_lines(args.ref),
                          device=args.device, int8=args.int8, **_decode_options(args))
        print(f"BLEU = {result['bleu']:.2f}  ({result['bleu_signature']})")
        print(f"chrF = {result['chrf']:.2f}  ({result['chrf_signature']})")
    elif args.command == "generate":
        from .generate import Generator
        print(Generator.load(args.checkpoint).generate(
            args.prompt, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
            top_k=args.top_k, top_p=args.top_p, seed=args.seed))
    elif args.command == "attend":
        from .inspect import plot_attention, write_html
        from .translate import load
        translator = load(args.checkpoint)
        maps = translator.attention(args.source, args.target)
        target = args.target if args.target is not None else translator.tokenizer.sp.DecodePieces(
            maps.tgt_tokens[1:])
        written = plot_attention(maps, args.out)
        written.append(write_html(maps, Path(args.out) / "index.html", source=args.source,
                                  target=target))
        print(f"wrote {len(written)} files to {args.out} (open {Path(args.out) / 'index.html'})")
    elif args.command == "positions":
        from .inspect import plot_positions
        if args.d_model < 2 or args.max_len < 1:
            raise UserError("--d-model must be at least 2 and --max-len at least 1")
        print(f"wrote {plot_positions(args.d_model, args.max_len, args.out, args.base)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (UserError, ConfigError) as err:
        print(f"aiayn: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aiayn: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`aiayn translate ... | head`)
        sys.stderr.close()
        return 141


if __name__ == "__main__":
    sys.exit(main())
