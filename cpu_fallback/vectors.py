"""In-place vector updates for the CRF optimiser on the CPU, one pass over memory each. No CUDA twin:
on the GPU the optimiser uses CuPy's own array expressions.

A training vector holds millions of weights, so L-BFGS's two-loop recursion is bound by memory
traffic: as separate numpy expressions each ``q -= a * y`` and ``s @ q`` reads the vectors again
and allocates a temporary. Here the update of ``q`` and the next dot product share one parallel
pass. Sums are taken over a fixed number of blocks and then added in order, so the result does
not depend on the number of threads.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jit import JIT

BLOCKS = 64


@njit(inline="always", **JIT)
def _in_order(partial):
    total = 0.0
    for b in range(BLOCKS):
        total += partial[b]
    return total


@njit(parallel=True, **JIT)
def update_dot(q, scale, a, y, s):
    """``q = scale * (q + a * y)`` in place, then return ``s · q``.

    >>> q = np.array([1.0, 2.0, 3.0])
    >>> update_dot(q, 2.0, 1.0, np.ones(3), np.array([1.0, 0.0, 0.0])), q.tolist()
    (4.0, [4.0, 6.0, 8.0])
    """
    n = q.size
    partial = np.zeros(BLOCKS)
    for b in prange(BLOCKS):
        acc = 0.0
        for i in range(b * n // BLOCKS, (b + 1) * n // BLOCKS):
            v = scale * (q[i] + a * y[i])
            q[i] = v
            acc += s[i] * v
        partial[b] = acc
    return _in_order(partial)


@njit(parallel=True, **JIT)
def dot(a, b):
    """``a · b`` (block sums added in order).

    >>> dot(np.arange(4.0), np.ones(4))
    6.0
    """
    partial = np.zeros(BLOCKS)
    for k in prange(BLOCKS):
        acc = 0.0
        for i in range(k * a.size // BLOCKS, (k + 1) * a.size // BLOCKS):
            acc += a[i] * b[i]
        partial[k] = acc
    return _in_order(partial)


@njit(parallel=True, **JIT)
def combine(out, a, x, b, y):
    """``out = a * x + b * y`` in place (``out`` may be ``x`` or ``y``).

    >>> out = np.zeros(2)
    >>> combine(out, 1.0, np.ones(2), 3.0, np.array([1.0, 2.0])).tolist()
    [4.0, 7.0]
    """
    for i in prange(out.size):
        out[i] = a * x[i] + b * y[i]
    return out
