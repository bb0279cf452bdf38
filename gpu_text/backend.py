"""The one dispatch point: which backend runs an operation, and where its kernels come from.

A backend is ``"cuda"`` (CuPy + kernels compiled from ``cuda/*.cu`` with NVRTC) or ``"cpu"``
(Numba twins in ``cpu_fallback/``). ``"auto"`` picks CUDA when CuPy imports and a device is
present, else CPU. The default comes from the ``GPU_TEXT_BACKEND`` environment variable.

Public operations call :func:`get_backend` once and then ``backend.op(family, name)``; they never
branch on the backend themselves. Both kinds of op take and return arrays of ``backend.xp``.
"""
from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, Protocol

BACKEND_NAMES = ("auto", "cuda", "cpu")
ENV_VAR = "GPU_TEXT_BACKEND"


class BackendUnavailable(RuntimeError):
    """Raised when the CUDA backend is requested but cannot run here; the message says why."""


class KernelRuntime(Protocol):
    """What a CUDA launch wrapper needs: an array module and compiled kernels by name."""

    xp: ModuleType

    def function(self, family: str, name: str) -> Callable[..., None]: ...


class Backend:
    """A resolved backend: its array module and its kernel twins.

    >>> cpu = get_backend("cpu")
    >>> cpu.name, cpu.xp.__name__
    ('cpu', 'numpy')
    """

    def __init__(self, name: str, xp: ModuleType, runtime: KernelRuntime | None = None) -> None:
        self.name = name
        self.xp = xp
        self.runtime = runtime

    def __repr__(self) -> str:
        return f"Backend({self.name!r})"

    def op(self, family: str, name: str) -> Callable[..., Any]:
        """The kernel twin ``name`` of ``family`` with the CUDA runtime bound, if any.

        >>> get_backend("cpu").op("utf8", "utf8_string_stats").__module__
        'cpu_fallback.utf8'
        """
        if self.runtime is None:
            return getattr(importlib.import_module(f"cpu_fallback.{family}"), name)
        launcher = getattr(importlib.import_module(f"gpu_text.cuda_ops.{family}"), name)
        return functools.partial(launcher, self.runtime)

    def asarray(self, array: Any) -> Any:
        """``array`` on this backend's device (no copy when it is already there).

        >>> get_backend("cpu").asarray([1, 2]).tolist()
        [1, 2]
        """
        if self.xp.__name__ == "numpy" and hasattr(array, "get"):
            return array.get()
        return self.xp.asarray(array)


def is_device_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is CuPy's out-of-memory error (recognised by name: CuPy is optional).

    >>> class OutOfMemoryError(Exception): ...
    >>> is_device_out_of_memory(OutOfMemoryError()), is_device_out_of_memory(ValueError())
    (True, False)
    """
    return type(error).__name__ == "OutOfMemoryError"


def cuda_unavailable_reason() -> str | None:
    """Why the CUDA backend cannot run here, or ``None`` when it can.

    >>> isinstance(cuda_unavailable_reason(), (str, type(None)))
    True
    """
    return _probe_cuda()


@functools.lru_cache(maxsize=1)
def _probe_cuda() -> str | None:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install raising at import
        return f"CuPy is not importable ({exc}); install gpu_text[cuda12] or gpu_text[cuda13]"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"CuPy imports but no CUDA device is usable ({exc})"
    if count == 0:
        return "CuPy imports but no CUDA device is present"
    return None


@functools.lru_cache(maxsize=1)
def _cuda_backend() -> Backend:
    import cupy

    from gpu_text.cuda_runtime import CupyRuntime

    return Backend("cuda", cupy, CupyRuntime())


_CPU_BACKEND: Backend | None = None


def _cpu_backend() -> Backend:
    global _CPU_BACKEND
    if _CPU_BACKEND is None:
        import numpy

        _CPU_BACKEND = Backend("cpu", numpy)
    return _CPU_BACKEND


def get_backend(backend: str | Backend | None = None) -> Backend:
    """Resolve ``"auto" | "cuda" | "cpu"`` (or ``None``: ``$GPU_TEXT_BACKEND``, else auto).

    >>> get_backend("cpu").name
    'cpu'
    >>> get_backend("tpu")
    Traceback (most recent call last):
    ...
    ValueError: backend must be one of 'auto', 'cuda', 'cpu' (got 'tpu')
    """
    if isinstance(backend, Backend):
        return backend
    name = backend if backend is not None else os.environ.get(ENV_VAR, "auto")
    name = name.strip().lower()
    if name not in BACKEND_NAMES:
        raise ValueError(f"backend must be one of 'auto', 'cuda', 'cpu' (got {name!r})")
    if name == "cpu":
        return _cpu_backend()
    reason = cuda_unavailable_reason()
    if name == "cuda":
        if reason is not None:
            raise BackendUnavailable(f"backend='cuda' was requested but {reason}")
        return _cuda_backend()
    return _cpu_backend() if reason is not None else _cuda_backend()
