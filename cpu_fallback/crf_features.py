"""Numba twins of ``cuda/crf_features.cu``: a CRF's observation features computed straight from
per-position value ids (no strings), and the Viterbi fused with them.

The inputs are flat arrays (built by ``gpu_text.crf.features.FeatureEncoder``):

* ``values`` (D, n) int32: the value id of derived column ``d`` (a pattern command's column
  through its transform) at every position, -1 for a value the model never saw; ``edges`` (D, 10)
  the ids of the ten out-of-range markers (``_x-1`` … ``_x-#``, ``_x+1`` … ``_x+#``) per column;
* ``rows`` (R, 8) int64, one per pattern and kind (a ``*`` pattern has two), unigram rows first:
  ``kind (1 unigram, 2 bigram), namespace, exact, first command, command count, mode, base,
  size`` (size: a ``DENSE`` row's entries, a ``HASHED`` row's log2 of its slots), and ``commands`` (C, 3) rows ``derived column, offset, absolute``;
* the observations: a ``DENSE`` row (one command) finds its feature id at ``dense[base + value]``
  (-1 for none); a ``HASHED`` row owns the open-addressing region ``slots[base:base + 2^bits]``
  of ``(key, feature id)`` rows (key -1: empty; at least one empty per region), a key's first
  slot being ``(key * SLOT_MULTIPLIER mod 2^64) >> (64 - bits)`` and the next ones after it
  (wrapping inside the region).

A row's key is ``gpu_text.crf.patterns.combine_keys``' (exact packing, or its 64-bit hash when
the row's ``exact`` flag is 0), a command value of -1 gives no feature, and a bigram feature is
never taken at a sequence's first position. ``feature_ids`` returns the id per position and row
(-1 for none); ``segment_viterbi`` decodes every sequence with those features and returns what
``cpu_fallback.crf.viterbi`` returns for them: the emission of a position is 0 plus each found
unigram feature's weights in row order, the transition matrix 0 plus each found bigram
feature's, ties go to the lowest label.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jit import JIT
from .prefetch import prefetch

HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # combine_keys' (gpu_text.crf.patterns)
SLOT_MULTIPLIER = np.uint64(0xD6E8FEB86659FD93)
# Out-of-range markers per derived column: _x-1.._x-4, _x-#, _x+1.._x+4, _x+#.
N_EDGES = 10
# Lookup modes of a pattern row.
HASHED, DENSE = 0, 1
ROW_WIDTH = 8


@njit(**JIT)
def _sequence_ids(values, edges, rows, commands, slots, dense, n_values, n_namespaces, start, end, out):
    """Feature ids of every position of the sequence ``[start, end)`` and every row into ``out``
    (``(end - start, R)``). One function, row by row, with no calls inside: a Numba call per
    value would cost more than the value (its array arguments are reference-counted). A hashed
    row takes two passes: the keys (their first slots prefetched), then the probes, so that the
    slots' cache misses overlap (measured on People's Daily, one thread: 740 -> 500 ns a
    position with the model of benchmarks/crf_tagging.py, same ids)."""
    length = end - start
    for r in range(rows.shape[0]):
        kind, namespace, exact, first, count = rows[r, 0], rows[r, 1], rows[r, 2], rows[r, 3], rows[r, 4]
        mode, base, size = rows[r, 5], rows[r, 6], rows[r, 7]
        mask = (np.int64(1) << size) - 1 if mode == HASHED else np.int64(0)
        for local in range(length):
            if kind == 2 and local == 0:  # no transition into a sequence's first position
                out[local, r] = -1
                continue
            key = np.int64(0)
            hashed = np.uint64(namespace + 1)
            value = np.int64(0)
            for c in range(first, first + count):
                column, offset = commands[c, 0], commands[c, 1]
                if commands[c, 2]:
                    pos = offset if offset >= 0 else length + offset
                else:
                    pos = local + offset
                if pos < 0:
                    value = np.int64(edges[column, min(-pos - 1, 4)])
                elif pos >= length:
                    value = np.int64(edges[column, 5 + min(pos - length, 4)])
                else:
                    value = np.int64(values[column, start + pos])
                if value < 0:
                    break
                if exact:
                    key = key * n_values + value
                else:
                    hashed = hashed * HASH_MULTIPLIER + np.uint64(value) + np.uint64(1)
                    hashed ^= hashed >> np.uint64(29)
            if value < 0:
                out[local, r] = -1
            elif mode == DENSE:  # one command: the table by value id
                out[local, r] = dense[base + value] if value < size else np.int64(-1)
            else:  # the key for now; its slot is asked for, and probed in the second pass
                key = key * n_namespaces + namespace if exact else np.int64(hashed >> np.uint64(1))
                out[local, r] = key
                prefetch(slots, (base + np.int64((np.uint64(key) * SLOT_MULTIPLIER) >> np.uint64(64 - size))) * 2)
        if mode == DENSE:
            continue
        for local in range(length):
            key = out[local, r]
            if key < 0:
                continue
            found = np.int64(-1)
            slot = np.int64((np.uint64(key) * SLOT_MULTIPLIER) >> np.uint64(64 - size))
            while slots[base + slot, 0] != -1:  # linear probing; every region has an empty slot
                if slots[base + slot, 0] == key:
                    found = slots[base + slot, 1]
                    break
                slot = (slot + 1) & mask
            out[local, r] = found


@njit(parallel=True, **JIT)
def _feature_ids(seq_offsets, values, edges, rows, commands, slots, dense, n_values, n_namespaces, out):
    for s in prange(seq_offsets.size - 1):
        start, end = seq_offsets[s], seq_offsets[s + 1]
        _sequence_ids(values, edges, rows, commands, slots, dense, n_values, n_namespaces, start, end,
                      out[start:end])


def _checked(seq_offsets, values, edges, rows, commands, slots, dense):
    """The arguments' shapes and ranges checked (a wrong one would read out of bounds in a kernel)."""
    n = int(seq_offsets[-1]) if seq_offsets.size else 0
    if values.ndim != 2 or values.shape[1] != n or edges.shape != (values.shape[0], N_EDGES):
        raise ValueError("crf_features: values must be (columns, positions) and edges (columns, 10)")
    if rows.ndim != 2 or rows.shape[1] != ROW_WIDTH or commands.ndim != 2 or commands.shape[1] != 3:
        raise ValueError(f"crf_features: rows must be (R, {ROW_WIDTH}) and commands (C, 3)")
    if slots.ndim != 2 or slots.shape[1] != 2:
        raise ValueError("crf_features: slots must be (S, 2)")
    if commands.size and (commands[:, 0].min() < 0 or commands[:, 0].max() >= values.shape[0]):
        raise ValueError("crf_features: a command reads a column that values lacks")
    if rows.size:
        bad = ((rows[:, 3] < 0) | (rows[:, 3] + rows[:, 4] > commands.shape[0]) | (rows[:, 6] < 0)
               | ((rows[:, 5] == DENSE) & ((rows[:, 4] != 1) | (rows[:, 6] + rows[:, 7] > dense.size)))
               | ((rows[:, 5] == HASHED) & ((rows[:, 7] < 1) | (rows[:, 7] > 62)
                                            | (rows[:, 6] + (np.int64(1) << np.clip(rows[:, 7], 0, 62)) > slots.shape[0]))))
        if bad.any():
            raise ValueError(f"crf_features: row {int(np.flatnonzero(bad)[0])} is out of range")
    return n


