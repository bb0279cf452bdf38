"""Numba helpers of BytePiece training (the seed's BytePieceCounter). No CUDA family of its own:
``byte_viterbi_starts`` is the Numba twin of cuda/ngram_count.cu's kernel of that name (re-exported
by cpu_fallback/ngram_count.py, with the n-gram keys); the rest run on the host only.

``byte_viterbi_starts``: the 6-state byte Viterbi over each pre-token with the UTF-8 boundary
constraints, marking the byte where each piece starts; its table of n-grams is keyed
``n << 8n | the n bytes big-endian`` (lengths sort apart), one sorted table for all lengths.
``cxx_*``: the order libstdc++ gives equal counts (:mod:`gpu_text.tokenizer.cxx_order`).
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


# ------------------------------------------------------------------ libstdc++'s order of equal counts
# The seed sorts its final pieces by count alone with std::sort over an unordered_map's iteration
# order, so ties come out in an order set by GCC's libstdc++: std::hash<std::string> (64-bit
# MurmurHash2 with seed 0xc70f6907), nodes put at the front of their bucket, the prime rehash schedule,
# and introsort. These helpers reproduce that order (checked against a compiled probe in the tests).

_MUL = np.uint64(0xC6A4A7935BD1E995)


@njit(**JIT)
def _shift_mix(v):
    return v ^ (v >> np.uint64(47))


@njit(**JIT)
def cxx_string_hashes(data, offsets):
    """std::hash<std::string> of every string data[offsets[i]:offsets[i + 1]]."""
    out = np.empty(offsets.size - 1, np.uint64)
    for s in range(offsets.size - 1):
        lo, n = offsets[s], offsets[s + 1] - offsets[s]
        h = np.uint64(0xC70F6907) ^ (np.uint64(n) * _MUL)
        aligned = n & ~7
        for p in range(lo, lo + aligned, 8):
            word = np.uint64(0)
            for k in range(7, -1, -1):
                word = (word << np.uint64(8)) | np.uint64(data[p + k])
            h = (h ^ (_shift_mix(word * _MUL) * _MUL)) * _MUL
        if n & 7:
            word = np.uint64(0)
            for k in range(lo + n - 1, lo + aligned - 1, -1):
                word = (word << np.uint64(8)) | np.uint64(data[k])
            h = (h ^ word) * _MUL
        out[s] = _shift_mix(_shift_mix(h) * _MUL)
    return out


@njit(**JIT)
def cxx_iteration_order(hashes, schedule_sizes, schedule_buckets):
    """The order in which an unordered_map iterates keys inserted in the order given (by their hashes;
    no key twice): each insert first grows the table when the schedule says so (a rehash relinks the
    nodes in list order), then links the node at its bucket's front, or at the list's front for an
    empty bucket."""
    n = hashes.size
    nxt = np.full(n, -1, np.int64)
    head = -1
    before = -1  # a bucket holds the node before its first one; -1: the list head; EMPTY: none
    EMPTY = -2
    buckets = np.full(1, EMPTY, np.int64)
    nb = 1
    step = 0
    for i in range(n):
        if step < schedule_sizes.size and i == schedule_sizes[step]:
            nb = schedule_buckets[step]
            step += 1
            fresh = np.full(nb, EMPTY, np.int64)
            p = head
            head = -1
            first_bucket = 0
            while p != -1:
                following = nxt[p]
                b = np.int64(hashes[p] % np.uint64(nb))
                if fresh[b] == EMPTY:
                    nxt[p] = head
                    head = p
                    fresh[b] = before
                    if nxt[p] != -1:
                        fresh[first_bucket] = p
                    first_bucket = b
                elif fresh[b] == before:
                    nxt[p] = head
                    head = p
                else:
                    prev = fresh[b]
                    nxt[p] = nxt[prev]
                    nxt[prev] = p
                p = following
            buckets = fresh
        b = np.int64(hashes[i] % np.uint64(nb))
        prev = buckets[b]
        if prev != EMPTY:
            if prev == before:
                nxt[i] = head
                head = i
            else:
                nxt[i] = nxt[prev]
                nxt[prev] = i
        else:
            nxt[i] = head
            head = i
            if nxt[i] != -1:
                buckets[np.int64(hashes[nxt[i]] % np.uint64(nb))] = i
            buckets[b] = before
    order = np.empty(n, np.int64)
    p = head
    for k in range(n):
        order[k] = p
        p = nxt[p]
    return order


@njit(**JIT)
def _sift(keys, items, hole, length, value_key, value_item, base):
    # libstdc++'s __adjust_heap + __push_heap for "a before b when key(a) > key(b)"
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if keys[base + child] > keys[base + child - 1]:
            child -= 1
        keys[base + hole] = keys[base + child]
        items[base + hole] = items[base + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        keys[base + hole] = keys[base + child - 1]
        items[base + hole] = items[base + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and keys[base + parent] > value_key:
        keys[base + hole] = keys[base + parent]
        items[base + hole] = items[base + parent]
        hole = parent
        parent = (hole - 1) // 2
    keys[base + hole] = value_key
    items[base + hole] = value_item


@njit(**JIT)
def _heap_sort(keys, items, lo, hi):
    length = hi - lo
    if length > 1:
        parent = (length - 2) // 2
        while True:
            _sift(keys, items, parent, length, keys[lo + parent], items[lo + parent], lo)
            if parent == 0:
                break
            parent -= 1
    while hi - lo > 1:
        hi -= 1
        value_key, value_item = keys[hi], items[hi]
        keys[hi], items[hi] = keys[lo], items[lo]
        _sift(keys, items, 0, hi - lo, value_key, value_item, lo)


@njit(**JIT)
def _swap(keys, items, a, b):
    keys[a], keys[b] = keys[b], keys[a]
    items[a], items[b] = items[b], items[a]


@njit(**JIT)
def _linear_insert(keys, items, last):
    value_key, value_item = keys[last], items[last]
    before = last - 1
    while value_key > keys[before]:
        keys[last], items[last] = keys[before], items[before]
        last = before
        before -= 1
    keys[last], items[last] = value_key, value_item


@njit(**JIT)
def cxx_sort_by_count(counts):
    """The permutation std::sort(v, [](a, b) { return a.second > b.second; }) applies to v (introsort:
    median-of-three, unguarded partition, heap sort past 2 log2 n levels, insertion sort of 16)."""
    n = counts.size
    keys = counts.astype(np.int64).copy()
    items = np.arange(n).astype(np.int64)
    if n < 2:
        return items
    depth = 0  # floor(log2 n)
    while (1 << (depth + 1)) <= n:
        depth += 1
    # the parts left to sort, as the recursion would visit them; their depth limits fall from the
    # bottom of the stack to its top, so 2 log2 n + 2 entries suffice
    stack_lo = np.empty(2 * depth + 2, np.int64)
    stack_hi = np.empty(2 * depth + 2, np.int64)
    stack_limit = np.empty(2 * depth + 2, np.int64)
    stack_lo[0], stack_hi[0], stack_limit[0] = 0, n, 2 * depth
    top = 1
    while top > 0:
        top -= 1
        lo, hi, limit = stack_lo[top], stack_hi[top], stack_limit[top]
        while hi - lo > 16:
            if limit == 0:
                _heap_sort(keys, items, lo, hi)
                break
            limit -= 1
            a, b, c = lo + 1, lo + (hi - lo) // 2, hi - 1
            if keys[a] > keys[b]:
                if keys[b] > keys[c]:
                    _swap(keys, items, lo, b)
                elif keys[a] > keys[c]:
                    _swap(keys, items, lo, c)
                else:
                    _swap(keys, items, lo, a)
            elif keys[a] > keys[c]:
                _swap(keys, items, lo, a)
            elif keys[b] > keys[c]:
                _swap(keys, items, lo, c)
            else:
                _swap(keys, items, lo, b)
            first, last = lo + 1, hi
            while True:
                while keys[first] > keys[lo]:
                    first += 1
                last -= 1
                while keys[lo] > keys[last]:
                    last -= 1
                if not first < last:
                    break
                _swap(keys, items, first, last)
                first += 1
            # the parts are disjoint, so sorting the right one later gives what the recursion gives
            stack_lo[top], stack_hi[top], stack_limit[top] = first, hi, limit
            top += 1
            hi = first
    # final insertion sort
    edge = min(n, 16)
    for i in range(1, edge):
        if keys[i] > keys[0]:
            value_key, value_item = keys[i], items[i]
            for j in range(i, 0, -1):
                keys[j], items[j] = keys[j - 1], items[j - 1]
            keys[0], items[0] = value_key, value_item
        else:
            _linear_insert(keys, items, i)
    for i in range(edge, n):
        _linear_insert(keys, items, i)
    return items
