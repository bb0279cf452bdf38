"""Numba twin of ``cuda/bpe.cu``: BPE encoding by replaying merges in score order, parallel over
pre-tokens. O(n log n) per pre-token (a binary heap of candidate pairs, stale pairs skipped)."""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from cpu_fallback.utf8 import sequence_at
from gpu_text.tokenizer.char_pairs import char_at, has_char_pair
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


SHORT = 64  # parts of at most this many bytes are merged by scanning for the best pair (no heap)


@njit(inline="always", **_JIT)
def _pair(state, check, label, eow, scores, data, sym_start, sym_node, k):
    """(trie node, score) of symbols k and k + 1 joined, or (-1, 0) when that is not a piece."""
    if sym_node[k] < 0:
        return -1, np.float32(0)
    node = _walk(state, check, label, sym_node[k], data, sym_start[k + 1], sym_start[k + 2])
    if node <= 0:
        return -1, np.float32(0)
    piece = trie_value(state, check, label, eow, node)
    if piece < 0:
        return -1, np.float32(0)
    return node, scores[piece]


@njit(**_JIT)
def merge_short(data, begin, end, state, check, label, eow, scores, length, pid, sym_start, sym_node, pair_node,
                pair_score):
    """:func:`merge_symbols` for a short part: scan all pairs for the best one at every step (few
    symbols: cheaper than a heap), then write ``length`` and ``pid`` at the symbol starts. The
    four scratch arrays hold SHORT + 1 entries."""
    n = 0
    p = begin
    while p < end:
        width, _ = sequence_at(data, p, end)
        width = max(width, 1)
        sym_start[n] = p
        sym_node[n] = _walk(state, check, label, 0, data, p, p + width)
        n += 1
        p += width
    sym_start[n] = end
    for k in range(n - 1):
        pair_node[k], pair_score[k] = _pair(state, check, label, eow, scores, data, sym_start, sym_node, k)
    while True:
        best = -1
        for k in range(n - 1):
            if pair_node[k] >= 0 and (best < 0 or pair_score[k] > pair_score[best]):  # ties: the leftmost
                best = k
        if best < 0:
            break
        sym_node[best] = pair_node[best]
        n -= 1
        for k in range(best + 1, n):
            sym_start[k], sym_node[k] = sym_start[k + 1], sym_node[k + 1]
            pair_node[k], pair_score[k] = pair_node[k + 1], pair_score[k + 1]
        sym_start[n] = end
        if best > 0:
            pair_node[best - 1], pair_score[best - 1] = _pair(state, check, label, eow, scores, data, sym_start,
                                                              sym_node, best - 1)
        if best < n - 1:
            pair_node[best], pair_score[best] = _pair(state, check, label, eow, scores, data, sym_start, sym_node,
                                                      best)
    for k in range(n):
        at = sym_start[k]
        length[at] = sym_start[k + 1] - at
        for q in range(at + 1, sym_start[k + 1]):
            length[q] = 0
        pid[at] = _node_id(state, check, label, eow, sym_node[k])


@njit(**_JIT)
def merge_long(data, begin, end, state, check, label, eow, scores, length, pid, nxt, node, prev, heap, hs):
    """:func:`merge_symbols`, then ``pid`` at the symbol starts (scratch sized for ``end - begin``)."""
    merge_symbols(data, begin, end, state, check, label, eow, scores, length[begin:end], nxt, node, prev, heap, hs)
    p = 0
    while p < end - begin:
        pid[begin + p] = _node_id(state, check, label, eow, node[p])
        p = nxt[p] if nxt[p] >= 0 else end - begin


@njit(inline="always", **_JIT)
def _same(data, a, b, n):
    for k in range(n):
        if data[a + k] != data[b + k]:
            return False
    return True


_MIX = np.uint64(0x9E3779B97F4A7C15)
_BASIS = np.uint64(0xCBF29CE484222325)


