"""`aiayn`: the command line, a thin shell over the library.

One function per subcommand reads its flags into the library's typed options and calls it.
Every user mistake ends in one line on stderr, ``aiayn: error: ...``, and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
from pathlib import Path
from typing import Callable, NoReturn, cast

import yaml

from .config import ConfigError
from .errors import UserError
from .outputs import output_directory, output_file
from .runtime.threads import set_wait_policy, use_available_cores


def _log(message: str) -> None:
    """Progress messages go to stderr; stdout carries results."""
    print(message, file=sys.stderr, flush=True)


class _Renamed(argparse.Action):
    """A flag's former name: still accepted, with a warning naming the new one."""

    def __init__(self, option_strings, dest, new: str, **kwargs) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        _log(f"aiayn: warning: {option_string} is now {self.new}")
        setattr(namespace, self.dest, values)


# --------------------------------------------------------------------------- prepare
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


def _add_prepare(sub) -> None:
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
                        "their translations")
    p.set_defaults(command_fn=prepare_command)


def prepare_command(args: argparse.Namespace) -> None:
    from .checkpoint import Checkpoint
    from .data.prepare import prepare
    output_directory(args.out, "--out", args.train_src, args.train_tgt, args.train_tsv,
                     args.valid_src, args.valid_tgt, args.valid_tsv)
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
            log=_log)
    print(f"prepared {args.out}")


# ----------------------------------------------------------------------------- train
def _add_train(sub) -> None:
    from .train.recipe import TrainConfig
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
        if f.metadata["flag"]:
            p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=None,
                           choices=f.metadata["choices"], metavar=f.metadata["unit"],
                           help=f"{f.metadata['help']} (default: {f.default})".replace("%", "%%"))
    p.set_defaults(command_fn=train_command)


def _train_config(args: argparse.Namespace):
    from .train.recipe import TrainConfig
    values: dict = {}
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise UserError(f"--config {path}: no such file")
        TrainConfig.from_yaml(path)  # names a bad key or value in the file itself
        values = yaml.safe_load(path.read_text()) or {}
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
    from .train.trainer import train
    output_directory(args.out, "--out", args.data, args.init)
    summary = train(args.data, args.out, _train_config(args), resume=args.resume,
                    progress=not args.no_progress, log=_log)
    print(json.dumps(summary, indent=1))
    return PREEMPTED if summary["stopped"] == "signal" else 0


# --------------------------------------------------------------------- average, plot
def _add_average_plot(sub) -> None:
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
    from .checkpoint import average_checkpoints, list_step_checkpoints
    if args.last < 1:
        raise UserError(f"--last ({args.last}) must be at least 1")
    steps = list_step_checkpoints(Path(args.run))
    if not steps:
        raise UserError(f"{args.run}: no step checkpoints in {args.run}/checkpoints")
    chosen = steps[-args.last:]
    output_directory(args.out, "--out", *chosen)
    average_checkpoints(chosen, Path(args.out))
    print(f"averaged {len(chosen)} checkpoints ({chosen[0].name} .. {chosen[-1].name}) "
          f"into {args.out}")


def plot_command(args: argparse.Namespace) -> None:
    from .train.plot import plot_run
    output_file(args.out or Path(args.run) / "curves.png", "--out")
    print(f"wrote {plot_run(Path(args.run), args.out)}")


# ---------------------------------------------------------------- translate, evaluate
def _add_decoding_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", required=True, action="append", metavar="DIR",
                   help="a checkpoint directory, or a run directory (its best checkpoint); "
                        "repeat for an ensemble of models with one vocabulary")
    from .decode.options import DecodeOptions
    DecodeOptions.add_flags(p, ("beam", "lenpen", "lenpen_form", "beam_rules", "batch_tokens",
                                "max_len_a", "max_len_b"))
    p.add_argument("--max-tokens", dest="batch_tokens", type=int, action=_Renamed,
                   new="--batch-tokens")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("--int8", action="store_true",
                   help="int8 linear layers (dynamic quantization; CPU): faster, see docs")
    p.add_argument("--compile", action="store_true",
                   help="run decoding steps as compiled code (float32, CPU; needs a C++ "
                        "compiler, else decodes as without; the first run compiles for a "
                        "minute or so, later ones load it): faster, see docs")


def _decode_options(args: argparse.Namespace):
    from .decode.options import DecodeOptions
    return DecodeOptions.from_flags(args)


