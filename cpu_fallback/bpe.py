"""Numba twin of ``cuda/bpe.cu``: BPE encoding by replaying merges in score order, parallel over
pre-tokens. O(n log n) per pre-token (a binary heap of candidate pairs, stale pairs skipped)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from cpu_fallback.utf8 import sequence_at
from gpu_text.trie.double_array import trie_step, trie_value

_JIT = dict(cache=True, nogil=True)


@njit(inline="always", **_JIT)
def _node_id(state, check, label, eow, node):
    """The piece id of a symbol from its trie node (-1: not a piece)."""
    return trie_value(state, check, label, eow, node) if node > 0 else -1


@njit(inline="always", **_JIT)
def _walk(state, check, label, node, data, begin, end):
    """The trie node reached from ``node`` over data[begin:end), or -1."""
    for i in range(begin, end):
        if node < 0:
            return -1
        node = trie_step(state, check, label, node, data[i])
    return node


@njit(inline="always", **_JIT)
def _before(sa, la, sb, lb):
    return sa > sb or (sa == sb and la < lb)


@njit(**_JIT)
def _push(heap, hs, count, s, left, size, node):
    """Heap rows are (left, size, node) in ``heap`` and the score in ``hs``."""
    i = count
    while i > 0:
        parent = (i - 1) // 2
        if not _before(s, left, hs[parent], heap[parent, 0]):
            break
        hs[i] = hs[parent]
        heap[i, 0], heap[i, 1], heap[i, 2] = heap[parent, 0], heap[parent, 1], heap[parent, 2]
        i = parent
    hs[i] = s
    heap[i, 0], heap[i, 1], heap[i, 2] = left, size, node
    return count + 1


@njit(**_JIT)
def _pop(heap, hs, count):
    left, size, node = heap[0, 0], heap[0, 1], heap[0, 2]
    count -= 1
    ls, ll, lz, ln = hs[count], heap[count, 0], heap[count, 1], heap[count, 2]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= count:
            break
        if child + 1 < count and _before(hs[child + 1], heap[child + 1, 0], hs[child], heap[child, 0]):
            child += 1
        if not _before(hs[child], heap[child, 0], ls, ll):
            break
        hs[i] = hs[child]
        heap[i, 0], heap[i, 1], heap[i, 2] = heap[child, 0], heap[child, 1], heap[child, 2]
        i = child
    hs[i] = ls
    heap[i, 0], heap[i, 1], heap[i, 2] = ll, lz, ln
    return left, size, node, count


@njit(**_JIT)
def _offer(state, check, label, eow, scores, data, begin, length, node, left, right, heap, hs, count):
    """Push (left, right) when their concatenation is a piece: walk on from left's trie node."""
    if left < 0 or right < 0 or node[left] < 0:
        return count
    pair_node = _walk(state, check, label, node[left], data, begin + right, begin + right + length[right])
    if pair_node <= 0:
        return count
    pid = trie_value(state, check, label, eow, pair_node)
    if pid < 0:
        return count
    return _push(heap, hs, count, scores[pid], left, length[left] + length[right], pair_node)


@njit(**_JIT)
def merge_symbols(data, begin, end, state, check, label, eow, scores, length, nxt, node, prev, heap, hs):
    """Merge the pre-token data[begin:end) into symbols: length[p] > 0 at each symbol start and
    node[p] its trie node (-1 when it is not a path of the trie). ``prev`` (n) and the heap rows
    ``heap`` (3n x 3) / ``hs`` (3n) are scratch: slices of batch-wide arrays, so that short
    pre-tokens cost no allocation."""
    n = end - begin
    p = 0
    last = -1
    while p < n:
        width, _ = sequence_at(data, begin + p, end)
        width = max(width, 1)
        length[p:p + width] = 0
        length[p] = width
        node[p] = _walk(state, check, label, 0, data, begin + p, begin + p + width)
        prev[p] = last
        nxt[p] = -1
        if last >= 0:
            nxt[last] = p
        last = p
        p += width
    count = 0
    p = 0
    while p < n and nxt[p] >= 0:
        count = _offer(state, check, label, eow, scores, data, begin, length, node, p, nxt[p], heap, hs, count)
        p = nxt[p]
    while count > 0:
        left, size, pair_node, count = _pop(heap, hs, count)
        right = nxt[left]
        if length[left] == 0 or right < 0 or length[left] + length[right] != size:
            continue  # stale: one side was merged away or grew since the pair was offered
        length[left] = size
        node[left] = pair_node
        length[right] = 0
        nxt[left] = nxt[right]
        if nxt[right] >= 0:
            prev[nxt[right]] = left
        count = _offer(state, check, label, eow, scores, data, begin, length, node, prev[left], left, heap, hs, count)
        count = _offer(state, check, label, eow, scores, data, begin, length, node, left, nxt[left], heap, hs, count)


