"""The CPU Unigram encoder in one pass per row: normalize it, solve its lattice while walking the
pieces' character-level trie from each character (no edge list is written), and write its ids
while the row is in cache.

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
from .jit import JIT, inline
from .normalizer import REPLACEMENT_BYTES, match_starts_table, normalize_row, trim_symbols
from .utf8 import sequence_at


@njit(**JIT)
def _grown(array, size, keep):
    out = np.empty(size, array.dtype)
    for i in range(keep):  # an explicit loop: a slice copy here compiles for seconds
        out[i] = array[i]
    return out


def slot_values(state: np.ndarray, check: np.ndarray, eow: np.ndarray) -> np.ndarray:
    """The value of the word ending at each slot of a byte-level double-array trie, or -1
    (:func:`~cpu_fallback.double_array.trie_value`'s answers, all at once).

    >>> from cpu_fallback.double_array import arrays_of
    >>> state, check, label, eow = arrays_of([b"a", b"ab"], [7, 8])
    >>> sorted(v for v in slot_values(state, check, eow).tolist() if v >= 0)
    [7, 8]
    """
    size = state.size
    values = np.full(size, -1, np.int32)
    ends = np.flatnonzero(eow[:size]).astype(np.int64)
    slots = ends ^ state[ends].astype(np.int64)  # base ^ 0: the child on byte 0 holds the value
    inside = (slots >= 0) & (slots < size)
    ends, slots = ends[inside], slots[inside]
    found = check[slots].astype(np.int64) == ends + 1
    values[ends[found]] = state[slots[found]]
    return values


def trie_words(state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray
               ) -> tuple[list[bytes], np.ndarray]:
    """The words of a byte-level double-array trie and their values (each word's slots read up to
    the root, all words at once).

    >>> from cpu_fallback.double_array import arrays_of
    >>> words, values = trie_words(*arrays_of([b"ab", b"a", "中".encode()], [7, 8, 9]))
    >>> sorted(zip(values.tolist(), words))
    [(7, b'ab'), (8, b'a'), (9, b'\\xe4\\xb8\\xad')]
    """
    values = slot_values(state, check, eow)
    ends = np.flatnonzero(values >= 0)
    node, reversed_bytes = ends.astype(np.int64), []
    while (node > 0).any():
        reversed_bytes.append(np.where(node > 0, label[node].astype(np.int16), -1))
        node = np.where(node > 0, check[node].astype(np.int64) - 1, 0)
    table = np.array(reversed_bytes[::-1], np.int16).reshape(len(reversed_bytes), ends.size).T
    words = [bytes(row[row >= 0].astype(np.uint8)) for row in table]
    return words, values[ends]


_MALFORMED = 0x110000  # + the byte: a malformed byte as one character of its own (the Ustr rule)


def char_keys(word: bytes) -> list[int]:
    """``word``'s characters as the encoder splits text (:func:`~cpu_fallback.utf8.sequence_at`):
    code points, a malformed byte b as ``_MALFORMED + b``.

    >>> char_keys("a中".encode()), char_keys(b"a\\xe4")
    ([97, 20013], [97, 1114340])
    """
    try:
        return [ord(c) for c in word.decode("utf-8")]  # CPython's strict decoder: the Ustr rule's characters
    except UnicodeDecodeError:
        data, keys, i = np.frombuffer(word, np.uint8).copy(), [], 0
        while i < len(word):
            length, cp = sequence_at(data, i, len(word))
            keys.append(int(cp) if length else _MALFORMED + word[i])
            i += max(int(length), 1)
        return keys


@njit(**JIT)
def _find(free, i):
    """The first free slot from i (``free[i] == i`` where free; path halving)."""
    while free[i] != i:
        free[i] = free[free[i]]
        i = free[i]
    return i


@njit(**JIT)
def _place(first_child, child_ids, order, free, slot_of, base_of):
    """Bases of a character trie's nodes (numbered breadth-first, node 0 the root; node k's
    children are the edges ``first_child[k]:first_child[k + 1]``, edge j leading to node j + 1 on
    character ``child_ids[j]``, ascending) so that each child sits at its parent's base + its
    character id, every slot apart (first fit, the parents taken in ``order``); the root's base is
    0. Into ``slot_of`` each edge's slot, into ``base_of`` each node's; ``free``: ``arange`` of the
    capacity + 1 (arrays from the caller: allocating them here took a fifth of its compiling).
    False when the capacity was too small."""
    capacity = free.size - 1
    free[0] = 1
    for node in order:
        a, b = first_child[node], first_child[node + 1]
        if a == b:
            continue
        low = child_ids[a]
        base = np.int64(0)
        if node > 0:
            f = _find(free, low)
            while True:
                base = f - low
                if base + child_ids[b - 1] >= capacity:
                    return False
                fits = True
                for j in range(a + 1, b):
                    if free[base + child_ids[j]] != base + child_ids[j]:
                        fits = False
                        break
                if fits:
                    break
                f = _find(free, f + 1)
        if base + child_ids[b - 1] >= capacity:
            return False
        base_of[node] = base
        for j in range(a, b):
            s = base + child_ids[j]
            slot_of[j] = s
            free[s] = s + 1
    return True


def char_trie(words: list[bytes], values: np.ndarray, weights: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A character-level double-array trie of ``words``: each character a small id, one step per
    character (a Chinese character is one dependent load, not three, and the table well under
    half the byte trie's: 0.9 MB for 32k Chinese pieces, was 2.5 MB, beyond one core's L2).

    Returns ``units`` (rows of base, parent slot + 1, the value of the word ending there or -1;
    the child on id c of slot s is ``units[s, 0] + c`` where ``units[that, 1] == s + 1``; the root
    is slot 0 with base 0, so a first character's slot is its id), ``bmp_ids`` (the id of each
    code point below U+10000, 0: in no word) and the sorted other keys of :func:`char_keys` with
    their ids. An ASCII character's id is its code point (no table on the walk's path); then the
    other first characters, the most likely (by their one-character word's weight) lowest, so the
    walks' first slots share cache lines. Children are placed depth-first, so a word's slots lie
    near each other.

    >>> units, bmp, keys, ids = char_trie([b"a", b"ab", "中".encode()], np.array([7, 8, 9]), np.zeros(10))
    >>> int(units[bmp[ord("a")], 2]), int(units[bmp[ord("中")], 2]), bool(units[bmp[ord("x")], 1] == 1)
    (7, 9, False)
    >>> int(units[units[bmp[ord("a")], 0] + bmp[ord("b")], 2])
    8
    """
    keyed = [char_keys(w) for w in words]
    firsts: dict[int, float] = {}
    for k, v in zip(keyed, values.tolist()):
        if k and (len(k) == 1 or k[0] not in firsts):
            firsts[k[0]] = float(weights[v]) if len(k) == 1 else firsts.get(k[0], -np.inf)
    order = sorted((c for c in firsts if c >= 0x80), key=lambda c: -firsts[c])
    rest = sorted({c for k in keyed for c in k[1:] if c >= 0x80} - firsts.keys())
    id_of = {c: c for c in range(1, 0x80)}
    id_of.update((c, 0x80 + i) for i, c in enumerate(order + rest))
    children: list[dict[int, int]] = [{}]  # node -> {character id: node}
    value_of = [-1]
    for k, v in zip(keyed, values.tolist()):
        node = 0
        for c in k:
            child = children[node].get(id_of[c])
            if child is None:
                child = children[node][id_of[c]] = len(children)
                children.append({})
                value_of.append(-1)
            node = child
        value_of[node] = v
    # breadth-first renumbering: each node's children consecutive, in ascending id
    bfs, first_child, child_ids, i = [0], [0], [], 0
    while i < len(bfs):
        kids = sorted(children[bfs[i]].items())
        child_ids += [c for c, _ in kids]
        bfs += [node for _, node in kids]
        first_child.append(len(bfs) - 1)
        i += 1
    first = np.array(first_child, np.int64)
    ids = np.array(child_ids, np.int64)
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(range(first_child[node + 1], first_child[node], -1))  # its children, first on top (node j: edge j - 1)
    capacity = 2 * len(bfs) + 2 * len(id_of) + 64
    slot_of, base_of = np.zeros(len(child_ids), np.int64), np.zeros(len(bfs), np.int64)
    while not _place(first, ids, np.array(order, np.int64), np.arange(capacity + 1), slot_of, base_of):
        capacity *= 2
    slots = np.concatenate([[0], slot_of[:len(bfs) - 1]])  # node bfs[j] sits at slots[j]
    size = int(slots.max()) + len(id_of) + 2  # any base + any id stays inside
    units = np.zeros((size, 3), np.int32)
    units[:, 2] = -1
    units[slots, 0] = base_of
    parents = np.repeat(np.arange(len(bfs)), np.diff(first))
    units[slots[1:], 1] = slots[parents] + 1
    units[slots, 2] = np.array(value_of, np.int32)[bfs]
    bmp = np.zeros(0x10000, np.int32)
    small = [c for c in id_of if c < 0x10000]
    bmp[small] = [id_of[c] for c in small]
    keys = np.array(sorted(c for c in id_of if c >= 0x10000), np.int64)
    return units, bmp, keys, np.array([id_of[int(c)] for c in keys], np.int32)


