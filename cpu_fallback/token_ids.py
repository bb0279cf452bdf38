"""One pass over a chunk's token ids for the writers: their range, and their copy into the output
dtype with the range checked. No CUDA twin: host output (:mod:`gpu_text.outputs`).

Each replaces two or three numpy passes (``min``, ``max``, ``astype``) over a chunk's ids, which
the writer thread makes while the encoder wants both cores.
"""
from __future__ import annotations

from numba import njit

from .jit import NOREF


@njit(**NOREF)
def id_range(values):
    """The smallest and the largest id (0, -1 for none).

    >>> import numpy as np
    >>> id_range(np.array([5, -2, 9], np.int32)), id_range(np.zeros(0, np.int32))
    ((-2, 9), (0, -1))
    """
    if values.size == 0:
        return 0, -1
    low = high = values[0]
    for k in range(1, values.size):
        value = values[k]
        low = min(low, value)
        high = max(high, value)
    return low, high


@njit(**NOREF)
def narrow_ids(values, limit, out):
    """Copy ``values`` into ``out`` (uint16 or int32) while each is in ``[0, limit)``; returns the
    index of the first that is not, or -1 when all are.

    >>> import numpy as np
    >>> out = np.zeros(3, np.uint16)
    >>> narrow_ids(np.array([5, 6, 7], np.int32), 8, out), out.tolist()
    (-1, [5, 6, 7])
    >>> narrow_ids(np.array([5, 9, 7], np.int32), 8, out)
    1
    """
    bad = 0
    for k in range(values.size):
        value = values[k]
        bad |= (value < 0) | (value >= limit)  # no branch in the copy loop: it vectorises
        out[k] = value
    if not bad:
        return -1
    for k in range(values.size):
        if values[k] < 0 or values[k] >= limit:
            return k
    return -1
