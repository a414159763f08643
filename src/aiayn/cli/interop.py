"""`aiayn import` and `aiayn export`: Hugging Face Marian folders and CTranslate2 models."""

from __future__ import annotations

import argparse

from ..errors import UserError
from ..outputs import output_directory
from .common import log


def add_interop(sub) -> None:
    p = sub.add_parser("import", help="a Hugging Face Marian (OPUS-MT) folder as an aiayn "
                                      "checkpoint")
    p.add_argument("folder", help="a folder written by MarianMTModel.save_pretrained and "
                                  "MarianTokenizer.save_pretrained (nothing is downloaded)")
    p.add_argument("--out", required=True, metavar="CKPT",
                   help="the checkpoint directory to write (must not exist)")
    p.set_defaults(command_fn=import_command)
    p = sub.add_parser("export", help="a checkpoint as a Hugging Face Marian folder or a "
                                      "CTranslate2 model (needs aiayn[interop])")
    p.add_argument("checkpoint", help="a checkpoint directory, or a run (its best checkpoint)")
    p.add_argument("--to", required=True, choices=["hf", "ctranslate2"],
                   help="hf: MarianMTModel + MarianTokenizer; ctranslate2: ctranslate2.Translator")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the folder to write (must not exist)")
    p.add_argument("--quantization", metavar="TYPE",
                   help="ctranslate2 only: int8, int8_float32, int16, float16, ... "
                        "(default: float32)")
    p.set_defaults(command_fn=export_command)


def import_command(args: argparse.Namespace) -> None:
    from ..interop.marian import import_marian
    output_directory(args.out, "--out", args.folder)
    import_marian(args.folder, args.out, log=log)


def export_command(args: argparse.Namespace) -> None:
    output_directory(args.out, "--out", args.checkpoint)
    if args.to == "hf":
        if args.quantization:
            raise UserError("--quantization applies to --to ctranslate2 only")
        from ..interop.marian import export_hf
        export_hf(args.checkpoint, args.out, log=log)
    else:
        from ..interop.ct2 import export_ctranslate2
        export_ctranslate2(args.checkpoint, args.out, quantization=args.quantization, log=log)
