"""`aiayn prepare`: check parallel text, train a joint SentencePiece vocabulary, encode to id files.

The output directory holds, per split (``train``, ``valid``) and side (``src``, ``tgt``):

- ``{split}.{side}.ids.npy``      every sentence's token ids, concatenated (uint16 or uint32)
- ``{split}.{side}.offsets.npy``  int64, n + 1 offsets: sentence i is ids[offsets[i]:offsets[i+1]]
- ``valid.{side}.txt``            the kept validation sentences as text (BLEU references)
- ``train.align.ids.npy``, ``train.align.offsets.npy``   with ``alignments``: each training
  pair's word alignments as (source piece, target piece) links, two numbers a link, laid out
  as the id files are

plus ``spm.model`` (the shared BPE vocabulary, §5.1; or, with ``tokenizer``, a checkpoint's
vocabulary in its own form) and ``stats.json``. Training memory-maps the
id files, so corpus size is bounded by disk, not RAM. Nothing is written in place: the directory
is built beside the target and renamed into place when complete.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, cast

import numpy as np

from ..errors import UserError
from ..files import replace_directory
from ..integrity import write_checksums
from ..placeholders import SENTINELS, mask
from .charset import byte_order_mark
from .corpus import ALIGNMENTS, STATS, TOKENIZER, ids_file, offsets_file, text_file
from .tokenizer import BYTE_FALLBACK_MIN_VOCAB, AnyTokenizer, train_tokenizer, word_starts

ENCODE_CHUNK = 10_000


@dataclass
class TextPair:
    """Where one split's text comes from: two aligned files, or one two-column TSV."""

    src: Path
    tgt: Path | None = None  # None: ``src`` is a TSV with source<TAB>target

    def describe(self) -> str:
        return str(self.src) if self.tgt is None else f"{self.src} / {self.tgt}"


@dataclass
class SplitStats:
    pairs: int = 0
    empty_skipped: int = 0
    too_long_filtered: int = 0
    src_tokens: int = 0
    tgt_tokens: int = 0
    max_src_len: int = 0
    max_tgt_len: int = 0
    byte_tokens: int = 0  # tokens that spell a character outside the vocabulary as a byte
    unk_tokens: int = 0  # tokens <unk>: characters lost (a vocabulary without byte fallback)
    unseen_characters: str = ""  # the most frequent of those characters, most frequent first
    coverage: str = ""  # the above in words
    aligned: int = 0  # pairs whose word alignments were kept (``alignments``)
    alignment_links: int = 0  # their links, counted in pieces
    visual_order: int = 0  # lines of Hebrew stored in visual order (``visual_hebrew``)
    visual_order_line: int = 0  # the first of them


class Coverage:
    """Which token ids stand for characters outside the vocabulary (byte pieces, ``<unk>``), and
    the characters that the vocabulary's pieces do spell, on each side."""

    def __init__(self, tokenizer: AnyTokenizer) -> None:
        self.bytes, self.unk, self.known = {}, {}, {}
        for side, size in (("source", tokenizer.vocab_size),
                           ("target", tokenizer.target_vocab_size)):
            pieces = tokenizer.pieces(range(size), side=side)
            self.bytes[side] = {i for i, p in enumerate(pieces) if BYTE_PIECE.fullmatch(p)}
            self.unk[side] = {i for i, p in enumerate(pieces) if p == "<unk>"}
            self.known[side] = set("".join(p for p in pieces if not p.startswith("<")))
        self.unseen: Counter[str] = Counter()

    def count(self, stats: SplitStats, text: str, ids: list[int], side: str) -> None:
        n_bytes = sum(i in self.bytes[side] for i in ids)
        n_unk = sum(i in self.unk[side] for i in ids)
        if n_bytes or n_unk:
            stats.byte_tokens += n_bytes
            stats.unk_tokens += n_unk
            normal = unicodedata.normalize("NFKC", text)
            self.unseen.update(c for c in normal if c not in self.known[side] and not c.isspace())

    def describe(self, stats: SplitStats) -> str:
        stats.unseen_characters = "".join(c for c, _ in self.unseen.most_common(20))
        if not (stats.byte_tokens or stats.unk_tokens):
            return "every character is in the vocabulary"
        shown = ", ".join(repr(c) for c in stats.unseen_characters[:8])
        return (f"{len(self.unseen):,} characters outside the vocabulary ({shown}): "
                f"{stats.byte_tokens:,} tokens spell them as bytes, {stats.unk_tokens:,} are "
                "<unk>" + (" (lost: prepare a vocabulary of at least "
                           f"{BYTE_FALLBACK_MIN_VOCAB} pieces for byte fallback)"
                           if stats.unk_tokens else ""))


BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")


def _open_text(path: Path) -> IO[bytes]:
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, expected a text file")
    return cast(IO[bytes], gzip.open(path, "rb")) if path.suffix == ".gz" else open(path, "rb")


def _lines(path: Path) -> Iterator[str]:
    """Decoded lines without their newline; invalid UTF-8 is an error naming file and line."""
    with _open_text(path) as handle:
        try:
            for number, raw in enumerate(handle, 1):
                if number == 1:
                    raw = _unmarked(path, raw)
                try:
                    yield raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as err:
                    raise UserError(f"{path}: line {number} is not valid UTF-8 "
                                    f"(byte {err.start}); convert the file to UTF-8") from None
        except (OSError, EOFError) as err:  # a corrupt .gz
            raise UserError(f"{path}: cannot be read ({err})") from None


def _unmarked(path: Path, first: bytes) -> bytes:
    """A file's first line without a UTF-8 byte order mark; a UTF-16 or UTF-32 file (read a
    line at a time, it would split inside characters) is an error saying what to do."""
    found = byte_order_mark(first)
    if found is None:
        return first
    mark, codec = found
    if codec != "utf-8":
        name = codec[:6].upper()  # UTF-16, UTF-32
        raise UserError(f"{path}: the file is {name} (its byte order mark says so); "
                        f"convert it to UTF-8 (iconv -f {name} -t UTF-8)")
    return first[len(mark):]


def read_pairs(source: TextPair) -> Iterator[tuple[str, str]]:
    """Yield (source, target) sentence pairs, raw (empty lines included)."""
    if source.tgt is None:
        for number, line in enumerate(_lines(source.src), 1):
            cols = line.split("\t")
            if len(cols) != 2:
                raise UserError(f"{source.src}: line {number} has {len(cols)} tab-separated "
                                "columns, expected 2 (source<TAB>target)")
            yield cols[0], cols[1]
        return
    src_lines, tgt_lines = _lines(source.src), _lines(source.tgt)
    for pair in zip(src_lines, tgt_lines):
        yield pair


_HEBREW_WORD = re.compile("[\u05d0-\u05ea]{2,}")
_FINAL = frozenset("\u05da\u05dd\u05df\u05e3\u05e5")  # the final forms: ך ם ן ף ץ


def visual_hebrew(text: str) -> bool:
    """Whether ``text`` looks like Hebrew stored in visual order, reversed (as old terminals
    needed, and as some of GNU's Hebrew catalogs still are): more of its words start with
    one of the five final letter forms than end with one, where Hebrew spelled in order
    puts them last."""
    words = _HEBREW_WORD.findall(text)
    return sum(w[0] in _FINAL for w in words) > sum(w[-1] in _FINAL for w in words)


def check_pairs(source: TextPair) -> int:
    """Validate a split before anything is written; return its line count."""
    if source.tgt is None:
        count = sum(1 for _ in read_pairs(source))
        if count == 0:
            raise UserError(f"{source.src}: the file is empty")
        return count
    counts = []
    for path in (source.src, source.tgt):
        n = sum(1 for _ in _lines(path))
        if n == 0:
            raise UserError(f"{path}: the file is empty")
        counts.append(n)
    if counts[0] != counts[1]:
        raise UserError(f"{source.src} has {counts[0]} lines but {source.tgt} has {counts[1]}; "
                        "parallel files must be aligned line by line")
    return counts[0]


class _IdWriter:
    """Appends token-id sequences to a flat .npy file without holding the corpus in memory."""

    def __init__(self, path: Path, offsets_path: Path, dtype: np.dtype) -> None:
        self.path, self.offsets_path, self.dtype = path, offsets_path, dtype
        self.tmp = path.with_suffix(".raw")
        self.handle = open(self.tmp, "wb")
        self.lengths: list[int] = []  # 8 bytes a sentence; the ids themselves go to disk

    def add(self, ids: list[int]) -> None:
        self.handle.write(np.asarray(ids, dtype=self.dtype).tobytes())
        self.lengths.append(len(ids))

    def close(self) -> int:
        self.handle.close()
        total = int(sum(self.lengths))
        out = np.lib.format.open_memmap(self.path, mode="w+", dtype=self.dtype, shape=(total,))
        with open(self.tmp, "rb") as handle:
            pos = 0
            while chunk := handle.read(1 << 24):
                arr = np.frombuffer(chunk, dtype=self.dtype)
                out[pos:pos + len(arr)] = arr
                pos += len(arr)
        out.flush()
        del out
        self.tmp.unlink()
        offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        np.save(self.offsets_path, offsets)
        return total


