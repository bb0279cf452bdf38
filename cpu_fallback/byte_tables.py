"""Small pieces the CPU layer's hash tables share: the FNV-1a hash of a byte range and growing an
array. No CUDA twin: host-side building blocks of the trie builder, the BPE trainer and the
word2vec vocabulary.

>>> import numpy as np
>>> fnv1a(np.frombuffer(b"ab", np.uint8), 0, 2) == fnv1a(np.frombuffer(b"xab", np.uint8), 1, 3)
True
>>> grown(np.array([1, 2]), 4).tolist()
[1, 2, 0, 0]
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jit import JIT, inline

FNV_OFFSET = np.uint64(14695981039346656037)
FNV_PRIME = np.uint64(1099511628211)


@inline
def fnv1a(data, start, end):
    """The 64-bit FNV-1a hash of ``data[start:end]``."""
    h = FNV_OFFSET
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * FNV_PRIME
    return h


@njit(**JIT)
def grown(array, size):
    """A copy of ``array`` enlarged to ``size`` items, the new ones zero."""
    out = np.zeros(size, array.dtype)
    for i in range(array.size):  # not out[:n] = array: that one statement costs seconds to compile
        out[i] = array[i]
    return out
