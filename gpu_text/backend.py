"""The one dispatch point: which backend runs an operation, and where its kernels come from.

A backend is ``"cuda"`` (CuPy + kernels compiled from ``cuda/*.cu`` with NVRTC) or ``"cpu"``
(Numba twins in ``cpu_fallback/``). ``"auto"`` picks CUDA when CuPy imports and a device is
present, else CPU. The default comes from the ``GPU_TEXT_BACKEND`` environment variable.

Public operations call :func:`get_backend` once and then ``backend.op(family, name)``; they never
branch on the backend's name. Both kinds of op take and return arrays of ``backend.xp``. An
operation that only one backend has (the CPU's fused row encoder, the trainers' Numba helpers) is
asked for with :meth:`Backend.has_op`, or taken from ``get_backend("cpu")`` explicitly. This is
the only module that imports ``cpu_fallback`` or ``gpu_text.cuda_ops`` (by name, at run time).
"""
from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.kernel_sources import cpu_twin_package

if TYPE_CHECKING:
    from gpu_text.cuda_ops import KernelRuntime

BACKEND_NAMES = ("auto", "cuda", "cpu")
ENV_VAR = "GPU_TEXT_BACKEND"
# host arrays at least this large go to the device through the runtime's pinned staging buffer
STAGED_UPLOAD_BYTES = 1 << 20


class BackendUnavailable(RuntimeError):
    """Raised when the CUDA backend is requested but cannot run here; the message says why."""


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

        >>> get_backend("cpu").op("utf8", "utf8_string_stats").__module__.rsplit(".", 1)[-1]
        'utf8'
        """
        if self.runtime is None:
            return getattr(self._module(family), name)
        return functools.partial(getattr(self._module(family), name), self.runtime)

    def ops(self, family: str) -> "OpSet":
        """Every op of ``family`` as attributes (for code that calls many of one family's ops).

        >>> get_backend("cpu").ops("utf8").utf8_decode.__name__
        'utf8_decode'
        """
        return OpSet(self, family)

    def has_op(self, family: str, name: str) -> bool:
        """Whether this backend has the twin ``name`` of ``family`` (some ops exist on one side only).

        >>> get_backend("cpu").has_op("tokenizer", "encode_text"), get_backend("cpu").has_op("utf8", "nope")
        (True, False)
        """
        try:
            module = self._module(family)
        except ModuleNotFoundError:
            return False
        return callable(getattr(module, name, None))

    def _module(self, family: str) -> ModuleType:
        package = cpu_twin_package() if self.runtime is None else "gpu_text.cuda_ops"
        return importlib.import_module(f"{package}.{family}")

    def asarray(self, array: Any) -> Any:
        """``array`` on this backend's device (no copy when it is already there).

        >>> get_backend("cpu").asarray([1, 2]).tolist()
        [1, 2]
        """
        if self.xp.__name__ == "numpy":
            return to_host(array)
        upload = getattr(self.runtime, "upload", None)
        if upload is not None and isinstance(array, np.ndarray) and array.nbytes >= STAGED_UPLOAD_BYTES:
            return upload(array)  # through pinned memory, asynchronous on the current stream
        return self.xp.asarray(array)

    def compute_lanes(self) -> tuple[int, Callable[[int], Any] | None]:
        """How many chunks a bulk job computes at once on this backend, and each lane's context
        (for :func:`gpu_text.pipeline.run_pipeline`): on a GPU two lanes, each on its own CUDA
        stream, so one chunk's copies overlap another's kernels; on the CPU one (Numba's threads
        already use every core).

        >>> get_backend("cpu").compute_lanes()
        (1, None)
        """
        lane = getattr(self.runtime, "lane", None)
        return (2, lane) if lane is not None else (1, None)


class OpSet:
    """The ops of one kernel family of one backend, looked up on first use (see :meth:`Backend.ops`)."""

    def __init__(self, backend: Backend, family: str) -> None:
        self._backend, self._family = backend, family

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._backend.op(self._family, name)
        setattr(self, name, value)
        return value


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
