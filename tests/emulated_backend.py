"""A ``Backend`` that runs the real CUDA launch wrappers on the CPU emulator.

``gpu_text.cuda_ops`` launch code + unchanged ``cuda/*.cu`` kernels built with g++ against
``tests/cuda_emulator/cuda_emu.h``; arrays are numpy. Public operations accept it as ``backend=``.

:func:`counting_emulated_backend` is the same backend with "device" arrays whose kernel launches,
array operations, syncs and uploads are counted (``tests/cuda_emulator/device_counts.py``).
"""
from __future__ import annotations

import functools

import numpy as np

from gpu_text.backend import Backend
from gpu_text.kernel_sources import kernel_source_dir, kernel_source_path
from tests.cuda_emulator.device_counts import CountingRuntime, device_xp
from tests.cuda_emulator.emulator import EmulatedModule


class EmulatedRuntime:
    """Kernel runtime with numpy arrays and emulated kernels (built once per family)."""

    xp = np

    @functools.lru_cache(maxsize=None)
    def module(self, family: str) -> EmulatedModule:
        return EmulatedModule(str(kernel_source_path(family)), include_dirs=[str(kernel_source_dir())])

    def function(self, family: str, name: str):
        return self.module(family).get_function(name)


@functools.lru_cache(maxsize=1)
def emulated_backend() -> Backend:
    return Backend("cuda-emulated", np, EmulatedRuntime())


@functools.lru_cache(maxsize=1)
def counting_emulated_backend() -> Backend:
    """The emulated backend with counted device arrays (use ``device_counts.measure()`` to read the counts)."""
    return Backend("cuda-emulated-counting", device_xp, CountingRuntime(emulated_backend().runtime))
