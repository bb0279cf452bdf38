"""A SentencePiece-style BPE tokenizer, one module per pipeline stage:

normalizer (character maps, spaces) → pre_tokenizer (DFA over character classes) → bpe (merge
replay, byte fallback) → decoder; ``tokenizer`` strings them together, ``trainer`` learns a model
(``unigram_trainer`` a Unigram one), ``tokenizer_file`` saves and loads a whole tokenizer (``Tokenizer.save`` / ``Tokenizer.load``),
``model_file`` / ``sentencepiece_model`` read and write models, ``bulk`` tokenizes datasets.
"""
from gpu_text.tokenizer.bpe import BPEModel, PieceType
from gpu_text.tokenizer.decoder import Decoder
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
from gpu_text.tokenizer.pre_tokenizer import PreTokenizer, PreTokens, pre_tokenize_strings
from gpu_text.tokenizer.sentencepiece_model import (
    SentencePieceModel,
    SentencePieceModelError,
    load_sentencepiece_model,
    parse_sentencepiece_model,
)
from gpu_text.tokenizer.tokenizer import Encoding, Tokenizer
from gpu_text.tokenizer.tokenizer_file import TokenizerFileError
from gpu_text.tokenizer.bpe_trainer import BPETrainer, TrainedModel
from gpu_text.tokenizer.bytepiece import BytePieceModel
from gpu_text.tokenizer.unigram import UnigramModel
from gpu_text.tokenizer.unigram_tokenizer import Unigram
from gpu_text.tokenizer.bytepiece_tokenizer import BytePiece
from gpu_text.tokenizer.bytepiece_trainer import BytePieceTrainer
from gpu_text.tokenizer.unigram_trainer import UnigramTrainer

__all__ = [
    "RULE_NAMES",
    "BPEModel",
    "BPETrainer",
    "BytePiece",
    "BytePieceModel",
    "BytePieceTrainer",
    "CounterSpec",
    "Decoder",
    "Encoding",
    "ModelFileError",
    "NormalizedBatch",
    "Normalizer",
    "PieceTable",
    "PieceType",
    "PreTokenizer",
    "PreTokenizerSpec",
    "PreTokens",
    "SentencePieceModel",
    "SentencePieceModelError",
    "Tokenizer",
    "TokenizerFileError",
    "TokenizerModel",
    "TrainedModel",
    "Unigram",
    "UnigramModel",
    "UnigramTrainer",
    "load_sentencepiece_model",
    "parse_sentencepiece_model",
    "pre_tokenize_strings",
    "read_model_file",
    "write_model_file",
]
