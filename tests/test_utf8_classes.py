"""Character classes against their definitions, and ALPHA against PieceTokenizer itself."""
from __future__ import annotations

import numpy as np

from gpu_text import utf8
from gpu_text.ragged import RaggedArray
from gpu_text.utf8 import CharClass
from tests.conftest import require
from tests.reference import utf8 as reference

ALL_CODEPOINTS = np.arange(0x110000, dtype=np.uint32)


def classes_of_every_codepoint(backend) -> np.ndarray:
    out = utf8.char_classes(RaggedArray(ALL_CODEPOINTS, np.array([0, ALL_CODEPOINTS.size])), backend).values
    return out if isinstance(out, np.ndarray) else out.get()


def test_seed_ranges():
    classes = classes_of_every_codepoint("cpu")
    han = classes == CharClass.HAN
    for lo, hi in [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x323AF)]:
        assert han[lo:hi + 1].all() and not han[lo - 1] and not han[hi + 1]
    assert han.sum() == (0x4DBF - 0x3400 + 1) + (0x9FFF - 0x4E00 + 1) + (0xFAFF - 0xF900 + 1) + (0x323AF - 0x20000 + 1)
    assert np.flatnonzero(classes == CharClass.DIGIT).tolist() == list(range(0x30, 0x3A)) + list(range(0xFF10, 0xFF1A))
    assert classes[ord("a")] == classes[ord("Ж")] == classes[ord("あ")] == classes[ord("한")] == CharClass.ALPHA
    assert classes[ord(" ")] == classes[0x3000] == classes[ord("\n")] == CharClass.SPACE
    assert classes[ord(",")] == classes[ord("，")] == classes[0x1F600] == classes[0x10FFFF] == CharClass.OTHER
    assert utf8.char_classes(RaggedArray(np.array([0x110000, 0xFFFFFFFF], np.uint32), np.array([0, 2])),
                             "cpu").to_pylist() == [[0, 0]]


def test_every_codepoint_matches_reference(backend):
    if backend.name == "cuda-emulated":
        cps = ALL_CODEPOINTS[::97]  # the emulator is slow; a stride still hits every range edge region
    else:
        cps = ALL_CODEPOINTS
    got = utf8.char_classes(RaggedArray(cps, np.array([0, cps.size])), backend).values
    got = got if isinstance(got, np.ndarray) else got.get()
    np.testing.assert_array_equal(got, reference.char_classify(cps))


def test_alpha_is_exactly_the_seed_word_class():
    """A codepoint c is ALPHA exactly when PieceTokenizer keeps "a" + c + "a" as one word."""
    piece_tokenizer = require("piece_tokenizer")
    pre = piece_tokenizer.PreTokenizer()
    classes = classes_of_every_codepoint("cpu")
    seed_word = np.zeros(0x110000, bool)
    for c in range(0x110000):
        if not 0xD800 <= c <= 0xDFFF:
            seed_word[c] = len(pre.tokenize("a" + chr(c) + "a")) == 1
    np.testing.assert_array_equal(classes == CharClass.ALPHA, seed_word)
