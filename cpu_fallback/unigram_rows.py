"""The CPU Unigram encoder in one pass per row: normalize it, solve its lattice while walking the
pieces' trie from each character (no edge list is written), and write its ids while the row is
in cache.

It gives the ids of the staged path (:class:`~gpu_text.tokenizer.normalizer.Normalizer` → the
trie's prefix search → ``lattice_viterbi`` in mode 3 → unknown handling, which the GPU runs kernel
by kernel over the whole batch) from the same rules: SentencePiece's ``EncodeOptimized`` (float32
path scores, the unknown edge only where no piece of exactly one character starts, the first of
equal paths kept), unknown tokens as their bytes' pieces with byte fallback, else a run of them
as one unknown id. Chunks of rows run on threads (the jitted code releases the GIL). No CUDA twin:
the GPU runs the stages (``normalizer``, ``trie``, ``lattice``) kernel by kernel.
"""
from __future__ import annotations

import weakref
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from .borrow import borrow
from .chunks import chunk_bounds
from .jit import JIT
from .normalizer import REPLACEMENT_BYTES, match_starts_table, normalize_row, trim_symbols
from .utf8 import sequence_at


@njit(**JIT)
def _grown(array, size, keep):
    out = np.empty(size, array.dtype)
    for i in range(keep):  # an explicit loop: a slice copy here compiles for seconds
        out[i] = array[i]
    return out


def trie_units(state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray) -> np.ndarray:
    """The double-array trie packed one slot per 12-byte row: (base, check, the value of the word
    ending there or -1). A step of the walk then reads one row (one cache miss, not three: the
    walk is bound by memory latency), with :func:`~cpu_fallback.double_array.trie_step` and
    :func:`~cpu_fallback.double_array.trie_value`'s answers.

    >>> from cpu_fallback.double_array import arrays_of
    >>> units = trie_units(*arrays_of([b"a", b"ab"], [7, 8]))
    >>> sorted(units[units[:, 2] >= 0, 2].tolist())
    [7, 8]
    """
    size = state.size
    units = np.zeros((size, 3), np.int32)
    units[:, 0], units[:, 1] = state, check
    units[:, 2] = -1
    ends = np.flatnonzero(eow[:size]).astype(np.int64)
    slots = ends ^ state[ends].astype(np.int64)  # base ^ 0: the child on byte 0 holds the value
    inside = (slots >= 0) & (slots < size)
    ends, slots = ends[inside], slots[inside]
    found = check[slots].astype(np.int64) == ends + 1
    units[ends[found], 2] = state[slots[found]]
    return units


def char_nodes(units: np.ndarray) -> np.ndarray:
    """The slot of :func:`trie_units` that each code point below U+10000 reaches from the root
    (-1: no word begins with it; U+0000 and the surrogates too). The walk from a character then
    starts after it: a Chinese character is 3 steps (dependent loads) fewer, and most walks are
    only 1 or 2 characters long.

    >>> from cpu_fallback.double_array import arrays_of
    >>> nodes = char_nodes(trie_units(*arrays_of(["é".encode(), b"ab"], [7, 8])))
    >>> bool(nodes[ord("é")] >= 0), bool(nodes[ord("a")] >= 0), int(nodes[ord("b")])
    (True, True, -1)
    """
    cp = np.arange(0x10000, dtype=np.int64)
    width = np.where(cp < 0x80, 1, np.where(cp < 0x800, 2, 3))
    lead = np.where(width == 1, cp, np.where(width == 2, 0xC0 | (cp >> 6), 0xE0 | (cp >> 12)))
    utf8 = [lead, np.where(width == 2, 0x80 | (cp & 0x3F), 0x80 | ((cp >> 6) & 0x3F)), 0x80 | (cp & 0x3F)]
    size = units.shape[0]
    pos = np.where((cp == 0) | ((cp >= 0xD800) & (cp < 0xE000)), -1, 0)
    for k in range(3):
        walking = (pos >= 0) & (k < width)
        here = np.where(walking, pos, 0)
        nxt = here ^ units[here, 0].astype(np.int64) ^ utf8[k]
        inside = (nxt >= 0) & (nxt < size)
        reached = inside & (units[np.where(inside, nxt, 0), 1].astype(np.int64) == here + 1)
        pos = np.where(walking, np.where(reached, nxt, -1), pos)
    return pos.astype(np.int32)