LINK = re.compile(r"(\d+)-(\d+)")


def read_links(path: Path, number: int, line: str) -> list[tuple[int, int]]:
    """One line of Pharaoh alignments ("0-0 1-2 ..." : source word - target word) as pairs."""
    links = []
    for item in line.split():
        found = LINK.fullmatch(item)
        if found is None:
            raise UserError(f"{path}: line {number} has {item!r}; alignments are "
                            "source-target word index pairs such as 0-0 1-2 (Pharaoh format)")
        links.append((int(found[1]), int(found[2])))
    return links


def _has_sentinels(tokenizer: AnyTokenizer) -> bool:
    """Whether every placeholder sentinel is one piece of ``tokenizer``'s vocabulary."""
    encoded = [tokenizer.pieces(ids, side="source") for ids in tokenizer.encode_batch(SENTINELS)]
    return all(pieces[-1:] == [sentinel] and len(pieces) <= 2  # (after a word boundary "▁")
               for sentinel, pieces in zip(SENTINELS, encoded))


def check_alignments(path: Path, train: TextPair, pairs: int) -> None:
    """Every line of an alignments file read and its links checked against its pair's words,
    before anything is written."""
    lines = sum(1 for _ in _lines(path))
    if lines != pairs:
        raise UserError(f"{path} has {lines} lines but the training data has {pairs}; give "
                        "one line of alignments per training pair")
    for number, ((s, t), line) in enumerate(zip(read_pairs(train), _lines(path)), 1):
        n_src, n_tgt = len(s.split()), len(t.split())
        for i, j in read_links(path, number, line):
            if (i >= n_src or j >= n_tgt) and n_src and n_tgt:
                raise UserError(f"{path}: line {number} links {i}-{j}, but the pair has "
                                f"{n_src} source and {n_tgt} target words (split at spaces); "
                                "make the alignments from the same files, one line per pair")


def piece_links(links: list[tuple[int, int]], src_pieces: list[str], tgt_pieces: list[str],
                src_text: str, tgt_text: str) -> list[int] | None:
    """Word links as links between the words' pieces, flat: [source piece, target piece, ...];
    None when the vocabulary's words are not the text's (normalization joined or split some)."""
    src_words, tgt_words = word_starts(src_pieces), word_starts(tgt_pieces)
    n_src, n_tgt = len(src_text.split()), len(tgt_text.split())
    if max(src_words, default=-1) + 1 != n_src or max(tgt_words, default=-1) + 1 != n_tgt:
        return None
    by_src: dict[int, list[int]] = {}
    for p, w in enumerate(src_words):
        by_src.setdefault(w, []).append(p)
    by_tgt: dict[int, list[int]] = {}
    for p, w in enumerate(tgt_words):
        by_tgt.setdefault(w, []).append(p)
    return [x for i, j in sorted(set(links)) for q in by_tgt[j] for p in by_src[i]
            for x in (p, q)]


