"""A SentencePiece-style tokenizer: the normalizer, and model files (the seed's text format and
SentencePiece's ``.model`` protobuf)."""
from gpu_text.tokenizer.model_file import (
    CounterSpec,
    ModelFileError,
    PieceTable,
    PreTokenizerSpec,
    TokenizerModel,
    read_model_file,
    write_model_file,
)
from gpu_text.tokenizer.normalizer import RULE_NAMES, NormalizedBatch, Normalizer
from gpu_text.tokenizer.sentencepiece_model import (
    SentencePieceModel,
    SentencePieceModelError,
    load_sentencepiece_model,
    parse_sentencepiece_model,
)

__all__ = [
    "RULE_NAMES",
    "CounterSpec",
    "ModelFileError",
    "NormalizedBatch",
    "Normalizer",
    "PieceTable",
    "PreTokenizerSpec",
    "SentencePieceModel",
    "SentencePieceModelError",
    "TokenizerModel",
    "load_sentencepiece_model",
    "parse_sentencepiece_model",
    "read_model_file",
    "write_model_file",
]
