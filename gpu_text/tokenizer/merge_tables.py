"""Tables that let the BPE encoders merge by symbol ids instead of walking the trie byte by byte.

Encoding starts from characters (a well-formed UTF-8 sequence, or one byte of a malformed one)
and only ever joins two adjacent symbols whose concatenation is a mergeable piece, so every
symbol is either such a piece or a single character. Each gets an id: its piece id, or, for a
character that is no piece but occurs inside one, an id past the last piece. The tables:

- ``chars``: a character (its bytes packed big-endian into a uint64) → its id;
- ``merges``: a pair of ids (left << 32 | right) → the id of the piece they join into;
- ``bmp_ids``: a plain array, the id of every codepoint below U+10000 (-1 if none): most text needs
  no hashing to find its characters' ids (:func:`char_id_at`);
- ``joins``: the pairs of character ids that sit next to each other inside some piece. BPE never
  merges across a boundary between characters whose pair is not in it, so the text on either side
  is encoded independently: the CPU encoder cuts long pre-tokens (a Chinese line is one) into short
  parts there, which repeat, and encodes each distinct part once; the GPU's block per long
  pre-token merges all its parts at once, each part taking its own best pair.

A hash table is a pair of arrays (keys uint64, values int32) with open addressing; ``EMPTY`` marks a
free slot.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from cpu_fallback.utf8 import sequence_at
from gpu_text.trie.double_array import trie_step, trie_value

_JIT = dict(cache=True, nogil=True)
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # no key is this: 0xFF never starts a character of 4 bytes, ids are < 2**31


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
def char_id_at(data, i, end, bmp_ids, char_keys, char_ids):
    """(width, hash key, id or -1) of the character at data[i]: its codepoint and ``bmp_ids`` for a
    well-formed character below U+10000, else its packed bytes and the ``chars`` table (packed keys
    of non-ASCII bytes are >= 2**31, so the two kinds of key never collide)."""
    first = data[i]
    if first < 0x80:
        return 1, np.uint64(first), bmp_ids[first]
    width, cp = sequence_at(data, i, end)
    if width > 0 and cp < 0x10000:
        return width, np.uint64(cp), bmp_ids[cp]
    width, key = char_at(data, i, end)
    return width, key, lookup(char_keys, char_ids, key)


@njit(inline="always", **_JIT)
def pair_key(left, right):
    return (np.uint64(left) << np.uint64(32)) | np.uint64(right)


@njit(inline="always", **_JIT)
def _slot(keys, key):
    # SplitMix64's finalizer: packed characters are byte-aligned, so a plain multiply would leave
    # whole bytes of the key out of the slot
    x = (key ^ (key >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.int64((x ^ (x >> np.uint64(31))) & np.uint64(keys.size - 1))


@njit(inline="always", **_JIT)
def lookup(keys, values, key):
    """The value stored under ``key``, or -1."""
    slot = _slot(keys, key)
    while True:
        found = keys[slot]
        if found == key:
            return values[slot]
        if found == EMPTY:
            return -1
        slot = (slot + 1) & (keys.size - 1)


@njit(inline="always", **_JIT)
def store(keys, values, key, value):
    """Put ``value`` under ``key`` (the caller keeps the table at most half full)."""
    slot = _slot(keys, key)
    while keys[slot] != EMPTY and keys[slot] != key:
        slot = (slot + 1) & (keys.size - 1)
    keys[slot], values[slot] = key, value


@njit(**_JIT)
def remove(keys, values, key):
    """Delete ``key`` if present, shifting later entries of its probe run back into the gap (no
    tombstones, so lookups stay as short as in a table that never had it)."""
    mask = keys.size - 1
    i = _slot(keys, key)
    while keys[i] != key:
        if keys[i] == EMPTY:
            return
        i = (i + 1) & mask
    j = i
    while True:
        j = (j + 1) & mask
        if keys[j] == EMPTY:
            break
        home = _slot(keys, keys[j])
        # the entry at j may fill the gap at i unless its home lies cyclically in (i, j]
        if (i < j and (home <= i or home > j)) or (j < i and home <= i and home > j):
            keys[i], values[i] = keys[j], values[j]
            i = j
    keys[i] = EMPTY


@njit(**_JIT)
def empty_table(capacity):
    """An empty table for ``capacity`` entries (a power of two of at least twice that many slots)."""
    size = 2
    while size < 2 * capacity:
        size *= 2
    return np.full(size, EMPTY, np.uint64), np.full(size, -1, np.int32)


@njit(**_JIT)
def grown_table(keys, values, capacity):
    """The entries of a table in an empty one for ``capacity`` entries."""
    new_keys, new_values = empty_table(capacity)
    for i in range(keys.size):
        if keys[i] != EMPTY:
            store(new_keys, new_values, keys[i], values[i])
    return new_keys, new_values


@njit(**_JIT)
def _table(keys, values):
    table_keys, table_values = empty_table(keys.size)
    for k in range(keys.size):
        store(table_keys, table_values, keys[k], values[k])
    return table_keys, table_values


@njit(**_JIT)
def _piece_chars(data, offsets):
    """Every character of every piece (packed), in order; and each piece's first character and
    whether it is the whole piece."""
    keys = np.empty(data.size, np.uint64)
    firsts = np.empty(offsets.size - 1, np.uint64)
    single = np.zeros(offsets.size - 1, np.bool_)
    n = 0
    for p in range(offsets.size - 1):
        i = offsets[p]
        while i < offsets[p + 1]:
            width, keys[n] = char_at(data, i, offsets[p + 1])
            if i == offsets[p]:
                firsts[p] = keys[n]
                single[p] = i + width == offsets[p + 1]
            n += 1
            i += width
    return keys[:n], firsts, single


@njit(**_JIT)
def _symbol_id(chars, state, check, label, eow, data, begin, end):
    """The id of data[begin:end) as a symbol: a character's id, a piece's id, or -1."""
    width, key = char_at(data, begin, end)
    if begin + width == end:
        return lookup(chars[0], chars[1], key)
    node = 0
    for i in range(begin, end):
        node = trie_step(state, check, label, node, data[i])
        if node < 0:
            return -1
    return trie_value(state, check, label, eow, node)


@njit(**_JIT)
def _pairs(data, offsets, ids, chars, state, check, label, eow):
    merge_keys, merge_ids = np.empty(data.size, np.uint64), np.empty(data.size, np.int32)
    join_keys = np.empty(data.size, np.uint64)
    n_merges = n_joins = 0
    for p in range(offsets.size - 1):
        begin, end = offsets[p], offsets[p + 1]
        width, key = char_at(data, begin, end)
        left_char = lookup(chars[0], chars[1], key)
        split = begin + width
        while split < end:
            width, key = char_at(data, split, end)
            right_char = lookup(chars[0], chars[1], key)
            join_keys[n_joins] = pair_key(left_char, right_char)
            n_joins += 1
            left = _symbol_id(chars, state, check, label, eow, data, begin, split)
            right = _symbol_id(chars, state, check, label, eow, data, split, end)
            if left >= 0 and right >= 0:
                merge_keys[n_merges], merge_ids[n_merges] = pair_key(left, right), ids[p]
                n_merges += 1
            left_char = right_char
            split += width
    joins = np.unique(join_keys[:n_joins])
    return _table(merge_keys[:n_merges], merge_ids[:n_merges]), _table(joins, np.zeros(joins.size, np.int32))


def _bmp_ids(keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The ids of the well-formed characters below U+10000 among packed ``keys``, by codepoint."""
    table = np.full(0x10000, -1, np.int32)
    for key, char_id in zip(keys.tolist(), ids.tolist()):
        raw = key.to_bytes(4, "big").rstrip(b"\0") or b"\0"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a malformed byte: found through the chars table
        if len(text) == 1 and ord(text) < 0x10000:
            table[ord(text)] = char_id
    return table


