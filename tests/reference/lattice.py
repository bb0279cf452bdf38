"""Slow, obvious reference of the lattice kernels (``cuda/lattice.cu``, ``cpu_fallback/lattice.py``).

A lattice over each span: a fallback edge per character (weight ``fallback_weight``) and the given
scored edges (from the trie's prefix search, ordered by start then end). The best path is found
forward, in the seed's order (PieceTokenizer's BytePieceTokenizer::Tokenize): at every character
start, its fallback edge first, then its first ``max_edges_per_start`` edges (all when 0), each
relaxing its end only on a strictly higher score (so the first of equal paths stays).
"""
from __future__ import annotations

import math

import numpy as np



def char_length(data: bytes, i: int, end: int) -> int:
    """Bytes of the character at ``i`` (a malformed byte is one character, as in the trie's search)."""
    for length in (1, 2, 3, 4):
        if i + length <= end:
            try:
                if len(data[i:i + length].decode("utf-8", "strict")) == 1:
                    return length
            except UnicodeDecodeError:
                pass
    return 1


def solve_span(data: bytes, begin: int, end: int, edges: list[tuple[int, int, int]], weights: list[float],
               fallback_weight: float, max_edges_per_start: int) -> list[tuple[int, int, int]]:
    """(start, end, value) tokens of one span's best path; value -1 marks a fallback character."""
    n = end - begin
    score = [-math.inf] * (n + 1)
    score[0] = 0.0
    route = [(k, -1) for k in range(n + 1)]
    by_start: dict[int, list[tuple[int, int]]] = {}
    for s, e, v in edges:
        by_start.setdefault(s, []).append((e, v))
    p = begin
    while p < end:
        length = char_length(data, p, end)
        candidates = [(p + length, -1, fallback_weight)]
        taken = by_start.get(p, [])
        if max_edges_per_start > 0:
            taken = taken[:max_edges_per_start]
        candidates += [(e, v, weights[v]) for e, v in taken]
        for e, v, w in candidates:
            new = score[p - begin] + w
            if new > score[e - begin]:
                score[e - begin] = new
                route[e - begin] = (p - begin, v)
        p += length
    tokens = []
    k = n
    while k > 0:
        start, value = route[k]
        tokens.append((begin + start, begin + k, value))
        k = start
    return tokens[::-1]


def lattice_viterbi(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
                    fallback_weight, max_edges_per_start):
    """Best path of every span: token starts, ends (int64), values (int32, -1: fallback character)
    and each span's token offsets (int64, n_spans + 1)."""
    raw = bytes(np.asarray(data, np.uint8))
    w = [float(x) for x in np.asarray(weights, np.float64)]
    starts, ends, values, offsets = [], [], [], [0]
    for s in range(len(span_starts)):
        lo, hi = int(span_edge_offsets[s]), int(span_edge_offsets[s + 1])
        edges = [(int(edge_starts[k]), int(edge_ends[k]), int(edge_values[k])) for k in range(lo, hi)]
        for a, b, v in solve_span(raw, int(span_starts[s]), int(span_ends[s]), edges, w, float(fallback_weight),
                                  int(max_edges_per_start)):
            starts.append(a)
            ends.append(b)
            values.append(v)
        offsets.append(len(starts))
    return (np.array(starts, np.int64), np.array(ends, np.int64), np.array(values, np.int32),
            np.array(offsets, np.int64))
