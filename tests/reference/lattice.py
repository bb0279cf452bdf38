"""Slow, obvious reference of the lattice kernels (``cuda/lattice.cu``, ``cpu_fallback/lattice.py``).

A lattice over each span: a fallback edge per character (weight ``fallback_weight``) and the given
scored edges (from the trie's prefix search, ordered by start then end). The best path is found
forward, in the seed's order (PieceTokenizer's BytePieceTokenizer::Tokenize): at every character
start, its fallback edge first, then its first ``max_edges_per_start`` edges (all when 0), each
relaxing its end only on a strictly higher score (so the first of equal paths stays).

``mode`` 3 is SentencePiece Unigram's ``EncodeOptimized``: the fallback edge only at a character
where no edge of exactly that character starts (mode & 1), and the best score into each byte is a
float32 (mode & 2): every candidate is rounded to float32 before it is compared and kept.
"""
from __future__ import annotations

import math
import struct

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


def as_float32(x: float) -> float:
    """``x`` rounded to the nearest float32 (ties to even), as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0] if math.isfinite(x) else x


def solve_span(data: bytes, begin: int, end: int, edges: list[tuple[int, int, int]], weights: list[float],
               fallback_weight: float, max_edges_per_start: int, mode: int = 0) -> list[tuple[int, int, int]]:
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
        taken = by_start.get(p, [])
        if max_edges_per_start > 0:
            taken = taken[:max_edges_per_start]
        keep = as_float32 if mode & 2 else (lambda x: x)
        fallback = [(p + length, -1, keep(score[p - begin] + fallback_weight))]
        edges_here = [(e, v, keep(score[p - begin] + weights[v])) for e, v in taken]
        if mode & 1:  # after the edges, and only when none is exactly this character
            candidates = edges_here + ([] if any(e == p + length for e, _ in taken) else fallback)
        else:
            candidates = fallback + edges_here
        for e, v, new in candidates:
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
                    fallback_weight, max_edges_per_start, mode=0):
    """Best path of every span: token starts, ends (int64), values (int32, -1: fallback character)
    and each span's token offsets (int64, n_spans + 1)."""
    raw = bytes(np.asarray(data, np.uint8))
    w = [float(x) for x in np.asarray(weights, np.float64)]
    starts, ends, values, offsets = [], [], [], [0]
    for s in range(len(span_starts)):
        lo, hi = int(span_edge_offsets[s]), int(span_edge_offsets[s + 1])
        edges = [(int(edge_starts[k]), int(edge_ends[k]), int(edge_values[k])) for k in range(lo, hi)]
        for a, b, v in solve_span(raw, int(span_starts[s]), int(span_ends[s]), edges, w, float(fallback_weight),
                                  int(max_edges_per_start), int(mode)):
            starts.append(a)
            ends.append(b)
            values.append(v)
        offsets.append(len(starts))
    return (np.array(starts, np.int64), np.array(ends, np.int64), np.array(values, np.int32),
            np.array(offsets, np.int64))
