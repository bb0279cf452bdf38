"""Counting the word2vec vocabulary in one streaming pass: a hash table of byte strings in Numba.
No CUDA twin: counting is bound by reading and splitting the text, which happens on the host.

The table is open addressing with linear probing over 64-bit FNV-1a hashes of the token bytes;
keys are copied once into a growing byte arena, so the table costs a few dozen bytes per distinct
word and nothing per occurrence. Every occurrence is also written out as its entry number (the
"raw id"), so the corpus is encoded in the same pass and never read twice.

``max_vocab_size`` pruning follows gensim's ``_scan_vocab``: after each document, while more
entries are alive than allowed, those counted fewer than ``min_reduce`` times are dropped (their
count goes back to 0) and ``min_reduce`` grows by one. A dropped entry keeps its slot (earlier raw
ids point to it) and counts again from 0 when the word comes back, with a new insertion stamp, as
a re-inserted key of gensim's dict would.

>>> data = np.frombuffer(b"a b a  c\\tb a", np.uint8)
>>> starts, ends, doc_offsets = split_whitespace(data, np.array([0, 8, 12]))
>>> starts.tolist(), ends.tolist(), doc_offsets.tolist()
([0, 2, 4, 7, 9, 11], [1, 3, 5, 8, 10, 12], [0, 4, 6])
>>> state = new_state()
>>> raw = np.empty(6, np.int32)
>>> state = count_tokens(data, starts, ends, doc_offsets, 0, 0, raw, *state)
>>> raw.tolist(), state[3][:state[7]].tolist()
([0, 1, 0, 2, 1, 0], [3, 2, 1])
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .byte_tables import fnv1a, grown
from .jit import JIT

EMPTY = -1


@njit(inline="always", **JIT)
def _is_space(b):
    # ASCII whitespace, as bytes.split() and word2vec.c's reader (space, \t, \n, \v, \f, \r)
    return b == 32 or (b >= 9 and b <= 13)


@njit(**JIT)
def split_whitespace(data, offsets):
    """(starts, ends, doc_offsets) of the whitespace-separated tokens of every document.

    >>> s, e, d = split_whitespace(np.frombuffer(b" x  yz ", np.uint8), np.array([0, 7]))
    >>> s.tolist(), e.tolist(), d.tolist()
    ([1, 4], [2, 6], [0, 2])
    """
    n_docs = offsets.size - 1
    total = 0
    for d in range(n_docs):
        prev_space = True
        for i in range(offsets[d], offsets[d + 1]):
            space = _is_space(data[i])
            if prev_space and not space:
                total += 1
            prev_space = space
    starts = np.empty(total, np.int64)
    ends = np.empty(total, np.int64)
    doc_offsets = np.empty(n_docs + 1, np.int64)
    doc_offsets[0] = 0
    t = 0
    for d in range(n_docs):
        end = offsets[d + 1]
        i = offsets[d]
        while i < end:
            while i < end and _is_space(data[i]):
                i += 1
            if i == end:
                break
            starts[t] = i
            while i < end and not _is_space(data[i]):
                i += 1
            ends[t] = i
            t += 1
        doc_offsets[d + 1] = t
    return starts, ends, doc_offsets


def new_state(capacity: int = 1024):
    """An empty table: (table, arena, key_start, counts, stamps, hashes, key_len, n_entries,
    arena_used, live, min_reduce), the argument tail of :func:`count_tokens`.

    >>> new_state(4)[0].tolist()  # twice the capacity: at most half full
    [-1, -1, -1, -1, -1, -1, -1, -1]
    """
    table = np.full(2 * capacity, EMPTY, np.int64)
    return (table, np.empty(16 * capacity, np.uint8), np.empty(capacity, np.int64), np.zeros(capacity, np.int64),
            np.zeros(capacity, np.int64), np.zeros(capacity, np.uint64), np.zeros(capacity, np.int64), 0, 0, 0, 1)


@njit(**JIT)
def _rehash(hashes, n_entries, size):
    table = np.full(size, EMPTY, np.int64)
    mask = np.uint64(size - 1)
    for e in range(n_entries):
        slot = np.int64(hashes[e] & mask)
        while table[slot] != EMPTY:
            slot = (slot + 1) & (size - 1)
        table[slot] = e
    return table


@njit(**JIT)
def count_tokens(data, starts, ends, doc_offsets, position, max_vocab, raw_ids, table, arena, key_start, counts,
                 stamps, hashes, key_len, n_entries, arena_used, live, min_reduce):
    """Counts the tokens ``data[starts[t]:ends[t]]`` into the table, writing each one's entry
    number to ``raw_ids[t]``; ``position`` is the corpus position of the first token (insertion
    stamps), ``max_vocab`` 0 for no pruning. Returns the (possibly reallocated) state.
    """
    for d in range(doc_offsets.size - 1):
        for t in range(doc_offsets[d], doc_offsets[d + 1]):
            start, end = starts[t], ends[t]
            h = fnv1a(data, start, end)
            size = table.size
            slot = np.int64(h & np.uint64(size - 1))
            found = EMPTY
            while table[slot] != EMPTY:
                e = table[slot]
                if hashes[e] == h and key_len[e] == end - start:
                    same = True
                    base = key_start[e]
                    for k in range(end - start):
                        if arena[base + k] != data[start + k]:
                            same = False
                            break
                    if same:
                        found = e
                        break
                slot = (slot + 1) & (size - 1)
            if found == EMPTY:
                found = n_entries
                if found == counts.size:
                    capacity = 2 * counts.size
                    key_start, counts = grown(key_start, capacity), grown(counts, capacity)
                    stamps, hashes, key_len = grown(stamps, capacity), grown(hashes, capacity), grown(key_len, capacity)
                while arena_used + (end - start) > arena.size:
                    arena = grown(arena, 2 * arena.size)
                for k in range(end - start):  # not a slice assignment: that costs seconds to compile
                    arena[arena_used + k] = data[start + k]
                key_start[found], key_len[found], hashes[found] = arena_used, end - start, h
                arena_used += end - start
                table[slot] = found
                n_entries += 1
                if 2 * n_entries > table.size:
                    table = _rehash(hashes, n_entries, 2 * table.size)
            if counts[found] == 0:  # new, or back after pruning: inserted now, as in a dict
                live += 1
                stamps[found] = position + t
            counts[found] += 1
            raw_ids[t] = found
        if max_vocab > 0 and live > max_vocab:
            for e in range(n_entries):
                if counts[e] > 0 and counts[e] < min_reduce:
                    counts[e] = 0
                    live -= 1
            min_reduce += 1
    return table, arena, key_start, counts, stamps, hashes, key_len, n_entries, arena_used, live, min_reduce
