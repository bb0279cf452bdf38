"""Reference twins of ``cuda/utf8.cu``: plain Python, one byte at a time.

Well-formedness is decided by CPython's strict decoder on the candidate sequence, so this shares
no code or tables with the kernels.
"""
from __future__ import annotations

import numpy as np

REPLACEMENT = 0xFFFD
HAN = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x323AF)]
DIGIT = [(0x30, 0x39), (0xFF10, 0xFF19)]
WORD = [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x85F), (0x900, 0x1FFF),
        (0x2E80, 0x2FFF), (0x3040, 0x33FF), (0x4DC0, 0x4DFF), (0xA000, 0xD7FF), (0xFB00, 0xFDFF),
        (0xFE70, 0xFEFF), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0xFF66, 0xFFDC), (0x10000, 0x10FFF)]
WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
               (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]


def decode_string(raw: bytes) -> list[tuple[int, int]]:
    """(codepoint, byte offset) of every character of one string."""
    out = []
    i = 0
    while i < len(raw):
        for length in (1, 2, 3, 4):
            try:
                text = raw[i:i + length].decode("utf-8", "strict")
            except UnicodeDecodeError:
                continue
            if len(text) == 1 and i + length <= len(raw):
                out.append((ord(text), i))
                i += length
                break
        else:
            out.append((REPLACEMENT, i))
            i += 1
    return out


def _rows(data: np.ndarray, offsets: np.ndarray) -> list[bytes]:
    raw = bytes(data)
    return [raw[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)]


def utf8_string_stats(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    chars, errors = [], []
    for raw in _rows(data, offsets):
        decoded = decode_string(raw)
        chars.append(len(decoded))
        # a malformed sequence is a U+FFFD that the raw bytes do not spell as EF BF BD
        errors.append(sum(1 for cp, at in decoded if cp == REPLACEMENT and raw[at:at + 3] != b"\xef\xbf\xbd"))
    return np.array(chars, np.int64), np.array(errors, np.int64)


def utf8_decode(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    codepoints, positions, row_offsets = [], [], [0]
    for raw in _rows(data, offsets):
        for cp, at in decode_string(raw):
            codepoints.append(cp)
            positions.append(at)
        row_offsets.append(len(codepoints))
    position_type = np.int32 if len(data) < 2**31 else np.int64
    return np.array(codepoints, np.uint32), np.array(positions, position_type), np.array(row_offsets, np.int64)


def utf8_encode(codepoints: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out, row_offsets = bytearray(), [0]
    for k in range(len(offsets) - 1):
        for cp in codepoints[offsets[k]:offsets[k + 1]].tolist():
            if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
                cp = REPLACEMENT
            out += chr(cp).encode("utf-8")
        row_offsets.append(len(out))
    return np.frombuffer(bytes(out), np.uint8), np.array(row_offsets, np.int64)


def _within(c: int, ranges: list[tuple[int, int]]) -> bool:
    return any(lo <= c <= hi for lo, hi in ranges)


def char_class(c: int) -> int:
    if _within(c, HAN):
        return 4
    if _within(c, DIGIT):
        return 2
    if _within(c, WORD):
        return 3
    if _within(c, WHITE_SPACE):
        return 1
    return 0


def char_classify(codepoints: np.ndarray) -> np.ndarray:
    return np.array([char_class(c) for c in codepoints.tolist()], np.uint8)
