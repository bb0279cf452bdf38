"""The counter-based random stream every Numba sampler draws from. No CUDA twin as a family: it is
the Numba side of the header ``cuda/prng.cuh``, which the kernels include (the same values).

``draw(key, position, sub) = mix(mix(key ^ position) ^ sub)``, ``mix`` being SplitMix64's finaliser,
so a value depends on its three counters only, never on which thread computes it.

>>> hex(int(draw(np.uint64(1), 0, 0)))
'0x5e41ab087439611e'
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jit import JIT

M1 = np.uint64(0x9E3779B97F4A7C15)
M2 = np.uint64(0xBF58476D1CE4E5B9)
M3 = np.uint64(0x94D049BB133111EB)


@njit(inline="always", **JIT)
def mix(z):
    """SplitMix64's finaliser of ``z + golden gamma``."""
    z = z + M1
    z = (z ^ (z >> np.uint64(30))) * M2
    z = (z ^ (z >> np.uint64(27))) * M3
    return z ^ (z >> np.uint64(31))


@njit(inline="always", **JIT)
def draw(key, position, sub):
    """The 64 random bits of counter ``(key, position, sub)``."""
    return mix(mix(key ^ np.uint64(position)) ^ np.uint64(sub))
