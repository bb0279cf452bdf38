"""Launch wrappers of ``cuda/lattice.cu``; the Numba twins are in ``cpu_fallback/lattice.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch


def lattice_viterbi(rt: KernelRuntime, data: Any, span_starts: Any, span_ends: Any, edge_starts: Any,
                    edge_ends: Any, edge_values: Any, span_edge_offsets: Any, weights: Any, fallback_weight: float,
                    max_edges_per_start: int, mode: int = 0) -> tuple[Any, Any, Any, Any]:
    """Best path of every span: token starts, ends (int64), values (int32, -1: fallback character)
    and each span's token offsets (int64, n_spans + 1); ``mode`` as in ``cpu_fallback.lattice``."""
    xp = rt.xp
    n = span_starts.size
    scratch_offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(span_ends - span_starts + 1, out=scratch_offsets[1:])
    size = int(scratch_offsets[-1])
    score, route, value = xp.empty(size, xp.float64), xp.empty(size, xp.int64), xp.empty(size, xp.int32)
    counts = xp.zeros(n, xp.int64)
    weights = xp.ascontiguousarray(weights, dtype=xp.float64)
    if weights.size == 0:  # a kernel argument must point somewhere; no edge reads it
        weights = xp.zeros(1, xp.float64)
    launch(rt.function("lattice", "lattice_route"), blocks_for(n, BLOCK),
           (data, span_starts, span_ends, i64(n), edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
            np.float64(fallback_weight), i64(max_edges_per_start), i64(mode), scratch_offsets, score, route, value, counts))
    token_offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(counts, out=token_offsets[1:])
    total = int(token_offsets[-1])
    starts, ends, values = xp.empty(total, xp.int64), xp.empty(total, xp.int64), xp.empty(total, xp.int32)
    launch(rt.function("lattice", "lattice_emit"), blocks_for(n, BLOCK),
           (span_starts, span_ends, i64(n), scratch_offsets, route, value, token_offsets, starts, ends, values))
    return starts, ends, values, token_offsets
