"""Numba twin of ``cuda/lattice_tokens.cu``: a lattice model's encoding after the normalizer (and
the pre-tokenizer's marks), as ``gpu_text/cuda_ops/lattice_tokens.py`` runs it on the device.

The spans are the rows, or one per marked byte (each pre-token); the trie's prefix search gives
their edges, :func:`cpu_fallback.lattice.lattice_viterbi` their best paths, and every token of
the paths becomes its ids (:func:`path_ids`): an edge its value; a fallback character the piece
it spells in the ``lookup`` trie else its bytes' ids (``LOOKUP``, BytePiece), its bytes' ids
(``BYTE_FALLBACK``), or, with ``MERGE`` (Unigram without byte fallback), one unknown id per run of
them within a span, spanning the run.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .double_array import trie_step, trie_value
from .jit import JIT
from .lattice import lattice_viterbi
from .pre_tokenizer import SYMBOL_MARK  # a user symbol's mark: its span is one id, the piece it spells
from .trie import trie_prefix_search

LOOKUP, MERGE, BYTE_FALLBACK = 0, 1, 2
"""How a fallback character (a token that is no edge) becomes ids (``cuda/lattice_tokens.cu``'s finish)."""
BYTES, MERGED = -1, -2
"""Kinds of tokens that are not one id: one id per byte; none (the unknown id before it spans it)."""


@njit(**JIT)
def _spelled(data, begin, end, state, check, label, eow):
    """The value of the word ``data[begin:end]`` in the trie, or -1."""
    pos = np.int64(0)
    b = begin
    while b < end and pos >= 0:
        pos = trie_step(state, check, label, pos, data[b])
        b += 1
    return trie_value(state, check, label, eow, pos) if pos >= 0 else -1


@njit(**JIT)
def _kinds(data, token_offsets, starts, ends, values, finish, unk_id, symbol_spans, span_ends, state, check, label,
           eow):
    """Each token's kind (an id, :data:`BYTES` or :data:`MERGED`) and the offset of its first id; a
    span with ``symbol_spans`` set is one id, the piece it spells (its first token's kind, the
    others :data:`MERGED`; its bytes' ids when it spells none)."""
    n = values.size
    kinds = np.empty(n, np.int32)
    id_offsets = np.zeros(n + 1, np.int64)
    span = 0
    for t in range(n):
        while token_offsets[span + 1] <= t:  # the span holding token t (empty spans skipped)
            span += 1
        kind = values[t]
        if symbol_spans[span]:  # a span that spells no piece: its bytes' ids
            spelled = _spelled(data, starts[token_offsets[span]], span_ends[span], state, check, label, eow)
            kind = BYTES if spelled < 0 else (spelled if t == token_offsets[span] else MERGED)
        elif kind < 0 and finish == LOOKUP:
            kind = _spelled(data, starts[t], ends[t], state, check, label, eow)
            if kind < 0:
                kind = BYTES
        elif kind < 0 and finish == MERGE:
            kind = MERGED if t > token_offsets[span] and values[t - 1] < 0 else unk_id
        elif kind < 0:
            kind = BYTES
        kinds[t] = kind
        count = 1 if kind >= 0 else (ends[t] - starts[t] if kind == BYTES else 0)
        id_offsets[t + 1] = id_offsets[t] + count
    return kinds, id_offsets


@njit(**JIT)
def _write(data, starts, ends, kinds, id_offsets, byte_ids, ids, id_starts, id_ends):
    n = kinds.size
    for t in range(n):
        kind = kinds[t]
        out = id_offsets[t]
        run_goes_on = t + 1 < n and kinds[t + 1] == MERGED
        if kind >= 0:
            ids[out] = kind
            id_starts[out] = starts[t]
            if not run_goes_on:
                id_ends[out] = ends[t]
        elif kind == BYTES:
            for b in range(starts[t], ends[t]):
                ids[out + b - starts[t]] = byte_ids[data[b]]
                id_starts[out + b - starts[t]] = b
                id_ends[out + b - starts[t]] = b + 1
        elif not run_goes_on:
            id_ends[out - 1] = ends[t]


def path_ids(data: np.ndarray, token_offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray, values: np.ndarray,
             finish: int, unk_id: int, byte_ids: np.ndarray, lookup: tuple[np.ndarray, ...],
             symbol_spans: np.ndarray | None = None, span_ends: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ids, their starts and ends, and the offset of every token's first id (n_tokens + 1) of the
    lattice's paths (``lattice_viterbi``'s tokens, ``token_offsets`` per span), as ``finish`` says;
    each span with ``symbol_spans`` set (a user symbol's; ``span_ends``: each span's end) is one id,
    the piece of ``lookup`` it spells (its bytes' ids when none does).

    >>> data = np.frombuffer(b"ab", np.uint8)
    >>> none = (np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.uint8), np.zeros(1, np.uint8))
    >>> out = path_ids(data, np.array([0, 2]), np.array([0, 1]), np.array([1, 2]), np.array([-1, -1], np.int32),
    ...                MERGE, 0, np.zeros(256, np.int32), none)
    >>> [a.tolist() for a in out]
    [[0], [0], [2], [0, 1, 1]]
    """
    n_spans = token_offsets.size - 1
    if symbol_spans is None:
        symbol_spans, span_ends = np.zeros(n_spans, np.bool_), np.zeros(n_spans, np.int64)
    kinds, id_offsets = _kinds(data, token_offsets, starts, ends, values, np.int64(finish), np.int32(unk_id),
                               symbol_spans, span_ends, *lookup)
    total = int(id_offsets[-1])
    ids, id_starts, id_ends = np.empty(total, np.int32), np.empty(total, np.int64), np.empty(total, np.int64)
    _write(data, starts, ends, kinds, id_offsets, byte_ids, ids, id_starts, id_ends)
    return ids, id_starts, id_ends, id_offsets


def lattice_encode(data: np.ndarray, offsets: np.ndarray, marks: np.ndarray | None, trie: tuple[np.ndarray, ...],
                   weights: np.ndarray, fallback_weight: float, max_edges_per_start: int, mode: int, finish: int,
                   unk_id: int, byte_ids: np.ndarray, lookup: tuple[np.ndarray, ...]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ids (int32), their byte spans in ``data`` (int64) and each row's first id (n_rows + 1) of
    the normalized rows, each row one span or one span per pre-token of ``marks``, a user symbol's
    (:data:`SYMBOL_MARK`) one id (see ``gpu_text.cuda_ops.lattice_tokens.lattice_encode``).

    >>> from cpu_fallback.double_array import arrays_of
    >>> trie = arrays_of([b"ab", b"a"], [2, 1])
    >>> data, offsets = np.frombuffer(b"abcab", np.uint8), np.array([0, 3, 3, 5])
    >>> ids, starts, ends, rows = lattice_encode(data, offsets, None, trie, np.array([0.0, -1.0, -1.0]), -10.0, 0,
    ...                                          3, MERGE, 0, np.zeros(256, np.int32), trie)
    >>> ids.tolist(), rows.tolist()
    ([2, 0, 2], [0, 2, 2, 3])
    """
    data = np.ascontiguousarray(data, np.uint8)
    offsets = np.asarray(offsets, np.int64)
    if marks is None:
        bounds, first_spans = offsets, np.arange(offsets.size, dtype=np.int64)
    else:
        bounds = np.append(np.flatnonzero(marks).astype(np.int64), np.int64(data.size))
        first_spans = np.searchsorted(bounds, offsets)  # each row's first pre-token (empty rows: the next's)
    span_starts, span_ends = bounds[:-1], bounds[1:]
    edges = trie_prefix_search(*trie, data, span_starts, span_ends)
    starts, ends, values, token_offsets = lattice_viterbi(data, span_starts, span_ends, *edges, weights,
                                                          fallback_weight, max_edges_per_start, mode)
    symbol_spans = None if marks is None else marks[span_starts] == SYMBOL_MARK
    ids, id_starts, id_ends, id_offsets = path_ids(data, token_offsets, starts, ends, values, finish, unk_id,
                                                   np.asarray(byte_ids, np.int32), lookup, symbol_spans, span_ends)
    return ids, id_starts, id_ends, id_offsets[token_offsets[first_spans]]
