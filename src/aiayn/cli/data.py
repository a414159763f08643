"""`aiayn prepare` and `aiayn check`: data directories, and the checksums of what was written."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError
from ..outputs import output_directory
from .common import log


def _text_pair(prefix: str, args: argparse.Namespace, required: bool):
    from ..data.prepare import TextPair
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


def add_prepare(sub) -> None:
    p = sub.add_parser("prepare", help="check text, train the shared vocabulary, encode")
    for split, need in (("train", "required"), ("valid", "optional")):
        p.add_argument(f"--{split}-src", metavar="FILE",
                       help=f"{split} source sentences, one a line (plain or .gz; {need})")
        p.add_argument(f"--{split}-tgt", metavar="FILE",
                       help=f"{split} target sentences, aligned with --{split}-src")
        p.add_argument(f"--{split}-tsv", metavar="FILE",
                       help=f"{split} pairs as source<TAB>target lines, instead of two files")
    p.add_argument("--src-lang", metavar="CODE",
                   help="the source language's code (e.g. en), kept with the data and the "
                        "checkpoints trained on it (aiayn serve uses it)")
    p.add_argument("--tgt-lang", metavar="CODE", help="the target language's code (e.g. es)")
    p.add_argument("--task", choices=["translate", "classify"], default="translate",
                   help="translate: parallel text; classify: text<TAB>label lines, the labels "
                        "taken from the training data (default: translate)")
    p.add_argument("--tokenizer", metavar="CKPT",
                   help="encode with this checkpoint's vocabulary (to fine-tune it with "
                        "`aiayn train --init CKPT`) instead of training a new one")
    p.add_argument("--vocab-size", type=int, default=8000,
                   help="subword pieces in the shared vocabulary (default: 8000)")
    p.add_argument("--model-type", choices=["bpe", "unigram"], default="bpe",
                   help="SentencePiece model: bpe (the paper's) or unigram (default: bpe)")
    p.add_argument("--max-len", type=int, default=256, metavar="TOKENS",
                   help="drop pairs with a side longer than this many subword tokens "
                        "(default: 256)")
    p.add_argument("--out", required=True, metavar="DIR", help="the data directory to write")
    p.add_argument("--overwrite", action="store_true",
                   help="replace --out if it exists (only once everything is written)")
    p.add_argument("--placeholders", action="store_true",
                   help="protect placeholders (%%s, %%1$d, {0}, ${name}, <b>, &amp;...) as "
                        "single pieces; models trained on the data put the source's back in "
                        "their translations. With --tokenizer, the checkpoint's data must "
                        "have been prepared with it too")
    p.add_argument("--alignments", metavar="FILE",
                   help="word alignments of the training pairs, one Pharaoh line (0-0 1-2 ...) "
                        "per line, as fast_align or eflomal write them: `aiayn train` then "
                        "trains one attention head on them (guided alignment), which "
                        "--alignments and inline tags take their links from")
    p.set_defaults(command_fn=prepare_command)


def prepare_command(args: argparse.Namespace) -> None:
    from ..checkpoint import Checkpoint
    from ..data.prepare import prepare
    output_directory(args.out, "--out", args.train_src, args.train_tgt, args.train_tsv,
                     args.valid_src, args.valid_tgt, args.valid_tsv, args.alignments)
    train = _text_pair("train", args, required=True)
    valid = _text_pair("valid", args, required=False)
    if (args.src_lang is None) != (args.tgt_lang is None):
        raise UserError("give both --src-lang and --tgt-lang, or neither")
    languages = (args.src_lang, args.tgt_lang) if args.src_lang else None
    prepare(train, args.out, valid=valid, vocab_size=args.vocab_size, model_type=args.model_type,
            max_len=args.max_len, overwrite=args.overwrite,
            tokenizer=Checkpoint.open(args.tokenizer).tokenizer if args.tokenizer else None,
            tokenizer_name=args.tokenizer or "",
            languages=languages, task=args.task, protect_placeholders=args.placeholders,
            alignments=args.alignments, log=log)
    print(f"prepared {args.out}")


def add_check(sub) -> None:
    p = sub.add_parser("check", help="verify the files of a run, a checkpoint or a prepared "
                                     "data directory against their SHA-256 checksums")
    p.add_argument("directory", help="a run, a checkpoint or a data directory")
    p.set_defaults(command_fn=check_command)


def check_command(args: argparse.Namespace) -> None:
    from ..checkpoint import WEIGHTS
    from ..integrity import recorded, verify
    root = Path(args.directory)
    if root.is_file():
        raise UserError(f"{root}: is a file; give a run, a checkpoint or a prepared data "
                        "directory")
    if not root.is_dir():
        raise UserError(f"{root}: no such directory")
    checkpoints = root / "checkpoints"
    if not (checkpoints.is_dir() or (root / WEIGHTS).is_file()
            or (root / "stats.json").is_file()):
        raise UserError(f"{root}: not a run, a checkpoint or a prepared data directory (no "
                        f"checkpoints/, {WEIGHTS} or stats.json); nothing to check")
    targets = ([p for p in sorted(checkpoints.iterdir())
                if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")]
               if checkpoints.is_dir() else [root])
    for directory in targets:
        entries = recorded(directory)
        if entries is None:
            print(f"unverified {directory}: no checksums recorded (written by an older aiayn)")
            continue
        verify(directory)
        print(f"ok {directory} ({len(entries)} files)")
