"""aiayn: the Transformer of *Attention Is All You Need*, complete, on PyTorch."""

from .threads import set_wait_policy

set_wait_policy()  # before PyTorch is imported: its thread pool reads the policy once

from .config import ConfigError, ModelConfig  # noqa: E402
from .model import EncoderModel, LanguageModel, Transformer  # noqa: E402
from .translate import DecodeOptions, Translator, load  # noqa: E402

__version__ = "0.1.0"
__all__ = ["ConfigError", "DecodeOptions", "EncoderModel", "LanguageModel", "ModelConfig",
           "Transformer", "Translator", "load"]
