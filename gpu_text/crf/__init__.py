"""Linear-chain CRF (Wapiti-style): pattern features, batched forward-backward, L-BFGS / OWL-QN /
SGD-L1 training, Viterbi labelling and BMES word segmentation.

>>> from gpu_text.crf import CRF
>>> CRF(pattern="u:%x[0,0]\\nb").rho1
0.5
"""
from __future__ import annotations

from gpu_text.crf.data import bmes_to_words, read_conll, read_segmented_bmes, words_to_bmes
from gpu_text.crf.model import CHINESE_SEGMENTATION_PATTERN, CRF
from gpu_text.crf.patterns import Pattern, parse_patterns

__all__ = ["CRF", "CHINESE_SEGMENTATION_PATTERN", "Pattern", "bmes_to_words", "parse_patterns", "read_conll",
           "read_segmented_bmes", "words_to_bmes"]
