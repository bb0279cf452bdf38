"""Numba twins of ``cuda/lattice.cu``: the best path through a lattice of scored edges, per span.

Each span's lattice has a fallback edge per character (weight ``fallback_weight``) and the edges
the trie's prefix search found (ordered by start, then end). The path is solved forward in the
seed's order (PieceTokenizer's BytePieceTokenizer): at each character start its fallback edge,
then its first ``max_edges_per_start`` edges (0: all), each replacing the best path into its end
only on a strictly higher score. ``mode`` flags give SentencePiece Unigram's ``EncodeOptimized``
instead: :data:`FALLBACK_IF_NO_CHAR` (the fallback edge only where no edge of exactly that
character starts, relaxed after the edges) and :data:`FLOAT32` (every path score rounded to
float32 before it is compared and kept, as SentencePiece's float scores). Work per span is
linear in its bytes plus its edges; spans run in parallel. Character starts follow :func:`cpu_fallback.utf8.sequence_at` (a malformed byte is one
character), the same starts the trie's prefix search walks.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jit import JIT
from .utf8 import sequence_at

FALLBACK_IF_NO_CHAR = 1
"""Mode flag: a character's fallback edge only where no edge of exactly that character starts."""
FLOAT32 = 2
"""Mode flag: the best score into each byte kept as float32 (SentencePiece's ``float`` scores)."""


@njit(**JIT)
def _kept(score, mode):
    """The score kept for a path: as computed, or rounded to float32."""
    if mode & FLOAT32:
        return float(np.float32(score))
    return score


@njit(**JIT)
def _solve(data, begin, end, edge_ends, edge_values, e_lo, e_hi, edge_starts, weights, fallback_weight,
           max_edges_per_start, mode, score, route, value):
    """Best path into every byte of [begin, end) (rows of length end - begin + 1); returns its token count."""
    n = end - begin
    for k in range(n + 1):
        score[k] = -np.inf
        route[k] = k
        value[k] = -1
    score[0] = 0.0
    e = e_lo
    p = begin
    while p < end:
        length, _ = sequence_at(data, p, end)
        length = max(length, 1)
        here = score[p - begin]
        stop = p + length - begin
        only_if_no_char = (mode & FALLBACK_IF_NO_CHAR) != 0
        fallback = _kept(here + fallback_weight, mode)
        if not only_if_no_char and fallback > score[stop]:
            score[stop] = fallback
            route[stop] = p - begin
            value[stop] = -1
        while e < e_hi and edge_starts[e] < p:  # edges of starts that are not character starts
            e += 1
        taken = 0
        char_edge = False
        while e < e_hi and edge_starts[e] == p:
            if max_edges_per_start <= 0 or taken < max_edges_per_start:
                to = edge_ends[e] - begin
                if to == stop:
                    char_edge = True
                new = _kept(here + weights[edge_values[e]], mode)
                if new > score[to]:
                    score[to] = new
                    route[to] = p - begin
                    value[to] = edge_values[e]
            taken += 1
            e += 1
        if only_if_no_char and not char_edge and fallback > score[stop]:
            score[stop] = fallback
            route[stop] = p - begin
            value[stop] = -1
        p += length
    count = 0
    k = n
    while k > 0:
        count += 1
        k = route[k]
    return count


@njit(parallel=True, **JIT)
def _route_spans(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
                 fallback_weight, max_edges_per_start, mode, scratch_offsets, score, route, value):
    counts = np.zeros(span_starts.size, np.int64)
    for s in prange(span_starts.size):
        a, b = scratch_offsets[s], scratch_offsets[s + 1]
        counts[s] = _solve(data, span_starts[s], span_ends[s], edge_ends, edge_values, span_edge_offsets[s],
                           span_edge_offsets[s + 1], edge_starts, weights, fallback_weight, max_edges_per_start,
                           mode, score[a:b], route[a:b], value[a:b])
    return counts


@njit(parallel=True, **JIT)
def _emit_spans(span_starts, span_ends, scratch_offsets, route, value, token_offsets, starts, ends, values):
    for s in prange(span_starts.size):
        row = scratch_offsets[s]
        k = span_ends[s] - span_starts[s]
        out = token_offsets[s + 1]
        while k > 0:  # backward from the span's end, so tokens are written from the last slot down
            out -= 1
            start = route[row + k]
            starts[out] = span_starts[s] + start
            ends[out] = span_starts[s] + k
            values[out] = value[row + k]
            k = start


def lattice_viterbi(data: np.ndarray, span_starts: np.ndarray, span_ends: np.ndarray, edge_starts: np.ndarray,
                    edge_ends: np.ndarray, edge_values: np.ndarray, span_edge_offsets: np.ndarray,
                    weights: np.ndarray, fallback_weight: float, max_edges_per_start: int, mode: int = 0
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Best path of every span: token starts, ends (int64), values (int32, -1: fallback character)
    and each span's token offsets (int64, n_spans + 1). ``mode``: 0 (BytePiece) or the flags
    :data:`FALLBACK_IF_NO_CHAR` | :data:`FLOAT32` (SentencePiece Unigram)."""
    n = span_starts.size
    scratch_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(span_ends - span_starts + 1, out=scratch_offsets[1:])
    size = int(scratch_offsets[-1])
    score, route, value = np.empty(size, np.float64), np.empty(size, np.int64), np.empty(size, np.int32)
    counts = _route_spans(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets,
                          np.asarray(weights, np.float64), np.float64(fallback_weight), np.int64(max_edges_per_start),
                          np.int64(mode), scratch_offsets, score, route, value)
    token_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=token_offsets[1:])
    total = int(token_offsets[-1])
    starts, ends, values = np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int32)
    _emit_spans(span_starts, span_ends, scratch_offsets, route, value, token_offsets, starts, ends, values)
    return starts, ends, values, token_offsets