@njit(**_JIT)
def _encode_chunk(data, token_starts, token_ends, first, last, state, check, label, eow, scores, pairs, length, pid):
    """Merge the pre-tokens first..last-1: each is cut where no piece spans two characters, and each
    part is merged once per chunk (later copies are copied from the first, found by hash + bytes).
    Fills ``length`` (bytes of the symbol starting at each position; 0 inside a symbol) and ``pid``
    (its piece id, -1 when it is not a piece) at the symbol starts."""
    longest = 1
    chunk_bytes = 0
    for t in range(first, last):
        longest = max(longest, token_ends[t] - token_starts[t])
        chunk_bytes += token_ends[t] - token_starts[t]
    sym_start, sym_node = np.empty(SHORT + 1, np.int64), np.empty(SHORT + 1, np.int32)
    pair_node, pair_score = np.empty(SHORT + 1, np.int32), np.empty(SHORT + 1, np.float32)
    long_size = longest if longest > SHORT else 1
    nxt, node, prev = np.empty(long_size, np.int32), np.empty(long_size, np.int32), np.empty(long_size, np.int32)
    heap, hs = np.empty((3 * long_size, 3), np.int32), np.empty(3 * long_size, np.float32)
    bits = 4
    while (1 << bits) < min(2 * chunk_bytes, 1 << 16):
        bits += 1
    size = 1 << bits
    # a row per slot: the part's hash, then its position << 16 | its length (0: empty); only parts
    # shorter than 2**16 bytes are remembered, and only while the table is at most half full
    memo = np.zeros((size, 2), np.int64)
    filled = 0
    for t in range(first, last):
        begin, end = token_starts[t], token_ends[t]
        part = begin
        i = begin
        h = _BASIS
        if i < end:
            width, key = char_at(data, i, end)
        while i < end:
            h = (h ^ key) * np.uint64(0x100000001B3)
            after = i + width
            if after < end:
                next_width, next_key = char_at(data, after, end)
                joined = has_char_pair(pairs, key, next_key)
            else:
                joined = False
            if not joined:  # data[part:after) is merged on its own
                n = after - part
                if part == i:  # one character: nothing to merge
                    length[part] = n
                    for q in range(part + 1, after):
                        length[q] = 0
                    pid[part] = _node_id(state, check, label, eow, _walk(state, check, label, 0, data, part, after))
                else:
                    slot = np.int64((h * _MIX) >> np.uint64(64 - bits))
                    hit = False
                    while memo[slot, 1] != 0:
                        at, size_of = memo[slot, 1] >> 16, memo[slot, 1] & 0xFFFF
                        if memo[slot, 0] == np.int64(h) and size_of == n and _same(data, at, part, n):
                            for q in range(n):
                                length[part + q] = length[at + q]
                                pid[part + q] = pid[at + q]
                            hit = True
                            break
                        slot = (slot + 1) & (size - 1)
                    if not hit:
                        if n <= SHORT:
                            merge_short(data, part, after, state, check, label, eow, scores, length, pid, sym_start,
                                        sym_node, pair_node, pair_score)
                        else:
                            merge_long(data, part, after, state, check, label, eow, scores, length, pid, nxt, node,
                                       prev, heap, hs)
                        if 2 * filled < size and n < (1 << 16):
                            memo[slot, 0], memo[slot, 1] = np.int64(h), (part << 16) | n
                            filled += 1
                part = after
                h = _BASIS
            if after < end:
                width, key = next_width, next_key
            i = after


@njit(inline="always", **_JIT)
def _outputs(length, pid, byte_fallback, begin, end):
    """How many ids pre-token data[begin:end) gives (byte fallback, or runs of unknown symbols as one)."""
    tokens = 0
    prev_unk = False
    p = begin
    while p < end:
        known = pid[p] >= 0
        if known:
            tokens += 1
        elif byte_fallback:
            tokens += length[p]  # one <0xXX> per byte
        elif not prev_unk:
            tokens += 1  # a run of unknown symbols is one unknown token, as in SentencePiece
        prev_unk = not known and not byte_fallback
        p += length[p]
    return tokens


@njit(parallel=True, **_JIT)
def _encode_chunks(data, token_starts, token_ends, chunk_bounds, state, check, label, eow, scores, pairs, byte_ids,
                   length, pid):
    counts = np.empty(token_starts.size, np.int64)
    for c in prange(chunk_bounds.size - 1):
        first, last = chunk_bounds[c], chunk_bounds[c + 1]
        _encode_chunk(data, token_starts, token_ends, first, last, state, check, label, eow, scores, pairs, length,
                      pid)
        for t in range(first, last):
            counts[t] = _outputs(length, pid, byte_ids[0] >= 0, token_starts[t], token_ends[t])
    return counts


@njit(parallel=True, **_JIT)
def _emit_all(data, token_starts, token_ends, byte_ids, unk_id, length, pid, offsets, ids, starts, ends):
    """Write every pre-token's ids and their byte spans."""
    for t in prange(token_starts.size):
        out = offsets[t]
        prev_unk = False
        at = token_starts[t]
        while at < token_ends[t]:
            size = length[at]
            unk = pid[at] < 0 and byte_ids[0] < 0
            if unk and prev_unk:
                ends[out - 1] = at + size
            elif pid[at] >= 0 or byte_ids[0] < 0:
                ids[out] = pid[at] if pid[at] >= 0 else unk_id
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
            at += size


def _chunk_bounds(token_starts: np.ndarray, token_ends: np.ndarray) -> np.ndarray:
    """Pre-token index bounds of chunks of about equal bytes: two per thread, at least 256 KiB each
    (a chunk encodes each distinct part once, so fewer, larger chunks merge less)."""
    n = token_starts.size
    sizes = np.cumsum(token_ends - token_starts)
    total = int(sizes[-1]) if n else 0
    count = max(1, min(n, 2 * numba.get_num_threads(), total >> 18))
    inner = np.searchsorted(sizes, np.arange(1, count) * (total / count))
    return np.unique(np.concatenate(([0], inner, [n]))).astype(np.int64)


def bpe_encode(data, token_starts, token_ends, state, check, label, eow, scores, byte_ids, unk_id, pairs):
    """Ids (int32) of every pre-token, each id's byte span in ``data``, and per-pre-token offsets.

    ``pairs``: :func:`gpu_text.tokenizer.char_pairs.char_pair_set` of the mergeable pieces. Natural
    text repeats itself: pre-tokens are cut where no piece spans the cut, and each distinct part is
    merged once per chunk and copied to its other occurrences (the CUDA twin merges every
    pre-token whole; the ids are the same).
    """
    length = np.empty(data.size, np.int32)
    pid = np.empty(data.size, np.int32)
    counts = _encode_chunks(data, token_starts, token_ends, _chunk_bounds(token_starts, token_ends), state, check,
                            label, eow, scores, pairs, byte_ids, length, pid)
    offsets = np.zeros(token_starts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    ids, starts, ends = np.empty(total, np.int32), np.empty(total, np.int64), np.empty(total, np.int64)
    _emit_all(data, token_starts, token_ends, byte_ids, np.int32(unk_id), length, pid, offsets, ids, starts, ends)
    return ids, starts, ends, offsets
