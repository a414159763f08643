"""Subword vocabularies: text <-> token ids, in two forms.

- ``Tokenizer``, aiayn's own: one SentencePiece model whose ids are the model's (§5.1: one
  byte-pair vocabulary shared by source and target). Special ids are fixed in ``aiayn.config``
  (pad 0, unk 1, bos 2, eos 3), ``ModelConfig``'s defaults.
- ``MarianVocab``, OPUS-MT's (Hugging Face ``MarianTokenizer``): a SentencePiece model per side
  cuts text into pieces and ``vocab.json`` (plus ``target_vocab.json`` when the sides have their
  own vocabularies) maps pieces to the model's ids.

Both encode a source (``encode``) or a target (``encode_target``) without special tokens, decode
target ids, name pieces, and copy their files into a checkpoint or data directory (``save``).
``load_tokenizer`` finds either in a directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Iterable, Union

import sentencepiece as spm

from ..config import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from ..errors import UserError
from ..integrity import verify

# aiayn's SentencePiece model: its name in a checkpoint, then in a prepared data directory
TOKENIZER_NAMES = ("tokenizer.model", "spm.model")


def _load_spm(path: Path) -> spm.SentencePieceProcessor:
    if not path.is_file():
        raise UserError(f"{path}: tokenizer model not found")
    model = spm.SentencePieceProcessor()
    try:
        model.Load(str(path))
    except (OSError, RuntimeError) as err:
        raise UserError(f"{path}: not a SentencePiece model ({err})") from None
    return model


def _fingerprint(paths: Iterable[Path]) -> str:
    """SHA-256 over the files' contents (each preceded by its size), in the order given."""
    digest = hashlib.sha256()
    for path in paths:
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


class Tokenizer:
    """aiayn's vocabulary: one SentencePiece model, its ids the model's; thin on purpose."""

    def __init__(self, model: spm.SentencePieceProcessor, path: Path | None = None) -> None:
        self.sp, self.path = model, path

    @classmethod
    def load(cls, path: str | Path) -> "Tokenizer":
        path = Path(path)
        return cls(_load_spm(path), path)

    @property
    def vocab_size(self) -> int:
        return self.sp.GetPieceSize()

    target_vocab_size = vocab_size

    def encode(self, text: str) -> list[int]:
        return self.sp.EncodeAsIds(text)

    def encode_target(self, text: str) -> list[int]:
        return self.sp.EncodeAsIds(text)

    def encode_batch(self, texts: list[str], *, side: str = "source") -> list[list[int]]:
        return self.sp.Encode(texts, out_type=int)

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``, specials left out; a lone word-start piece at either end (an
        output can end in one) leaves no space there, as Marian's vocabulary decodes."""
        return self.sp.DecodeIds([i for i in ids if i > EOS_ID]).strip()

    def pieces(self, ids: Iterable[int], *, side: str = "target") -> list[str]:
        return [self.sp.IdToPiece(int(i)) for i in ids]

    def _file(self) -> Path:
        if self.path is None:
            raise ValueError("this Tokenizer was made in memory; load it from a file to save it")
        return self.path

    def save(self, directory: Path) -> None:
        """Copy the model into ``directory`` (as a checkpoint names it)."""
        shutil.copyfile(self._file(), Path(directory) / TOKENIZER_NAMES[0])

    def fingerprint(self) -> str:
        """A SHA-256 of the vocabulary's files: equal fingerprints, equal token ids."""
        return _fingerprint([self._file()])


