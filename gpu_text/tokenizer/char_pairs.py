"""The set of character pairs that sit next to each other inside some piece.

BPE only ever merges adjacent symbols into a piece, so a boundary between two characters whose
pair occurs in no piece is never merged across: the text on either side of it is encoded
independently. The CPU encoder uses this to cut long pre-tokens (a Chinese line is one pre-token)
into short parts that repeat, and encodes each distinct part once.

Characters are what the encoder starts from: a well-formed UTF-8 sequence, or one byte of a
malformed one. A character is packed into the low 32 bits of a uint64 (its bytes, big-endian,
zero-filled), a pair into all 64; the set is an open-addressing hash table of packed pairs.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from cpu_fallback.utf8 import sequence_at

_JIT = dict(cache=True, nogil=True)
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # no pair packs to this: 0xFF is never the first byte of a 4-byte character


@njit(inline="always", **_JIT)
def char_at(data, i, end):
    """(width, packed bytes) of the character at data[i] (a malformed byte is a character of its own)."""
    first = np.uint64(data[i])
    if first < 0x80:
        return 1, first << np.uint64(24)
    width, _ = sequence_at(data, i, end)
    key = first << np.uint64(24)
    for k in range(1, width):
        key |= np.uint64(data[i + k]) << np.uint64(24 - 8 * k)
    return max(width, 1), key


@njit(inline="always", **_JIT)
def mix64(x):
    """SplitMix64's finalizer: every input bit reaches the low bits (packed characters are
    byte-aligned, so a plain multiply would leave whole bytes of the key out of the slot)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(inline="always", **_JIT)
def _slot(table, key):
    return np.int64(mix64(key) & np.uint64(table.size - 1))


@njit(inline="always", **_JIT)
def has_char_pair(table, left, right):
    """Whether characters ``left`` and ``right`` (packed) are adjacent inside some piece."""
    key = (left << np.uint64(32)) | right
    slot = _slot(table, key)
    while True:
        found = table[slot]
        if found == key:
            return True
        if found == EMPTY:
            return False
        slot = (slot + 1) & (table.size - 1)


@njit(**_JIT)
def _pairs(data, offsets):
    keys = np.empty(data.size, np.uint64)
    n = 0
    for p in range(offsets.size - 1):
        i, end = offsets[p], offsets[p + 1]
        if i == end:
            continue
        width, prev = char_at(data, i, end)
        i += width
        while i < end:
            width, key = char_at(data, i, end)
            keys[n] = (prev << np.uint64(32)) | key
            n += 1
            prev = key
            i += width
    return keys[:n]


@njit(**_JIT)
def _table(keys):
    size = 2
    while size < 2 * keys.size:
        size *= 2
    table = np.full(size, EMPTY, np.uint64)
    for key in keys:
        slot = _slot(table, key)
        while table[slot] != EMPTY and table[slot] != key:
            slot = (slot + 1) & (size - 1)
        table[slot] = key
    return table


def char_pair_set(pieces: list[bytes]) -> np.ndarray:
    """The hash table of every character pair adjacent inside one of ``pieces``.

    >>> table = char_pair_set(["ab".encode(), "你好".encode()])
    >>> pack = lambda s: char_at(np.frombuffer(s.encode(), np.uint8), 0, len(s.encode()))[1]
    >>> bool(has_char_pair(table, pack("a"), pack("b"))), bool(has_char_pair(table, pack("b"), pack("a")))
    (True, False)
    >>> bool(has_char_pair(table, pack("你"), pack("好")))
    True
    """
    offsets = np.zeros(len(pieces) + 1, np.int64)
    np.cumsum([len(p) for p in pieces], out=offsets[1:])
    data = np.frombuffer(b"".join(pieces), np.uint8)
    return _table(np.unique(_pairs(data, offsets)))
