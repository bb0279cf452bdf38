"""Numba helpers of the BPE trainer (``gpu_text/tokenizer/bpe_trainer.py``). No CUDA twin: training
runs on the host.

Two parts:

- **Counting distinct pre-tokens**: FNV-1a hashes of every pre-token's bytes (parallel), then one
  open-addressing table keyed by the bytes themselves (hash, length, then a byte compare), so the
  counts are exact and memory grows with the number of distinct pre-tokens, not the corpus.
- **SentencePiece's BPE merge loop** over the distinct pre-tokens laid out flat: ``sym[i]`` is the
  symbol at character position ``i`` (-1 once merged into its left neighbour), ``nxt``/``prv``
  link the live positions of one pre-token, ``weight[i]`` is the pre-token's count. Every pair
  symbol keeps its exact frequency (updated by +/- the pre-token weight at each merge, which equals
  SentencePiece's lazy recount of valid positions) and a linked list of the positions where it was
  seen; positions that went stale are skipped when used and dropped by :func:`compact_positions`.

Capacities are managed by the caller: :func:`train_steps` returns ``NEED_ROOM`` with the room it
wants before touching anything, and the caller grows the arrays and calls again.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange, types
from numba.typed import Dict

# the merge loop's pair table ((left << 32 | right) -> pair symbol) is one of the encoder's hash tables
from .byte_tables import fnv1a
from .jit import JIT
from .merge_tables import grown_table, lookup, pair_key, remove, store


DONE, NEED_ROOM, EXHAUSTED = 0, 1, 2


# ------------------------------------------------------------------ counting distinct pre-tokens


@njit(parallel=True, **JIT)
def hash_spans(data, starts, ends):
    """FNV-1a 64-bit hash of every ``data[starts[i]:ends[i]]``."""
    out = np.empty(starts.size, np.uint64)
    for i in prange(starts.size):
        out[i] = fnv1a(data, starts[i], ends[i])
    return out


@njit(**JIT)
def count_spans(data, starts, ends, hashes, slots, ent_hash, ent_start, ent_len, ent_count, pool, sizes):
    """Adds every span to the table; ``sizes`` = [entries, pool bytes used] is updated in place.

    The caller guarantees room: ``slots`` (a power of two, -1 = empty) at most half full after
    this call, and ``ent_*``/``pool`` large enough for every span being new.
    """
    mask = slots.size - 1
    n = sizes[0]
    used = sizes[1]
    for i in range(starts.size):
        h = hashes[i]
        a = starts[i]
        length = ends[i] - a
        k = np.int64(h & np.uint64(mask))
        while True:
            e = slots[k]
            if e < 0:
                slots[k] = n
                ent_hash[n] = h
                ent_start[n] = used
                ent_len[n] = length
                ent_count[n] = 1
                for j in range(length):  # not a slice assignment: that compiles for over a second
                    pool[used + j] = data[a + j]
                used += length
                n += 1
                break
            if ent_hash[e] == h and ent_len[e] == length:
                s = ent_start[e]
                same = True
                for j in range(length):
                    if pool[s + j] != data[a + j]:
                        same = False
                        break
                if same:
                    ent_count[e] += 1
                    break
            k = (k + 1) & mask
    sizes[0] = n
    sizes[1] = used


@njit(**JIT)
def rehash(slots, ent_hash, n):
    """Re-inserts entries ``0..n-1`` into a fresh (all -1) ``slots``."""
    mask = slots.size - 1
    for e in range(n):
        k = np.int64(ent_hash[e] & np.uint64(mask))
        while slots[k] >= 0:
            k = (k + 1) & mask
        slots[k] = e


# ------------------------------------------------------------------------------ the merge loop


@njit(**JIT)
def new_seen_table():
    """Piece fingerprint -> the symbol accepted with it (one entry per merge: a typed dict will do)."""
    return Dict.empty(key_type=types.int64, value_type=types.int64)


@njit(inline="always", **JIT)
def _seen_get(table, key):
    """``table[key]``, or -1 when absent (``dict.get`` would type as optional)."""
    if key in table:
        return table[key]
    return -1


@njit(inline="always", **JIT)
def _holds(p, left, right, sym, nxt):
    """Whether the pair (left, right) still stands at position p (a position goes stale when
    either side was merged into something else)."""
    q = nxt[p]
    return sym[p] == left and q >= 0 and sym[q] == right


@njit(inline="always", **JIT)
def _append_position(x, pos, s_head, s_tail, node_pos, node_next, counts):
    node = counts[1]
    counts[1] = node + 1
    node_pos[node] = pos
    node_next[node] = -1
    if s_head[x] < 0:
        s_head[x] = node
    else:
        node_next[s_tail[x]] = node
    s_tail[x] = node


@njit(inline="always", **JIT)
def _add_freq(x, w, s_freq, s_active, active_freq):
    """Frequency of symbol x += w, mirrored in its active-set slot (``s_active[x]`` = slot + 1, or 0)."""
    s_freq[x] += w
    if s_active[x] > 0:
        active_freq[s_active[x] - 1] = s_freq[x]


@njit(inline="always", **JIT)  # called per position: a call would reference-count its 20 arrays
def _add_pair(a, b, pos, w, unk, max_bytes, pair_keys, pair_values, s_left, s_right, s_nchars, s_nbytes, s_freq, s_head,
              s_tail, s_alive, s_active, active, active_freq, node_pos, node_next, counts, activate):
    """SentencePiece's AddNewPair: the pair (a, b) seen at ``pos`` with weight ``w``. Pairs with the
    unknown character or longer than ``max_bytes`` are never made."""
    if a == unk or b == unk or s_nbytes[a] + s_nbytes[b] > max_bytes:
        return
    # int64 ids to pair_key, int32 values to store, whatever the call site's types (this function is
    # inlined into each before typing: literal -1s and int32 symbols compiled pair_key six times)
    key = pair_key(np.int64(a), np.int64(b))
    x = lookup(pair_keys, pair_values, key)
    if x < 0:
        x = counts[0]
        counts[0] = x + 1
        s_left[x] = a
        s_right[x] = b
        s_nchars[x] = s_nchars[a] + s_nchars[b]
        s_nbytes[x] = s_nbytes[a] + s_nbytes[b]
        s_freq[x] = 0
        s_head[x] = -1
        s_tail[x] = -1
        s_alive[x] = 1
        s_active[x] = 0
        store(pair_keys, pair_values, key, np.int32(x))
        counts[4] += 1
    _add_freq(x, w, s_freq, s_active, active_freq)
    _append_position(x, pos, s_head, s_tail, node_pos, node_next, counts)
    if activate and s_active[x] == 0:
        active[counts[2]] = x
        active_freq[counts[2]] = s_freq[x]
        counts[2] += 1
        s_active[x] = counts[2]


@njit(**JIT)
def build_pairs(sym, nxt, weight, unk, max_bytes, pair_keys, pair_values, s_left, s_right, s_nchars, s_nbytes, s_freq,
                s_head, s_tail, s_alive, s_active, node_pos, node_next, counts):
    """Every adjacent pair of the initial character symbols, in position order (so pair ids, and
    with them every tie, depend only on the order pre-tokens were first seen); returns the pair
    table, grown as needed."""
    no_active, no_active_freq = np.zeros(0, np.int32), np.zeros(0, np.int64)
    for p in range(sym.size):
        q = nxt[p]
        if q >= 0:
            if 2 * (counts[4] + 1) > pair_keys.size:
                pair_keys, pair_values = grown_table(pair_keys, pair_values, 2 * (counts[4] + 1))
            _add_pair(sym[p], sym[q], p, weight[p], unk, max_bytes, pair_keys, pair_values, s_left, s_right, s_nchars,
                      s_nbytes, s_freq, s_head, s_tail, s_alive, s_active, no_active, no_active_freq, node_pos,
                      node_next, counts, False)
    return pair_keys, pair_values


@njit(**JIT)
def expand(x, n_chars, s_left, s_right, char_cp, stack, out):
    """Writes the codepoints of symbol ``x`` to ``out``; returns how many."""
    n = 0
    stack[0] = x
    top = 1
    while top > 0:
        top -= 1
        y = stack[top]
        if y < n_chars:
            out[n] = char_cp[y]
            n += 1
        else:
            stack[top] = s_right[y]
            stack[top + 1] = s_left[y]
            top += 2
    return n


@njit(**JIT)
def _lexically_less(a, b, n_chars, s_left, s_right, char_cp, stack, buf_a, buf_b):
    """Codepoint order, which is the byte order of the UTF-8 strings SentencePiece compares."""
    # symbols as int64 at every call: each other integer type compiled the callee once more
    na = expand(np.int64(a), n_chars, s_left, s_right, char_cp, stack, buf_a)
    nb = expand(np.int64(b), n_chars, s_left, s_right, char_cp, stack, buf_b)
    for i in range(min(na, nb)):
        if buf_a[i] != buf_b[i]:
            return buf_a[i] < buf_b[i]
    return na < nb


@njit(**JIT)
def _fingerprint(buf, n):
    return np.int64(fnv1a(buf, np.int64(0), n))  # not a literal 0: fnv1a compiled again for it


@njit(**JIT)
def _sorted(values, n):
    """``values[:n]`` sorted, as a new array: runs of 16 by insertion, then merged bottom-up
    (Numba's np.sort compiled for 1.7 s)."""
    a = values[:n].copy()
    b = np.empty_like(a)
    for lo in range(0, n, 16):
        for i in range(lo + 1, min(lo + 16, n)):
            v = a[i]
            j = i
            while j > lo and a[j - 1] > v:
                a[j] = a[j - 1]
                j -= 1
            a[j] = v
    width = 16
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j >= hi or (i < mid and a[i] <= a[j]):
                    b[k] = a[i]
                    i += 1
                else:
                    b[k] = a[j]
                    j += 1
        a, b = b, a
        width *= 2
    return a


@njit(**JIT)
def train_steps(n_steps, min_freq, max_bytes, n_chars, unk, sym, nxt, prv, weight, char_cp,
                s_left, s_right, s_nchars, s_nbytes, s_freq, s_head, s_tail, s_alive, s_active,
                active, active_freq, node_pos, node_next, counts, pair_keys, pair_values, seen, merged, stack, buf_a,
                buf_b):
    """Up to ``n_steps`` merges of SentencePiece's loop; returns (status, merges done, room wanted).

    ``counts`` = [symbols, position nodes, active symbols, merges so far, pairs in the pair table];
    ``merged[k]`` receives
    the symbol of merge ``k``; ``seen`` maps piece fingerprints to accepted symbols (duplicate
    strings made along another path are dropped, as SentencePiece does).
    """
    done = 0
    while done < n_steps:
        # best active symbol: highest frequency, then fewer characters, then lexically smaller
        # (then the older symbol, so that equal strings resolve deterministically)
        # (frequencies are read from active_freq, a packed copy: s_freq is spread over every pair)
        best = -1
        best_at = -1
        best_f = 0
        for i in range(counts[2]):
            f = active_freq[i]
            if f <= 0 or f < best_f:
                continue
            x = active[i]
            if best < 0:
                better = True
            elif f != best_f:
                better = True
            elif s_nchars[x] != s_nchars[best]:
                better = s_nchars[x] < s_nchars[best]
            else:
                x64, best64 = np.int64(x), np.int64(best)
                better = _lexically_less(x64, best64, n_chars, s_left, s_right, char_cp, stack, buf_a, buf_b) or (
                    x < best and not _lexically_less(best64, x64, n_chars, s_left, s_right, char_cp, stack, buf_a,
                                                     buf_b))
            if better:
                best = x
                best_at = i
                best_f = f
        if best < 0 or s_freq[best] < min_freq:
            return EXHAUSTED, done, 0
        # room: each live position of best makes at most two new pairs and two position nodes
        n_pos = 0
        node = s_head[best]
        while node >= 0:
            n_pos += 1
            node = node_next[node]
        room = 2 * n_pos + 2
        if (counts[0] + room > s_left.size or counts[1] + room > node_pos.size
                or counts[2] + room > active.size or 2 * (counts[4] + room) > pair_keys.size):
            return NEED_ROOM, done, room
        # retire best from the candidates whatever happens next (SentencePiece erases it)
        counts[2] -= 1
        moved = active[counts[2]]
        active[best_at], active_freq[best_at] = moved, active_freq[counts[2]]
        s_active[moved] = best_at + 1
        s_active[best] = 0
        s_alive[best] = 0
        remove(pair_keys, pair_values, pair_key(np.int64(s_left[best]), np.int64(s_right[best])))
        counts[4] -= 1
        n = expand(np.int64(best), n_chars, s_left, s_right, char_cp, stack, buf_a)
        fp = _fingerprint(buf_a, n)
        other = _seen_get(seen, fp)
        if other >= 0:
            m = expand(np.int64(other), n_chars, s_left, s_right, char_cp, stack, buf_b)
            same = m == n
            for i in range(min(n, m)):
                if buf_a[i] != buf_b[i]:
                    same = False
            if same:
                continue  # the same string by another path: skipped, not counted as a merge
        else:
            seen[fp] = best
        merged[counts[3]] = best
        counts[3] += 1
        done += 1
        # the valid positions of best, left to right, so overlapping runs (a a a) merge leftmost first
        left, right = s_left[best], s_right[best]
        positions = np.empty(n_pos, np.int32)
        k = 0
        node = s_head[best]
        while node >= 0:
            p = node_pos[node]
            if _holds(p, left, right, sym, nxt):
                positions[k] = p
                k += 1
            node = node_next[node]
        positions = _sorted(positions, k)
        s_head[best] = -1
        s_tail[best] = -1
        for p in positions:
            if not _holds(p, left, right, sym, nxt):
                continue  # consumed by the previous merge of an overlapping run
            q = nxt[p]
            w = weight[p]
            r = prv[p]
            s = nxt[q]
            # the pairs [r, p] and [q, s] lose this occurrence
            if r >= 0:
                x = lookup(pair_keys, pair_values, pair_key(np.int64(sym[r]), np.int64(left)))
                if x >= 0:
                    _add_freq(x, -w, s_freq, s_active, active_freq)
            if s >= 0:
                x = lookup(pair_keys, pair_values, pair_key(np.int64(right), np.int64(sym[s])))
                if x >= 0:
                    _add_freq(x, -w, s_freq, s_active, active_freq)
            sym[p] = best
            sym[q] = -1
            nxt[p] = s
            if s >= 0:
                prv[s] = p
            # and [r, p], [p, s] are new pairs with best
            if r >= 0:
                _add_pair(sym[r], best, r, w, unk, max_bytes, pair_keys, pair_values, s_left, s_right, s_nchars,
                          s_nbytes, s_freq, s_head, s_tail, s_alive, s_active, active, active_freq, node_pos,
                          node_next, counts, True)
            if s >= 0:
                _add_pair(best, sym[s], p, w, unk, max_bytes, pair_keys, pair_values, s_left, s_right, s_nchars,
                          s_nbytes, s_freq, s_head, s_tail, s_alive, s_active, active, active_freq, node_pos,
                          node_next, counts, True)
    return DONE, done, 0


@njit(**JIT)
def compact_positions(n_symbols, n_chars, s_left, s_right, s_alive, s_head, s_tail, sym, nxt, node_pos,
                      node_next, new_pos, new_next):
    """Copies the still-valid positions of every live pair into ``new_pos``/``new_next`` (stale ones,
    whose symbols were merged away, are dropped); returns the number of nodes written."""
    written = np.zeros(2, np.int64)  # written[1] counts nodes, as counts[1] does for _append_position
    for x in range(n_chars, n_symbols):
        node = s_head[x]
        s_head[x] = -1
        s_tail[x] = -1
        if s_alive[x] == 0:
            continue
        left, right = s_left[x], s_right[x]
        while node >= 0:
            p = node_pos[node]
            if _holds(p, left, right, sym, nxt):
                _append_position(x, p, s_head, s_tail, new_pos, new_next, written)
            node = node_next[node]
    return written[1]
