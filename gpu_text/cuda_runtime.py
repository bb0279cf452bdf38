"""Compiling and caching the CUDA kernels with CuPy's RawModule (NVRTC).

The compile options live here and nowhere else: the NVRTC check in the tests compiles every ``.cu``
with :func:`nvrtc_options`, which is exactly what :class:`CupyRuntime` passes to CuPy.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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

    def lane(self, number: int) -> Any:
        """Context for compute lane ``number`` of a pipeline (:func:`gpu_text.pipeline.run_pipeline`
        with ``lanes``): its own non-blocking CUDA stream, current on the lane's thread while the
        lane runs, so that two lanes' copies and kernels overlap; made once per device and lane.
        Uploads on the lane go through the lane's pinned staging buffer (:meth:`upload`)."""
        cupy = self.xp
        key = (cupy.cuda.Device().id, number)
        streams = self.__dict__.setdefault("_streams", {})
        if key not in streams:
            streams[key] = cupy.cuda.Stream(non_blocking=True)
        return streams[key]

    def upload(self, array: Any) -> Any:
        """``array`` (host, C-contiguous) on the device through this thread's pinned staging buffer:
        one host copy into page-locked memory, then an asynchronous copy on the current stream
        (pageable memory would make the copy synchronous and serialise the lanes). The buffer is
        reused once the previous copy from it has completed (an event per buffer), never
        overwritten while the device still reads it."""
        import numpy as np

        cupy = self.xp
        array = np.ascontiguousarray(array)
        if _TRAFFIC:
            for traffic in _TRAFFIC:
                traffic.uploads += 1
                traffic.upload_bytes += int(array.nbytes)
        local = self.__dict__.setdefault("_staging", threading.local())
        staging = getattr(local, "buffer", None)
        if staging is None or staging.nbytes < array.nbytes:
            import cupyx

            if staging is not None:
                local.done.synchronize()
            staging = cupyx.empty_pinned(max(array.nbytes, 1 << 20), np.uint8)
            local.buffer, local.done = staging, None
        elif local.done is not None:
            local.done.synchronize()
        view = staging[:array.nbytes].view(array.dtype).reshape(array.shape)
        view[...] = array
        device = cupy.empty(array.shape, array.dtype)
        stream = cupy.cuda.get_current_stream()
        device.set(view, stream=stream)
        local.done = cupy.cuda.Event()
        local.done.record(stream)
        return device

    def free_bytes(self) -> int:
        """Device memory free for a new chunk: the driver's free memory plus what CuPy's pool holds
        unused (it is reused before anything new is allocated)."""
        cupy = self.xp
        free, _ = cupy.cuda.runtime.memGetInfo()
        return int(free) + int(cupy.get_default_memory_pool().free_bytes())


@dataclass
class DeviceTraffic:
    """What :func:`count_device_traffic` saw: host waits on the device (``syncs``) and the
    runtime's staged uploads (:meth:`CupyRuntime.upload`, their count and bytes)."""

    syncs: int = 0
    uploads: int = 0
    upload_bytes: int = 0


# the open count_device_traffic blocks (the upload hook: empty, the default, costs one truth test)
_TRAFFIC: list[DeviceTraffic] = []


@contextlib.contextmanager
def count_device_traffic(syncdetect: Any = None) -> Iterator[DeviceTraffic]:
    """Count, while the block runs, every time the host waits for the device, and the staged uploads.

    A wait is what CuPy declares to its synchronisation detector (``cupy._core.syncdetect``, or
    ``syncdetect`` given): every read of device memory (``ndarray.get`` and what is built on it:
    ``int()``/``float()``/``.item()``/``.tolist()`` of a device array, boolean-mask indexing and
    ``nonzero``, which read a count before allocating) and ``Device.synchronize``. Stream and event
    synchronisation are not declared by CuPy, so they are not counted. Every thread counts.

    >>> import types
    >>> detector = types.SimpleNamespace(_declare_synchronize=lambda: None)
    >>> with count_device_traffic(detector) as traffic:
    ...     detector._declare_synchronize(); detector._declare_synchronize()
    >>> traffic.syncs, detector._declare_synchronize()  # counted inside the block only
    (2, None)
    """
    if syncdetect is None:
        syncdetect = importlib.import_module("cupy._core.syncdetect")
    declare = getattr(syncdetect, "_declare_synchronize", None)
    if not callable(declare):
        raise RuntimeError(f"{syncdetect!r} has no _declare_synchronize: this CuPy does not declare its syncs")
    traffic = DeviceTraffic()

    def counting_declare(*args: Any, **kwargs: Any) -> Any:
        traffic.syncs += 1
        return declare(*args, **kwargs)

    syncdetect._declare_synchronize = counting_declare
    _TRAFFIC.append(traffic)
    try:
        yield traffic
    finally:
        _TRAFFIC.remove(traffic)
        syncdetect._declare_synchronize = declare


# device bytes a chunk needs per input byte while it is encoded (its bytes, the normalized text,
# the BPE's bound-sized token arrays and its merge scratch: ~93 per normalized byte, and news text
# grows by a few percent when normalized), an estimate used to size chunks from free memory
DEVICE_BYTES_PER_INPUT_BYTE = 100


def device_chunk_bytes(requested: int, free_bytes: int, lanes: int = 2,
                       per_byte: int = DEVICE_BYTES_PER_INPUT_BYTE) -> int:
    """The chunk size for ``lanes`` chunks encoded at once in ``free_bytes`` of device memory:
    ``requested`` when it fits, else the largest that does (at least 1 MiB; a single larger
    document still goes whole, and out-of-memory then halves it, see the encoders). Half of the
    free memory is left to the pool's fragmentation and the kernels' own scratch.

    >>> device_chunk_bytes(16 << 20, 80 << 30)  # an 80 GiB device: the requested 16 MiB
    16777216
    >>> device_chunk_bytes(16 << 20, 4 << 30) >> 20  # 4 GiB free, two lanes: 10 MiB each
    10
    """
    fits = free_bytes // 2 // max(1, lanes) // max(1, per_byte)
    return int(max(1 << 20, min(requested, fits)))