_TABLES: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def trie_tables(state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`trie_units` and :func:`char_nodes` of a trie, built once per trie (~5 ms) and kept
    while its arrays live."""
    key = id(state)
    tables = _TABLES.get(key)
    if tables is None:
        units = trie_units(state, check, label, eow)
        tables = _TABLES[key] = (units, char_nodes(units))
        weakref.finalize(state, _TABLES.pop, key, None)  # before the id can be reused
    return tables


_NO_CHAR = 0x110000  # a code point past char_nodes: the walk starts at the root


@njit(**JIT)
def lead_char_at(text, i, end):
    """(length, code point) of the character at text[i] as its lead byte says: on well-formed
    UTF-8 :func:`~cpu_fallback.utf8.sequence_at`'s answer without its checks, which cost a third
    of the lattice's time on Chinese text (a stray byte is one character past ``char_nodes``).

    >>> [lead_char_at(np.frombuffer(s, np.uint8), 0, len(s)) for s in (b"a", "é".encode(), "中".encode(), "😀".encode())]
    [(1, 97), (2, 233), (3, 20013), (4, 1114112)]
    """
    b0 = np.int64(text[i])
    if b0 < 0x80:
        return 1, b0
    if b0 < 0xC0:
        return 1, np.int64(_NO_CHAR)
    if b0 < 0xE0:
        if i + 2 > end:
            return 1, np.int64(_NO_CHAR)
        return 2, ((b0 & 0x1F) << 6) | (np.int64(text[i + 1]) & 0x3F)
    if b0 < 0xF0:
        if i + 3 > end:
            return 1, np.int64(_NO_CHAR)
        return 3, ((b0 & 0x0F) << 12) | ((np.int64(text[i + 1]) & 0x3F) << 6) | (np.int64(text[i + 2]) & 0x3F)
    if i + 4 > end:
        return 1, np.int64(_NO_CHAR)
    return 4, np.int64(_NO_CHAR)  # past char_nodes either way


def writes_well_formed(targets: np.ndarray, target_offsets: np.ndarray, symbol: np.ndarray) -> bool:
    """Whether the normalizer's output is well-formed UTF-8 whatever its input: it copies only
    well-formed characters and writes U+FFFD for the rest, so it is when every charsmap target
    and the space symbol are.

    >>> writes_well_formed(np.frombuffer("ab▁".encode(), np.uint8), np.array([0, 1, 2, 5]), np.zeros(0, np.uint8))
    True
    >>> writes_well_formed(np.frombuffer("▁".encode(), np.uint8), np.array([0, 1, 3]), np.zeros(0, np.uint8))
    False
    """
    targets = np.asarray(targets, np.uint8)
    try:
        targets.tobytes().decode("utf-8")
        np.asarray(symbol, np.uint8).tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    starts = np.asarray(target_offsets, np.int64)
    starts = starts[starts < targets.size]
    return not bool(((targets[starts] & 0xC0) == 0x80).any())  # no target starts inside a character


@njit(**JIT)
def _solve_row(text, at, n, well_formed, units, char_nodes, weights, unk_score, score, route, value):
    """The best path of ``text[at:at + n]`` into ``score``/``route``/``value`` (rows of n + 1;
    route and value are read only where a path ends, which every character boundary is).
    ``well_formed``: the text is well-formed UTF-8, so each lead byte gives its character."""
    for k in range(n + 1):
        score[k] = -np.inf
    score[0] = 0.0
    size = units.shape[0]
    p = 0
    while p < n:
        if well_formed:
            length, cp = lead_char_at(text, at + p, at + n)
        else:
            length, cp = sequence_at(text, at + p, at + n)
        here = score[p]
        single = False
        start = at + p
        pos = np.int64(0)
        if length == 0:  # a malformed byte is one character, walked from the root
            length = 1
        elif cp < char_nodes.size:  # the walk through the character's own bytes, done once per model
            pos = np.int64(char_nodes[cp])
            start += length
            if pos >= 0:
                v = units[pos, 2]
                if v >= 0:
                    single = True
                    candidate = float(np.float32(here + weights[v]))
                    if candidate > score[p + length]:
                        score[p + length] = candidate
                        route[p + length] = p
                        value[p + length] = v
        if pos >= 0:
            for i in range(start, at + n):
                byte = text[i]
                nxt = pos ^ np.int64(units[pos, 0]) ^ np.int64(byte)
                if byte == 0 or nxt < 0 or nxt >= size or units[nxt, 1] != pos + 1:  # byte 0 leads to value slots
                    break
                pos = nxt
                v = units[pos, 2]
                if v >= 0:
                    to = i + 1 - at
                    candidate = float(np.float32(here + weights[v]))
                    if candidate > score[to]:
                        score[to] = candidate
                        route[to] = p
                        value[to] = v
                    if to == p + length:
                        single = True
        if not single:
            to = p + length
            candidate = float(np.float32(here + unk_score))
            if candidate > score[to]:
                score[to] = candidate
                route[to] = p
                value[to] = -1
        p += length


@njit(**JIT)
def _encode_rows(data, offsets, first, last, normalizer, symbol, collapse, dummy, growth, match_starts, well_formed,
                 units, char_nodes, weights, unk_score, unk_id, byte_fallback, byte_ids, with_spans):
    """Ids of rows first..last-1, ids per row, and (``with_spans``) each id's span in the original row."""
    none8, none64 = np.zeros(0, np.uint8), np.zeros(0, np.int64)
    state, check, label, eow = (borrow(normalizer[0]), borrow(normalizer[1]), borrow(normalizer[2]),
                                borrow(normalizer[3]))
    targets, target_offsets, symbol = borrow(normalizer[4]), borrow(normalizer[5]), borrow(symbol)
    units, char_nodes = borrow(units), borrow(char_nodes)
    weights, byte_ids = borrow(weights), borrow(byte_ids)
    match_starts, replacement = borrow(match_starts), borrow(REPLACEMENT_BYTES)
    size = (offsets[last] - offsets[first]) * 3 // 2 + 64
    text_owner = np.empty(size, np.uint8)
    align_owner = np.empty(size if with_spans else 1, np.int64)
    text, align = borrow(text_owner), borrow(align_owner)
    # one row's lattice (grown to the longest normalized row)
    row_size = 1024
    score_owner, route_owner, value_owner = np.empty(row_size, np.float64), np.empty(row_size, np.int64), np.empty(
        row_size, np.int32)
    score, route, value = borrow(score_owner), borrow(route_owner), borrow(value_owner)
    n_guess = size // 3
    n_spans = n_guess if with_spans else 1
    ids_owner, starts_owner, ends_owner = np.empty(n_guess, np.int32), np.empty(n_spans, np.int64), np.empty(
        n_spans, np.int64)
    ids, starts, ends = borrow(ids_owner), borrow(starts_owner), borrow(ends_owner)
    counts = np.zeros(last - first, np.int64)
    zero, no, yes = np.int64(0), np.bool_(False), np.bool_(True)
    at = n_ids = zero
    for r in range(first, last):
        begin, end = offsets[r], offsets[r + 1]
        if at + symbol.size + growth * (end - begin) + 1 > text.size:  # maybe too small: count exactly
            need = at + normalize_row(state, check, label, eow, targets, target_offsets, data, begin, end, symbol,
                                      collapse, dummy, replacement, none8, none64, zero, no, no,
                                      match_starts, none64) + 1
            if need > text.size:
                grown = max(2 * text.size, need)
                text_owner = _grown(text_owner, grown, at)
                align_owner = _grown(align_owner, grown if with_spans else 1, at if with_spans else 0)
                text, align = borrow(text_owner), borrow(align_owner)
        n = normalize_row(state, check, label, eow, targets, target_offsets, data, begin, end, symbol, collapse, dummy,
                          replacement, text, align, at, yes, with_spans, match_starts, none64)
        if collapse:
            n = trim_symbols(text, at, n, symbol)
        if with_spans:
            align[at + n] = end - begin
        if n + 1 > score.size:
            row_size = max(2 * score.size, n + 1)
            score_owner, route_owner = np.empty(row_size, np.float64), np.empty(row_size, np.int64)
            value_owner = np.empty(row_size, np.int32)
            score, route, value = borrow(score_owner), borrow(route_owner), borrow(value_owner)
        if n_ids + n > ids.size:  # a row gives at most one id per byte
            grown = max(2 * ids.size, n_ids + n)
            ids_owner = _grown(ids_owner, grown, n_ids)
            if with_spans:
                starts_owner, ends_owner = _grown(starts_owner, grown, n_ids), _grown(ends_owner, grown, n_ids)
            ids, starts, ends = borrow(ids_owner), borrow(starts_owner), borrow(ends_owner)
        _solve_row(text, at, n, well_formed, units, char_nodes, weights, unk_score, score, route, value)
        # the path backward: each token's start goes to route[its end]'s slot chain; reverse it in
        # place over score's slots (free now) as (end) positions, then emit forward
        k = n
        count = 0
        while k > 0:
            score[count] = k  # token ends, last first (exact in float64)
            count += 1
            k = route[k]
        row_first = n_ids
        previous_unknown = False
        for j in range(count - 1, -1, -1):
            e = np.int64(score[j])
            s = route[e]
            v = value[e]
            if v < 0 and byte_fallback:
                for b in range(s, e):
                    ids[n_ids] = byte_ids[text[at + b]]
                    if with_spans:
                        starts[n_ids], ends[n_ids] = at + b, at + b + 1
                    n_ids += 1
            elif v < 0 and previous_unknown:  # a run of unknown characters is one unknown id
                if with_spans:
                    ends[n_ids - 1] = at + e
            else:
                ids[n_ids] = unk_id if v < 0 else v
                if with_spans:
                    starts[n_ids], ends[n_ids] = at + s, at + e
                n_ids += 1
            previous_unknown = v < 0
        if with_spans:
            for k in range(row_first, n_ids):
                starts[k], ends[k] = align[starts[k]], align[ends[k]]
        counts[r - first] = n_ids - row_first
        at += n
    keep = text_owner.size + align_owner.size + score_owner.size + route_owner.size + value_owner.size
    n_spans = n_ids if with_spans else 0
    return ids_owner[:n_ids], counts, starts_owner[:n_spans], ends_owner[:n_spans], keep


def encode_unigram_text(data, offsets, normalizer, symbol, collapse, dummy, growth, trie, weights, unk_score, unk_id,
                        byte_fallback, byte_ids, with_spans):
    """Ids (int32) of every row of the batch ``data``/``offsets``, row offsets into them (int64),
    and, when ``with_spans``, each id's start and end in its original row (int64; else None).

    ``normalizer``, ``symbol``, ``collapse``, ``dummy``, ``growth`` as for
    :func:`cpu_fallback.tokenizer.encode_text`; ``trie``: the four arrays of the pieces' trie
    (values: piece ids), ``weights`` each piece id's score, ``unk_score``, ``unk_id``,
    ``byte_fallback`` and ``byte_ids`` (the ``<0xXX>`` piece of each byte) the Unigram model's.

    >>> from gpu_text.tokenizer import Normalizer, UnigramModel
    >>> m, n = UnigramModel(["<unk>", "a", "ab"], [0.0, -1.0, -1.5], [2, 1, 1]), Normalizer()
    >>> ids, offsets, starts, ends = encode_unigram_text(
    ...     np.frombuffer(b"abacc", np.uint8), np.array([0, 2, 5]), *n.kernel_arguments("cpu"), n.growth,
    ...     m.trie.arrays("cpu"), m.weights, m.unk_score, m.unk_id, False, m.byte_ids, True)
    >>> ids.tolist(), offsets.tolist(), starts.tolist(), ends.tolist()
    ([2, 1, 0], [0, 1, 3], [0, 0, 1], [2, 1, 3])
    """
    match_starts = match_starts_table(*normalizer[:4])
    bounds = chunk_bounds(np.diff(offsets), per_thread=8)  # as cpu_fallback/tokenizer.py's encoder
    c = np.ascontiguousarray
    common = (tuple(c(a) for a in normalizer), c(symbol), collapse, dummy, growth, match_starts,
              writes_well_formed(normalizer[4], normalizer[5], symbol),
              *trie_tables(*(np.asarray(a) for a in trie)), c(weights, dtype=np.float64), np.float64(unk_score), np.int32(unk_id),
              bool(byte_fallback), c(byte_ids, dtype=np.int32), bool(with_spans))

    def chunk(k: int):
        return _encode_rows(data, offsets, int(bounds[k]), int(bounds[k + 1]), *common)[:4]

    n_chunks = bounds.size - 1
    if n_chunks <= 1 or numba.get_num_threads() == 1:
        parts = [chunk(k) for k in range(n_chunks)]
    else:
        with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
            parts = list(pool.map(chunk, range(n_chunks)))
    row_offsets = np.zeros(offsets.size, np.int64)
    if not parts:
        empty = np.zeros(0, np.int64)
        return np.zeros(0, np.int32), row_offsets, (empty if with_spans else None), (empty if with_spans else None)
    np.cumsum(np.concatenate([p[1] for p in parts]), out=row_offsets[1:])
    ids = np.concatenate([p[0] for p in parts])
    if not with_spans:
        return ids, row_offsets, None, None
    return ids, row_offsets, np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts])
