"""Numba twins of ``cuda/utf8.cu``: the same UTF-8 rules, parallel over strings.

The rule (Ustr's): a well-formed sequence decodes to its codepoint; anything else
(bad lead byte, bad or missing continuation, overlong, surrogate, above U+10FFFF) decodes to
U+FFFD and consumes exactly one byte. Sequences never cross a string boundary.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jit import JIT, inline

REPLACEMENT = 0xFFFD

# Character classes; keep in sync with GT_CLASS_* in cuda/utf8.cuh and gpu_text.utf8.CharClass.
CLASS_OTHER, CLASS_SPACE, CLASS_DIGIT, CLASS_ALPHA, CLASS_HAN = 0, 1, 2, 3, 4


@inline
def sequence_at(data, i, end):
    """(length, codepoint) of the well-formed sequence at data[i], or (0, U+FFFD)."""
    b0 = np.uint32(data[i])
    if b0 < 0x80:
        return 1, b0
    lo, hi = 0x80, 0xBF
    if 0xC2 <= b0 <= 0xDF:
        n = 2
    elif 0xE0 <= b0 <= 0xEF:
        n = 3
        if b0 == 0xE0:
            lo = 0xA0
        elif b0 == 0xED:
            hi = 0x9F
    elif 0xF0 <= b0 <= 0xF4:
        n = 4
        if b0 == 0xF0:
            lo = 0x90
        elif b0 == 0xF4:
            hi = 0x8F
    else:
        return 0, np.uint32(REPLACEMENT)
    if end - i < n:
        return 0, np.uint32(REPLACEMENT)
    b1 = np.uint32(data[i + 1])
    if b1 < lo or b1 > hi:
        return 0, np.uint32(REPLACEMENT)
    value = b1 & 0x3F
    for k in range(2, n):
        b = np.uint32(data[i + k])
        if (b & 0xC0) != 0x80:
            return 0, np.uint32(REPLACEMENT)
        value = (value << 6) | (b & 0x3F)
    if n == 2:
        lead = b0 & 0x1F
    elif n == 3:
        lead = b0 & 0x0F
    else:
        lead = b0 & 0x07
    return n, np.uint32((lead << (6 * (n - 1))) | value)


@inline
def starts_char(data, i, begin, end):
    """Does byte i of the string [begin, end) start a character? (utf8_starts_char in utf8.cuh)"""
    if (data[i] & 0xC0) != 0x80:
        return True
    stop = max(i - 3, begin)
    for p in range(i - 1, stop - 1, -1):
        if (data[p] & 0xC0) != 0x80:
            n, _ = sequence_at(data, p, end)
            return p + n <= i
    return True


@njit(parallel=True, **JIT)
def utf8_string_stats(data, offsets):
    """Per string: number of characters and of malformed sequences."""
    n_strings = offsets.size - 1
    chars = np.zeros(n_strings, np.int64)
    errors = np.zeros(n_strings, np.int64)
    for s in prange(n_strings):
        i, end = offsets[s], offsets[s + 1]
        c = 0
        e = 0
        while i < end:
            if data[i] < 0x80:
                i += 1
            else:
                n, _ = sequence_at(data, i, end)
                if n == 0:
                    e += 1
                    n = 1
                i += n
            c += 1
        chars[s] = c
        errors[s] = e
    return chars, errors


@njit(parallel=True, **JIT)
def _decode_into(data, offsets, row_offsets, codepoints, positions):
    for s in prange(offsets.size - 1):
        begin, end = offsets[s], offsets[s + 1]
        i = begin
        out = row_offsets[s]
        while i < end:
            b = data[i]
            if b < 0x80:
                codepoints[out] = b
                n = 1
            else:
                n, cp = sequence_at(data, i, end)
                codepoints[out] = cp
                if n == 0:
                    n = 1
            positions[out] = i - begin
            out += 1
            i += n


def utf8_decode(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codepoints (uint32), their byte offsets within their string (int32 below 2 GiB of data,
    else int64, as the CUDA kernels), and row offsets (int64)."""
    chars, _ = utf8_string_stats(data, offsets)
    row_offsets = np.zeros(chars.size + 1, np.int64)
    np.cumsum(chars, out=row_offsets[1:])
    codepoints = np.empty(row_offsets[-1], np.uint32)
    positions = np.empty(row_offsets[-1], np.int32 if data.size < 2**31 else np.int64)
    _decode_into(data, offsets, row_offsets, codepoints, positions)
    return codepoints, positions, row_offsets


