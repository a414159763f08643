import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from aiayn import ModelConfig
from aiayn.runtime import hardware
from aiayn.runtime.cpu import onednn_available

VOCAB = 40

# Decoding in tests (here and in the commands they start) takes the eager steps unless a test
# asks for the compiled ones: the default would build every toy model's steps in the
# background (tests/decode/test_compiled.py tests that default).
os.environ.setdefault("AIAYN_COMPILE", "0")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _float32_training(monkeypatch):
    """Training in this process with ``precision: auto`` takes float32 on every CPU kind, so
    that a test's arithmetic does not depend on the machine (tests/test_hardware.py tests the
    choice itself)."""
    monkeypatch.setattr(hardware, "_cpu_choice",
                        lambda: hardware.Choice("fp32", "the test suite's fixed choice"))
    # and the matrix-product rate behind MFU is not measured at every run's first log line
    # nor after each validation
    monkeypatch.setattr(hardware, "measured_rate", lambda dtype: 100.0)
    monkeypatch.setattr(hardware, "measure_peak_again", hardware.peak_flops)
    # float32 training's products go through oneDNN wherever this PyTorch has it, as on the
    # AMD CPUs where it measures faster (tests/test_hardware.py tests the choice itself)
    monkeypatch.setattr(hardware, "onednn_float32", onednn_available)


def assert_float32_close(actual, expected) -> None:
    """Two float32 computations that are equal in exact arithmetic agree to 1e-5, relative and
    absolute. Not tighter: PyTorch's float32 kernels sum in a different order on AVX-512, AVX2
    and the default ISA, and at other shapes (a padded batch, a cached step), which moves
    values of magnitude ~1-10 by a few times 1e-6 (1.13e-6 seen on an AVX2 CPU against an
    AVX-512 one); the suite runs under each (`make test`)."""
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)


def random_tokens(batch: int, length: int, vocab: int = VOCAB, lengths=None) -> torch.Tensor:
    """Random ids >= 4 (clear of the specials), right-padded with 0 beyond ``lengths``."""
    tokens = torch.randint(4, vocab, (batch, length))
    if lengths is not None:
        for row, n in enumerate(lengths):
            tokens[row, n:] = 0
    return tokens


@pytest.fixture
def tiny_cfg() -> ModelConfig:
    return ModelConfig.preset("tiny", vocab_size=VOCAB)


WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
         "rho sigma tau upsilon phi chi psi omega").split()


def toy_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """A toy translation task: the target is the source with words upper-cased and reversed."""
    import random
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 7))]
        pairs.append((" ".join(words), " ".join(w.upper() for w in reversed(words))))
    return pairs


def write_pairs(directory, name: str, pairs) -> tuple:
    src, tgt = directory / f"{name}.src", directory / f"{name}.tgt"
    src.write_text("".join(s + "\n" for s, _ in pairs))
    tgt.write_text("".join(t + "\n" for _, t in pairs))
    return src, tgt


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory):
    """A prepared toy corpus (400 training pairs, 40 validation pairs, 100-piece vocabulary)."""
    from aiayn.data.prepare import TextPair, prepare
    root = tmp_path_factory.mktemp("toy")
    train = write_pairs(root, "train", toy_pairs(400, seed=1))
    valid = write_pairs(root, "valid", toy_pairs(40, seed=2))
    out = root / "data"
    prepare(TextPair(*train), out, valid=TextPair(*valid), vocab_size=100, log=lambda *_: None)
    return out


@pytest.fixture(scope="session")
def tiny_checkpoint(toy_data, tmp_path_factory):
    """An untrained tiny model saved as a checkpoint with the toy tokenizer."""
    from aiayn import Transformer
    from aiayn import checkpoint as ckpt
    from aiayn.data.tokenizer import Tokenizer
    torch.manual_seed(0)
    model = Transformer(ModelConfig.preset("tiny", vocab_size=100, max_len=64))
    root = tmp_path_factory.mktemp("ckpt")
    return ckpt.save_checkpoint(root, "step_0000001", model, model.cfg,
                                Tokenizer.load(toy_data / "spm.model"))


# a few seconds of training on the toy data: the tiny preset, dropout on (so resuming has RNG
# state to restore), validation and checkpoints every 4 steps
# float32's products through oneDNN wherever this PyTorch has it (as on AMD CPUs), named
PRODUCTS = "onednn" if onednn_available() else "pytorch"
FAST = dict(preset="tiny", model={"dropout": 0.1}, max_tokens=150, warmup=10, valid_every=4,
            precision="fp32",  # not "auto": the same arithmetic on every CPU kind
            fp32_products=PRODUCTS, log_every=1, valid_bleu_sentences=4)


def losses(run_dir: Path) -> dict[int, float]:
    """Training loss per logged step, from RUN/metrics.jsonl."""
    records = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in records if "loss" in r}


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory):
    """The paper's configuration (post-norm, interleaved sinusoids, three-way tying) trained on
    the toy task until its outputs are right and end on their own (about 15 s); a checkpoint
    that knows its language pair (en-es). Trained once per run: the suite's worker processes
    share it (the first to need it trains it while the other waits for it)."""
    from filelock import FileLock

    from aiayn import checkpoint as ckpt
    from aiayn.data.prepare import TextPair, prepare
    from aiayn.train.recipe import TrainConfig
    from aiayn.train.trainer import train
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the run's directory, above each worker's own
        base = base.parent
    root = base / "toy-model"
    with FileLock(f"{root}.lock"):
        if not (root / "done").exists():
            shutil.rmtree(root, ignore_errors=True)  # a worker stopped midway
            root.mkdir()
            train_files = write_pairs(root, "train", toy_pairs(400, seed=1))
            prepare(TextPair(*train_files), root / "data", vocab_size=100,
                    languages=("en", "es"), log=lambda *_: None)
            cfg = TrainConfig(preset="tiny", model={"dropout": 0.0, "d_model": 64, "d_ff": 128},
                              max_tokens=1500, warmup=150, lr_scale=0.7, max_steps=600,
                              valid_every=600, valid_bleu_sentences=0, schedule="paper")
            train(root / "data", root / "run", cfg, progress=False, log=lambda *_: None)
            (root / "done").touch()
    return ckpt.resolve_checkpoint(root / "run", "last")
