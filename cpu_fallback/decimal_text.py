"""Matrices of floats as text, ``%.9g`` exactly as C's printf writes it, in Numba: the LDA's
``.theta`` file holds one probability per document and topic (70 million values for 700k documents
at K = 100), which ``numpy.char.mod`` formats at about 0.4M values/s. No CUDA twin (file output).

Every value ``x = m * 2**q`` is scaled exactly: ``m * 10**s`` is formed in 128-bit integer arithmetic
and shifted right by ``-q`` with the bits shifted out deciding the rounding (half to even on an exact
tie, as glibc does), so the nine digits are the correctly rounded ones, never a float
approximation. Values this path does not cover (zero, negative, not finite, or outside
``[1e-12, 1e9)``) are marked for the caller to format another way.

>>> text, fallback = format_rows(np.array([[0.25, 1 / 3], [1e-07, 12345.678901234], [0.0, 5e-05]]))
>>> bytes(text).decode(), fallback.tolist()
('0.25 0.333333333\\n1e-07 12345.6789\\n? 5e-05\\n', [4])
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import get_num_threads, njit

from .jit import JIT

DIGITS = 9
# the widest value: "-d.dddddddde-XX" is 15 characters, plus a separator
WIDTH = 16
LOW, HIGH = 1e-12, 1e9
MASK32 = np.uint64(0xFFFFFFFF)


@njit(inline="always", **JIT)
def _times(limbs, factor):
    """``limbs`` (four 32-bit limbs in uint64s, least significant first) times ``factor`` < 2**32."""
    carry = np.uint64(0)
    for i in range(4):
        v = limbs[i] * factor + carry
        limbs[i] = v & MASK32
        carry = v >> np.uint64(32)


@njit(**JIT)
def _scaled(x, s, limbs):
    """``round_half_even(x * 10**s)``, exactly, for a double in ``[LOW, HIGH)`` and ``0 <= s <= 20``
    (the product stays below 2**120)."""
    m, q = math.frexp(x)
    mantissa = np.uint64(np.int64(math.ldexp(m, 53)))  # exact: 53 bits
    limbs[0] = mantissa & MASK32
    limbs[1] = mantissa >> np.uint64(32)
    limbs[2] = 0
    limbs[3] = 0
    while s >= 9:
        _times(limbs, np.uint64(1000000000))
        s -= 9
    _times(limbs, np.uint64(10 ** s))
    lo = limbs[0] | (limbs[1] << np.uint64(32))
    hi = limbs[2] | (limbs[3] << np.uint64(32))
    one = np.uint64(1)
    shift = 53 - q  # x * 10**s = (hi:lo) / 2**shift, and shift > 0 in range
    if shift >= 64:
        k = shift - 64
        n = hi >> np.uint64(k)
        if k >= 1:
            half = (hi >> np.uint64(k - 1)) & one
            below = (hi & ((one << np.uint64(k - 1)) - one)) != 0 or lo != 0
        else:
            half = lo >> np.uint64(63)
            below = (lo & ((one << np.uint64(63)) - one)) != 0
    else:
        n = (lo >> np.uint64(shift)) | (hi << np.uint64(64 - shift))
        half = (lo >> np.uint64(shift - 1)) & one
        below = (lo & ((one << np.uint64(shift - 1)) - one)) != 0
    if half == 1 and (below or (n & one) == 1):
        n += one
    return np.int64(n)


@njit(**JIT)
def _write(x, out, at, limbs, digits):
    """Writes ``x`` as ``%.9g`` at ``out[at:]``; returns the new end. ``limbs`` and ``digits`` are
    scratch."""
    e = int(np.floor(np.log10(x)))
    n = _scaled(x, DIGITS - 1 - e, limbs)
    # log10 can be off by one near powers of ten: fix the exponent so that n has nine digits
    if n >= 10 ** DIGITS:
        e += 1
        n = _scaled(x, DIGITS - 1 - e, limbs)
    elif n < 10 ** (DIGITS - 1):
        e -= 1
        n = _scaled(x, DIGITS - 1 - e, limbs)
    if n >= 10 ** DIGITS:  # rounding carried into a tenth digit: 999999999.5 -> 1e9
        e += 1
        n //= 10
    for i in range(DIGITS - 1, -1, -1):
        digits[i] = 48 + n % 10
        n //= 10
    used = DIGITS
    while used > 1 and digits[used - 1] == 48:
        used -= 1
    if e < -4 or e >= DIGITS:
        out[at] = digits[0]
        at += 1
        if used > 1:
            out[at] = 46
            at += 1
            for i in range(1, used):
                out[at] = digits[i]
                at += 1
        out[at] = 101
        out[at + 1] = 45 if e < 0 else 43
        at += 2
        power = abs(e)
        if power >= 100:
            out[at] = 48 + power // 100
            at += 1
        out[at] = 48 + power // 10 % 10
        out[at + 1] = 48 + power % 10
        return at + 2
    if e < 0:
        out[at] = 48
        out[at + 1] = 46
        at += 2
        for _ in range(-e - 1):
            out[at] = 48
            at += 1
        for i in range(used):
            out[at] = digits[i]
            at += 1
        return at
    for i in range(max(used, e + 1)):
        if i == e + 1:
            out[at] = 46
            at += 1
        out[at] = digits[i] if i < used else 48
        at += 1
    return at


@njit(**JIT)
def _format(values, out, fallback, first, last, at):
    """Rows ``first`` to ``last`` as text into ``out`` from ``at`` (room for the widest rows);
    returns the end."""
    cols = values.shape[1]
    limbs = np.zeros(4, np.uint64)
    digits = np.empty(DIGITS, np.uint8)
    for r in range(first, last):
        for c in range(cols):
            x = values[r, c]
            if x >= LOW and x < HIGH:
                at = _write(x, out, at, limbs, digits)
                fallback[r, c] = False
            else:
                fallback[r, c] = True
                out[at] = 63  # "?": the caller replaces it
                at += 1
            out[at] = 32 if c + 1 < cols else 10
            at += 1
    return at


def format_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (2-D) as text: ``%.9g`` numbers separated by spaces, a line per row. Returns the
    UTF-8 bytes (uint8) and the flat indices of the values written as ``?`` for the caller to
    format itself (outside ``[1e-12, 1e9)``, zero, negative, NaN or infinite); see the module
    docstring for an example. Call it on blocks of rows to bound the memory (16 bytes per value)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"format_rows takes a 2-D array, got shape {values.shape}")
    rows, cols = values.shape
    width = cols * WIDTH + 1
    out = np.empty(rows * width, np.uint8)
    fallback = np.empty((rows, cols), np.bool_)
    # runs of rows on Python threads over the nogil formatter (a prange compiled 1.2 s more), each
    # run written packed from the start of its rows' room, then the runs joined
    pieces = min(get_num_threads(), max(1, rows * cols // 65536))
    bounds = [rows * p // pieces for p in range(pieces + 1)]

    def run(p: int) -> np.ndarray:
        start = bounds[p] * width
        return out[start:_format(values, out, fallback, bounds[p], bounds[p + 1], start)]

    if pieces == 1:
        return run(0), np.flatnonzero(fallback)
    with ThreadPoolExecutor(pieces) as pool:
        return np.concatenate(list(pool.map(run, range(pieces)))), np.flatnonzero(fallback)
