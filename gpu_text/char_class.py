"""The character classes every kernel family agrees on (core layer: no kernels, no dispatch).

The codes are also ``GT_CLASS_*`` in ``cuda/utf8.cuh`` and ``CLASS_*`` in ``cpu_fallback/utf8.py``
(the CPU layer imports nothing from ``gpu_text``); ``tests/test_layers.py`` checks all three agree.
"""
from __future__ import annotations

import enum


class CharClass(enum.IntEnum):
    """Character classes of PieceTokenizer's pre-tokenizers (the seed's Regex) (custom ranges, not Unicode categories).

    - ``HAN`` (``\\p{H}``): U+3400–4DBF, U+4E00–9FFF, U+F900–FAFF, U+20000–323AF.
    - ``DIGIT`` (``\\p{N}``): ASCII 0–9 and fullwidth U+FF10–FF19.
    - ``ALPHA`` (``\\p{A}``): PieceTokenizer's word characters that are neither digit nor Han: A–Z, a–z,
      U+00C0–00D6, 00D8–00F6, 00F8–085F, 0900–1FFF, 2E80–2FFF, 3040–33FF, 4DC0–4DFF, A000–D7FF,
      FB00–FDFF, FE70–FEFF, FF21–FF3A, FF41–FF5A, FF66–FFDC, 10000–10FFF. These ranges were read
      off PieceTokenizer (``piece-tokenizer`` on PyPI): a codepoint is a word character exactly
      when ``"a" + c + "a"`` pre-tokenizes to one token; ``tests/test_utf8_classes.py`` re-checks
      every codepoint against it.
    - ``SPACE``: Unicode White_Space not already ALPHA (U+1680 lies in PieceTokenizer's word range).
    - ``OTHER``: punctuation, symbols, controls, unassigned and invalid codepoints.

    >>> CharClass(4).name
    'HAN'
    """

    OTHER = 0
    SPACE = 1
    DIGIT = 2
    ALPHA = 3
    HAN = 4
