"""CUDA launch wrappers: one module per kernel family, mirroring ``cpu_fallback``.

Each wrapper takes a kernel runtime first (``rt.xp`` for arrays, ``rt.function(family, name)``
for kernels) and then exactly the arguments of its Numba twin. The runtime is CuPy on a GPU and
the CPU emulator in the tests, so the same launch code is exercised in both places.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Protocol

import numpy as np


class KernelRuntime(Protocol):
    """What a launch wrapper needs: an array module and compiled kernels by name."""

    xp: ModuleType

    def function(self, family: str, name: str) -> Callable[..., None]: ...


# Threads per block; must equal GT_BLOCK in cuda/common.cuh.
BLOCK = 256


def blocks_for(n_items: int, items_per_block: int) -> int:
    """Number of blocks covering ``n_items`` when each block takes ``items_per_block``.

    >>> blocks_for(0, 256), blocks_for(1, 256), blocks_for(257, 256)
    (0, 1, 2)
    """
    return -(-n_items // items_per_block)


# An observer of every launch (the device check's per-kernel timing, benchmarks/device_kernels.py):
# None, the default, costs :func:`launch` one global read.
LaunchHook = Callable[[Callable[..., None], tuple, tuple, tuple, int], None]
_launch_hook: LaunchHook | None = None


def set_launch_hook(hook: LaunchHook | None) -> LaunchHook | None:
    """Make ``hook(kernel, grid, block, args, shared_mem)`` launch every kernel in place of
    :func:`launch` (it must call ``kernel(grid, block, args, shared_mem=shared_mem)`` itself, e.g.
    between two CUDA events); ``None`` removes it. Returns the hook it replaces.

    >>> seen = []
    >>> def hook(kernel, grid, block, args, shared_mem):
    ...     seen.append(grid)
    ...     kernel(grid, block, args, shared_mem=shared_mem)
    >>> previous = set_launch_hook(hook)
    >>> launch(lambda *a, **k: print("ran"), 3, ())
    ran
    >>> set_launch_hook(previous) is hook, seen
    (True, [(3, 1, 1)])
    """
    global _launch_hook
    previous, _launch_hook = _launch_hook, hook
    return previous


def launch(kernel: Callable[..., None], n_blocks: int, args: Sequence[Any], shared_mem: int = 0) -> None:
    """Launch ``kernel`` on ``n_blocks`` blocks of :data:`BLOCK` threads; nothing when 0 blocks.

    >>> launch(lambda *a, **k: print("ran"), 0, ())
    >>> launch(lambda *a, **k: print("ran", a[0]), 2, ())
    ran (2, 1, 1)
    """
    if n_blocks <= 0:
        return
    if _launch_hook is not None:
        _launch_hook(kernel, (int(n_blocks), 1, 1), (BLOCK, 1, 1), tuple(args), shared_mem)
        return
    kernel((int(n_blocks), 1, 1), (BLOCK, 1, 1), tuple(args), shared_mem=shared_mem)


def i64(value: int) -> np.int64:
    """A kernel argument of C type ``long long``.

    >>> i64(3).dtype
    dtype('int64')
    """
    return np.int64(value)
