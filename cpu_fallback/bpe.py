"""Numba twin of ``cuda/bpe.cu``: BPE encoding by replaying merges in score order.

Where the GPU gives every short pre-token a thread (and a long one a block), the CPU first cuts
each pre-token between characters that no piece joins (:mod:`gpu_text.tokenizer.merge_tables`):
the parts are independent and short (most are one or two characters), and natural text repeats
them, so each chunk of pre-tokens merges every distinct part once and copies the result to its
repeats. Symbols are piece ids (characters that are no piece have ids past the pieces), so a
candidate pair is one hash lookup; the lookups that cut a pre-token into parts (the ``joins``
table) also say which piece each two neighbouring characters make, so a part of two characters
needs no other lookup and a longer one starts merging from them. Short parts find the best pair
by a scan; long ones (a line of ``aaaa…``) merge in rounds, as the GPU's block does, and finish
with a binary heap with stale entries skipped: O(n log n) at worst.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .borrow import borrow
from .chunks import chunk_bounds
from .jit import JIT, NOREF, inline
from .merge_tables import char_id_at, lookup, pair_key

SHORT = 64  # parts of at most this many bytes are merged by scanning for the best pair (no heap)
_BASIS, _PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)  # FNV-1a over packed characters
_MIX = np.uint64(0x9E3779B97F4A7C15)


@inline
def _merged(merge_keys, merge_ids, left, right):
    """The piece symbols ``left`` and ``right`` join into, or -1."""
    if left < 0 or right < 0:
        return -1
    return lookup(merge_keys, merge_ids, pair_key(np.int64(left), np.int64(right)))


@inline
def _split_chars(data, begin, end, char_keys, char_ids, bmp_ids, sym_start, sym_id):
    """One symbol per character of data[begin:end); returns their number (sym_start[n] = end)."""
    n = 0
    p = begin
    while p < end:
        width, _, sym_id[n] = char_id_at(data, p, end, bmp_ids, char_keys, char_ids)
        sym_start[n] = p
        n += 1
        p += width
    sym_start[n] = end
    return n


@inline
def _one_symbol(length, pid, begin, end, symbol, n_pieces):
    """data[begin:end) is one symbol, ``symbol`` (a piece id, or the id of a character that is none;
    an int64 at every call: an int32 one compiled this helper a second time)."""
    length[begin] = end - begin
    for q in range(begin + 1, end):
        length[q] = 0
    pid[begin] = symbol if symbol < n_pieces else -1


@inline
def _write(length, pid, n_pieces, sym_start, sym_id, n):
    """``length`` and ``pid`` (-1 for a character that is no piece) at each symbol start."""
    for k in range(n):
        _one_symbol(length, pid, sym_start[k], sym_start[k + 1], np.int64(sym_id[k]), n_pieces)


@njit(**NOREF)
def merge_short(end, n, scores, merge_keys, merge_ids, length, pid, sym_start, sym_id, pair_id, pair_score):
    """Merge the ``n`` characters of a part ending at ``end`` by scanning every pair for the best at
    each step (few symbols: cheaper than a heap). The scan that cut the part left each character's
    start and id in ``sym_start``/``sym_id`` and, in ``pair_id``, the piece each two neighbours
    make (from the joins table, so no pair is looked up twice). The four scratch arrays hold
    SHORT + 1 entries (arrays are passed one by one: a tuple of arrays costs reference counting at
    every call)."""
    for k in range(n - 1):
        pair_score[k] = scores[pair_id[k]] if pair_id[k] >= 0 else 0
    sym_start[n] = end
    while True:
        best = -1
        for k in range(n - 1):
            if pair_id[k] >= 0 and (best < 0 or pair_score[k] > pair_score[best]):  # ties: the leftmost
                best = k
        if best < 0:
            break
        sym_id[best] = pair_id[best]
        n -= 1
        for k in range(best + 1, n):
            sym_start[k], sym_id[k] = sym_start[k + 1], sym_id[k + 1]
            pair_id[k], pair_score[k] = pair_id[k + 1], pair_score[k + 1]
        sym_start[n] = end
        for k in (best - 1, best):
            if 0 <= k < n - 1:
                pair_id[k] = _merged(merge_keys, merge_ids, sym_id[k], sym_id[k + 1])
                pair_score[k] = scores[pair_id[k]] if pair_id[k] >= 0 else 0
    _write(length, pid, scores.size, sym_start, sym_id, n)


@inline
def _pop(heap, hs, count):
    """The top row of the heap and the new count. Heap rows are (left symbol index, bytes of the
    pair, merged id) in ``heap``, scores in ``hs``; a row is before another with a higher score,
    or the same score and a lower left index (the helpers are written out: each small function
    is one more compile)."""
    left, size, merged = heap[0, 0], heap[0, 1], heap[0, 2]
    count -= 1
    last = count  # its row moves down from the top
    i = 0
    while True:
        child = 2 * i + 1
        if child >= count:
            break
        other = child + 1
        if other < count and (hs[other] > hs[child] or (hs[other] == hs[child] and heap[other, 0] < heap[child, 0])):
            child = other
        if not (hs[child] > hs[last] or (hs[child] == hs[last] and heap[child, 0] < heap[last, 0])):
            break
        hs[i], heap[i, 0], heap[i, 1], heap[i, 2] = hs[child], heap[child, 0], heap[child, 1], heap[child, 2]
        i = child
    hs[i], heap[i, 0], heap[i, 1], heap[i, 2] = hs[last], heap[last, 0], heap[last, 1], heap[last, 2]
    return left, size, merged, count


@inline
def _offer(scores, merge_keys, merge_ids, sym_start, sym_id, nxt, n, left, heap, hs, count):
    """Push the pair (left, its next symbol) onto the heap (see :func:`_pop`) when there is one and
    they join into a piece; returns the new count."""
    if left < 0 or nxt[left] >= n:
        return count
    right = nxt[left]
    merged = _merged(merge_keys, merge_ids, sym_id[left], sym_id[right])
    if merged < 0:
        return count
    score = scores[merged]
    i = count
    while i > 0:  # sift up (the order of _pop)
        parent = (i - 1) // 2
        if not (score > hs[parent] or (score == hs[parent] and left < heap[parent, 0])):
            break
        hs[i], heap[i, 0], heap[i, 1], heap[i, 2] = hs[parent], heap[parent, 0], heap[parent, 1], heap[parent, 2]
        i = parent
    hs[i], heap[i, 0], heap[i, 1], heap[i, 2] = score, left, sym_start[nxt[right]] - sym_start[left], merged
    return count + 1


@njit(**JIT)
def _merge_rounds(scores, merge_keys, merge_ids, sym_start, sym_id, n):
    """Merge the n symbols in rounds (the CUDA block's algorithm in ``cuda/bpe.cu``); returns how
    many are left. A round pops, left to right, the 1st, 3rd, 5th... pair of every chain of pairs
    with the best score, up to the first merge that creates a pair scoring as high (that one pops
    next in the sequential order). Stops early when a round pops under 1/64 of the symbols (scores
    that make merged pieces outrank their parts), leaving the rest to the heap: the sequential order
    from any intermediate state is the same, so the result is too."""
    merged, chosen = np.empty(n, np.int32), np.zeros(n, np.bool_)
    while n > 1:
        best, found = np.float32(0), False
        for k in range(n - 1):
            merged[k] = _merged(merge_keys, merge_ids, sym_id[k], sym_id[k + 1])
            if merged[k] >= 0 and (not found or scores[merged[k]] > best):
                best, found = scores[merged[k]], True
        if not found:
            break
        cut, run = n, 0
        for k in range(n - 1):
            top = merged[k] >= 0 and scores[merged[k]] == best
            chosen[k] = top and run % 2 == 0
            run = run + 1 if top else 0
            if not chosen[k]:
                continue
            # int32 like merged[k]: an int64 left compiled _merged a second time
            left = merged[k - 2] if k >= 2 and chosen[k - 2] else (sym_id[k - 1] if k >= 1 else np.int32(-1))
            j = _merged(merge_keys, merge_ids, left, merged[k])
            j2 = _merged(merge_keys, merge_ids, merged[k], sym_id[k + 2]) if k + 2 < n else -1
            if (j >= 0 and scores[j] >= best) or (j2 >= 0 and scores[j2] >= best):
                cut = k
                break
        live = k = 0
        while k < n:  # packed in place (live <= k)
            pop = k < n - 1 and k <= cut and chosen[k]
            sym_start[live], sym_id[live] = sym_start[k], merged[k] if pop else sym_id[k]
            live += 1
            k += 2 if pop else 1
        sym_start[live] = sym_start[n]
        popped = n - live
        n = live
        if 64 * popped < n:
            break
    return n


@njit(**JIT)
def merge_long(data, begin, end, scores, char_keys, char_ids, bmp_ids, merge_keys, merge_ids, length, pid):
    """Merge data[begin:end): in rounds while they pop many pairs at once (``aaaa…``), then with a
    heap of candidate pairs; a popped pair is stale (skipped) when either side was merged away or
    grew since it was offered."""
    size = end - begin + 1
    sym_start, sym_id = np.empty(size, np.int64), np.empty(size, np.int32)
    nxt, prev = np.empty(size, np.int64), np.empty(size, np.int64)
    heap, hs = np.empty((3 * size, 3), np.int64), np.empty(3 * size, np.float32)
    n = _split_chars(data, begin, end, char_keys, char_ids, bmp_ids, sym_start, sym_id)
    n = _merge_rounds(scores, merge_keys, merge_ids, sym_start, sym_id, n)
    for k in range(n):  # symbol n is a sentinel: sym_start[n] is the end
        prev[k] = k - 1
        nxt[k] = k + 1
    count = np.int64(0)  # typed, not a literal: a literal argument compiles the callees once more for it
    for k in range(n - 1):
        count = _offer(scores, merge_keys, merge_ids, sym_start, sym_id, nxt, n, k, heap, hs, count)
    alive = np.ones(n, np.bool_)
    while count > 0:
        left, size, merged, count = _pop(heap, hs, count)
        right = nxt[left]
        if not alive[left] or right >= n or sym_start[nxt[right]] - sym_start[left] != size:
            continue
        sym_id[left] = merged
        alive[right] = False
        nxt[left] = nxt[right]
        prev[nxt[right]] = left
        count = _offer(scores, merge_keys, merge_ids, sym_start, sym_id, nxt, n, prev[left], heap, hs, count)
        count = _offer(scores, merge_keys, merge_ids, sym_start, sym_id, nxt, n, left, heap, hs, count)
    live = k = 0
    while k < n:  # the live symbols, packed to the front (live <= k)
        sym_start[live], sym_id[live] = sym_start[k], sym_id[k]
        live += 1
        k = nxt[k]
    sym_start[live] = end
    _write(length, pid, scores.size, sym_start, sym_id, live)


@inline
def _same(data, a, b, n):
    for k in range(n):
        if data[a + k] != data[b + k]:
            return False
    return True


def memo_rows(n_bytes: int) -> int:
    """Rows of the memo of :func:`encode_pre_token` for about ``n_bytes`` of text.

    >>> memo_rows(1000), memo_rows(10**9)
    (2048, 65536)
    """
    return 1 << max(4, min(16, (2 * n_bytes - 1).bit_length()))


@njit(**JIT)
def new_scratch(n):
    """Scratch arrays of :func:`merge_short` for ``n`` chunks (row k for chunk k)."""
    return (np.empty((n, SHORT + 1), np.int64), np.empty((n, SHORT + 1), np.int32), np.empty((n, SHORT + 1), np.int32),
            np.empty((n, SHORT + 1), np.float32))


@inline
def _byte_hash(data, begin, end):
    h = _BASIS
    for k in range(begin, end):
        h = (h ^ np.uint64(data[k])) * _PRIME
    return h


@inline
def _memo_find(memo, data, h, begin, n):
    """(slot, position of an earlier copy of data[begin:begin + n) or -1): the copy when the memo has
    one (same hash, length and bytes), else the free slot where this one would go."""
    size = memo.shape[0]
    slot = np.int64((h * _MIX) >> np.uint64(32)) & (size - 1)
    while memo[slot, 1] != 0:
        at, at_size = memo[slot, 1] >> 16, memo[slot, 1] & 0xFFFF
        if memo[slot, 0] == np.int64(h) and at_size == n and _same(data, at, begin, n):
            return slot, at
        slot = (slot + 1) & (size - 1)
    return slot, -1


@inline
def _memo_put(memo, filled, slot, h, begin, n):
    """Remember data[begin:begin + n) at ``slot`` (parts of 2**16 bytes or more are not remembered,
    nor anything once the table is half full); returns the new number of filled rows."""
    if 2 * filled < memo.shape[0] and n < (1 << 16):
        memo[slot, 0], memo[slot, 1] = np.int64(h), (begin << 16) | n
        return filled + 1
    return filled


@njit(**NOREF)
def encode_pre_token(data, begin, end, scores, char_keys, char_ids, merge_keys, merge_ids, join_keys, join_values,
                     bmp_ids, length, pid, memo, filled, sym_start, sym_id, pair_id, pair_score):
    """Merge the pre-token data[begin:end); returns (memo rows filled, where its symbols are).

    The symbols are described by ``length`` (bytes of the symbol starting at each position; 0 inside
    a symbol) and ``pid`` (its piece id, -1 when it is not a piece) at the symbol starts: at
    ``begin``, or at an earlier copy of the same bytes. Natural text repeats itself, so ``memo``
    (rows of hash, then position << 16 | length; 0 when empty) remembers where each pre-token and
    each part was merged: first the whole pre-token is looked up (words repeat), then it is cut
    where no piece joins two characters and each part of three or more characters is looked up
    (a Chinese line is one pre-token, its parts repeat); parts of one or two characters, most of
    them, are settled by the one lookup of their pair. The cutting scan leaves each part's
    characters and pair pieces in the scratch arrays (the last four, :func:`new_scratch`), where
    :func:`merge_short` starts from them."""
    n_pieces = scores.size
    if begin == end:
        return filled, begin
    word = end - begin <= SHORT  # longer pre-tokens (lines without spaces) rarely repeat whole
    if word:
        word_hash = _byte_hash(data, begin, end)
        _, at = _memo_find(memo, data, word_hash, begin, end - begin)
        if at >= 0:
            return filled, at
    part = i = begin
    h = _BASIS
    width, key, char = char_id_at(data, i, end, bmp_ids, char_keys, char_ids)
    n_chars = 0  # characters of the part before data[i]
    next_width, next_key, next_char = width, key, char
    while i < end:
        h = (h ^ key) * _PRIME
        after = i + width
        join = -1  # the joins value of this character and the next: their piece, JOINED, or -1 (a cut)
        if after < end:
            next_width, next_key, next_char = char_id_at(data, after, end, bmp_ids, char_keys, char_ids)
            if char >= 0 and next_char >= 0:
                join = lookup(join_keys, join_values, pair_key(np.int64(char), np.int64(next_char)))
        if n_chars <= SHORT:  # the part's characters, for merge_short (parts over SHORT bytes are re-read)
            sym_start[n_chars], sym_id[n_chars], pair_id[n_chars] = i, char, join if join >= 0 else -1
        n_chars += 1
        if join == -1:  # data[part:after) is merged on its own
            n = after - part
            if n_chars == 1:  # one character: nothing to merge
                _one_symbol(length, pid, part, after, np.int64(char), n_pieces)
            elif n_chars == 2:  # two characters (most parts that are not one): the joins lookup that
                merged = pair_id[0]  # found the part said which piece they make, if any
                if merged >= 0:
                    _one_symbol(length, pid, part, after, np.int64(merged), n_pieces)
                else:
                    _one_symbol(length, pid, part, i, np.int64(sym_id[0]), n_pieces)
                    _one_symbol(length, pid, i, after, np.int64(char), n_pieces)
            else:
                remember = not word or part > begin or after < end  # a word that is one part was looked up whole
                slot, at = np.int64(0), np.int64(-1)
                if remember:
                    slot, at = _memo_find(memo, data, h, part, n)
                if at >= 0:
                    for q in range(n):
                        length[part + q] = length[at + q]
                        pid[part + q] = pid[at + q]
                else:
                    # the scratch arrays hold the part's characters when it is at most SHORT bytes long
                    if n <= SHORT:
                        merge_short(after, n_chars, scores, merge_keys, merge_ids, length, pid, sym_start, sym_id,
                                    pair_id, pair_score)
                    else:
                        merge_long(data, part, after, scores, char_keys, char_ids, bmp_ids, merge_keys, merge_ids,
                                   length, pid)
                    if remember:
                        filled = _memo_put(memo, filled, slot, h, part, n)
            part = after
            h = _BASIS
            n_chars = 0
        if after < end:
            width, key, char = next_width, next_key, next_char
        i = after
    if word:  # parts may have taken the slot found above: look again
        slot, _ = _memo_find(memo, data, word_hash, begin, end - begin)
        filled = _memo_put(memo, filled, slot, word_hash, begin, end - begin)
    return filled, begin


@inline
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


@njit(parallel=True, **JIT)
def _encode_chunks(data, token_starts, token_ends, chunk_bounds, scores, char_keys, char_ids, merge_keys, merge_ids,
                   join_keys, join_values, bmp_ids, byte_ids, length, pid, memo_size):
    counts, sources = np.empty(token_starts.size, np.int64), np.empty(token_starts.size, np.int64)
    # per pre-token work gets borrowed views (see cpu_fallback.borrow) of arguments and of arrays
    # that live to the end
    data, scores, byte_ids, length, pid = borrow(data), borrow(scores), borrow(byte_ids), borrow(length), borrow(pid)
    char_keys, char_ids, merge_keys, merge_ids = borrow(char_keys), borrow(char_ids), borrow(merge_keys), borrow(
        merge_ids)
    join_keys, join_values, bmp_ids = borrow(join_keys), borrow(join_values), borrow(bmp_ids)
    memos = np.zeros((chunk_bounds.size - 1, memo_size, 2), np.int64)
    scratch = new_scratch(chunk_bounds.size - 1)
    for c in prange(chunk_bounds.size - 1):
        first, last = chunk_bounds[c], chunk_bounds[c + 1]
        memo, filled = borrow(memos[c]), 0
        sym_start, sym_id, pair_id, pair_score = borrow(scratch[0][c]), borrow(scratch[1][c]), borrow(
            scratch[2][c]), borrow(scratch[3][c])
        for t in range(first, last):
            filled, sources[t] = encode_pre_token(data, token_starts[t], token_ends[t], scores, char_keys, char_ids,
                                                  merge_keys, merge_ids, join_keys, join_values, bmp_ids, length,
                                                  pid, memo,
                                                  filled, sym_start, sym_id, pair_id, pair_score)
            n = token_ends[t] - token_starts[t]
            counts[t] = _outputs(length, pid, byte_ids[0] >= 0, sources[t], sources[t] + n)
    return counts, sources


@njit(**NOREF)
def emit_pre_token(data, begin, end, source, byte_ids, unk_id, length, pid, ids, starts, ends, out,
                   spans):
    """Write the ids of pre-token data[begin:end), whose symbols are at ``source``, and (``spans``)
    their byte spans from ``out`` on; returns the new end (byte pieces for what is no piece, or a
    run of unknown symbols as one unknown id)."""
    prev_unk = False
    at = begin
    shift = source - begin
    while at < end:
        size, piece = length[at + shift], pid[at + shift]
        unk = piece < 0 and byte_ids[0] < 0
        if unk and prev_unk:
            if spans:
                ends[out - 1] = at + size
        elif piece >= 0 or byte_ids[0] < 0:
            ids[out] = piece if piece >= 0 else unk_id
            if spans:
                starts[out], ends[out] = at, at + size
            out += 1
        else:
            for k in range(size):
                ids[out] = byte_ids[data[at + k]]
                if spans:
                    starts[out], ends[out] = at + k, at + k + 1
                out += 1
        prev_unk = unk
        at += size
    return out


@njit(parallel=True, **JIT)
def _emit_all(data, token_starts, token_ends, sources, byte_ids, unk_id, length, pid, offsets, ids, starts, ends):
    for t in prange(token_starts.size):
        emit_pre_token(data, token_starts[t], token_ends[t], sources[t], byte_ids, unk_id, length, pid, ids, starts,
                       ends, offsets[t], True)


def bpe_encode(data, token_starts, token_ends, state, check, label, eow, scores, byte_ids, unk_id, tables):
    """Ids (int32) of every pre-token, each id's byte span in ``data``, and per-pre-token offsets.

    ``tables``: the model's :class:`~gpu_text.tokenizer.merge_tables.MergeTables`; the trie arrays
    (``state`` … ``eow``) are what the CUDA twin merges with, and are not needed here.
    """
    c = np.ascontiguousarray  # borrowed views need C order
    data = c(data)
    length = np.empty(data.size, np.int32)
    pid = np.empty(data.size, np.int32)
    bounds = chunk_bounds(token_ends - token_starts, per_thread=1)  # a chunk merges a part once
    counts, sources = _encode_chunks(data, token_starts, token_ends, bounds, c(scores), *(c(a) for a in tables),
                                     c(byte_ids), length, pid, memo_rows(data.size // max(bounds.size - 1, 1)))
    offsets = np.zeros(token_starts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    ids, starts, ends = np.empty(total, np.int32), np.empty(total, np.int64), np.empty(total, np.int64)
    _emit_all(data, token_starts, token_ends, sources, byte_ids, np.int32(unk_id), length, pid, offsets, ids, starts,
              ends)
    return ids, starts, ends, offsets


def bpe_encode_rows(data, offsets, marks, state, check, label, eow, scores, byte_ids, unk_id, tables, symbol_at=None):
    """:func:`bpe_encode` of the texts ``data[offsets[r]:offsets[r + 1]]`` cut into pre-tokens where
    ``marks`` (one per byte, ``pretokenize_marks``) is non-zero; returns the ids, their spans and the
    ids' row offsets (one per text and the end). ``symbol_at`` (``pretokenize_symbol_marks``): a
    pre-token starting where it is non-zero is a user symbol, the one id ``symbol_at[start] >> 8``.

    >>> from gpu_text.tokenizer.bpe import BPEModel
    >>> m = BPEModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -2.0, 0.0], [2, 1, 1, 1])
    >>> data, marks = np.frombuffer(b"ababb", np.uint8), np.array([1, 0, 1, 0, 1], np.uint8)
    >>> ids, _, _, rows = bpe_encode_rows(data, np.array([0, 4, 5]), marks, *m._trie_arrays("cpu"), m.scores,
    ...                                   m.byte_ids, m.unk_id, m.merge_tables)
    >>> ids.tolist(), rows.tolist()
    ([3, 3, 2], [0, 2, 3])
    """
    starts = np.flatnonzero(marks).astype(np.int64)
    ends = np.append(starts[1:], data.size).astype(np.int64)
    symbols = np.zeros(starts.size, np.int32) if symbol_at is None else symbol_at[starts]
    plain = np.flatnonzero(symbols == 0)
    ids, id_starts, id_ends, token_offsets = bpe_encode(data, starts[plain], ends[plain], state, check, label, eow,
                                                        scores, byte_ids, unk_id, tables)
    if plain.size < starts.size:  # the symbols' ids between the merged pre-tokens' own
        counts = np.ones(starts.size, np.int64)
        counts[plain] = np.diff(token_offsets)
        offsets_all = np.zeros(starts.size + 1, np.int64)
        np.cumsum(counts, out=offsets_all[1:])
        slots = np.repeat(offsets_all[plain] - token_offsets[:-1], np.diff(token_offsets)) + np.arange(ids.size)
        out = [np.empty(int(offsets_all[-1]), a.dtype) for a in (ids, id_starts, id_ends)]
        for a, merged in zip(out, (ids, id_starts, id_ends)):
            a[slots] = merged
        taken = np.flatnonzero(symbols != 0)
        at = offsets_all[taken]
        out[0][at], out[1][at], out[2][at] = symbols[taken] >> 8, starts[taken], ends[taken]
        ids, id_starts, id_ends, token_offsets = *out, offsets_all
    return ids, id_starts, id_ends, token_offsets[np.searchsorted(starts, offsets)]