def _read_lines(path: str | None) -> list[str]:
    """The lines of a UTF-8 file (stdin when None), as ``corpus.split_lines`` splits them:
    every input line gets one output line."""
    from .data.corpus import split_lines
    if path is None:
        return split_lines(sys.stdin.read())
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such file")
    try:
        return split_lines(p.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        line = p.read_bytes()[:err.start].count(b"\n") + 1
        raise UserError(f"{p}: line {line} is not valid UTF-8; convert the file to UTF-8") from None


def _one_line(text: str) -> str:
    """An output that stays on its line: line breaks a translation may hold become spaces."""
    return text.replace("\r", " ").replace("\n", " ")


def _add_translate_evaluate(sub) -> None:
    from .decode.options import DecodeOptions
    p = sub.add_parser("translate", help="translate text, one sentence per line")
    _add_decoding_flags(p)
    DecodeOptions.add_flags(p, ("nbest",), help={
        "nbest": "print the N best translations of each sentence as index<TAB>score<TAB>text "
                 "lines"})
    p.add_argument("--alignments", action="store_true",
                   help="append a TAB and Pharaoh i-j word alignments to every line")
    p.add_argument("--prefix-file", metavar="FILE",
                   help="one target prefix per input line (an empty line for none): each "
                        "translation starts with it and decoding continues after it")
    p.add_argument("--split-sentences", action="store_true",
                   help="translate every line sentence by sentence (sentencex), as `aiayn "
                        "serve` does paragraphs; by default only a line past the model's "
                        "length limit is split, so that nothing is cut")
    DecodeOptions.add_flags(p, ("sample", *DecodeOptions.SAMPLING))
    p.add_argument("-i", "--input", metavar="FILE", help="input file (default: stdin)")
    p.add_argument("-o", "--output", metavar="FILE", help="output file (default: stdout)")
    p.set_defaults(command_fn=translate_command)

    p = sub.add_parser("score", help="teacher-forced log-probabilities of sentence pairs")
    p.add_argument("--checkpoint", required=True, action="append", metavar="DIR",
                   help="a checkpoint or run directory; repeat for an ensemble")
    p.add_argument("--src", required=True, metavar="FILE", help="source sentences, one a line")
    p.add_argument("--tgt", required=True, metavar="FILE", help="target sentences, aligned")
    DecodeOptions.add_flags(p, ("lenpen", "lenpen_form", "batch_tokens"), help={
        "lenpen": "length penalty alpha of the normalized score",
        "lenpen_form": "length penalty form of the normalized score",
        "batch_tokens": "tokens per scoring batch"})
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("-o", "--output", metavar="FILE", help="output file (default: stdout)")
    p.set_defaults(command_fn=score_command)

    p = sub.add_parser("evaluate", help="translate and score with sacreBLEU (BLEU, chrF)")
    _add_decoding_flags(p)
    p.add_argument("--src", required=True, metavar="FILE", help="source sentences, one a line")
    p.add_argument("--ref", required=True, metavar="FILE", help="reference translations")
    p.set_defaults(command_fn=evaluate_command)


def translate_command(args: argparse.Namespace) -> None:
    from .translate import load
    options = _decode_options(args)
    if args.output:
        output_file(args.output, "-o", args.input, args.prefix_file)
    translator = load(args.checkpoint, device=args.device, int8=args.int8,
                      compile=args.compile)  # fails first
    lines = _read_lines(args.input)
    bar = None
    if args.output:
        from tqdm import tqdm
        bar = tqdm(total=len(lines), unit="sent", file=sys.stderr)
    prefixes = None
    if args.prefix_file:
        prefixes = _read_lines(args.prefix_file)
        if len(prefixes) != len(lines):
            raise UserError(f"--prefix-file {args.prefix_file} has {len(prefixes)} lines but "
                            f"the input {len(lines)}; give one prefix per line (empty for none)")
    out = translator.translate(lines, options, on_batch=bar.update if bar else None,
                               prefixes=prefixes, split_sentences=args.split_sentences)
    if bar:
        bar.close()
    if args.nbest == 1:
        best = cast("list[str]", out)
        if args.alignments:
            best = [f"{o}\t{translator.align(src, o)}" for src, o in zip(lines, best)]
        text = "".join(_one_line(o) + "\n" for o in best)
    else:  # "index<TAB>score<TAB>hypothesis", as in fairseq's n-best lists
        nbest = cast("list[list[tuple[str, float]]]", out)
        text = "".join(f"{i}\t{s:.4f}\t{_one_line(t)}\n" for i, o in enumerate(nbest)
                       for t, s in o)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def score_command(args: argparse.Namespace) -> None:
    from .translate import load
    options = _decode_options(args)
    if args.output:
        output_file(args.output, "-o", args.src, args.tgt)
    translator = load(args.checkpoint, device=args.device)
    sources, targets = _read_lines(args.src), _read_lines(args.tgt)
    if len(sources) != len(targets):
        raise UserError(f"--src {args.src} has {len(sources)} lines but --tgt {args.tgt} "
                        f"{len(targets)}; score needs aligned files")
    scores = translator.score(sources, targets, options)
    # total<TAB>per token<TAB>length-normalized, one line per pair, in input order
    text = "".join(f"{x.total:.4f}\t{x.per_token:.4f}\t{x.normalized:.4f}\n" for x in scores)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def evaluate_command(args: argparse.Namespace) -> None:
    from .evaluate import evaluate
    options = _decode_options(args)  # flags are checked before any file is read
    result = evaluate(args.checkpoint, _read_lines(args.src), _read_lines(args.ref), options,
                      device=args.device, int8=args.int8, compile=args.compile)
    print(f"BLEU = {result['bleu']:.2f}  ({result['bleu_signature']})")
    print(f"chrF = {result['chrf']:.2f}  ({result['chrf_signature']})")
    if "placeholders_kept" in result:
        print(f"placeholders kept = {100 * result['placeholders_kept']:.1f}%  (of "
              f"{result['placeholder_sentences']} sentences with placeholders)")


# -------------------------------------------------------------------------- generate
def _add_generate(sub) -> None:
    p = sub.add_parser("generate", help="continue a prompt with a decoder-only model")
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="a decoder-only checkpoint or run directory")
    p.add_argument("prompt", help="the text to continue")
    p.add_argument("--max-new-tokens", type=int, default=50, metavar="TOKENS",
                   help="generate at most this many tokens (default: 50)")
    p.add_argument("--temperature", type=float, default=1.0,
                   help="divide the logits by this; 0 = greedy (default: 1.0)")
    p.add_argument("--top-k", type=int, default=0, metavar="K",
                   help="sample among the K likeliest tokens; 0 = all (default: 0)")
    p.add_argument("--top-p", type=float, default=1.0, metavar="P",
                   help="sample within the smallest set of tokens of probability P "
                        "(nucleus; default: 1.0)")
    p.add_argument("--seed", type=int, help="make the sample reproducible")
    p.set_defaults(command_fn=generate_command)