class MergeTables(NamedTuple):
    """The tables (seven arrays) of a piece set; see the module's docstring."""

    char_keys: np.ndarray
    char_ids: np.ndarray
    merge_keys: np.ndarray
    merge_ids: np.ndarray
    join_keys: np.ndarray
    join_values: np.ndarray
    bmp_ids: np.ndarray

    @classmethod
    def build(cls, pieces: list[bytes], ids: np.ndarray, n_pieces: int, trie_arrays: tuple) -> "MergeTables":
        """Tables of the mergeable ``pieces`` (ids ``ids``, ``n_pieces`` pieces in the model) and their trie.

        >>> from gpu_text.trie import DoubleArrayTrie
        >>> words = ["a".encode(), "ab".encode()]
        >>> t = MergeTables.build(words, np.array([1, 2]), 3, DoubleArrayTrie.build(words, [1, 2]).arrays("cpu"))
        >>> b = int(lookup(t.char_keys, t.char_ids, np.uint64(ord("b") << 24)))  # "b" is no piece: an id past them
        >>> b, int(lookup(t.merge_keys, t.merge_ids, pair_key(1, b)))
        (3, 2)
        """
        offsets = np.zeros(len(pieces) + 1, np.int64)
        np.cumsum([len(p) for p in pieces], out=offsets[1:])
        data = np.frombuffer(b"".join(pieces), np.uint8)
        ids = np.asarray(ids, np.int32)
        keys, firsts, single = _piece_chars(data, offsets)
        single_keys, single_ids = firsts[single], ids[single]
        # each distinct character gets its piece's id, or the next id past the pieces (first seen, first numbered)
        unique, first = np.unique(keys, return_index=True)
        unique = unique[np.argsort(first)]
        char_ids = np.full(unique.size, -1, np.int32)
        order = np.argsort(single_keys)
        at = np.searchsorted(single_keys[order], unique)
        found = at < single_keys.size
        found[found] = single_keys[order][at[found]] == unique[found]
        char_ids[found] = single_ids[order][at[found]]
        char_ids[~found] = n_pieces + np.arange(int((~found).sum()), dtype=np.int32)
        chars = _table(unique, char_ids)
        merges, joins = _pairs(data, offsets, ids, chars, *trie_arrays)
        return cls(*chars, *merges, *joins, _bmp_ids(unique, char_ids))
