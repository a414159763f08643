"""`aiayn translate`, `score`, `evaluate`, `generate` and `classify`: the commands that run a
trained model on text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..errors import UserError
from ..glossary import Glossary
from ..outputs import output_file

if TYPE_CHECKING:
    from ..translate import Translator
from .common import (
    add_decoding_flags,
    decode_options,
    input_file,
    one_line,
    read_document,
    read_lines,
    write_output,
)


def add_translate_evaluate(sub) -> None:
    from ..decode.options import DecodeOptions
    p = sub.add_parser("translate", help="translate text, one sentence per line")
    add_decoding_flags(p)
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
    p.add_argument("--source", metavar="LANG|auto",
                   help="with several --checkpoint models of different source languages: "
                        "translate with the one that reads LANG, or (auto) with the one of the "
                        "language each line is detected in (lingua, extra serve); without it, "
                        "several checkpoints are an ensemble")
    p.add_argument("--file", metavar="IN",
                   help="translate a whole file into -o OUT, in its own format: .txt, .html, "
                        ".xml, .md, .srt, .vtt, .po/.pot (new translations marked fuzzy), "
                        ".xlf/.xliff (1.2, 2.0), .docx, .odt, .odp, .ods, .pptx, .xlsx, "
                        ".xlsm, .epub and .pdf (formatting kept), string resources (.json, "
                        ".arb, .yml/.yaml, .properties, .strings, .resx, Android's .xml, "
                        "Qt's .ts, Xcode's .xcstrings, .stringsdict, Fluent's .ftl, PHP); "
                        "extra documents for all but text and markup")
    p.add_argument("--overwrite", action="store_true",
                   help="with --file on a gettext catalog, an XLIFF or a Qt .ts file: "
                        "translate entries that already have a translation too")
    p.add_argument("--format", choices=("text", "html", "xml"), default="text",
                   help="text: one sentence per line (the default); html or xml: the input is "
                        "one document whose sentences are translated whole and whose inline "
                        "tags are put around the words aligned to the ones they covered")
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
    add_decoding_flags(p)
    p.add_argument("--src", required=True, metavar="FILE", help="source sentences, one a line")
    p.add_argument("--ref", required=True, metavar="FILE", help="reference translations")
    p.set_defaults(command_fn=evaluate_command)


def translate_command(args: argparse.Namespace) -> None:
    options = decode_options(args)
    if args.file:
        return translate_file_command(args, options)
    if args.overwrite:
        raise UserError("--overwrite works with --file on a gettext catalog; drop it")
    if args.output:
        output_file(args.output, "-o", args.input, args.prefix_file)
    if args.format != "text":
        for flag, used in (("--nbest", args.nbest != 1), ("--alignments", args.alignments),
                           ("--prefix-file", args.prefix_file), ("--sample", args.sample)):
            if used:
                raise UserError(f"{flag} works on text, not --format {args.format}; drop one")
    glossary = Glossary.read(args.glossary) if args.glossary else None
    translators = _translators(args)  # fails first
    if args.shortlist:
        for translator in translators.values():
            translator.use_shortlist(args.shortlist)
    if args.format != "text":
        document, encoding = read_document(args.input, args.format)
        translator = _pick(translators, args.source, [document])[0]
        write_output(translator.translate_markup([document], args.format, options,
                                                 glossary=glossary)[0], args.output, encoding)
        return
    lines = read_lines(args.input)
    prefixes = None
    if args.prefix_file:
        prefixes = read_lines(args.prefix_file)
        if len(prefixes) != len(lines):
            raise UserError(f"--prefix-file {args.prefix_file} has {len(prefixes)} lines but "
                            f"the input {len(lines)}; give one prefix per line (empty for none)")
    bar = None
    if args.output:
        from tqdm import tqdm
        bar = tqdm(total=len(lines), unit="sent", file=sys.stderr)
    chosen = _pick(translators, args.source, lines)
    outputs = [""] * len(lines)
    for translator in {id(t): t for t in chosen}.values():
        rows = [i for i, t in enumerate(chosen) if t is translator]
        mine = [lines[i] for i in rows]
        out = translator.translate(mine, options, on_batch=bar.update if bar else None,
                                   prefixes=[prefixes[i] for i in rows] if prefixes else None,
                                   split_sentences=args.split_sentences, glossary=glossary)
        links = (translator.align_all([(lines[i], cast("str", out[k]))
                                       for k, i in enumerate(rows)])
                 if args.alignments and args.nbest == 1 else None)
        for k, i in enumerate(rows):
            if args.nbest == 1:
                best = cast("str", out[k])
                if links is not None:
                    best = f"{best}\t{links[k]}"
                outputs[i] = one_line(best) + "\n"
            else:  # "index<TAB>score<TAB>hypothesis", as in fairseq's n-best lists
                nbest = cast("list[tuple[str, float]]", out[k])
                outputs[i] = "".join(f"{i}\t{x:.4f}\t{one_line(t)}\n" for t, x in nbest)
    if bar:
        bar.close()
    write_output("".join(outputs), args.output)


def translate_file_command(args: argparse.Namespace, options) -> None:
    from ..documents import extension, translate_document
    for flag, used in (("-i", args.input), ("--nbest", args.nbest != 1),
                       ("--alignments", args.alignments), ("--prefix-file", args.prefix_file),
                       ("--sample", args.sample), ("--format", args.format != "text")):
        if used:
            raise UserError(f"{flag} does not go with --file; drop one")
    if not args.output:
        raise UserError("--file needs -o OUT, the translated file to write")
    source, target = input_file(args.file, "--file"), Path(args.output)
    output_file(args.output, "-o", args.file)
    kind, out_kind = extension(source), extension(target)
    alike = {".htm": ".html", ".pot": ".po", ".xlf": ".xliff", ".yaml": ".yml"}
    if alike.get(kind, kind) != alike.get(out_kind, out_kind):
        raise UserError(f"-o {target.name} is a {out_kind} file but --file {source.name} is "
                        f"{kind}; give the output the input's extension")
    glossary = Glossary.read(args.glossary) if args.glossary else None
    content = source.read_bytes()
    translator = _pick(_translators(args), args.source,
                       [content[:4000].decode("utf-8", "replace")])[0]
    if args.shortlist:
        translator.use_shortlist(args.shortlist)
    try:
        data = translate_document(translator, content, kind, options,
                                  glossary=glossary, overwrite=args.overwrite)
    except UserError as e:  # what is wrong inside the file: say which file
        raise UserError(f"--file {args.file}: {e}") from None
    target.write_bytes(data)


def _translators(args: argparse.Namespace) -> dict[str, Translator]:
    """The checkpoints as one translator (an ensemble when several), or with ``--source``
    one translator per source language."""
    from ..checkpoint import Checkpoint
    from ..translate import load
    if not args.source:
        return {"": load(args.checkpoint, device=args.device, int8=args.int8,
                         compile=args.compile)}
    models: dict[str, Translator] = {}
    for path in args.checkpoint:
        checkpoint = Checkpoint.open(path)
        if checkpoint.languages is None:
            raise UserError(f"--checkpoint {path}: its language pair is unknown, so --source "
                            "cannot pick it; prepare with --src-lang/--tgt-lang")
        source = checkpoint.languages["source"]
        if source in models:
            raise UserError(f"two --checkpoint models read {source}; with --source give one "
                            "model per source language")
        models[source] = load(checkpoint, device=args.device, int8=args.int8,
                              compile=args.compile)
    if args.source != "auto" and args.source not in models:
        raise UserError(f"--source {args.source}: no --checkpoint reads it (they read "
                        f"{', '.join(sorted(models))})")
    return models


def _pick(translators: dict[str, Translator], source: str | None,
          texts: list[str]) -> list[Translator]:
    """The translator of each text: the only one, the one of ``source``, or the one of the
    language each text is detected in (``auto``; an empty line takes the first)."""
    if not source:
        return [translators[""]] * len(texts)
    if source != "auto":
        return [translators[source]] * len(texts)
    from ..detect import LanguageDetector
    detector = LanguageDetector(list(translators))
    first = sorted(translators)[0]
    return [translators[detector.detect(t)[0][0] if t.strip() else first] for t in texts]


def score_command(args: argparse.Namespace) -> None:
    from ..translate import load
    options = decode_options(args)
    if args.output:
        output_file(args.output, "-o", args.src, args.tgt)
    translator = load(args.checkpoint, device=args.device)
    sources, targets = read_lines(args.src), read_lines(args.tgt)
    if len(sources) != len(targets):
        raise UserError(f"--src {args.src} has {len(sources)} lines but --tgt {args.tgt} "
                        f"{len(targets)}; score needs aligned files")
    scores = translator.score(sources, targets, options)
    # total<TAB>per token<TAB>length-normalized, one line per pair, in input order
    text = "".join(f"{x.total:.4f}\t{x.per_token:.4f}\t{x.normalized:.4f}\n" for x in scores)
    write_output(text, args.output)


def evaluate_command(args: argparse.Namespace) -> None:
    from ..evaluate import evaluate
    options = decode_options(args)  # flags are checked before any file is read
    glossary = Glossary.read(args.glossary) if args.glossary else None
    result = evaluate(args.checkpoint, read_lines(args.src), read_lines(args.ref), options,
                      device=args.device, int8=args.int8, compile=args.compile,
                      glossary=glossary, shortlist=args.shortlist)
    print(f"BLEU = {result['bleu']:.2f}  ({result['bleu_signature']})")
    print(f"chrF = {result['chrf']:.2f}  ({result['chrf_signature']})")
    if "terms_kept" in result:
        print(f"glossary terms kept = {100 * result['terms_kept']:.1f}%  (of "
              f"{result['term_sentences']} sentences with terms)")
    if "placeholders_kept" in result:
        print(f"placeholders kept = {100 * result['placeholders_kept']:.1f}%  (of "
              f"{result['placeholder_sentences']} sentences with placeholders)")


def add_shortlist(sub) -> None:
    p = sub.add_parser("shortlist", help="build a vocabulary shortlist for a checkpoint from "
                                         "parallel text (then decode with --shortlist)")
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="the checkpoint (or run) whose vocabulary the shortlist is for")
    p.add_argument("--src", required=True, metavar="FILE", help="source sentences, one a line")
    p.add_argument("--tgt", required=True, metavar="FILE", help="their translations, aligned")
    p.add_argument("--per-token", type=int, default=50, metavar="N",
                   help="target tokens kept per source token (default: 50)")
    p.add_argument("--frequent", type=int, default=500, metavar="N",
                   help="most frequent target tokens always kept (default: 500)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the shortlist file to write (safetensors)")
    p.set_defaults(command_fn=shortlist_command)


def shortlist_command(args: argparse.Namespace) -> None:
    from ..checkpoint import Checkpoint
    from ..decode.shortlist import Shortlist
    if args.per_token < 1 or args.frequent < 0:
        raise UserError("--per-token must be at least 1 and --frequent at least 0")
    output_file(args.output, "-o", args.src, args.tgt)
    checkpoint = Checkpoint.open(args.checkpoint)
    tokenizer = checkpoint.tokenizer
    sources, targets = read_lines(args.src), read_lines(args.tgt)
    if len(sources) != len(targets):
        raise UserError(f"--src {args.src} has {len(sources)} lines but --tgt {args.tgt} "
                        f"{len(targets)}; give aligned files")
    cfg = checkpoint.config
    shortlist = Shortlist.build(
        ((tokenizer.encode(s), tokenizer.encode_target(t)) for s, t in zip(sources, targets)),
        cfg.vocab_size, cfg.target_vocab_size, tokenizer.fingerprint(),
        per_token=args.per_token, frequent=args.frequent)
    shortlist.save(args.output)
    kept = int((shortlist.candidates >= 0).sum())
    print(f"wrote {args.output}: {kept:,} (source token, target token) pairs over "
          f"{len(sources):,} sentence pairs, {len(shortlist.frequent)} frequent target tokens")


def add_generate(sub) -> None:
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
    from ..generate import Generator
    print(Generator.load(args.checkpoint).generate(
        args.prompt, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
        top_k=args.top_k, top_p=args.top_p, seed=args.seed))


def add_classify(sub) -> None:
    p = sub.add_parser("classify", help="label text with an encoder classifier")
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="a classifier (train --arch encoder --task classify) or its run")
    p.add_argument("-i", "--input", metavar="FILE", help="one text a line (default: stdin)")
    p.add_argument("-o", "--output", metavar="FILE", help="output file (default: stdout)")
    p.set_defaults(command_fn=classify_command)


def classify_command(args: argparse.Namespace) -> None:
    from ..classify import Classifier
    if args.output:
        output_file(args.output, "-o", args.input)
    classifier = Classifier.load(args.checkpoint)
    results = classifier.classify(read_lines(args.input))
    text = "".join(f"{label}\t{prob:.4f}\n" for label, prob in results)  # label<TAB>probability
    write_output(text, args.output)