_TABLES: dict[int, tuple[np.ndarray, ...]] = {}


def trie_tables(state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray, weights: np.ndarray
                ) -> tuple[np.ndarray, ...]:
    """:func:`char_trie` of a byte-level trie's words, built once per trie and kept while its
    arrays live."""
    key = id(state)
    tables = _TABLES.get(key)
    if tables is None:
        words, values = trie_words(state, check, label, eow)
        tables = _TABLES[key] = char_trie(words, values, weights)
        weakref.finalize(state, _TABLES.pop, key, None)  # before the id can be reused
    return tables


@inline
def lead_char_at(text, i, end):
    """(length, code point) of the character at text[i] as its lead byte says: on well-formed
    UTF-8 :func:`~cpu_fallback.utf8.sequence_at`'s answer without its checks, which cost a third
    of the lattice's time on Chinese text (a stray byte is one character of no word).

    >>> [lead_char_at(np.frombuffer(s, np.uint8), 0, len(s)) for s in (b"a", "é".encode(), "中".encode(), "😀".encode())]
    [(1, 97), (2, 233), (3, 20013), (4, 128512)]
    """
    b0 = np.int64(text[i])
    if b0 < 0x80:
        return 1, b0
    if b0 < 0xC0:
        return 1, _MALFORMED + b0
    if b0 < 0xE0:
        if i + 2 > end:
            return 1, _MALFORMED + b0
        return 2, ((b0 & 0x1F) << 6) | (np.int64(text[i + 1]) & 0x3F)
    if b0 < 0xF0:
        if i + 3 > end:
            return 1, _MALFORMED + b0
        return 3, ((b0 & 0x0F) << 12) | ((np.int64(text[i + 1]) & 0x3F) << 6) | (np.int64(text[i + 2]) & 0x3F)
    if i + 4 > end:
        return 1, _MALFORMED + b0
    return 4, (((b0 & 0x07) << 18) | ((np.int64(text[i + 1]) & 0x3F) << 12) | ((np.int64(text[i + 2]) & 0x3F) << 6)
               | (np.int64(text[i + 3]) & 0x3F))


