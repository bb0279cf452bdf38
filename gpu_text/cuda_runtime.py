"""Compiling and caching the CUDA kernels with CuPy's RawModule (NVRTC).

The compile options live here and nowhere else: the NVRTC check in the tests compiles every ``.cu``
with :func:`nvrtc_options`, which is exactly what :class:`CupyRuntime` passes to CuPy.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from gpu_text.kernel_sources import kernel_source_dir, kernel_source_path

# C++17 is what NVRTC 12 and 13 both accept; the include path lets kernels share `common.cuh`.
NVRTC_STANDARD = "-std=c++17"
# Architectures the NVRTC check covers (CuPy itself compiles for the device it runs on).
TARGET_ARCHITECTURES = ("sm_75", "sm_80", "sm_90")


def nvrtc_options(include_dir: Path | None = None) -> tuple[str, ...]:
    """The NVRTC options every kernel is compiled with (CuPy adds ``-arch`` for the device).

    >>> nvrtc_options(Path("/k"))
    ('-std=c++17', '-I/k')
    """
    include_dir = include_dir if include_dir is not None else kernel_source_dir()
    return (NVRTC_STANDARD, f"-I{include_dir}")


def kernel_source_text(family: str) -> str:
    """The source handed to NVRTC: the ``.cu`` file plus a digest of the shared headers.

    CuPy's disk cache keys on the source text alone, so an edited ``.cuh`` would otherwise be
    served from a stale cubin; the digest comment makes the key follow the headers too.

    >>> "headers" in kernel_source_text("utf8")
    True
    """
    source = kernel_source_path(family).read_text()
    digest = hashlib.sha256()
    for header in sorted(kernel_source_dir().glob("*.cuh")):
        digest.update(header.read_bytes())
    return f"{source}\n// headers {digest.hexdigest()}\n"


class CupyRuntime:
    """Kernel modules compiled once per (device, family) and kept for the process.

    Made by :func:`gpu_text.get_backend` for ``"cuda"``; launch wrappers call :meth:`function`:

    >>> from gpu_text.backend import get_backend
    >>> get_backend("cuda").runtime.function("utf8", "utf8_decode")  # doctest: +SKIP
    <cupy._core.raw.RawKernel object at ...>
    """

    def __init__(self) -> None:
        import cupy

        self.xp: ModuleType = cupy
        self._modules: dict[tuple[int, str], Any] = {}

    def function(self, family: str, name: str) -> Callable[..., None]:
        cupy = self.xp
        key = (cupy.cuda.Device().id, family)
        module = self._modules.get(key)
        if module is None:
            module = cupy.RawModule(code=kernel_source_text(family), options=nvrtc_options(), backend="nvrtc")
            self._modules[key] = module
        return module.get_function(name)