def generate_command(args: argparse.Namespace) -> None:
    from .generate import Generator
    print(Generator.load(args.checkpoint).generate(
        args.prompt, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
        top_k=args.top_k, top_p=args.top_p, seed=args.seed))


# -------------------------------------------------------------------------- classify
def _add_classify(sub) -> None:
    p = sub.add_parser("classify", help="label text with an encoder classifier")
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="a classifier (train --arch encoder --task classify) or its run")
    p.add_argument("-i", "--input", metavar="FILE", help="one text a line (default: stdin)")
    p.add_argument("-o", "--output", metavar="FILE", help="output file (default: stdout)")
    p.set_defaults(command_fn=classify_command)


def classify_command(args: argparse.Namespace) -> None:
    from .classify import Classifier
    if args.output:
        output_file(args.output, "-o", args.input)
    classifier = Classifier.load(args.checkpoint)
    results = classifier.classify(_read_lines(args.input))
    text = "".join(f"{label}\t{prob:.4f}\n" for label, prob in results)  # label<TAB>probability
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


# ------------------------------------------------------------------ attend, positions
def _add_inspection(sub) -> None:
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
    p.add_argument("--max-len", dest="length", type=int, action=_Renamed, new="--length")
    p.add_argument("--base", type=float, default=10000.0,
                   help="the sinusoids' base (default: 10000, §3.5)")
    p.add_argument("--out", required=True, metavar="PNG", help="the picture to write")
    p.set_defaults(command_fn=positions_command)


def attend_command(args: argparse.Namespace) -> None:
    from .inspect import plot_attention, write_html
    from .translate import load
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


