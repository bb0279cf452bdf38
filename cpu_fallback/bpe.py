"""Numba twin of ``cuda/bpe.cu``: BPE encoding by replaying merges in score order, parallel over
pre-tokens. O(n log n) per pre-token (a binary heap of candidate pairs, stale pairs skipped)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from cpu_fallback.utf8 import sequence_at
from gpu_text.trie.double_array import trie_step, trie_value

_JIT = dict(cache=True, nogil=True)


@njit(inline="always", **_JIT)
def _piece_id(state, check, label, eow, data, begin, end):
    pos = 0
    for i in range(begin, end):
        pos = trie_step(state, check, label, pos, data[i])
        if pos < 0:
            return -1
    return trie_value(state, check, label, eow, pos) if pos > 0 else -1


@njit(inline="always", **_JIT)
def _before(sa, la, sb, lb):
    return sa > sb or (sa == sb and la < lb)


@njit(**_JIT)
def _push(hs, hl, hz, count, s, left, size):
    i = count
    while i > 0:
        parent = (i - 1) // 2
        if not _before(s, left, hs[parent], hl[parent]):
            break
        hs[i], hl[i], hz[i] = hs[parent], hl[parent], hz[parent]
        i = parent
    hs[i], hl[i], hz[i] = s, left, size
    return count + 1


@njit(**_JIT)
def _pop(hs, hl, hz, count):
    s, left, size = hs[0], hl[0], hz[0]
    count -= 1
    ls, ll, lz = hs[count], hl[count], hz[count]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= count:
            break
        if child + 1 < count and _before(hs[child + 1], hl[child + 1], hs[child], hl[child]):
            child += 1
        if not _before(hs[child], hl[child], ls, ll):
            break
        hs[i], hl[i], hz[i] = hs[child], hl[child], hz[child]
        i = child
    hs[i], hl[i], hz[i] = ls, ll, lz
    return s, left, size, count


@njit(**_JIT)
def _offer(state, check, label, eow, scores, data, begin, length, left, right, hs, hl, hz, count):
    if left < 0 or right < 0:
        return count
    total = length[left] + length[right]
    pid = _piece_id(state, check, label, eow, data, begin + left, begin + left + total)
    if pid < 0:
        return count
    return _push(hs, hl, hz, count, scores[pid], left, total)


@njit(**_JIT)
def merge_symbols(data, begin, end, state, check, label, eow, scores, length, nxt):
    """Merge the pre-token data[begin:end) into symbols: length[p] > 0 at each symbol start."""
    n = end - begin
    prev = np.empty(n, np.int32)
    p = 0
    last = -1
    while p < n:
        width, _ = sequence_at(data, begin + p, end)
        width = max(width, 1)
        length[p:p + width] = 0
        length[p] = width
        prev[p] = last
        nxt[p] = -1
        if last >= 0:
            nxt[last] = p
        last = p
        p += width
    hs = np.empty(3 * n, np.float32)
    hl = np.empty(3 * n, np.int32)
    hz = np.empty(3 * n, np.int32)
    count = 0
    p = 0
    while p < n and nxt[p] >= 0:
        count = _offer(state, check, label, eow, scores, data, begin, length, p, nxt[p], hs, hl, hz, count)
        p = nxt[p]
    while count > 0:
        _, left, size, count = _pop(hs, hl, hz, count)
        right = nxt[left]
        if length[left] == 0 or right < 0 or length[left] + length[right] != size:
            continue  # stale: one side was merged away or grew since the pair was offered
        length[left] = size
        length[right] = 0
        nxt[left] = nxt[right]
        if nxt[right] >= 0:
            prev[nxt[right]] = left
        count = _offer(state, check, label, eow, scores, data, begin, length, prev[left], left, hs, hl, hz, count)
        count = _offer(state, check, label, eow, scores, data, begin, length, left, nxt[left], hs, hl, hz, count)


@njit(parallel=True, **_JIT)
def _merge_all(data, token_starts, token_ends, state, check, label, eow, scores, byte_ids, length, nxt):
    """Merge every pre-token into the shared symbol arrays (indexed by byte position); count tokens."""
    counts = np.zeros(token_starts.size, np.int64)
    for t in prange(token_starts.size):
        begin, end = token_starts[t], token_ends[t]
        sym_len, sym_next = length[begin:end], nxt[begin:end]
        merge_symbols(data, begin, end, state, check, label, eow, scores, sym_len, sym_next)
        tokens = 0
        prev_unk = False
        p = 0
        while p < end - begin:
            at = begin + p
            known = _piece_id(state, check, label, eow, data, at, at + sym_len[p]) >= 0
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
def _emit_all(data, token_starts, token_ends, state, check, label, eow, byte_ids, unk_id, length, nxt, offsets, ids,
              starts, ends):
    for t in prange(token_starts.size):
        begin, end = token_starts[t], token_ends[t]
        out = offsets[t]
        prev_unk = False
        p = 0
        while p < end - begin:
            at = begin + p
            size = length[at]
            pid = _piece_id(state, check, label, eow, data, at, at + size)
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
            p = nxt[at] if nxt[at] >= 0 else end - begin


def bpe_encode(data, token_starts, token_ends, state, check, label, eow, scores, byte_ids, unk_id):
    """Ids (int32) of every pre-token, each id's byte span in ``data``, and per-pre-token offsets."""
    length = np.empty(data.size, np.int32)
    nxt = np.empty(data.size, np.int32)
    counts = _merge_all(data, token_starts, token_ends, state, check, label, eow, scores, byte_ids, length, nxt)
    offsets = np.zeros(token_starts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    ids, starts, ends = np.empty(total, np.int32), np.empty(total, np.int64), np.empty(total, np.int64)
    _emit_all(data, token_starts, token_ends, state, check, label, eow, byte_ids, np.int32(unk_id), length, nxt,
              offsets, ids, starts, ends)
    return ids, starts, ends, offsets
