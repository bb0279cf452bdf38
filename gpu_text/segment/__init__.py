"""Chinese word segmentation: DictCut's dictionary lattice (and jieba compatibility), batched."""
from gpu_text.segment.dictionary import Dictionary, DictionaryError, load_dictionary, parse_dictionary
from gpu_text.segment.segmenter import Segmentation, Segmenter, segment_words

__all__ = ["Dictionary", "DictionaryError", "Segmentation", "Segmenter", "load_dictionary", "parse_dictionary",
           "segment_words"]
