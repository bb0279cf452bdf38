"""Numba twins of ``cuda/trie.cu``: batched double-array trie queries, parallel over spans/strings.

Every query walks the trie with :func:`cpu_fallback.double_array.walk_prefixes`; character starts
come from walking each span forward with the UTF-8 rule of :mod:`cpu_fallback.utf8` (the same
starts the CUDA kernels find byte by byte with ``utf8_starts_char``).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .double_array import walk_prefixes
from .jit import JIT
from .utf8 import sequence_at

@njit(parallel=True, **JIT)
def _span_matches(state, check, label, eow, data, span_starts, span_ends, span_offsets, starts, ends, values, write):
    """Matches per span; stores them from ``span_offsets[s]`` on when ``write``."""
    counts = np.zeros(span_starts.size, np.int64)
    for s in prange(span_starts.size):
        i, end = span_starts[s], span_ends[s]
        out = span_offsets[s]
        while i < end:
            first = out
            out, _, _ = walk_prefixes(state, check, label, eow, data, i, end, ends, values, out, write)
            if write:
                starts[first:out] = i
            length, _ = sequence_at(data, i, end)
            i += max(length, 1)  # a malformed byte is one character (U+FFFD)
        counts[s] = out - span_offsets[s]
    return counts


def trie_prefix_search(state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray, data: np.ndarray,
                       span_starts: np.ndarray, span_ends: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every dictionary word at every character start of every span: edge starts and ends (int64
    positions in ``data``), values (int32) and each span's edge offsets (int64, n_spans + 1)."""
    span_offsets = np.zeros(span_starts.size + 1, np.int64)
    no_edges = np.zeros(0, np.int64)
    counts = _span_matches(state, check, label, eow, data, span_starts, span_ends, span_offsets,
                           no_edges, no_edges, np.zeros(0, np.int32), False)
    np.cumsum(counts, out=span_offsets[1:])
    total = int(span_offsets[-1])
    starts, ends, values = np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int32)
    _span_matches(state, check, label, eow, data, span_starts, span_ends, span_offsets, starts, ends, values, True)
    return starts, ends, values, span_offsets


@njit(parallel=True, **JIT)
def trie_lookup(state, check, label, eow, data, offsets):
    """The value (int32) of every string of a ragged batch, -1 when it is not a word."""
    n = offsets.size - 1
    values = np.full(n, -1, np.int32)
    none = np.zeros(0, np.int64)
    for s in prange(n):
        _, stop, value = walk_prefixes(state, check, label, eow, data, offsets[s], offsets[s + 1], none, none, 0, False)
        if stop == offsets[s + 1]:  # the longest prefix word is the whole string (-1 if empty)
            values[s] = value
    return values


@njit(parallel=True, **JIT)
def trie_longest_prefix(state, check, label, eow, data, offsets):
    """Per string, the byte length (int64) and value (int32) of its longest prefix word (0, -1 if none)."""
    n = offsets.size - 1
    lengths = np.zeros(n, np.int64)
    values = np.full(n, -1, np.int32)
    none = np.zeros(0, np.int64)
    for s in prange(n):
        _, stop, value = walk_prefixes(state, check, label, eow, data, offsets[s], offsets[s + 1], none, none, 0, False)
        lengths[s] = stop - offsets[s]
        values[s] = value
    return lengths, values
