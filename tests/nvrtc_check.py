"""Compile every kernel family with NVRTC, as CuPy's RawModule would, with warnings as errors.

Needs no GPU: NVRTC comes from ``cuda-bindings`` + ``cuda-toolkit[nvrtc]``. The options are
``gpu_text.cuda_runtime.nvrtc_options()`` (what the runtime loader passes) plus ``-arch`` and
``-Werror=all-warnings``. Run directly for a report: ``python -m tests.nvrtc_check``.
"""
from __future__ import annotations

import functools
import re
import sys

from gpu_text.cuda_runtime import TARGET_ARCHITECTURES, kernel_source_text, nvrtc_options
from gpu_text.kernel_sources import kernel_families


class NvrtcFailure(RuntimeError):
    """A kernel did not compile; the message is NVRTC's log."""


def compile_family(family: str, arch: str) -> int:
    """Compile ``cuda/<family>.cu`` for ``arch`` and return the cubin size in bytes."""
    from cuda.bindings import nvrtc

    source = kernel_source_text(family).encode()
    err, program = nvrtc.nvrtcCreateProgram(source, f"{family}.cu".encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        options = [o.encode() for o in (*nvrtc_options(), f"-arch={arch}", "-Werror=all-warnings")]
        (err,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        # A fresh mutable buffer: NVRTC writes into it, and `b" " * 1` would be CPython's shared
        # one-byte object (overwriting it corrupts every b" " in the process).
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(program, log)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NvrtcFailure(f"{family}.cu [{arch}] failed:\n{log.decode(errors='replace').strip(chr(0) + ' ')}")
        _, cubin_size = nvrtc.nvrtcGetCUBINSize(program)
        return int(cubin_size)
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def ptxas_report(family: str, arch: str = "sm_90") -> dict[str, tuple[int, int]]:
    """``{kernel: (registers, spilled bytes)}`` of every kernel of ``cuda/<family>.cu`` from ptxas's
    ``-v`` report through NVRTC, with the loader's options. Read per entry function: the lines of a
    ``__noinline__`` device function in between belong to no kernel."""
    found = {}
    for name, block in _entry_blocks(family, arch):
        spills = re.search(r"Function properties for " + name + r"\s*\n.*?(\d+) bytes spill stores, (\d+) bytes spill loads",
                           block, re.S)
        registers = re.search(r"Used (\d+) registers", block)
        found[name] = (int(registers[1]), int(spills[1]) + int(spills[2]))
    return found


def ptxas_stack_frames(family: str, arch: str = "sm_90") -> dict[str, int]:
    """``{kernel: stack frame bytes}`` from the same report: a kernel's local memory per thread
    (its local arrays and spills; the spills alone are in :func:`ptxas_report`)."""
    found = {}
    for name, block in _entry_blocks(family, arch):
        frame = re.search(r"Function properties for " + name + r"\s*\n.*?(\d+) bytes stack frame", block, re.S)
        found[name] = int(frame[1])
    return found


def ptxas_device_functions(family: str, arch: str = "sm_90") -> dict[str, int]:
    """``{function: spilled bytes}`` of every ``__noinline__`` device function of
    ``cuda/<family>.cu`` (mangled names): ptxas reports their spills apart from any kernel's, so
    :func:`ptxas_report` alone would miss a spill moved into such a function."""
    entries = {name for name, _ in _entry_blocks(family, arch)}
    found = {}
    pattern = r"Function properties for (\S+)\s*\n.*?(\d+) bytes spill stores, (\d+) bytes spill loads"
    for name, stores, loads in re.findall(pattern, _ptxas_log(family, arch)):
        if name not in entries:  # a function reported more than once keeps its worst
            found[name] = max(found.get(name, 0), int(stores) + int(loads))
    return found


def _entry_blocks(family: str, arch: str) -> list[tuple[str, str]]:
    """(kernel, its lines) of ptxas's ``-v`` report for ``cuda/<family>.cu``."""
    text = _ptxas_log(family, arch)
    return [(block.split("'", 1)[0], block) for block in text.split("Compiling entry function '")[1:]]


@functools.lru_cache(maxsize=None)
def _ptxas_log(family: str, arch: str) -> str:
    from cuda.bindings import nvrtc

    err, program = nvrtc.nvrtcCreateProgram(kernel_source_text(family).encode(), f"{family}.cu".encode(), 0, [], [])
    try:
        options = [o.encode() for o in (*nvrtc_options(), f"-arch={arch}", "--ptxas-options=-v")]
        (err,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(program, log)
        text = log.decode(errors="replace").replace("\0", "")
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NvrtcFailure(f"{family}.cu [{arch}] failed:\n{text}")
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return text


def _check(err: object, what: str) -> None:
    from cuda.bindings import nvrtc

    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NvrtcFailure(f"{what} failed: {err}")


def main() -> int:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    failures = 0
    for family in kernel_families():
        for arch in TARGET_ARCHITECTURES:
            try:
                size = compile_family(family, arch)
                print(f"ok   {family}.cu [{arch}] {size} B")
            except NvrtcFailure as exc:
                failures += 1
                print(f"FAIL {exc}")
    print(f"NVRTC {major}.{minor}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
