"""Numba twins of ``cuda/ngram_count.cu``: the keys of the byte n-grams inside pre-tokens.

``ngram_keys``: for every byte, the key of the n-gram starting there (``n << 8n | the n bytes
big-endian``), 0 where it would cross the end of its pre-token (or outside every pre-token). The
keys of each length sort apart; sorting and counting them gives BytePiece training's n-gram table.
``byte_viterbi_starts``: pass 2's 6-state byte Viterbi over each pre-token (from
:mod:`cpu_fallback.bytepiece_trainer`), 1 where each piece of the best path starts.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jit import JIT


@njit(parallel=True, **JIT)
def ngram_keys(data, starts, ends, n):
    """Per byte, the key of the n-gram starting there inside its pre-token, else 0."""
    keys = np.zeros(data.size, np.uint64)
    for t in prange(starts.size):
        for i in range(starts[t], ends[t] - n + 1):
            key = np.uint64(n)
            for k in range(n):
                key = (key << np.uint64(8)) | np.uint64(data[i + k])
            keys[i] = key
    return keys


# the byte Viterbi of pass 2 (``byte_viterbi_starts``) is BytePiece training's Numba helper; its CUDA
# twin searches the sorted table by bisection where this one hashes it (the same lookups)
from .bytepiece_trainer import byte_viterbi_starts  # noqa: E402,F401