class MarianVocab:
    """OPUS-MT's vocabulary form, as Hugging Face's ``MarianTokenizer`` reads it.

    The source text loses a leading language token such as ``>>spa<<`` (kept as one piece),
    ``source.spm`` cuts the rest into pieces and ``vocab.json`` maps each piece to its id
    (unknown pieces to ``<unk>``); targets use ``target.spm`` and, when the sides have separate
    vocabularies, ``target_vocab.json``. Decoding joins the pieces of every id that is not
    special (pad, EOS, unk) with the SentencePiece model Hugging Face uses for it (the source
    model for a shared vocabulary, else the target model).
    """

    SOURCE_SPM, TARGET_SPM = "source.spm", "target.spm"
    VOCAB, TARGET_VOCAB = "vocab.json", "target_vocab.json"

    def __init__(self, directory: Path, *, pad: str = "<pad>", eos: str = "</s>",
                 unk: str = "<unk>") -> None:
        directory = Path(directory)
        self.source_sp = _load_spm(directory / self.SOURCE_SPM)
        self.target_sp = _load_spm(directory / self.TARGET_SPM)
        self.vocab = self._read_vocab(directory / self.VOCAB)
        separate = (directory / self.TARGET_VOCAB).is_file()
        self.target_vocab = self._read_vocab(directory / self.TARGET_VOCAB) if separate else None
        self.paths = [directory / name for name in
                      (self.SOURCE_SPM, self.TARGET_SPM, self.VOCAB, self.TARGET_VOCAB)
                      if (directory / name).is_file()]
        for name, vocab in (("vocab.json", self.vocab), ("target_vocab.json", self.target_vocab)):
            for token in (unk, eos, pad):
                if vocab is not None and token not in vocab:
                    raise UserError(f"{directory / name}: has no {token!r} entry; "
                                    "it is not a Marian vocabulary")
        target = self.target_vocab or self.vocab
        self.unk_id, self.eos_id, self.pad_id = (self.vocab[unk], self.vocab[eos],
                                                 self.vocab[pad])
        self.special = {target[unk], target[eos], target[pad]}
        self.target_unk = target[unk]
        self.id_to_piece = {i: piece for piece, i in target.items()}
        self.source_id_to_piece = {i: piece for piece, i in self.vocab.items()}
        self.decoder_sp = self.target_sp if separate else self.source_sp

    @staticmethod
    def _read_vocab(path: Path) -> dict[str, int]:
        try:
            vocab = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"{path}: missing; a Marian vocabulary needs source.spm, "
                            "target.spm and vocab.json") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise UserError(f"{path}: not a JSON vocabulary ({err})") from None
        if not isinstance(vocab, dict) or not all(isinstance(i, int) for i in vocab.values()):
            raise UserError(f"{path}: not a vocabulary (expected a mapping of pieces to ids)")
        return vocab

    @classmethod
    def load(cls, directory: str | Path) -> "MarianVocab":
        return cls(Path(directory))

    @property
    def vocab_size(self) -> int:
        return max(self.vocab.values()) + 1

    @property
    def target_vocab_size(self) -> int:
        return max((self.target_vocab or self.vocab).values()) + 1

    def encode(self, text: str) -> list[int]:
        code = []
        if text.startswith(">>") and (end := text.find("<<")) != -1:
            code, text = [text[:end + 2]], text[end + 2:]
        pieces = code + self.source_sp.EncodeAsPieces(text)
        return [self.vocab.get(p, self.unk_id) for p in pieces]

    def encode_target(self, text: str) -> list[int]:
        vocab = self.target_vocab or self.vocab
        return [vocab.get(p, self.target_unk) for p in self.target_sp.EncodeAsPieces(text)]

    def encode_batch(self, texts: list[str], *, side: str = "source") -> list[list[int]]:
        encode = self.encode if side == "source" else self.encode_target
        return [encode(text) for text in texts]

    def decode(self, ids: Iterable[int]) -> str:
        pieces = [self.id_to_piece.get(int(i), "<unk>") for i in ids if int(i) not in self.special]
        return self.decoder_sp.DecodePieces(pieces).replace("\u2581", " ").strip()

    def pieces(self, ids: Iterable[int], *, side: str = "target") -> list[str]:
        table = self.id_to_piece if side == "target" else self.source_id_to_piece
        return [table.get(int(i), "<unk>") for i in ids]

    def save(self, directory: Path) -> None:
        for path in self.paths:
            shutil.copyfile(path, Path(directory) / path.name)

    def fingerprint(self) -> str:
        return _fingerprint(self.paths)