def positions_command(args: argparse.Namespace) -> None:
    from .inspect import plot_positions
    if args.d_model < 2 or args.length < 1:
        raise UserError("--d-model must be at least 2 and --length at least 1")
    output_file(args.out, "--out")
    print(f"wrote {plot_positions(args.d_model, args.length, args.out, args.base)}")


# ----------------------------------------------------------------------------- check
def _add_check(sub) -> None:
    p = sub.add_parser("check", help="verify the files of a run, a checkpoint or a prepared "
                                     "data directory against their SHA-256 checksums")
    p.add_argument("directory", help="a run, a checkpoint or a data directory")
    p.set_defaults(command_fn=check_command)


def check_command(args: argparse.Namespace) -> None:
    from .integrity import recorded, verify
    root = Path(args.directory)
    if not root.is_dir():
        raise UserError(f"{root}: no such directory")
    checkpoints = root / "checkpoints"
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


# ---------------------------------------------------------------------- import, export
def _add_interop(sub) -> None:
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
    from .interop.marian import import_marian
    output_directory(args.out, "--out", args.folder)
    import_marian(args.folder, args.out, log=_log)


def export_command(args: argparse.Namespace) -> None:
    output_directory(args.out, "--out", args.checkpoint)
    if args.to == "hf":
        if args.quantization:
            raise UserError("--quantization applies to --to ctranslate2 only")
        from .interop.marian import export_hf
        export_hf(args.checkpoint, args.out, log=_log)
    else:
        from .interop.ct2 import export_ctranslate2
        export_ctranslate2(args.checkpoint, args.out, quantization=args.quantization, log=_log)


