"""The pieces of the canonical LDA draw that every Numba sampler shares: the uniform of token ``i``,
``(draw(key, i, 0) >> 11) * 2**-53``, and the first topic whose cumulative mass exceeds it. No CUDA
twin as a module: ``cuda/lda.cu`` has the same two (``lda_uniform`` and its searches).

>>> float(uniform(np.uint64(7), 0)) == float(uniform(np.uint64(7), 0)) < 1.0
True
>>> pick(np.array([0.2, 0.5, 1.0]), 3, 0.5)
2
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jit import JIT
from .prng import draw

# 2**-53: a 53-bit integer times this is a float64 uniform in [0, 1), exactly
UNIT = 1.0 / 9007199254740992.0


@njit(inline="always", **JIT)
def uniform(key, i):
    """The float64 uniform in [0, 1) of token ``i`` under ``key``."""
    return np.float64(draw(key, i, 0) >> np.uint64(11)) * UNIT


@njit(inline="always", **JIT)
def pick(cum, n, u):
    """First index whose cumulative mass exceeds ``u`` (``n - 1`` when rounding leaves none)."""
    for k in range(n):
        if cum[k] > u:
            return k
    return n - 1