AnyTokenizer = Union[Tokenizer, MarianVocab]


def word_starts(pieces: list[str]) -> list[int]:
    """Word index of every SentencePiece piece ('▁' opens a word); specials get -1."""
    out, word = [], -1
    for piece in pieces:
        if piece in ("</s>", "<s>", "<pad>"):
            out.append(-1)
            continue
        if piece.startswith("\u2581") or word < 0:
            word += 1
        out.append(word)
    return out


def load_tokenizer(directory: str | Path) -> AnyTokenizer:
    """The vocabulary kept in a checkpoint or prepared data directory, in either form; its
    files are checked against the directory's checksums when it has them."""
    directory = Path(directory)
    verify(directory, [*TOKENIZER_NAMES, MarianVocab.SOURCE_SPM, MarianVocab.TARGET_SPM,
                       MarianVocab.VOCAB, MarianVocab.TARGET_VOCAB])
    if (directory / MarianVocab.VOCAB).is_file():
        return MarianVocab.load(directory)
    for name in TOKENIZER_NAMES:
        if (directory / name).is_file():
            return Tokenizer.load(directory / name)
    raise UserError(f"{directory}: no vocabulary ({TOKENIZER_NAMES[0]}, or {MarianVocab.VOCAB} "
                    f"with {MarianVocab.SOURCE_SPM} and {MarianVocab.TARGET_SPM}) inside")


# byte fallback needs the 256 byte pieces beside the text's own: smaller vocabularies go without
BYTE_FALLBACK_MIN_VOCAB = 512


def train_tokenizer(sentences: Iterable[str], prefix: Path, *, vocab_size: int,
                    model_type: str = "bpe", sample_sentences: int = 2_000_000,
                    byte_fallback: bool | None = None, symbols: Iterable[str] = ()) -> Tokenizer:
    """Train on an iterator of sentences; writes ``prefix.model`` and returns the tokenizer.

    ``sample_sentences`` bounds the memory SentencePiece uses on a large corpus (it samples).
    ``byte_fallback`` (default: on from ``BYTE_FALLBACK_MIN_VOCAB`` pieces) spells a character
    the vocabulary never saw as its UTF-8 bytes instead of ``<unk>``, so it survives a round
    trip through encode and decode. ``symbols``: strings that are always one piece each
    (the placeholder sentinels).
    """
    if byte_fallback is None:
        byte_fallback = vocab_size >= BYTE_FALLBACK_MIN_VOCAB
    options: dict[str, Any] = dict(
        sentence_iterator=iter(sentences), model_prefix=str(prefix), vocab_size=vocab_size,
        model_type=model_type, character_coverage=1.0, pad_id=PAD_ID, unk_id=UNK_ID,
        bos_id=BOS_ID, eos_id=EOS_ID, input_sentence_size=sample_sentences,
        shuffle_input_sentence=True, hard_vocab_limit=False, num_threads=2, minloglevel=2,
        byte_fallback=byte_fallback,
    )
    if symbols := list(symbols):
        options["user_defined_symbols"] = symbols
    with open(os.devnull, "w") as quiet:
        try:
            sys.stderr.fileno()  # SentencePiece silences its log by redirecting this descriptor
            options["logstream"] = quiet
        except (AttributeError, OSError, ValueError):
            pass  # no real stderr (captured, notebook): minloglevel keeps it mostly quiet
        try:
            spm.SentencePieceTrainer.Train(**options)
        except RuntimeError as err:
            raise UserError(f"SentencePiece could not build a {vocab_size}-piece vocabulary: "
                            f"{err}; try a smaller --vocab-size") from None
    return Tokenizer.load(prefix.with_suffix(".model"))
