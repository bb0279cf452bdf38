"""Launch wrappers of ``cuda/ngram_count.cu``; the Numba twins are in ``cpu_fallback/ngram_count.py``."""
from __future__ import annotations

from typing import Any

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch


def ngram_keys(rt: KernelRuntime, data: Any, starts: Any, ends: Any, n: int) -> Any:
    """Per byte, the key of the n-gram starting there inside its pre-token, else 0 (uint64)."""
    xp = rt.xp
    keys = xp.empty(data.size, xp.uint64)
    if data.size == 0:
        return keys
    if starts.size == 0:
        keys.fill(0)
        return keys
    launch(rt.function("ngram_count", "ngram_keys"), blocks_for(data.size, BLOCK),
           (data, i64(data.size), starts, ends, i64(starts.size), i64(n), keys))
    return keys


def byte_viterbi_starts(rt: KernelRuntime, data: Any, starts: Any, ends: Any, keys: Any, values: Any) -> Any:
    """1 at every byte where a piece of the best byte path starts (uint8); ``keys`` sorted."""
    xp = rt.xp
    piece_start = xp.zeros(data.size, xp.uint8)
    n = starts.size
    if n == 0 or data.size == 0:
        return piece_start
    scratch_offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(ends - starts, out=scratch_offsets[1:])
    size = max(int(scratch_offsets[-1]), 1)
    positions, routes = xp.empty(size, xp.int8), xp.empty(6 * size, xp.int8)
    keys = xp.ascontiguousarray(keys, dtype=xp.uint64)
    values = xp.ascontiguousarray(values, dtype=xp.float64)
    if keys.size == 0:  # a kernel argument must point somewhere; no search reads it
        keys, values = xp.zeros(1, xp.uint64), xp.full(1, -xp.inf)
        n_keys = 0
    else:
        n_keys = keys.size
    launch(rt.function("ngram_count", "byte_viterbi_starts"), blocks_for(n, BLOCK),
           (data, starts, ends, i64(n), keys, values, i64(n_keys), scratch_offsets, positions, routes, piece_start))
    return piece_start
