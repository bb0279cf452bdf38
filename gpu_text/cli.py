"""The ``gpu-text`` command line: assembles the commands of :data:`COMMAND_MODULES` and runs one.

Every command lives in its package's ``commands.py`` (``add_commands(subparsers)``, built with
:mod:`gpu_text.cli_helpers`; ``warmup`` in :mod:`gpu_text.warmup`); only ``info`` is here. A
command that has to compile CPU kernels (a first run) says so in one line on stderr first
(:func:`gpu_text.warmup.compile_notice`). Errors end a command with one line on stderr,
``gpu-text <command>: error: ...``, and exit code 2; ``--debug`` (or ``GPU_TEXT_DEBUG=1``) shows
the traceback instead.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import sys
from typing import Any

from gpu_text.cli_helpers import CommandParser, add_command, add_debug_option, debugging, report_error
from gpu_text.process_memory import keep_freed_memory


def environment_info() -> dict[str, Any]:
    """Version, chosen backend, device, and whether CuPy, NVRTC and Numba threading are usable.

    >>> info = environment_info()
    >>> info["backend"] in ("cpu", "cuda"), "numba_threading_layer" in info
    (True, True)
    """
    import numba

    import gpu_text
    from gpu_text.backend import ENV_VAR, cuda_unavailable_reason, get_backend

    try:
        backend = get_backend().name
    except Exception as exc:  # a bad $GPU_TEXT_BACKEND is what info is asked to show, not a failure
        backend = f"unusable: ${ENV_VAR}={os.environ.get(ENV_VAR)!r} ({exc})"
    info: dict[str, Any] = {
        "gpu_text": gpu_text.__version__,
        "python": platform.python_version(),
        "numba": numba.__version__,
        "backend": backend,
        "cuda_unavailable_reason": cuda_unavailable_reason(),
        "device": None,
    }
    try:
        import cupy

        info["cupy"] = cupy.__version__
    except Exception as exc:  # not installed, or a broken CUDA install
        info["cupy"] = f"not importable ({type(exc).__name__})"
    if info["cuda_unavailable_reason"] is None:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        free, total = cupy.cuda.runtime.memGetInfo()
        info["device"] = {"name": props["name"].decode(), "compute_capability": f"{props['major']}.{props['minor']}",
                          "memory_total_gib": round(total / 2**30, 1), "memory_free_gib": round(free / 2**30, 1)}
    try:
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        info["nvrtc"] = f"{major}.{minor}"
    except Exception as exc:
        info["nvrtc"] = f"not importable ({type(exc).__name__})"
    info["numba_threads"] = numba.get_num_threads()
    info["numba_threading_layer"] = _numba_threading_layer()
    return info


def _touch(x: Any) -> Any:
    """Jitted by :func:`_numba_threading_layer`: with ``parallel=True`` the array expression is a
    parallel loop, and Numba chooses the threading layer on the first parallel launch."""
    return x + 1


def _numba_threading_layer() -> str:
    import numba
    import numpy as np

    # jitted here, not at import (the other commands need no Numba), and cached: a module-level
    # function's compiled code is kept on disk like the kernels', so only a first run compiles it
    numba.njit(parallel=True, cache=True)(_touch)(np.zeros(2))
    try:
        return str(numba.threading_layer())
    except ValueError:
        return "unknown"


def cmd_info(args: argparse.Namespace) -> int:
    """``gpu-text info [--json]``: :func:`environment_info` as aligned lines or JSON.

    >>> cmd_info(argparse.Namespace(json=True))  # doctest: +ELLIPSIS
    {
      "gpu_text": ...
    0
    """
    info = environment_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    for key, value in info.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        print(f"{key:>24}: {value}")
    return 0


# The modules that add commands: each has add_commands(subparsers), called in this order.
COMMAND_MODULES: list[str] = ["gpu_text.segment.commands", "gpu_text.tokenizer.commands", "gpu_text.crf.commands",
                               "gpu_text.word2vec.commands", "gpu_text.lda.commands", "gpu_text.warmup"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand.

    >>> build_parser().parse_args(["info", "--json"]).json
    True
    """
    parser = CommandParser(prog="gpu-text", description="GPU-accelerated text processing.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    add_debug_option(parser)
    commands = parser.add_subparsers(dest="command")
    info = add_command(commands, "info", cmd_info, "version, backend, device and toolchain")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_commands(commands)
    parser.set_defaults(cli_main=main)  # gpu-text warmup runs the other commands through it
    return parser


# a young collection every 50,000 net allocations instead of 700, the older generations as rarely:
# cyclic garbage waits a little longer, a command's start-up is not walked over and over
ENTRY_GC_THRESHOLDS = (50_000, 20, 20)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gpu-text`` console script: runs the command ``argv`` (``None``: the
    process's arguments) names and returns its exit code.

    Called as the process's entry point (no ``argv``: the console script, ``python -m
    gpu_text.cli``), it tunes the garbage collector to a command run once in its own process
    (:data:`ENTRY_GC_THRESHOLDS`): imports (Numba's, the kernels' cache loads) make tens of
    thousands of long-lived objects, and Python's default thresholds walked them in 260 young and
    2 full collections, 0.10-0.13 s of a 19 MB ``gpu-text tokenize`` (0.04 s with these). Before
    returning it freezes what the command made (:func:`gc.freeze`): the interpreter's last
    collection at exit would walk every object and take apart every cycle, the compiled kernels'
    among them, which after ``gpu-text tokenize`` took 0.7-1.3 s of wall time on a loaded 2-core
    machine (0.06-0.13 s frozen). It also keeps freed memory in the process for the next chunk
    (:func:`gpu_text.process_memory.keep_freed_memory`). Exit handlers, flushes and finalizers
    still run; a caller that passes ``argv`` (tests, ``gpu-text warmup``) keeps its collector and
    allocator as they were.

    >>> main(["--version"])  # doctest: +ELLIPSIS
    gpu_text ...
    0
    """
    if argv is None:
        gc.set_threshold(*ENTRY_GC_THRESHOLDS)
        keep_freed_memory()
    code = _run(argv)
    if argv is None:
        gc.freeze()
    return code


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # named after the command they were given to, not the top-level parser
            parser.exit(2, f"{getattr(args, 'command_name', parser.prog)}: error: unrecognized arguments: "
                           f"{' '.join(unknown)}\n")
    except SystemExit as exit:  # --help, or a usage error argparse has reported in one line
        return exit.code if isinstance(exit.code, int) else 0
    if args.version:
        import gpu_text

        print(f"gpu_text {gpu_text.__version__}")
        return 0
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    from gpu_text.warmup import compile_notice

    try:
        with compile_notice(args.command, args=args):  # one line on stderr if this run compiles kernels
            return int(args.run(args))
    except Exception as exc:  # bad input of any kind: one line, never a traceback (unless asked for)
        if debugging(args):
            raise
        return report_error(args.command_name, exc)


if __name__ == "__main__":
    sys.exit(main())