def feature_ids(seq_offsets: np.ndarray, values: np.ndarray, edges: np.ndarray, rows: np.ndarray,
                commands: np.ndarray, slots: np.ndarray, dense: np.ndarray, n_values: int,
                n_namespaces: int) -> np.ndarray:
    """The feature id of every position and row, (n, R) int64, -1 for none (module docstring).

    >>> rows = np.array([[1, 0, 1, 0, 1, DENSE, 0, 2]]); commands = np.array([[0, 0, 0]])
    >>> feature_ids(np.array([0, 3]), np.array([[1, 0, -1]], np.int32), np.full((1, 10), -1, np.int32), rows,
    ...             commands, np.zeros((0, 2), np.int64), np.array([5, 6]), 2, 1).ravel().tolist()
    [6, 5, -1]
    """
    n = _checked(seq_offsets, values, edges, rows, commands, slots, dense)
    out = np.empty((n, rows.shape[0]), np.int64)
    _feature_ids(seq_offsets, values, edges, rows, commands, slots, dense, np.int64(n_values),
                 np.int64(n_namespaces), out)
    return out


@njit(parallel=True, **JIT)
def _segment_viterbi(unigram, bigram, seq_offsets, values, edges, rows, commands, slots, dense, n_values,
                     n_namespaces, n_u, delta, back, out, scores):
    n_labels = unigram.shape[1]
    n_rows = rows.shape[0]
    for s in prange(seq_offsets.size - 1):
        start, end = seq_offsets[s], seq_offsets[s + 1]
        if end == start:
            scores[s] = 0.0
            continue
        ids = np.empty((end - start, n_rows), np.int64)
        _sequence_ids(values, edges, rows, commands, slots, dense, n_values, n_namespaces, start, end, ids)
        trans = np.zeros((n_labels, n_labels))
        emission = np.empty(n_labels)
        for t in range(start, end):
            local = t - start
            emission[:] = 0.0
            for k in range(n_u):
                f = ids[local, k]
                if f >= 0:
                    for y in range(n_labels):
                        emission[y] += unigram[f, y]
            if t == start:
                for y in range(n_labels):
                    delta[t, y] = emission[y]
                continue
            same = local > 1
            for k in range(n_u, n_rows):
                same = same and ids[local, k] == ids[local - 1, k]
            if not same:  # the transition sum is reused while the bigram ids stay the same
                trans[:, :] = 0.0
                for k in range(n_u, n_rows):
                    f = ids[local, k]
                    if f >= 0:
                        for a in range(n_labels):
                            for b in range(n_labels):
                                trans[a, b] += bigram[f, a, b]
            for y in range(n_labels):
                best, arg = delta[t - 1, 0] + trans[0, y], 0
                for yp in range(1, n_labels):
                    v = delta[t - 1, yp] + trans[yp, y]
                    if v > best:
                        best, arg = v, yp
                delta[t, y] = best + emission[y]
                back[t, y] = arg
        y = 0
        for k in range(1, n_labels):
            if delta[end - 1, k] > delta[end - 1, y]:
                y = k
        scores[s] = delta[end - 1, y]
        for t in range(end - 1, start - 1, -1):
            out[t] = y
            y = back[t, y]


