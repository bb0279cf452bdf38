"""A ``Backend`` that runs the real CUDA launch wrappers on the CPU emulator.

``gpu_text.cuda_ops`` launch code + unchanged ``cuda/*.cu`` kernels built with g++ against
``tests/cuda_emulator/cuda_emu.h``; arrays are numpy. Public operations accept it as ``backend=``.
"""
from __future__ import annotations

import functools

import numpy as np

from gpu_text.backend import Backend
from gpu_text.kernel_sources import kernel_source_dir, kernel_source_path
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
