"""The BPE merge tables' hashing in Numba: packed characters, pair keys, and the open-addressing
hash tables (lookup, store, remove, grow) that the encoder and the trainer share, plus the table
builders. No CUDA kernel twin: ``cuda/merge_tables.cuh`` holds the device lookups (same SplitMix64
slots). What the tables hold is described in :mod:`gpu_text.tokenizer.merge_tables`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .double_array import trie_step, trie_value
from .jit import JIT, inline
from .utf8 import sequence_at

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # no key is this: 0xFF never starts a character of 4 bytes, ids are < 2**31


@inline
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


@inline
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


@inline
def pair_key(left, right):
    # callers pass int64 ids: each other argument type would compile this (and its callers' use) again
    return (np.uint64(left) << np.uint64(32)) | np.uint64(right)


@inline
def _slot(keys, key):
    # SplitMix64's finalizer: packed characters are byte-aligned, so a plain multiply would leave
    # whole bytes of the key out of the slot
    x = (key ^ (key >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.int64((x ^ (x >> np.uint64(31))) & np.uint64(keys.size - 1))


@inline
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


@inline
def store(keys, values, key, value):
    """Put ``value`` under ``key`` (the caller keeps the table at most half full)."""
    slot = _slot(keys, key)
    while keys[slot] != EMPTY and keys[slot] != key:
        slot = (slot + 1) & (keys.size - 1)
    keys[slot], values[slot] = key, value


@njit(**JIT)
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


@njit(**JIT)
def empty_table(capacity):
    """An empty table for ``capacity`` entries (a power of two of at least twice that many slots)."""
    size = 2
    while size < 2 * capacity:
        size *= 2
    return np.full(size, EMPTY, np.uint64), np.full(size, -1, np.int32)


@njit(**JIT)
def grown_table(keys, values, capacity):
    """The entries of a table in an empty one for ``capacity`` entries."""
    new_keys, new_values = empty_table(capacity)
    for i in range(keys.size):
        if keys[i] != EMPTY:
            store(new_keys, new_values, keys[i], values[i])
    return new_keys, new_values


@njit(**JIT)
def table_of(keys, values):
    table_keys, table_values = empty_table(keys.size)
    for k in range(keys.size):
        store(table_keys, table_values, keys[k], values[k])
    return table_keys, table_values


@njit(**JIT)
def piece_chars(data, offsets):
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


@njit(**JIT)
def suffix_ids(data, offsets, ids):
    """For every byte ``i`` of every piece, the id of the piece that is ``data[i:end)`` (the piece's
    suffix from ``i``), or -1. Found in a trie of the reversed pieces kept in a hash table
    (``node << 8 | byte`` -> child), so each piece is walked once from its end: linear in the total
    piece length, where walking every suffix forward in the trie would be quadratic in a piece's."""
    edge_keys, edge_values = empty_table(data.size + 1)
    node_ids = np.full(data.size + 1, -1, np.int32)
    n_nodes = np.int64(1)  # typed, not a literal: a literal argument compiles the callee once more for it
    for p in range(offsets.size - 1):
        node = 0
        for i in range(offsets[p + 1] - 1, offsets[p] - 1, -1):
            key = (np.uint64(node) << np.uint64(8)) | np.uint64(data[i])
            child = lookup(edge_keys, edge_values, key)
            if child < 0:
                child = n_nodes
                n_nodes += 1
                store(edge_keys, edge_values, key, np.int32(child))  # int32 as table_of stores: one compile
            node = child
        node_ids[node] = ids[p]
    found = np.full(data.size, -1, np.int32)
    for p in range(offsets.size - 1):
        node = 0
        for i in range(offsets[p + 1] - 1, offsets[p] - 1, -1):
            node = lookup(edge_keys, edge_values, (np.uint64(node) << np.uint64(8)) | np.uint64(data[i]))
            found[i] = node_ids[node]
    return found


def pair_tables(data, offsets, ids, chars, state, check, label, eow):
    """The merges and joins tables of the pieces ``data[offsets[p]:offsets[p + 1])`` (ids ``ids``,
    the words of the trie ``state, check, label, eow``): every split of a piece into two symbols
    that are both pieces (or single characters) is a merge. The left part grows by one character
    per split, so its trie node is stepped on, not walked again; the right parts come from
    :func:`suffix_ids`. Linear in the total piece length."""
    merge_keys, merge_ids, join_keys = _pair_keys(data, offsets, ids, chars[0], chars[1], state, check, label, eow)
    joins = np.unique(join_keys)  # in NumPy: Numba's np.unique compiles for over a second
    return table_of(merge_keys, merge_ids), table_of(joins, np.zeros(joins.size, np.int32))


@njit(**JIT)
def _pair_keys(data, offsets, ids, char_keys, char_ids, state, check, label, eow):
    """The keys and ids of :func:`pair_tables`' merges, and its joins' keys (with repeats)."""
    merge_keys, merge_ids = np.empty(data.size, np.uint64), np.empty(data.size, np.int32)
    join_keys = np.empty(data.size, np.uint64)
    suffix = suffix_ids(data, offsets, ids)
    n_merges = n_joins = 0
    for p in range(offsets.size - 1):
        begin, end = offsets[p], offsets[p + 1]
        width, key = char_at(data, begin, end)
        left_char = lookup(char_keys, char_ids, key)
        split = first = begin + width
        node = np.int64(0)  # the trie node of data[begin:split), -1 once no word starts so
        for i in range(begin, split):
            node = trie_step(state, check, label, node, data[i]) if node >= 0 else -1
        while split < end:
            width, key = char_at(data, split, end)
            right_char = lookup(char_keys, char_ids, key)
            join_keys[n_joins] = pair_key(np.int64(left_char), np.int64(right_char))
            n_joins += 1
            if split == first:
                left = left_char  # a single character: its id, piece or not
            else:
                left = trie_value(state, check, label, eow, node) if node >= 0 else -1
            right = right_char if split + width == end else suffix[split]
            if left >= 0 and right >= 0:
                merge_keys[n_merges], merge_ids[n_merges] = pair_key(np.int64(left), np.int64(right)), ids[p]
                n_merges += 1
            for i in range(split, split + width):
                node = trie_step(state, check, label, node, data[i]) if node >= 0 else -1
            left_char = right_char
            split += width
    return merge_keys[:n_merges], merge_ids[:n_merges], join_keys[:n_joins]