def segment_viterbi(unigram: np.ndarray, bigram: np.ndarray, seq_offsets: np.ndarray, values: np.ndarray,
                    edges: np.ndarray, rows: np.ndarray, commands: np.ndarray, slots: np.ndarray, dense: np.ndarray,
                    n_values: int, n_namespaces: int) -> tuple[np.ndarray, np.ndarray]:
    """Best label of every position (int32) and best path score of every sequence, with the
    features computed on the fly (module docstring).

    >>> rows = np.array([[1, 0, 1, 0, 1, DENSE, 0, 2]]); commands = np.array([[0, 0, 0]])
    >>> labels, scores = segment_viterbi(np.array([[1.0, 0.0], [0.0, 2.0]]), np.zeros((0, 2, 2)), np.array([0, 2]),
    ...     np.array([[1, 0]], np.int32), np.full((1, 10), -1, np.int32), rows, commands, np.zeros((0, 2), np.int64),
    ...     np.array([0, 1]), 2, 1)
    >>> labels.tolist(), scores.tolist()
    ([1, 0], [3.0])
    """
    n = _checked(seq_offsets, values, edges, rows, commands, slots, dense)
    n_u = int((rows[:, 0] == 1).sum()) if rows.size else 0
    if rows.size and (rows[:n_u, 0] != 1).any() | (rows[n_u:, 0] != 2).any():
        raise ValueError("segment_viterbi: the unigram rows must come before the bigram rows")
    n_labels = unigram.shape[1]
    if n_labels < 1:
        raise ValueError("segment_viterbi: the model needs at least one label")
    delta = np.empty((n, n_labels))
    back = np.empty((n, n_labels), np.int32)
    out = np.empty(n, np.int32)
    scores = np.empty(seq_offsets.size - 1)
    _segment_viterbi(np.ascontiguousarray(unigram, np.float64), np.ascontiguousarray(bigram, np.float64), seq_offsets,
                     values, edges, rows, commands, slots, dense, np.int64(n_values), np.int64(n_namespaces), n_u,
                     delta, back, out, scores)
    return out, scores
