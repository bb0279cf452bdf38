"""Numba helpers of BytePiece training (the seed's BytePieceCounter). No CUDA twin yet.

``ngram_keys``: the packed keys of every 1- to 6-byte n-gram inside the pre-tokens, for counting
by sort (``np.unique``). ``byte_viterbi_starts``: the 6-state byte Viterbi over each pre-token
with the UTF-8 boundary constraints, marking the byte where each piece starts. A key is
``n << 8n | the n bytes big-endian`` (lengths sort apart), one sorted table for all lengths.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jit import JIT

STATES = 6


@njit(**JIT)
def _lead_length(byte):
    # the seed's OneUTF8Size: by the high nibble of the lead byte
    if byte < 0xC0:
        return 1
    if byte < 0xE0:
        return 2
    if byte < 0xF0:
        return 3
    return 4


@njit(parallel=True, **JIT)
def ngram_keys(data, starts, ends, n):
    """Keys of every n-gram (n bytes) that lies inside one pre-token, in data order."""
    counts = np.zeros(starts.size + 1, np.int64)
    for s in range(starts.size):
        counts[s + 1] = counts[s] + max(ends[s] - starts[s] - n + 1, 0)
    keys = np.empty(counts[-1], np.uint64)
    for s in prange(starts.size):
        out = counts[s]
        for i in range(starts[s], ends[s] - n + 1):
            key = np.uint64(n)
            for k in range(n):
                key = (key << np.uint64(8)) | np.uint64(data[i + k])
            keys[out] = key
            out += 1
    return keys


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(**JIT)
def _slot(key, bits):
    return (key * _GOLDEN) >> np.uint64(64 - bits)


@njit(**JIT)
def build_table(keys, values):
    """An open-addressing hash table of the n-gram keys (0 marks a free slot: no key is 0)."""
    bits = 4
    while (1 << bits) < 2 * keys.size + 2:
        bits += 1
    size = 1 << bits
    table_keys = np.zeros(size, np.uint64)
    table_values = np.zeros(size, np.float64)
    mask = np.uint64(size - 1)
    for k in range(keys.size):
        at = _slot(keys[k], bits)
        while table_keys[at] != 0 and table_keys[at] != keys[k]:
            at = (at + np.uint64(1)) & mask
        table_keys[at] = keys[k]
        table_values[at] = values[k]
    return table_keys, table_values, bits


@njit(**JIT)
def _lookup(table_keys, table_values, bits, key):
    mask = np.uint64(table_keys.size - 1)
    at = _slot(key, bits)
    while table_keys[at] != 0:
        if table_keys[at] == key:
            return table_values[at]
        at = (at + np.uint64(1)) & mask
    return -np.inf


@njit(**JIT)
def _solve(data, begin, num, table_keys, table_values, bits, piece_start):
    pos = np.zeros(num, np.int64)
    i = 0
    while i < num:
        n = _lead_length(data[begin + i])
        for j in range(n):
            if i + j < num:
                pos[i + j] = j
        i += n
    nodes = np.full((num, STATES), -np.inf)
    for i in range(num):
        gram = np.uint64(0)  # the bytes of the n-gram ending at i, grown backwards one byte per state
        for j in range(min(STATES, i + 1)):
            gram |= np.uint64(data[begin + i - j]) << np.uint64(8 * j)
            if j == 0 and pos[i] > 0:
                continue
            nodes[i, j] = _lookup(table_keys, table_values, bits, (np.uint64(j + 1) << np.uint64(8 * (j + 1))) | gram)
    routes = np.zeros((max(num - 1, 0), STATES), np.int8)
    for i in range(1, num):
        for cur in range(STATES):
            if cur < pos[i]:
                continue
            best = -np.inf
            best_prev = -1
            for prev in range(STATES):
                if prev < pos[i - 1]:
                    continue
                sliding = prev == STATES - 1 and cur == STATES - 1
                if not (cur == 0 or cur == prev + 1 or sliding):
                    continue
                start = i - cur
                if not sliding and start > 0 and pos[start] > 0:
                    continue
                score = nodes[i - 1, prev] + nodes[i, cur]
                if score > best:
                    best = score
                    best_prev = prev
            if best_prev != -1:
                routes[i - 1, cur] = best_prev
                nodes[i, cur] = best
            else:
                nodes[i, cur] = -np.inf
    state = 0
    best = -np.inf
    for j in range(STATES):
        if j >= pos[num - 1] and nodes[num - 1, j] > best:
            best = nodes[num - 1, j]
            state = j
    piece_start[begin] = 1
    for p in range(num - 1, -1, -1):
        if p > 0 and state == 0 and pos[p] == 0:
            piece_start[begin + p] = 1
        if p > 0:
            state = routes[p - 1, state]


@njit(parallel=True, **JIT)
def byte_viterbi_starts(data, starts, ends, keys, values):
    """1 at every byte where a piece of the best path starts (each pre-token's first byte too)."""
    table_keys, table_values, bits = build_table(keys, values)
    piece_start = np.zeros(data.size, np.uint8)
    for s in prange(starts.size):
        if ends[s] > starts[s]:
            _solve(data, starts[s], ends[s] - starts[s], table_keys, table_values, bits, piece_start)
    return piece_start


# character flags of the pre-splitter (gpu_text.tokenizer.bytepiece_split)
SPACE, WORD, HAN, PUNCT = 1, 2, 4, 8


@njit(**JIT)
def _split_row(flags, lo, hi, cut, out_starts, out_ends, n_out, write):
    """The seed's SplitText over the characters [lo, hi) of one row; returns the new token count."""

    def emit(a, b, n):
        if write:
            out_starts[n] = a
            out_ends[n] = b
        return n + 1

    i = lo
    if cut == 1:
        while i < hi:
            f = flags[i]
            if f & SPACE or f & PUNCT:
                n_out = emit(i, i + 1, n_out)
                i += 1
                continue
            j = i + 1
            while j < hi and not (flags[j] & SPACE or flags[j] & PUNCT):
                j += 1
            n_out = emit(i, j, n_out)
            i = j
        return n_out
    pending = -1
    while i < hi:
        f = flags[i]
        if f & SPACE:
            if pending >= 0:
                n_out = emit(pending, pending + 1, n_out)
            pending = i
            i += 1
            continue
        if f & WORD:
            han = f & HAN
            start = i
            if pending >= 0:
                if han:
                    n_out = emit(pending, pending + 1, n_out)
                else:
                    start = pending
                pending = -1
            j = i
            while j < hi and flags[j] & WORD and not flags[j] & SPACE and (flags[j] & HAN) == han:
                j += 1
            n_out = emit(start, j, n_out)
            i = j
            continue
        if pending < 0 and i + 1 < hi and flags[i + 1] & WORD and not flags[i + 1] & SPACE \
                and not flags[i + 1] & HAN:
            j = i + 1
            while j < hi and flags[j] & WORD and not flags[j] & SPACE and not flags[j] & HAN:
                j += 1
            n_out = emit(i, j, n_out)
            i = j
            continue
        start = pending if pending >= 0 else i
        pending = -1
        j = i
        while j < hi and not flags[j] & SPACE and not flags[j] & WORD:
            j += 1
        n_out = emit(start, j, n_out)
        i = j
    if pending >= 0:
        n_out = emit(pending, pending + 1, n_out)
    return n_out


@njit(parallel=True, **JIT)
def split_rows(flags, row_offsets, cut):
    """Pre-tokens of every row as character ranges (starts, ends) and each row's token offsets."""
    rows = row_offsets.size - 1
    counts = np.zeros(rows + 1, np.int64)
    none = np.zeros(0, np.int64)
    for r in prange(rows):
        counts[r + 1] = _split_row(flags, row_offsets[r], row_offsets[r + 1], cut, none, none, 0, False)
    offsets = np.cumsum(counts)
    starts = np.empty(offsets[-1], np.int64)
    ends = np.empty(offsets[-1], np.int64)
    for r in prange(rows):
        _split_row(flags, row_offsets[r], row_offsets[r + 1], cut, starts, ends, offsets[r], True)
    return starts, ends, offsets