@inline
def _char_id(cp, bmp_ids, keys, key_ids):
    """The character trie's id of a key of :func:`char_keys` (0: in no word)."""
    if cp < 0x80:
        return cp
    if cp < 0x10000:
        return np.int64(bmp_ids[cp])
    lo, hi = 0, keys.size
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < cp:
            lo = mid + 1
        else:
            hi = mid
    if lo < keys.size and keys[lo] == cp:
        return np.int64(key_ids[lo])
    return np.int64(0)


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


@inline
def _char_of(text, at, p, n, well_formed, bmp_ids, keys, key_ids):
    """(length, character trie id) of the character at ``text[at + p]`` of a row of n bytes."""
    if well_formed:
        length, cp = lead_char_at(text, at + p, at + n)
    else:
        length, cp = sequence_at(text, at + p, at + n)
        if length == 0:
            length, cp = 1, _MALFORMED + np.int64(text[at + p])
    return np.int64(length), _char_id(np.int64(cp), bmp_ids, keys, key_ids)


@njit(**dict(JIT, _nrt=False))  # allocates nothing: no reference counts on its eleven arrays per row
def _solve_row(text, at, n, well_formed, units, bmp_ids, keys, key_ids, weights, unk_score, score, route, value,
               char_at, char_id):
    """The best path of ``text[at:at + n]`` over its characters: their count K, their starts in
    ``char_at`` (K + 1, the last n) and for each character boundary k ``score``/``route`` (the
    boundary where its last token starts)/``value`` (that token's id, -1 unknown); route and value
    are read only where a path ends, which every boundary is. ``well_formed``: the text is
    well-formed UTF-8, so each lead byte gives its character.

    Each character is decoded once, when a walk first reaches it (a pass of its own ahead of the
    walks cost 3.5 ns a character on English text; amid the walks' dependent loads it is nearly
    free)."""
    score[0] = 0.0
    count = 0  # characters decoded, up to byte p
    p = np.int64(0)  # not the literal 0: _char_of would be compiled for it too
    k = 0
    while k < count or p < n:
        here = score[k]
        single = False
        pos = base = np.int64(0)  # the walk from the root; its base is 0
        m = k
        while True:
            if m == count:  # the id from the decoder, not back through memory: the walk waits on it
                if p >= n:
                    break
                length, cid = _char_of(text, at, p, n, well_formed, bmp_ids, keys, key_ids)
                char_at[count], char_id[count] = p, cid
                count += 1
                score[count] = -np.inf
                p += length
            else:
                cid = np.int64(char_id[m])
            nxt = base + cid
            if units[nxt, 1] != pos + 1:
                break
            pos = nxt
            base = np.int64(units[pos, 0])
            v = units[pos, 2]
            if v >= 0:
                single |= m == k
                candidate = float(np.float32(here + weights[v]))
                if candidate > score[m + 1]:
                    score[m + 1] = candidate
                    route[m + 1] = k
                    value[m + 1] = v
            m += 1
        if not single:
            candidate = float(np.float32(here + unk_score))
            if candidate > score[k + 1]:
                score[k + 1] = candidate
                route[k + 1] = k
                value[k + 1] = -1
        k += 1
    char_at[count] = n
    return count


