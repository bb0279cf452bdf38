"""The two devices of the kernel table (:mod:`benchmarks.device_kernels`): :class:`CupyApi` on a
GPU, :class:`EmulatedApi` in the dry run. Each gives the backend to run the cases on, a clock whose
marks bracket kernel launches (CUDA events; the host clock), the host-sync counter, the device's
description with its copy ceilings, and kernel attributes (none under emulation).
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

COPY_BYTES = 4 << 30
HOST_COPY_BYTES = 256 << 20


class CupyApi:
    """The GPU: CuPy's backend, CUDA events as clocks, CuPy's declared syncs as the sync count."""

    dry_run = False

    def __init__(self) -> None:
        import cupy

        from gpu_text.backend import get_backend
        from gpu_text.cuda_runtime import count_device_traffic

        self.cupy = cupy
        self.backend = get_backend("cuda")
        self._count = count_device_traffic
        try:
            with count_device_traffic() as traffic:
                int(cupy.arange(3).sum())
            # the probe's count says how CuPy counts one read (the table's syncs are in that unit)
            self.sync_counter = (f"CuPy's declared syncs (int() of a device array: {traffic.syncs})" if traffic.syncs
                                 else "none (int() of a device array declared no sync)")
        except Exception as exc:
            self.sync_counter = f"none ({type(exc).__name__}: {exc})"

    def synchronize(self) -> None:
        self.cupy.cuda.Device().synchronize()

    def mark(self) -> Any:
        event = self.cupy.cuda.Event()
        event.record()
        return event

    def elapsed(self, start: Any, end: Any) -> float:
        return self.cupy.cuda.get_elapsed_time(start, end) / 1e3

    @contextlib.contextmanager
    def counting(self) -> Iterator[Callable[[], dict[str, Any]]]:
        if not self.sync_counter.startswith("CuPy"):
            yield lambda: {"syncs": None}
            return
        with self._count() as traffic:
            yield lambda: {"syncs": traffic.syncs, "staged_uploads": traffic.uploads}

    def free_memory(self) -> None:
        self.cupy.get_default_memory_pool().free_all_blocks()
        self.cupy.get_default_pinned_memory_pool().free_all_blocks()

    def kernel_attributes(self, family: str, name: str) -> dict[str, Any]:
        attributes = self.backend.runtime.function(family, name).attributes
        return {k: int(v) for k, v in dict(attributes).items() if isinstance(v, (int, np.integer))}

    def device_info(self) -> dict[str, Any]:
        cupy, runtime = self.cupy, self.cupy.cuda.runtime
        device = cupy.cuda.Device().id
        props = runtime.getDeviceProperties(device)
        info: dict[str, Any] = {k: (v.decode(errors="replace") if isinstance(v, bytes) else v)
                                for k, v in props.items() if isinstance(v, (int, float, str, bytes))}

        def attribute(key: str, name: str, number: int) -> int | None:
            if info.get(key):
                return int(info[key])
            try:
                return int(runtime.deviceGetAttribute(getattr(runtime, name, number), device))
            except Exception:
                return None

        summary = {"name": info.get("name"),
                   "sms": attribute("multiProcessorCount", "cudaDevAttrMultiProcessorCount", 16),
                   "clock_mhz": _mhz(attribute("clockRate", "cudaDevAttrClockRate", 13)),
                   "memory_clock_mhz": _mhz(attribute("memoryClockRate", "cudaDevAttrMemoryClockRate", 36)),
                   "memory_bus_bits": attribute("memoryBusWidth", "cudaDevAttrGlobalMemoryBusWidth", 37),
                   "regs_per_sm": attribute("regsPerMultiprocessor", "cudaDevAttrMaxRegistersPerMultiprocessor", 82),
                   "threads_per_sm": attribute("maxThreadsPerMultiProcessor",
                                               "cudaDevAttrMaxThreadsPerMultiProcessor", 39),
                   "shared_per_sm": attribute("sharedMemPerMultiprocessor",
                                              "cudaDevAttrMaxSharedMemoryPerMultiprocessor", 81),
                   "compute_capability": f"{info.get('major')}.{info.get('minor')}",
                   "total_memory_gib": round(info.get("totalGlobalMem", 0) / 2**30, 1),
                   "cupy": cupy.__version__, "runtime": runtime.runtimeGetVersion(),
                   "driver": runtime.driverGetVersion(), "sync_counter": self.sync_counter}
        if summary["memory_clock_mhz"] and summary["memory_bus_bits"]:  # double data rate
            summary["theoretical_gb_per_s"] = (2 * summary["memory_clock_mhz"] * 1e6
                                               * summary["memory_bus_bits"] / 8 / 1e9)
        summary["properties"] = info
        return summary

    def copies(self, nbytes: int = COPY_BYTES, host_bytes: int = HOST_COPY_BYTES) -> dict[str, Any]:
        cupy = self.cupy
        import cupyx

        src = cupy.empty(nbytes, cupy.uint8)
        dst = cupy.empty_like(src)
        src.fill(1), dst.fill(0)
        memcpy = self._best(lambda: dst.data.copy_from_device_async(src.data, nbytes))
        words_src, words_dst = src.view(cupy.uint32), dst.view(cupy.uint32)
        kernel = self._best(lambda: cupy.copyto(words_dst, words_src))
        del src, dst, words_src, words_dst
        self.free_memory()
        device = cupy.empty(host_bytes, cupy.uint8)
        pinned = cupyx.empty_pinned(host_bytes, np.uint8)
        pageable = np.ones(host_bytes, np.uint8)
        out = {"copy_bytes": nbytes, "memcpy_s": memcpy, "ceiling_gb_per_s": nbytes / memcpy / 1e9,
               "copy_kernel_gb_per_s": nbytes / kernel / 1e9, "host_copy_bytes": host_bytes}
        for name, fn in (("h2d_pinned", lambda: device.set(pinned)), ("d2h_pinned", lambda: device.get(out=pinned)),
                         ("h2d_pageable", lambda: cupy.asarray(pageable)), ("d2h_pageable", lambda: device.get())):
            out[f"{name}_gb_per_s"] = host_bytes / self._best(fn, host=True) / 1e9
        return out

    def _best(self, fn: Callable[[], Any], repeat: int = 5, host: bool = False) -> float:
        times = []
        for _ in range(repeat):
            self.synchronize()
            if host:
                start = time.perf_counter()
                fn()
                self.synchronize()
                times.append(time.perf_counter() - start)
            else:
                a = self.mark()
                fn()
                b = self.mark()
                self.synchronize()
                times.append(self.elapsed(a, b))
        return min(times[1:])


class EmulatedApi:
    """The dry run: the counting CPU emulator, host clocks, the emulator's counts."""

    dry_run = True
    sync_counter = "the emulator's counts (tests/cuda_emulator/device_counts.py)"

    def __init__(self) -> None:
        from tests.cuda_emulator import device_counts
        from tests.emulated_backend import counting_emulated_backend

        self.backend = counting_emulated_backend()
        self._measure = device_counts.measure

    def synchronize(self) -> None:
        pass

    def mark(self) -> float:
        return time.perf_counter()

    def elapsed(self, start: float, end: float) -> float:
        return end - start

    @contextlib.contextmanager
    def counting(self) -> Iterator[Callable[[], dict[str, Any]]]:
        with self._measure() as counts:
            yield lambda: {"syncs": counts.syncs, "counted_launches": counts.launches, "array_ops": counts.array_ops,
                           "uploads": counts.uploads}

    def free_memory(self) -> None:
        pass

    def kernel_attributes(self, family: str, name: str) -> dict[str, Any]:
        return {}  # the emulator compiles with g++: no registers to report

    def device_info(self) -> dict[str, Any]:
        return {"name": "CPU emulator (dry run)", "sms": None, "clock_mhz": None, "memory_clock_mhz": None,
                "memory_bus_bits": None, "sync_counter": self.sync_counter}

    def copies(self, nbytes: int = 4 << 20, host_bytes: int = 1 << 20) -> dict[str, Any]:
        src = np.ones(nbytes, np.uint8)
        dst = np.empty_like(src)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            np.copyto(dst, src)
            times.append(time.perf_counter() - start)
        best = max(min(times), 1e-9)
        return {"copy_bytes": nbytes, "memcpy_s": best, "ceiling_gb_per_s": nbytes / best / 1e9,
                "note": "host memory copy (dry run)"}


def _mhz(khz: int | None) -> float | None:
    return khz / 1e3 if khz else None
