"""aiayn: the Transformer of *Attention Is All You Need*, complete, on PyTorch."""

from .config import ConfigError, ModelConfig
from .model import EncoderModel, LanguageModel, Transformer
from .translate import DecodeOptions, Translator, load

__version__ = "0.1.0"
__all__ = ["ConfigError", "DecodeOptions", "EncoderModel", "LanguageModel", "ModelConfig",
           "Transformer", "Translator", "load"]