@inline
def encoded_length(cp):
    if cp < 0x80:
        return 1
    if cp < 0x800:
        return 2
    if cp < 0x10000 or cp > 0x10FFFF:
        return 3
    return 4


@njit(parallel=True, **JIT)
def _encoded_row_lengths(codepoints, offsets):
    n_rows = offsets.size - 1
    lengths = np.zeros(n_rows, np.int64)
    for r in prange(n_rows):
        total = 0
        for k in range(offsets[r], offsets[r + 1]):
            total += encoded_length(codepoints[k])
        lengths[r] = total
    return lengths


@njit(parallel=True, **JIT)
def _encode_into(codepoints, offsets, row_offsets, out):
    for r in prange(offsets.size - 1):
        j = row_offsets[r]
        for k in range(offsets[r], offsets[r + 1]):
            cp = codepoints[k]
            if (0xD800 <= cp <= 0xDFFF) or cp > 0x10FFFF:
                cp = REPLACEMENT
            if cp < 0x80:
                out[j] = cp
                j += 1
            elif cp < 0x800:
                out[j] = 0xC0 | (cp >> 6)
                out[j + 1] = 0x80 | (cp & 0x3F)
                j += 2
            elif cp < 0x10000:
                out[j] = 0xE0 | (cp >> 12)
                out[j + 1] = 0x80 | ((cp >> 6) & 0x3F)
                out[j + 2] = 0x80 | (cp & 0x3F)
                j += 3
            else:
                out[j] = 0xF0 | (cp >> 18)
                out[j + 1] = 0x80 | ((cp >> 12) & 0x3F)
                out[j + 2] = 0x80 | ((cp >> 6) & 0x3F)
                out[j + 3] = 0x80 | (cp & 0x3F)
                j += 4


def utf8_encode(codepoints: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of ragged codepoints (invalid ones as U+FFFD) and each row's byte offsets."""
    lengths = _encoded_row_lengths(codepoints, offsets)
    row_offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=row_offsets[1:])
    out = np.empty(row_offsets[-1], np.uint8)
    _encode_into(codepoints, offsets, row_offsets, out)
    return out, row_offsets


@inline
def class_of(c):
    if (0x3400 <= c <= 0x4DBF) or (0x4E00 <= c <= 0x9FFF) or (0xF900 <= c <= 0xFAFF) or (0x20000 <= c <= 0x323AF):
        return CLASS_HAN
    if (0x30 <= c <= 0x39) or (0xFF10 <= c <= 0xFF19):
        return CLASS_DIGIT
    if c < 0x80:
        if (0x41 <= c <= 0x5A) or (0x61 <= c <= 0x7A):
            return CLASS_ALPHA
    elif ((0xC0 <= c <= 0xD6) or (0xD8 <= c <= 0xF6) or (0xF8 <= c <= 0x85F) or (0x900 <= c <= 0x1FFF)
          or (0x2E80 <= c <= 0x2FFF) or (0x3040 <= c <= 0x33FF) or (0x4DC0 <= c <= 0x4DFF)
          or (0xA000 <= c <= 0xD7FF) or (0xFB00 <= c <= 0xFDFF) or (0xFE70 <= c <= 0xFEFF)
          or (0xFF21 <= c <= 0xFF3A) or (0xFF41 <= c <= 0xFF5A) or (0xFF66 <= c <= 0xFFDC)
          or (0x10000 <= c <= 0x10FFF)):
        return CLASS_ALPHA
    if ((0x09 <= c <= 0x0D) or c == 0x20 or c == 0x85 or c == 0xA0 or c == 0x1680 or (0x2000 <= c <= 0x200A)
            or c == 0x2028 or c == 0x2029 or c == 0x202F or c == 0x205F or c == 0x3000):
        return CLASS_SPACE
    return CLASS_OTHER


@njit(parallel=True, **JIT)
def char_classify(codepoints):
    """The character class of every codepoint (uint8)."""
    out = np.empty(codepoints.size, np.uint8)
    for i in prange(codepoints.size):
        out[i] = class_of(codepoints[i])
    return out