def encode_split(tokenizer: AnyTokenizer, source: TextPair, out: Path, split: str,
                 max_len: int, keep_text: bool, labels: list[str] | None = None,
                 protect: bool = False, alignments: Path | None = None) -> SplitStats:
    """Encode one split into id files; skip empty pairs and filter pairs over ``max_len``.

    With ``labels`` (classification) the target side is a label: its index is the one id.
    With ``protect`` placeholders are encoded as sentinels; the text files keep them as they
    are (validation references are raw text). ``alignments``: a Pharaoh file, one line per
    line of the split, whose word links are kept as piece links (a pair whose words the
    vocabulary's normalization changed keeps none)."""
    largest = max(tokenizer.vocab_size, tokenizer.target_vocab_size)
    dtype = np.dtype(np.uint16 if largest <= 65535 else np.uint32)
    writers = {side: _IdWriter(out / ids_file(split, side), out / offsets_file(split, side), dtype)
               for side in ("src", "tgt")}
    texts = ({side: open(out / text_file(split, side), "w", encoding="utf-8")
              for side in ("src", "tgt")} if keep_text else None)
    stats, coverage = SplitStats(), Coverage(tokenizer)
    link_writer = (_IdWriter(out / ids_file(split, ALIGNMENTS),
                             out / offsets_file(split, ALIGNMENTS), np.dtype(np.uint32))
                   if alignments is not None else None)
    link_lines = iter(_lines(alignments)) if alignments is not None else None
    found: list[list[tuple[int, int]]] = []  # the links of each pair in ``batch``

    def flush(batch: list[tuple[str, str]]) -> None:
        encoded = [(m[0], m[1] or "") for m in (mask(s, t) for s, t in batch)] if protect \
            else batch
        src_ids = tokenizer.encode_batch([s for s, _ in encoded])
        if labels is None:
            tgt_ids = tokenizer.encode_batch([t for _, t in encoded], side="target")
        else:
            tgt_ids = [[labels.index(t)] for _, t in batch]
        for k, ((s_text, t_text), s, t) in enumerate(zip(batch, src_ids, tgt_ids)):
            # +1: each side carries one special token (EOS on the source, BOS/EOS on the target)
            if len(s) + 1 > max_len or len(t) + 1 > max_len:
                stats.too_long_filtered += 1
                continue
            if link_writer is not None:
                flat = piece_links(found[k], tokenizer.pieces(s, side="source"),
                                   tokenizer.pieces(t), s_text, t_text)
                link_writer.add(flat or [])
                if flat is not None:
                    stats.aligned += 1
                    stats.alignment_links += len(flat) // 2
            writers["src"].add(s)
            writers["tgt"].add(t)
            coverage.count(stats, s_text, s, "source")
            if labels is None:
                coverage.count(stats, t_text, t, "target")
            stats.pairs += 1
            stats.max_src_len = max(stats.max_src_len, len(s))
            stats.max_tgt_len = max(stats.max_tgt_len, len(t))
            if texts is not None:
                texts["src"].write(s_text + "\n")
                texts["tgt"].write(t_text + "\n")

    batch: list[tuple[str, str]] = []
    for number, (s, t) in enumerate(read_pairs(source), 1):
        s, t = s.strip(), t.strip()
        if link_lines is not None and alignments is not None:
            # (a second pass over the file: ``check_alignments`` read it once before anything
            # was written, without holding its links in memory)
            links = read_links(alignments, number, next(link_lines, ""))
        if labels is not None and s and t not in labels:
            why = "has no label" if not t else f"has the label {t!r}, unseen in training"
            raise UserError(f"{source.describe()}: line {number} {why}; every line needs "
                            "text<TAB>label with a label of the training data")
        if not s or not t:
            stats.empty_skipped += 1
            continue
        if visual_hebrew(s) or labels is None and visual_hebrew(t):
            stats.visual_order += 1
            stats.visual_order_line = stats.visual_order_line or number
        batch.append((s, t))
        if link_lines is not None:
            found.append(links)
        if len(batch) == ENCODE_CHUNK:
            flush(batch)
            batch, found = [], []
    if batch:
        flush(batch)
    stats.coverage = coverage.describe(stats)
    stats.src_tokens = writers["src"].close()
    stats.tgt_tokens = writers["tgt"].close()
    if link_writer is not None:
        link_writer.close()
    if texts is not None:
        for handle in texts.values():
            handle.close()
    if stats.pairs == 0:
        raise UserError(f"{source.describe()}: no sentence pair left after skipping "
                        f"{stats.empty_skipped} empty and filtering {stats.too_long_filtered} "
                        f"over --max-len {max_len}")
    return stats


