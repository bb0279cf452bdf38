"""Vector passes of the CRF optimiser on the CPU, one pass over memory each. No CUDA twin: on the
GPU the optimiser uses CuPy's own array expressions.

A training vector holds millions of weights, so L-BFGS is bound by memory traffic. The optimiser
keeps its m (s, y) pairs as the rows of two matrices and works in the compact form: one pass takes
every dot product of the new gradient with the stored rows (:func:`history_dots`), one pass forms
the direction as a single linear combination of them (:func:`combine_rows`), instead of the two-loop
recursion's 2m + 2 passes. Sums are taken over a fixed number of blocks and then added in order, so
the results do not depend on the number of threads.
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


@njit(parallel=True, **JIT)
def history_dots(S, Y, rows, fresh, g):
    """Every dot product L-BFGS needs from one pass over ``g`` and the rows ``rows`` of ``S`` and
    ``Y``: a ``(5, max(k, 1))`` array (k = ``rows.size``) of ``S[r]·g``, ``Y[r]·g``, ``S[r]·Y[fresh]``,
    ``Y[r]·Y[fresh]`` for each row r of ``rows``, and ``g·g`` in ``[4, 0]``. Rows 2 and 3 are the
    Gram matrices' new column, for the row ``fresh`` just stored (zeros when ``fresh < 0``).

    >>> S, Y = np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([[1.0, 1.0], [3.0, 0.0]])
    >>> history_dots(S, Y, np.array([0, 1]), 1, np.array([2.0, 1.0])).tolist()
    [[2.0, 2.0], [3.0, 6.0], [3.0, 0.0], [3.0, 9.0], [5.0, 0.0]]
    """
    k, n = rows.size, g.size
    width = max(k, 1)  # room for g·g when the history is empty
    partial = np.zeros((BLOCKS, 5, width))
    for b in prange(BLOCKS):
        # one accumulator per dot, the element's dots side by side: 4k + 1 independent chains of
        # additions (each in element order) instead of one latency-bound chain per pass (measured:
        # a tiled version, four chains per dot and a tile's dots one after another, took twice as long)
        acc = np.zeros((5, width))
        for i in range(b * n // BLOCKS, (b + 1) * n // BLOCKS):
            gi = g[i]
            acc[4, 0] += gi * gi
            if fresh >= 0:
                yf = Y[fresh, i]
                for j in range(k):
                    s, y = S[rows[j], i], Y[rows[j], i]
                    acc[0, j] += s * gi
                    acc[1, j] += y * gi
                    acc[2, j] += s * yf
                    acc[3, j] += y * yf
            else:
                for j in range(k):
                    acc[0, j] += S[rows[j], i] * gi
                    acc[1, j] += Y[rows[j], i] * gi
        partial[b] = acc
    out = np.zeros((5, width))
    for b in range(BLOCKS):  # in order: the same sums whatever the thread count
        out += partial[b]
    return out


TILE = 2048  # elements of a block formed together in a private buffer (in the L1 cache)


@njit(parallel=True, **JIT)
def combine_rows(out, c, g, cs, cy, S, Y, rows):
    """``out = c·g + Σ_j cs[j]·S[rows[j]] + cy[j]·Y[rows[j]]`` in one pass, and return ``out · g``.
    Each tile is summed row by row in a private buffer: the compiler cannot tell ``out`` from the
    coefficients, so adding into ``out`` itself reloaded them for every element (measured on 2.4M
    weights and 5 pairs, one thread: 17 ms against 23 ms per element; the additions per element are
    in the same order either way).

    >>> S, Y, out = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]), np.zeros(2)
    >>> combine_rows(out, 2.0, np.ones(2), np.array([1.0]), np.array([-1.0]), S, Y, np.array([0])), out.tolist()
    (4.0, [3.0, 1.0])
    """
    k, n = rows.size, g.size
    partial = np.zeros(BLOCKS)
    for b in prange(BLOCKS):
        acc = 0.0
        tile = np.empty(TILE)
        hi = (b + 1) * n // BLOCKS
        for lo in range(b * n // BLOCKS, hi, TILE):
            top = min(lo + TILE, hi)
            width, g_tile, out_tile = top - lo, g[lo:top], out[lo:top]
            for i in range(width):
                tile[i] = c * g_tile[i]
            for j in range(k):
                s, y, a, e = S[rows[j], lo:top], Y[rows[j], lo:top], cs[j], cy[j]
                for i in range(width):
                    tile[i] += a * s[i] + e * y[i]
            for i in range(width):
                out_tile[i] = tile[i]
                acc += tile[i] * g_tile[i]
        partial[b] = acc
    return _in_order(partial)


@njit(parallel=True, **JIT)
def combine_norm(out, a, x, b, y):
    """``out = a * x + b * y`` in place, and return ``(out · out, count of non-zero out)`` (blocks
    added in order): the optimiser's trial point with the L2 norm and the active weights the
    training records need, so neither takes a pass of its own. A finite ``out · out`` also proves
    every weight finite.

    >>> out = np.zeros(3)
    >>> combine_norm(out, 1.0, np.ones(3), 2.0, np.array([1.0, 0.0, -0.5])), out.tolist()
    ((10.0, 2), [3.0, 1.0, 0.0])
    """
    n = out.size
    partial = np.zeros(BLOCKS)
    nonzero = np.zeros(BLOCKS, np.int64)
    for k in prange(BLOCKS):
        acc = 0.0
        count = 0
        for i in range(k * n // BLOCKS, (k + 1) * n // BLOCKS):
            v = a * x[i] + b * y[i]
            out[i] = v
            acc += v * v
            count += v != 0.0
        partial[k] = acc
        nonzero[k] = count
    return _in_order(partial), nonzero.sum()


@njit(parallel=True, **JIT)
def store_pair(s, y, xn, x, gn, g):
    """``s = xn - x`` and ``y = gn - g`` in one pass (rows of the history), and return ``s · y``.

    >>> s, y = np.zeros(2), np.zeros(2)
    >>> store_pair(s, y, np.array([1.0, 2.0]), np.zeros(2), np.array([3.0, 1.0]), np.ones(2)), s.tolist(), y.tolist()
    (2.0, [1.0, 2.0], [2.0, 0.0])
    """
    n = s.size
    partial = np.zeros(BLOCKS)
    for b in prange(BLOCKS):
        acc = 0.0
        for i in range(b * n // BLOCKS, (b + 1) * n // BLOCKS):
            si, yi = xn[i] - x[i], gn[i] - g[i]
            s[i], y[i] = si, yi
            acc += si * yi
        partial[b] = acc
    return _in_order(partial)