@njit(parallel=True, **_JIT)
def _merge_all(data, token_starts, token_ends, state, check, label, eow, scores, byte_ids, length, nxt, node):
    """Merge every pre-token into the shared symbol arrays (indexed by byte position); count tokens."""
    counts = np.zeros(token_starts.size, np.int64)
    prev = np.empty(data.size, np.int32)
    heap = np.empty((3 * data.size, 3), np.int32)
    hs = np.empty(3 * data.size, np.float32)
    for t in prange(token_starts.size):
        begin, end = token_starts[t], token_ends[t]
        sym_len, sym_next, sym_node = length[begin:end], nxt[begin:end], node[begin:end]
        merge_symbols(data, begin, end, state, check, label, eow, scores, sym_len, sym_next, sym_node,
                      prev[begin:end], heap[3 * begin:3 * end], hs[3 * begin:3 * end])
        tokens = 0
        prev_unk = False
        p = 0
        while p < end - begin:
            known = _node_id(state, check, label, eow, sym_node[p]) >= 0
            if known:
                tokens += 1
            elif byte_ids[0] >= 0:
                tokens += sym_len[p]  # byte fallback: one <0xXX> per byte
            elif not prev_unk:
                tokens += 1  # a run of unknown symbols is one unknown token, as in SentencePiece
            prev_unk = not known and byte_ids[0] < 0
            p = sym_next[p] if sym_next[p] >= 0 else end - begin
        counts[t] = tokens
    return counts


@njit(parallel=True, **_JIT)
def _emit_all(data, token_starts, token_ends, sources, state, check, label, eow, byte_ids, unk_id, length, nxt, node,
              offsets, ids, starts, ends):
    """Write every pre-token's ids and spans; pre-token t reads the symbols merged for the equal
    pre-token starting at ``sources[t]`` (itself, or the first copy of the same bytes)."""
    for t in prange(token_starts.size):
        begin, end = token_starts[t], token_ends[t]
        shift = sources[t] - begin
        out = offsets[t]
        prev_unk = False
        p = 0
        while p < end - begin:
            at = begin + p
            size = length[at + shift]
            pid = _node_id(state, check, label, eow, node[at + shift])
            unk = pid < 0 and byte_ids[0] < 0
            if unk and prev_unk:
                ends[out - 1] = at + size
            elif pid >= 0 or byte_ids[0] < 0:
                ids[out] = pid if pid >= 0 else unk_id
                starts[out] = at
                ends[out] = at + size
                out += 1
            else:
                for k in range(size):
                    ids[out] = byte_ids[data[at + k]]
                    starts[out] = at + k
                    ends[out] = at + k + 1
                    out += 1
            prev_unk = unk
            p = nxt[at + shift] if nxt[at + shift] >= 0 else end - begin


@njit(parallel=True, **_JIT)
def _span_hashes(data, starts, ends):
    """64-bit FNV-1a hash of every pre-token's bytes."""
    hashes = np.empty(starts.size, np.uint64)
    for t in prange(starts.size):
        h = np.uint64(0xCBF29CE484222325)
        for i in range(starts[t], ends[t]):
            h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
        hashes[t] = h
    return hashes


@njit(inline="always", **_JIT)
def _same_bytes(data, starts, ends, a, b):
    n = ends[a] - starts[a]
    if n != ends[b] - starts[b]:
        return False
    for i in range(n):
        if data[starts[a] + i] != data[starts[b] + i]:
            return False
    return True


@njit(**_JIT)
def _first_copies(data, starts, ends, hashes):
    """For every pre-token, the first pre-token with the same bytes (itself when it is the first):
    an open-addressing table keyed by the hash; equal hashes are confirmed byte by byte, so a
    hash collision only costs a separate encoding."""
    n = starts.size
    size = 1
    while size < 2 * n:
        size *= 2
    mask = np.uint64(size - 1)
    table = np.full(size, -1, np.int64)
    first = np.arange(n)
    for t in range(n):
        slot = np.int64(hashes[t] & mask)
        while True:
            leader = table[slot]
            if leader < 0:
                table[slot] = t
                break
            if hashes[leader] == hashes[t] and _same_bytes(data, starts, ends, leader, t):
                first[t] = leader
                break
            slot = (slot + 1) & (size - 1)
    return first


def bpe_encode(data, token_starts, token_ends, state, check, label, eow, scores, byte_ids, unk_id):
    """Ids (int32) of every pre-token, each id's byte span in ``data``, and per-pre-token offsets.

    Natural text repeats its words: each distinct pre-token is merged once and its result copied
    to the other occurrences (the CUDA twin merges every occurrence; the ids are the same).
    """
    hashes = _span_hashes(data, token_starts, token_ends)
    first = _first_copies(data, token_starts, token_ends, hashes)
    distinct = np.flatnonzero(first == np.arange(first.size))
    length = np.empty(data.size, np.int32)
    nxt = np.empty(data.size, np.int32)
    node = np.empty(data.size, np.int32)
    distinct_counts = _merge_all(data, token_starts[distinct], token_ends[distinct], state, check, label, eow, scores,
                                 byte_ids, length, nxt, node)
    counts = np.empty(token_starts.size, np.int64)
    counts[distinct] = distinct_counts
    counts = counts[first]
    offsets = np.zeros(token_starts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    ids, starts, ends = np.empty(total, np.int32), np.empty(total, np.int64), np.empty(total, np.int64)
    _emit_all(data, token_starts, token_ends, token_starts[first], state, check, label, eow, byte_ids,
              np.int32(unk_id), length, nxt, node, offsets, ids, starts, ends)
    return ids, starts, ends, offsets