def prepare(train: TextPair, out: str | Path, *, valid: TextPair | None = None,
            vocab_size: int = 8000, model_type: str = "bpe", max_len: int = 256,
            sample_sentences: int = 2_000_000, overwrite: bool = False,
            tokenizer: AnyTokenizer | None = None, tokenizer_name: str = "",
            languages: tuple[str, str] | None = None,
            task: str = "translate", protect_placeholders: bool = False,
            alignments: str | Path | None = None, log=print) -> dict:
    """Check, train the shared vocabulary on both sides of ``train``, encode every split.

    ``tokenizer``: a vocabulary that encodes the text instead (a checkpoint's, for fine-tuning
    it; ``tokenizer_name`` says which, for the log and stats.json); ``vocab_size`` and
    ``model_type`` are unused then. ``languages``:
    (source, target) codes such as ("en", "es"), kept with the data and its checkpoints.
    ``task`` "classify": the target side is a label (text<TAB>label); the vocabulary is
    trained on the texts and the labels, taken from the training data, are kept in stats.
    ``protect_placeholders``: printf, brace and markup placeholders become sentinels that are
    single pieces (``aiayn.placeholders``); models trained on it restore them when translating.
    ``alignments``: word alignments of the training pairs in Pharaoh format (one line per line
    of ``train``, "i-j" = source word i, target word j, words split at spaces; what fast_align
    or eflomal write), kept as piece links for guided alignment (`aiayn train`).

    Returns the statistics also written to ``out/stats.json``.
    Raises UserError for bad input; ``out`` is left untouched then.
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise UserError(f"{out} already exists and is not empty; choose another --out "
                        "or pass --overwrite")
    if vocab_size < 16:
        raise UserError(f"--vocab-size ({vocab_size}) is too small; use at least 16")
    if max_len < 3:
        raise UserError(f"--max-len ({max_len}) must be at least 3")
    if task not in ("translate", "classify"):
        raise UserError(f"--task ({task!r}) must be translate or classify")
    if protect_placeholders and task == "classify":
        raise UserError("--placeholders protects placeholders in translation pairs: it goes "
                        "without --task classify")
    if protect_placeholders and tokenizer is not None and not _has_sentinels(tokenizer):
        raise UserError(f"--placeholders: the vocabulary of {tokenizer_name or '--tokenizer'} "
                        "has no placeholder sentinels (its data was prepared without "
                        "--placeholders); drop --placeholders or --tokenizer")
    if alignments is not None and task == "classify":
        raise UserError("--alignments links the words of translation pairs: it goes without "
                        "--task classify")
    given = tokenizer
    splits = {"train": train} | ({"valid": valid} if valid is not None else {})
    lines = {name: check_pairs(src) for name, src in splits.items()}
    if alignments is not None:
        alignments = Path(alignments)
        check_alignments(alignments, train, lines["train"])
    log("checked: " + ", ".join(f"{n} {c:,} lines" for n, c in lines.items()))

    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    os.chmod(work, 0o755)
    try:
        labels = None
        if task == "classify":
            labels = sorted({t.strip() for s, t in read_pairs(train) if s.strip()})
            if "" in labels:
                labels.remove("")
            if len(labels) < 2:
                raise UserError(f"{train.describe()}: classification needs at least two labels "
                                f"(found {labels}); every line is text<TAB>label")

        def sentences() -> Iterator[str]:
            for s, t in read_pairs(train):
                if protect_placeholders:
                    s, masked, _ = mask(s, t)
                    t = masked or ""
                for text in (s.strip(),) if labels is not None else (s.strip(), t.strip()):
                    if text:
                        yield text

        if given is None:
            log(f"training a joint {model_type.upper()} vocabulary of {vocab_size:,} pieces")
            vocab: AnyTokenizer = train_tokenizer(sentences(), work / Path(TOKENIZER).stem,
                                    vocab_size=vocab_size, model_type=model_type,
                                    sample_sentences=sample_sentences,
                                    symbols=SENTINELS if protect_placeholders else ())
        else:
            log(f"using the vocabulary of {tokenizer_name or 'the given tokenizer'}")
            vocab = given
            vocab.save(work)
        stats: dict = {"vocab_size": vocab.vocab_size,
                       "model_type": model_type if given is None else f"from {tokenizer_name}",
                       "max_len": max_len, "splits": {}}
        if languages is not None:
            stats["languages"] = {"source": languages[0], "target": languages[1]}
        if labels is not None:
            stats["task"], stats["labels"] = "classify", labels
        if protect_placeholders:
            stats["placeholders"] = True
        for name, source in splits.items():
            log(f"encoding {name} ({source.describe()})")
            split = encode_split(vocab, source, work, name, max_len, keep_text=name != "train",
                                 labels=labels, protect=protect_placeholders,
                                 alignments=alignments if name == "train" else None)
            stats["splits"][name] = dict(vars(split))
            stats["splits"][name]["source"] = source.describe()
            log(f"  {split.pairs:,} pairs kept, {split.empty_skipped:,} with an empty side "
                f"skipped, {split.too_long_filtered:,} over --max-len {max_len} filtered")
            log(f"  coverage: {split.coverage}")
            if split.visual_order:
                log(f"  warning: {split.visual_order:,} pairs have Hebrew stored in visual "
                    f"order, reversed (more words start with a final letter than end with one; "
                    f"the first: line {split.visual_order_line:,}); a model learns it reversed: "
                    "reverse those lines or leave them out")
            if name == "train" and alignments is not None:
                log(f"  alignments: {split.aligned:,} pairs, {split.alignment_links:,} piece "
                    f"links; {split.pairs - split.aligned:,} pairs whose words the vocabulary's "
                    "normalization changed have none")
                stats["alignments"] = str(alignments)
        (work / STATS).write_text(json.dumps(stats, indent=2) + "\n")
        write_checksums(work)
        replace_directory(work, out)
    except OSError as err:
        shutil.rmtree(work, ignore_errors=True)
        raise UserError(f"{out}: the prepared data could not be written "
                        f"({err.strerror or err}); nothing was written or "
                        "changed there") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return stats
