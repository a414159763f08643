import pytest
import torch

from aiayn import ModelConfig

VOCAB = 40


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


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
