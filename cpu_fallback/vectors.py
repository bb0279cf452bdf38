"""Vector passes of the CRF optimiser on the CPU, one pass over memory each. No CUDA twin: on the
GPU the optimiser uses CuPy's own array expressions.

A training vector holds millions of weights, so L-BFGS is bound by memory traffic. The optimiser
keeps its m (s, y) pairs as the rows of two matrices and works in the compact form: one pass takes
every dot product of the new gradient with the stored rows (:func:`history_dots`), one pass forms
the direction as a single linear combination of them (:func:`combine_rows`), instead of the two-loop
recursion's 2m + 2 passes. Sums are taken over a fixed number of blocks and then added in order, so
the results do not depend on the number of threads.

Each pass is a nogil kernel over a run of blocks, the runs spread over Python threads (as many as
``numba.get_num_threads()``): the same blocks as a ``prange``, without its compile (the passes took
6.5 s of CPU to compile as parallel loops, 1.5 s as these kernels).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import get_num_threads, njit

from .jit import JIT

BLOCKS = 64
TILE = 2048  # elements of a block passed over together (in the L1 cache)


def _on_threads(kernel, *args):
    """``kernel(*args, first, last)`` over blocks ``[0, BLOCKS)``, in runs of blocks on threads."""
    n = min(get_num_threads(), BLOCKS)
    if n == 1:
        kernel(*args, 0, BLOCKS)
        return
    bounds = [BLOCKS * t // n for t in range(n + 1)]
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda t: kernel(*args, bounds[t], bounds[t + 1]), range(n)))


def _in_order(partial):
    total = 0.0
    for value in partial.tolist():  # in block order: the same sum whatever the thread count
        total += value
    return total


@njit(**JIT)
def _dot_blocks(a, b, partial, first, last):
    for k in range(first, last):
        acc = 0.0
        for i in range(k * a.size // BLOCKS, (k + 1) * a.size // BLOCKS):
            acc += a[i] * b[i]
        partial[k] = acc


def dot(a, b):
    """``a · b`` (block sums added in order).

    >>> dot(np.arange(4.0), np.ones(4))
    6.0
    """
    partial = np.empty(BLOCKS)
    _on_threads(_dot_blocks, a, b, partial)
    return _in_order(partial)


@njit(**JIT)
def _combine_blocks(out, a, x, b, y, first, last):
    for i in range(first * out.size // BLOCKS, last * out.size // BLOCKS):
        out[i] = a * x[i] + b * y[i]


def combine(out, a, x, b, y):
    """``out = a * x + b * y`` in place (``out`` may be ``x`` or ``y``).

    >>> out = np.zeros(2)
    >>> combine(out, 1.0, np.ones(2), 3.0, np.array([1.0, 2.0])).tolist()
    [4.0, 7.0]
    """
    _on_threads(_combine_blocks, out, float(a), x, float(b), y)
    return out


@njit(inline="always", **JIT)
def _two_rows(S, Y, r0, r1, fresh, g, lo, top, acc, j):
    a0, a1, a2, a3 = acc[0, j], acc[1, j], acc[2, j], acc[3, j]
    b0, b1, b2, b3 = acc[0, j + 1], acc[1, j + 1], acc[2, j + 1], acc[3, j + 1]
    if fresh >= 0:
        for i in range(lo, top):
            gi, yf = g[i], Y[fresh, i]
            s, y = S[r0, i], Y[r0, i]
            a0 += s * gi
            a1 += y * gi
            a2 += s * yf
            a3 += y * yf
            s, y = S[r1, i], Y[r1, i]
            b0 += s * gi
            b1 += y * gi
            b2 += s * yf
            b3 += y * yf
    else:
        for i in range(lo, top):
            gi = g[i]
            a0 += S[r0, i] * gi
            a1 += Y[r0, i] * gi
            b0 += S[r1, i] * gi
            b1 += Y[r1, i] * gi
    acc[0, j], acc[1, j], acc[2, j], acc[3, j] = a0, a1, a2, a3
    acc[0, j + 1], acc[1, j + 1], acc[2, j + 1], acc[3, j + 1] = b0, b1, b2, b3


@njit(inline="always", **JIT)
def _one_row(S, Y, r, fresh, g, lo, top, acc, j):
    a0, a1, a2, a3 = acc[0, j], acc[1, j], acc[2, j], acc[3, j]
    if fresh >= 0:
        for i in range(lo, top):
            gi, yf = g[i], Y[fresh, i]
            s, y = S[r, i], Y[r, i]
            a0 += s * gi
            a1 += y * gi
            a2 += s * yf
            a3 += y * yf
    else:
        for i in range(lo, top):
            gi = g[i]
            a0 += S[r, i] * gi
            a1 += Y[r, i] * gi
    acc[0, j], acc[1, j], acc[2, j], acc[3, j] = a0, a1, a2, a3


@njit(**JIT)
def _history_blocks(S, Y, rows, fresh, g, partial, first, last):
    # Tiles of g (and Y[fresh]) stay in the L1 cache while the rows pass over them two at a time:
    # each dot one chain of additions in element order, in registers, eight chains side by side
    # (one row at a time, four chains, was latency-bound: 1.5x slower). Accumulators in memory,
    # every dot of an element side by side, ran 20% slower here than as a prange, whose loop body
    # Numba compiles knowing the arrays apart; this form is as fast as that one.
    k, n = rows.size, g.size
    width = partial.shape[2]
    acc = np.empty((5, width))
    for b in range(first, last):
        for r in range(5):
            for j in range(width):
                acc[r, j] = 0.0
        hi = (b + 1) * n // BLOCKS
        for lo in range(b * n // BLOCKS, hi, TILE):
            top = min(lo + TILE, hi)
            gg = acc[4, 0]
            for i in range(lo, top):
                gg += g[i] * g[i]
            acc[4, 0] = gg
            for j in range(0, k, 2):
                if j + 1 < k:
                    _two_rows(S, Y, rows[j], rows[j + 1], fresh, g, lo, top, acc, j)
                else:
                    _one_row(S, Y, rows[j], fresh, g, lo, top, acc, j)
        for r in range(5):
            for j in range(width):
                partial[b, r, j] = acc[r, j]


def history_dots(S, Y, rows, fresh, g):
    """Every dot product L-BFGS needs from one pass over ``g`` and the rows ``rows`` of ``S`` and
    ``Y``: a ``(5, max(k, 1))`` array (k = ``rows.size``) of ``S[r]·g``, ``Y[r]·g``, ``S[r]·Y[fresh]``,
    ``Y[r]·Y[fresh]`` for each row r of ``rows``, and ``g·g`` in ``[4, 0]``. Rows 2 and 3 are the
    Gram matrices' new column, for the row ``fresh`` just stored (zeros when ``fresh < 0``).

    >>> S, Y = np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([[1.0, 1.0], [3.0, 0.0]])
    >>> history_dots(S, Y, np.array([0, 1]), 1, np.array([2.0, 1.0])).tolist()
    [[2.0, 2.0], [3.0, 6.0], [3.0, 0.0], [3.0, 9.0], [5.0, 0.0]]
    """
    partial = np.empty((BLOCKS, 5, max(rows.size, 1)))  # room for g·g when the history is empty
    _on_threads(_history_blocks, S, Y, rows, int(fresh), g, partial)
    out = np.zeros(partial.shape[1:])
    for b in range(BLOCKS):  # in order: the same sums whatever the thread count
        out += partial[b]
    return out


@njit(**JIT)
def _combine_rows_blocks(out, c, g, cs, cy, S, Y, rows, partial, first, last):
    k, n = rows.size, g.size
    tile = np.empty(TILE)
    for b in range(first, last):
        acc = 0.0
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
    partial = np.empty(BLOCKS)
    _on_threads(_combine_rows_blocks, out, float(c), g, cs, cy, S, Y, rows, partial)
    return _in_order(partial)


@njit(**JIT)
def _combine_norm_blocks(out, a, x, b, y, partial, nonzero, first, last):
    n = out.size
    for k in range(first, last):
        acc = 0.0
        count = 0
        for i in range(k * n // BLOCKS, (k + 1) * n // BLOCKS):
            v = a * x[i] + b * y[i]
            out[i] = v
            acc += v * v
            count += v != 0.0
        partial[k] = acc
        nonzero[k] = count


def combine_norm(out, a, x, b, y):
    """``out = a * x + b * y`` in place, and return ``(out · out, count of non-zero out)`` (blocks
    added in order): the optimiser's trial point with the L2 norm and the active weights the
    training records need, so neither takes a pass of its own. A finite ``out · out`` also proves
    every weight finite.

    >>> out = np.zeros(3)
    >>> combine_norm(out, 1.0, np.ones(3), 2.0, np.array([1.0, 0.0, -0.5])), out.tolist()
    ((10.0, 2), [3.0, 1.0, 0.0])
    """
    partial, nonzero = np.empty(BLOCKS), np.empty(BLOCKS, np.int64)
    _on_threads(_combine_norm_blocks, out, float(a), x, float(b), y, partial, nonzero)
    return _in_order(partial), int(nonzero.sum())


@njit(**JIT)
def _store_pair_blocks(s, y, xn, x, gn, g, partial, first, last):
    n = s.size
    for b in range(first, last):
        acc = 0.0
        for i in range(b * n // BLOCKS, (b + 1) * n // BLOCKS):
            si, yi = xn[i] - x[i], gn[i] - g[i]
            s[i], y[i] = si, yi
            acc += si * yi
        partial[b] = acc


def store_pair(s, y, xn, x, gn, g):
    """``s = xn - x`` and ``y = gn - g`` in one pass (rows of the history), and return ``s · y``.

    >>> s, y = np.zeros(2), np.zeros(2)
    >>> store_pair(s, y, np.array([1.0, 2.0]), np.zeros(2), np.array([3.0, 1.0]), np.ones(2)), s.tolist(), y.tolist()
    (2.0, [1.0, 2.0], [2.0, 0.0])
    """
    partial = np.empty(BLOCKS)
    _on_threads(_store_pair_blocks, s, y, xn, x, gn, g, partial)
    return _in_order(partial)
