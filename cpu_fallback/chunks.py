"""Splitting a batch into chunks of about equal work for ``prange``.

Numba hands each thread an equal share of the iterations; rows of a real batch differ in length by
orders of magnitude, so the twins loop over chunks of rows with about equal bytes instead.
No CUDA twin: the GPU kernels split work by bytes or by block themselves.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np


def chunk_bounds(sizes: np.ndarray, min_bytes: int = 1 << 18, per_thread: int = 2) -> np.ndarray:
    """Index bounds of chunks of consecutive items with about equal total ``sizes``: ``per_thread``
    per thread, each of at least ``min_bytes`` (fewer chunks where the work per chunk has a fixed
    part, or where a chunk reuses its own earlier work).

    >>> chunk_bounds(np.array([5, 5, 5, 5]), min_bytes=10).tolist()
    [0, 2, 4]
    """
    n = sizes.size
    cumulative = np.cumsum(sizes)
    total = int(cumulative[-1]) if n else 0
    count = max(1, min(n, per_thread * numba.get_num_threads(), total // min_bytes))
    inner = np.searchsorted(cumulative, np.arange(1, count) * (total / count), side="right")
    return np.unique(np.concatenate(([0], inner, [n]))).astype(np.int64)


def run_chunks(function, bounds: np.ndarray, *args) -> None:
    """``function(first, last, *args)`` for every chunk ``bounds[c]:bounds[c + 1]``, on
    ``numba.get_num_threads()`` Python threads (``function`` is jitted with ``nogil``): where a
    ``prange`` loop would do the same, its parfor costs seconds more to compile.

    >>> seen = []
    >>> run_chunks(lambda first, last, out: out.append((first, last)), np.array([0, 2, 5]), seen)
    >>> sorted(seen)
    [(0, 2), (2, 5)]
    """
    n_chunks = bounds.size - 1
    threads = min(numba.get_num_threads(), n_chunks)
    if threads <= 1:
        for c in range(n_chunks):
            function(int(bounds[c]), int(bounds[c + 1]), *args)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for done in [pool.submit(function, int(bounds[c]), int(bounds[c + 1]), *args) for c in range(n_chunks)]:
            done.result()