# ------------------------------------------------------------------------------ serve
def _add_serve(sub) -> None:
    p = sub.add_parser("serve", help="serve translations over HTTP: LibreTranslate's API, "
                                     "aiayn's own and an attention page (needs aiayn[serve])")
    p.add_argument("--checkpoint", action="append", required=True, metavar="[SRC-TGT=]DIR",
                   help="a model to serve, named by its language pair (from `prepare "
                        "--src-lang/--tgt-lang`, or given as en-es=DIR); repeat for more")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: "
                                                       "127.0.0.1)")
    p.add_argument("--port", type=int, default=5000, help="port (default: 5000)")
    p.add_argument("--char-limit", type=int, default=5000, metavar="CHARS",
                   help="characters per request (default: 5000)")
    p.add_argument("--batch-limit", type=int, default=64, metavar="TEXTS",
                   help="texts (q list items) or sentences per request (default: 64)")
    p.add_argument("--max-body-bytes", type=int, default=1_000_000, metavar="BYTES",
                   help="largest request body; larger ones get 413 (default: 1000000)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="a request waits at most this long for its translation (default: 60)")
    p.add_argument("--batch-tokens", type=int, default=4096, metavar="TOKENS",
                   help="source tokens gathered into one decoding round (default: 4096)")
    p.add_argument("--max-wait-ms", type=float, default=10.0, metavar="MS",
                   help="how long a round waits for more requests (default: 10)")
    p.add_argument("--queue-size", type=int, default=256, metavar="REQUESTS",
                   help="requests waiting at most; more get 503 at once (default: 256)")
    p.add_argument("--api-keys", metavar="FILE",
                   help="require an api_key from this file (one key a line); others get 403")
    p.add_argument("--req-limit", type=int, default=0, metavar="PER_MINUTE",
                   help="requests per minute per API key or client address; 0 = no limit")
    from .decode.options import DecodeOptions
    DecodeOptions.add_flags(p, ("beam",), help={"beam": "beam size of LibreTranslate's routes "
                                                        "and the default of /v1/translate's"})
    p.add_argument("--int8", action="store_true", help="int8 linear layers (CPU)")
    p.add_argument("--compile", action="store_true",
                   help="run decoding steps as compiled code (float32, CPU; needs a C++ "
                        "compiler)")
    p.add_argument("--keep-freed-mib", type=int, default=256, metavar="MIB",
                   help="freed memory the process keeps for reuse before returning it to the "
                        "system: a bound on how far its memory grows past what decoding holds "
                        "(default: 256; translate and train keep 1024)")
    p.set_defaults(command_fn=serve_command)


def _served_models(specs: list[str], int8: bool, compile: bool = False):
    from .checkpoint import Checkpoint
    from .serve.app import Model
    from .translate import Translator
    models = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = "", spec
        checkpoint = Checkpoint.open(path)
        if name:
            source, dash, target = name.partition("-")
            if not (dash and source and target):
                raise UserError(f"--checkpoint {spec!r}: name the pair as SRC-TGT=DIR, "
                                "e.g. en-es=runs/en-es")
        else:
            languages = checkpoint.languages
            if languages is None:
                raise UserError(f"--checkpoint {path}: its language pair is unknown; name it "
                                f"as en-es={path} (or prepare with --src-lang/--tgt-lang)")
            source, target = languages["source"], languages["target"]
        models.append(Model(source, target, Translator.load(checkpoint, int8=int8,
                                                                   compile=compile)))
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise UserError(f"two --checkpoint models serve the same pair ({', '.join(names)})")
    return models


def serve_command(args: argparse.Namespace) -> None:
    import logging

    from .errors import require
    for module in ("starlette", "prometheus_client", "multipart"):
        require(module, "serve", "serve")
    uvicorn = require("uvicorn", "serve", "serve")

    from .serve.app import Settings, create_app
    keys = None
    if args.api_keys:
        path = Path(args.api_keys)
        if not path.is_file():
            raise UserError(f"--api-keys {path}: no such file")
        keys = frozenset(line.strip() for line in path.read_text().splitlines() if line.strip())
        if not keys:
            raise UserError(f"--api-keys {path}: the file holds no key")
    for flag in ("char_limit", "batch_limit", "max_body_bytes", "batch_tokens", "queue_size",
                 "beam"):
        if getattr(args, flag) < 1:
            raise UserError(f"--{flag.replace('_', '-')} must be at least 1")
    if args.timeout <= 0 or args.max_wait_ms < 0 or args.req_limit < 0:
        raise UserError("--timeout must be positive; --max-wait-ms and --req-limit >= 0")
    settings = Settings(char_limit=args.char_limit, batch_limit=args.batch_limit,
                        max_body_bytes=args.max_body_bytes, timeout=args.timeout,
                        batch_tokens=args.batch_tokens, max_wait_ms=args.max_wait_ms,
                        queue_size=args.queue_size, api_keys=keys, req_limit=args.req_limit,
                        beam=args.beam)
    if args.keep_freed_mib < 0:
        raise UserError("--keep-freed-mib must be >= 0")
    from .runtime.cpu import reuse_freed_memory
    reuse_freed_memory(args.keep_freed_mib << 20)  # before the models load: the first call sets it
    app = create_app(_served_models(args.checkpoint, args.int8, args.compile), settings)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    _log(f"serving {', '.join(app.state.service.models)} on http://{args.host}:{args.port}/")
    # uvicorn answers the requests in flight on SIGTERM or Ctrl-C, then raises the signal again
    # to the handler it found; this one notes it, so that a clean stop exits with status 0
    stopped: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stopped.append(signum))
    uvicorn.run(app, host=args.host, port=args.port, access_log=False, log_level="warning",
                timeout_graceful_shutdown=int(args.timeout))
    if stopped:
        _log(f"stopped by {signal.Signals(stopped[0]).name}; every request in flight was "
             "answered")


# ------------------------------------------------------------------------------ main
SUBCOMMANDS: tuple[Callable, ...] = (_add_prepare, _add_train, _add_average_plot,
                                     _add_translate_evaluate, _add_generate, _add_classify,
                                     _add_inspection, _add_interop, _add_serve, _add_check)


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a mistake in the command line as one line that names the help to read."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="aiayn", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # before the parser, whose subcommands import PyTorch: its thread pool reads the spin once
    set_wait_policy(next((a for a in argv if not a.startswith("-")), None))
    args = build_parser().parse_args(argv)
    use_available_cores()
    try:
        return args.command_fn(args) or 0
    except (UserError, ConfigError) as err:
        print(f"aiayn: error: {err}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as err:  # (torch.OutOfMemoryError is a RuntimeError)
        if not (isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError"
                or "can't allocate memory" in str(err)):
            raise
        print(f"aiayn: error: out of memory ({(str(err) or 'MemoryError').splitlines()[0]}); "
              "lower --batch-tokens (decoding, scoring) or --max-tokens (training)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aiayn: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`aiayn translate ... | head`)
        sys.stderr.close()
        return 141


if __name__ == "__main__":
    sys.exit(main())
