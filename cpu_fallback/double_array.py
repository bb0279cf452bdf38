"""Double-array trie helpers in Numba: the step and value of ``cuda/double_array.cuh``, the prefix walk
every trie query uses, the builder, and the single-word queries. No CUDA kernel twin: the device
functions ``trie_step`` / ``trie_value`` live in ``cuda/double_array.cuh`` (same arguments plus the
array length before ``pos``); the builder runs on the host only. The layout is described in
:mod:`gpu_text.trie.double_array`.

Other Numba code (the normalizer, the segmenter's lattice, the BPE merge tables) calls
:func:`trie_step`, :func:`trie_value` and :func:`walk_prefixes` directly.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .byte_tables import grown
from .jit import JIT, inline

BLOCK_SLOTS = 256  # children of one base: base ^ byte for the 256 bytes, one aligned block
OPEN_BLOCKS = 16  # blocks whose free slots the builder still searches; older ones are closed


def arrays_of(words: list[bytes], values: list[int] | None = None) -> tuple[np.ndarray, ...]:
    """The four arrays of distinct, non-empty, NUL-free ``words`` (sorted here), for examples and tests.

    >>> [a.size for a in arrays_of([b"b", b"a"])]
    [256, 256, 256, 256]
    """
    order = sorted(range(len(words)), key=words.__getitem__)
    keys = [words[i] for i in order]
    offsets = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k) for k in keys], out=offsets[1:])
    vals = np.asarray(order if values is None else [values[i] for i in order], np.int32)
    return build_arrays(np.frombuffer(b"".join(keys), np.uint8), offsets, vals)



@inline
def trie_step(state, check, label, pos, byte):
    """The slot reached from slot ``pos`` on ``byte`` (uint8), or -1 when there is no such edge.

    Byte 0 never steps (it leads to value slots, and no word contains it). Every read is bounded
    by the array length, so corrupt arrays give wrong answers, never a read out of bounds.

    >>> state, check, label, eow = arrays_of([b"he"])
    >>> h = trie_step(state, check, label, 0, np.uint8(ord("h")))
    >>> h > 0, trie_step(state, check, label, h, np.uint8(ord("x")))
    (True, -1)
    """
    if byte == 0:
        return -1
    nxt = pos ^ np.int64(state[pos]) ^ np.int64(byte)
    # no label test: a slot whose parent is pos and that sits at base ^ byte can only be the child
    # on byte (XOR with a fixed base is one-to-one), and this is the hot loop of every query
    if nxt < 0 or nxt >= state.size or check[nxt] != pos + 1:
        return -1
    return nxt


@inline
def trie_value(state, check, label, eow, pos):
    """The value of the word ending at slot ``pos`` (a slot :func:`trie_step` returned), or -1.

    >>> state, check, label, eow = arrays_of([b"h", b"he"], [7, 8])
    >>> h = trie_step(state, check, label, 0, np.uint8(ord("h")))
    >>> trie_value(state, check, label, eow, h), trie_value(state, check, label, eow, 0)
    (7, -1)
    """
    if eow[pos] == 0:
        return -1
    slot = pos ^ np.int64(state[pos])  # base ^ 0: the child on byte 0
    if slot < 0 or slot >= state.size or check[slot] != pos + 1:
        return -1
    return np.int64(state[slot])


@inline
def walk_prefixes(state, check, label, eow, data, begin, end, ends, values, out, write):
    """Every word ``data[begin:e)`` with ``e <= end``, shortest first: when ``write``, its end ``e``
    goes to ``ends[out]`` and its value to ``values[out]``; ``out`` counts the words either way.

    Returns ``(out, e, value)`` where ``e`` and ``value`` are those of the last (longest) word, or
    ``begin`` and -1 when there is none. Count with ``write=False``, allocate, then fill.

    >>> state, check, label, eow = arrays_of([b"a", b"ab", b"abc"])
    >>> ends, values = np.zeros(3, np.int64), np.zeros(3, np.int32)
    >>> walk_prefixes(state, check, label, eow, np.frombuffer(b"xabd", np.uint8), 1, 4, ends, values, 0, True)
    (2, 3, 1)
    >>> ends[:2].tolist(), values[:2].tolist()
    ([2, 3], [0, 1])
    """
    last_end, last_value = begin, np.int64(-1)
    pos = np.int64(0)  # not a literal 0: trie_step would compile a second time for Literal[int](0)
    for i in range(begin, end):
        pos = trie_step(state, check, label, pos, data[i])
        if pos < 0:
            break
        value = trie_value(state, check, label, eow, pos)
        if value >= 0:
            if write:
                ends[out] = i + 1
                values[out] = value
            out += 1
            last_end, last_value = i + 1, value
    return out, last_end, last_value


# ------------------------------------------------------------------------------------ building


@njit(**JIT)
def _unlink(slot, head, next_free, prev_free):
    """Removes ``slot`` from the circular free list; returns the new head (-1: list empty)."""
    nxt = next_free[slot]
    if nxt == slot:
        return -1
    prv = prev_free[slot]
    next_free[prv] = nxt
    prev_free[nxt] = prv
    return nxt if head == slot else head


@njit(**JIT)
def _open_block(block, first_open, head, used, next_free, prev_free):
    """Appends the slots of ``block`` to the free list and, past :data:`OPEN_BLOCKS` open blocks,
    closes the oldest (its free slots leave the list and stay unused), so that searching the free
    list stays short. Returns the new ``(first_open, head)``."""
    for slot in range(block * BLOCK_SLOTS, (block + 1) * BLOCK_SLOTS):
        if head == -1:
            head = slot
            next_free[slot] = slot
            prev_free[slot] = slot
        else:
            tail = prev_free[head]
            next_free[tail] = slot
            prev_free[slot] = tail
            next_free[slot] = head
            prev_free[head] = slot
    if block + 1 - first_open > OPEN_BLOCKS:
        for slot in range(first_open * BLOCK_SLOTS, (first_open + 1) * BLOCK_SLOTS):
            if not used[slot]:
                head = _unlink(slot, head, next_free, prev_free)
        first_open += 1
    return first_open, head


@njit(**JIT)
def _find_base(labels, k, head, used, next_free):
    """A base whose slots ``base ^ labels[j]`` are all free, or -1.

    Each free slot ``f`` of the open blocks is tried as the home of the first child (``base = f ^
    labels[0]``), so only bases with at least one free child slot are ever tested; this is what
    the free list buys over probing bases one by one.
    """
    if head == -1:
        return -1
    f = head
    while True:
        base = f ^ labels[0]
        fits = True
        for j in range(1, k):
            if used[base ^ labels[j]]:
                fits = False
                break
        if fits:
            return base
        f = next_free[f]
        if f == head:
            return -1


@njit(**JIT)
def build_arrays(keys, key_offsets, values):
    """The four trie arrays of sorted, distinct, non-empty, NUL-free words.

    Iterative depth-first walk over ranges of the sorted word list: the words ``[lo, hi)`` share
    their first ``depth`` bytes and that prefix is the slot ``pos``. Its children are the distinct
    bytes at ``depth`` (one sub-range each) plus byte 0 when the prefix itself is a word (then it
    is ``keys[lo]``, the shortest).
    """
    n_words = key_offsets.size - 1
    # Room for every node (at most one per byte, one value slot per word) plus slack; grown on need.
    capacity = ((keys.size + n_words) // BLOCK_SLOTS + OPEN_BLOCKS + 1) * BLOCK_SLOTS
    state = np.zeros(capacity, np.int32)
    check = np.zeros(capacity, np.int32)
    label = np.zeros(capacity, np.uint8)
    eow = np.zeros(capacity, np.uint8)
    used = np.zeros(capacity, np.uint8)
    next_free = np.zeros(capacity, np.int32)
    prev_free = np.zeros(capacity, np.int32)
    # typed values, not literals: a literal argument would compile the callee once more for it
    zero, none = np.int64(0), np.int64(-1)
    first_open, head = _open_block(zero, zero, none, used, next_free, prev_free)
    n_blocks = np.int64(1)
    used[0] = 1  # the root
    head = _unlink(zero, head, next_free, prev_free)

    labels = np.zeros(257, np.int64)
    child_lo = np.zeros(258, np.int64)
    # Pending nodes hold disjoint non-empty word ranges, so there are never more than n_words.
    stack_pos = np.zeros(n_words + 1, np.int64)
    stack_lo = np.zeros(n_words + 1, np.int64)
    stack_hi = np.zeros(n_words + 1, np.int64)
    stack_depth = np.zeros(n_words + 1, np.int64)
    top = 0
    if n_words > 0:
        stack_hi[0] = n_words
        top = 1
    while top > 0:
        top -= 1
        pos, lo, hi, depth = stack_pos[top], stack_lo[top], stack_hi[top], stack_depth[top]
        k = 0
        has_word = key_offsets[lo + 1] - key_offsets[lo] == depth
        if has_word:
            labels[0] = 0
            child_lo[0] = lo
            k = 1
        i = lo + 1 if has_word else lo
        while i < hi:
            byte = keys[key_offsets[i] + depth]
            labels[k] = byte
            child_lo[k] = i
            k += 1
            i += 1
            while i < hi and keys[key_offsets[i] + depth] == byte:
                i += 1
        child_lo[k] = hi

        base = _find_base(labels, k, head, used, next_free)
        if base < 0:  # nothing fits in the open blocks: the node takes a fresh block
            if (n_blocks + 1) * BLOCK_SLOTS > capacity:
                if capacity >= 2**31 - BLOCK_SLOTS:
                    raise ValueError("the dictionary needs more than 2**31 trie slots")
                capacity = min(capacity * 2, 2**31 - BLOCK_SLOTS)
                state = grown(state, capacity)
                check = grown(check, capacity)
                label = grown(label, capacity)
                eow = grown(eow, capacity)
                used = grown(used, capacity)
                next_free = grown(next_free, capacity)
                prev_free = grown(prev_free, capacity)
            first_open, head = _open_block(n_blocks, first_open, head, used, next_free, prev_free)
            base = n_blocks * BLOCK_SLOTS
            n_blocks += 1

        state[pos] = pos ^ base
        for j in range(k):
            slot = base ^ labels[j]
            used[slot] = 1
            head = _unlink(slot, head, next_free, prev_free)
            check[slot] = pos + 1
            label[slot] = labels[j]
        if has_word:
            eow[pos] = 1
            state[base] = values[lo]
        # Children go on the stack largest byte first, so the walk continues in byte order.
        for j in range(k - 1, 0 if has_word else -1, -1):
            stack_pos[top] = base ^ labels[j]
            stack_lo[top] = child_lo[j]
            stack_hi[top] = child_lo[j + 1]
            stack_depth[top] = depth + 1
            top += 1
    size = n_blocks * BLOCK_SLOTS
    return state[:size].copy(), check[:size].copy(), label[:size].copy(), eow[:size].copy()


# ------------------------------------------------------------------------------ single queries


@njit(**JIT)
def prefix_words(state, check, label, eow, text):
    """(lengths, values) of the words that are prefixes of ``text``, shortest first."""
    none = np.zeros(0, np.int64)
    n, _, _ = walk_prefixes(state, check, label, eow, text, 0, text.size, none, none, 0, False)
    lengths = np.zeros(n, np.int64)
    values = np.zeros(n, np.int64)
    walk_prefixes(state, check, label, eow, text, 0, text.size, lengths, values, 0, True)
    return lengths, values


@njit(**JIT)
def words_under(state, check, label, eow, prefix):
    """Every word starting with ``prefix``, in byte order: (suffix bytes, suffix offsets, values).

    Depth-first from the prefix's slot, the slot's own word first and then its children by
    increasing byte; ``path`` holds the bytes from the prefix slot down to the slot being visited.
    """
    pos = np.int64(0)
    for i in range(prefix.size):
        pos = trie_step(state, check, label, pos, prefix[i])
        if pos < 0:
            return np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.int64)
    stack_pos = np.zeros(64, np.int64)
    stack_depth = np.zeros(64, np.int64)
    stack_pos[0] = pos
    top = 1
    path = np.zeros(16, np.uint8)
    suffixes = np.zeros(64, np.uint8)
    offsets = np.zeros(17, np.int64)
    values = np.zeros(16, np.int64)
    n = 0
    while top > 0:
        top -= 1
        pos, depth = stack_pos[top], stack_depth[top]
        if depth > 0:
            if depth > path.size:
                path = grown(path, 2 * depth)
            path[depth - 1] = label[pos]
        value = trie_value(state, check, label, eow, pos)
        if value >= 0:
            if n == values.size:
                values = grown(values, 2 * n)
                offsets = grown(offsets, 2 * n + 1)
            if offsets[n] + depth > suffixes.size:
                suffixes = grown(suffixes, 2 * (offsets[n] + depth))
            suffixes[offsets[n]:offsets[n] + depth] = path[:depth]
            offsets[n + 1] = offsets[n] + depth
            values[n] = value
            n += 1
        if top + 256 > stack_pos.size:
            stack_pos = grown(stack_pos, 2 * (top + 256))
            stack_depth = grown(stack_depth, 2 * (top + 256))
        for byte in range(255, 0, -1):  # pushed largest first: visited in byte order
            child = trie_step(state, check, label, pos, np.uint8(byte))
            if child >= 0:
                stack_pos[top] = child
                stack_depth[top] = depth + 1
                top += 1
    return suffixes[:offsets[n]], offsets[:n + 1], values[:n]