@njit(**JIT)
def _encode_rows(data, offsets, first, last, normalizer, symbol, collapse, dummy, growth, match_starts, well_formed,
                 units, bmp_ids, keys, key_ids, weights, unk_score, unk_id, byte_fallback, byte_ids, with_spans):
    """Ids of rows first..last-1, ids per row, and (``with_spans``) each id's span in the original row."""
    none8, none64 = np.zeros(0, np.uint8), np.zeros(0, np.int64)
    state, check, label, eow = (borrow(normalizer[0]), borrow(normalizer[1]), borrow(normalizer[2]),
                                borrow(normalizer[3]))
    targets, target_offsets, symbol = borrow(normalizer[4]), borrow(normalizer[5]), borrow(symbol)
    units, bmp_ids, keys, key_ids = borrow(units), borrow(bmp_ids), borrow(keys), borrow(key_ids)
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
    char_at_owner, char_id_owner = np.empty(row_size, np.int32), np.empty(row_size, np.int32)
    score, route, value = borrow(score_owner), borrow(route_owner), borrow(value_owner)
    char_at, char_id = borrow(char_at_owner), borrow(char_id_owner)
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
            char_at_owner, char_id_owner = np.empty(row_size, np.int32), np.empty(row_size, np.int32)
            score, route, value = borrow(score_owner), borrow(route_owner), borrow(value_owner)
            char_at, char_id = borrow(char_at_owner), borrow(char_id_owner)
        if n_ids + n > ids.size:  # a row gives at most one id per byte
            grown = max(2 * ids.size, n_ids + n)
            ids_owner = _grown(ids_owner, grown, n_ids)
            if with_spans:
                starts_owner, ends_owner = _grown(starts_owner, grown, n_ids), _grown(ends_owner, grown, n_ids)
            ids, starts, ends = borrow(ids_owner), borrow(starts_owner), borrow(ends_owner)
        count = _solve_row(text, at, n, well_formed, units, bmp_ids, keys, key_ids, weights, unk_score, score,
                           route, value, char_at, char_id)
        # the path backward: each token's start boundary is route[its end]; reverse the chain in
        # place over score's slots (free now) as end boundaries, then emit forward
        k = count
        tokens = 0
        while k > 0:
            score[tokens] = k  # token ends, last first (exact in float64)
            tokens += 1
            k = route[k]
        row_first = n_ids
        previous_unknown = False
        for j in range(tokens - 1, -1, -1):
            e_char = np.int64(score[j])
            s, e = char_at[route[e_char]], char_at[e_char]
            v = value[e_char]
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
    keep = (text_owner.size + align_owner.size + score_owner.size + route_owner.size + value_owner.size
            + char_at_owner.size + char_id_owner.size)
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
              *trie_tables(*(np.asarray(a) for a in trie), np.asarray(weights)), c(weights, dtype=np.float64), np.float64(unk_score), np.int32(unk_id),
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
