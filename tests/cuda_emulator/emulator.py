"""Run the project's CUDA C kernels on the CPU, so the tests exercise the real ``cuda/*.cu`` code
without a GPU.

A ``.cu`` file is compiled unchanged by g++ together with ``cuda_emu.h`` (which maps CUDA's
built-ins, barriers, warp intrinsics and atomics onto fibers on the CPU) into a shared library,
cached on disk, and its ``extern "C" __global__`` kernels are launched through ctypes with the
same call shape as CuPy's ``RawKernel``::

    module = EmulatedModule("cuda/utf8.cu")
    kernel = module.get_function("utf8_decode")
    kernel((n_blocks, 1, 1), (256, 1, 1), (data, offsets, np.int64(n), ...), shared_mem=0)

Arguments are numpy arrays (passed as pointers; they must be C-contiguous) and numpy scalars
(passed by value). Unlike CuPy, Python ``int``/``float`` are refused: the emulator does not
guess a C type, and each scalar must match its parameter's kind and size (signed and unsigned
integers of the same size are interchangeable, as their bytes are).

Per-thread work: a kernel that calls ``GT_STEP()`` (``cuda/step_counter.cuh``; nothing on a GPU)
in its data-dependent loops has, after each launch, ``kernel.last_max_steps`` (and the module's
``last_max_steps``): the largest number of those calls made by one thread of that launch.

Interleaved blocks: ``EmulatedModule(..., interleave=8)`` (or ``$GPU_TEXT_EMU_INTERLEAVE=8``)
keeps up to 8 blocks resident at once, started in a seeded shuffled order, and interleaves their
threads: a thread that spins with ``__nanosleep`` lets the other resident blocks run, and atomics,
``__ldcg``/``__ldcv``/``__stcg``, ``__threadfence``, ``__syncthreads`` and ``GT_STEP()`` switch to
another block at random; a block that has just changed global memory (a count, a flag) is often
held back until no other can go on. So a block that waits for another's flag really waits, one
that misses a wait reads what is there, and one that counts itself done before writing its result
is read without it. The schedule comes from ``interleave_seed`` (a launch argument,
else the module's, else ``$GPU_TEXT_EMU_INTERLEAVE_SEED``, else 1) and is reproducible. Only one
block runs at a time and memory is sequentially consistent: the mode finds missing waits and
publishes that come too early, not missing fences (``__threadfence``) or ``__ldcg``. Spin-waits
that never end fail with a "deadlock" message. ``workers`` is not used in this mode.

Errors inside a launch (a deadlock, an invalid launch configuration, too much shared memory)
raise :class:`EmulationError`. What the emulator cannot catch: out-of-bounds memory accesses
(they crash the process or corrupt memory, as on a GPU) and threads of one block that spin-wait
on each other without ``__nanosleep`` (fibers are cooperative; that hangs). Without interleaving,
blocks run in increasing index order on each worker, so only waits on lower-numbered blocks can
complete.

Supported: what ``cuda_emu.h`` lists (built-in index variables, barriers including
``__syncthreads_count/_and/_or``, every ``*_sync`` shuffle/vote/reduce/match warp intrinsic,
atomics on 32/64-bit integers, float and double, static and dynamic shared memory, vector types,
``__launch_bounds__``, ``__nanosleep``, ``__trap``, ``printf``). Not supported: kernels that are
not ``extern "C" __global__`` at file scope (templates, ``extern "C" { ... }`` blocks,
namespaces), cooperative groups, textures and surfaces, inline PTX, ``__half``, clock functions,
grid-wide barriers. The fast-math intrinsics
(``__expf``, ...) return the exact result; compilers on the two sides may also differ in float
contraction, so compare floats with a tolerance.

Cache: ``cache_dir`` argument, else ``$GPU_TEXT_EMU_CACHE``, else ``<repo>/.cache/cuda_emu``.
The key covers the ``.cu`` file, every ``.cuh`` in its include directories, every file it
includes, ``cuda_emu.h``, the compiler version and the flags. Libraries are renamed into place
atomically, so parallel test processes can share the cache.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import operator
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["EmulatedKernel", "EmulatedModule", "EmulationError", "default_cache_dir"]

HEADER = Path(__file__).resolve().with_name("cuda_emu.h")
_REPO_ROOT = Path(__file__).resolve().parents[2]

# Bump when the generated sources change in a way the key would not otherwise see.
_GENERATOR_VERSION = "1"
_COMPILER = os.environ.get("GPU_TEXT_EMU_CXX", "g++")
_FLAGS = (
    "-std=c++20", "-O2", "-fPIC", "-shared", "-pthread",
    # Two emulated modules in one process must not share symbols: hidden visibility,
    # -fno-gnu-unique (no process-wide STB_GNU_UNIQUE inline variables) and -Bsymbolic keep each
    # library's kernels, tables and thread-locals its own.
    "-fvisibility=hidden", "-fvisibility-inlines-hidden", "-fno-gnu-unique", "-Wl,-Bsymbolic",
    # An undefined device function is a build error, not a failure at load time.
    "-Wl,-z,defs",
)

# Per-block dynamic shared memory without opting in, as on every GPU since Volta (CuPy:
# RawKernel.max_dynamic_shared_size_bytes raises it).
DEFAULT_MAX_DYNAMIC_SHARED = 48 * 1024
MAX_DYNAMIC_SHARED = 227 * 1024  # sm_90 opt-in limit; must equal cuemu::kMaxDynamicSharedBytes
_DEFAULT_STACK_KIB = 64
MAX_RESIDENT = 64  # interleaved mode's most resident blocks; must equal cuemu::kMaxResident
_MESSAGE_SIZE = 4096

_PARENS = r"\((?:[^()]|\([^()]*\))*\)"  # balanced parentheses, one level of nesting
_KERNEL_RE = re.compile(
    r'\bextern\s+"C"\s+((?:(?:__global__\b|void\b|__launch_bounds__\s*' + _PARENS + r")\s*)+)([A-Za-z_]\w*)\s*\("
)
_LAUNCH_BOUNDS_RE = re.compile(r"__launch_bounds__\s*\((.*)\)", re.S)
_DYNAMIC_SHARED_RE = re.compile(r"\bextern\s+__shared__\b[^;{}]*?\b([A-Za-z_]\w*)\s*\[\s*\]")
_INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
# Comments go, string literals stay (extern "C" is one).
_COMMENT_OR_STRING_RE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)

# (kind, size) of a parameter -> its C type, for messages.
_C_TYPE_NAMES = {
    ("i", 1): "signed char", ("u", 1): "unsigned char", ("i", 2): "short", ("u", 2): "unsigned short",
    ("i", 4): "int", ("u", 4): "unsigned int", ("i", 8): "long long", ("u", 8): "unsigned long long",
    ("f", 4): "float", ("f", 8): "double", ("b", 1): "bool", ("p", 8): "pointer",
}
_NUMPY_NAMES = {
    ("i", 1): "np.int8", ("u", 1): "np.uint8", ("i", 2): "np.int16", ("u", 2): "np.uint16",
    ("i", 4): "np.int32", ("u", 4): "np.uint32", ("i", 8): "np.int64", ("u", 8): "np.uint64",
    ("f", 4): "np.float32", ("f", 8): "np.float64", ("b", 1): "np.bool_",
}


class EmulationError(RuntimeError):
    """A kernel file failed to build, or a launch failed (deadlock, invalid configuration, ...)."""


def default_cache_dir() -> Path:
    """``$GPU_TEXT_EMU_CACHE`` if set, else ``<repo>/.cache/cuda_emu``."""
    env = os.environ.get("GPU_TEXT_EMU_CACHE")
    return Path(env) if env else _REPO_ROOT / ".cache" / "cuda_emu"


def _strip_comments(source: str) -> str:
    return _COMMENT_OR_STRING_RE.sub(lambda m: " " if m.group(0).startswith("/") else m.group(0), source)


def _split_top_level(text: str) -> list[str]:
    """Splits macro-style arguments at commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _find_kernels(source: str) -> list[tuple[str, str | None]]:
    """(name, max-threads expression of __launch_bounds__ or None) of each extern "C" kernel."""
    kernels: dict[str, str | None] = {}
    for match in _KERNEL_RE.finditer(_strip_comments(source)):
        qualifiers, name = match.groups()
        if "__global__" not in qualifiers or not re.search(r"\bvoid\b", qualifiers):
            continue
        bounds = _LAUNCH_BOUNDS_RE.search(qualifiers)
        max_threads = _split_top_level(bounds.group(1))[0] if bounds else None
        if name not in kernels or kernels[name] is None:  # a prototype then the definition
            kernels[name] = max_threads
    return list(kernels.items())


def _included_files(path: Path, include_dirs: Sequence[Path], seen: dict[Path, None]) -> None:
    """Adds to ``seen`` every file ``path`` includes with quotes, recursively, that exists."""
    for name in _INCLUDE_RE.findall(_strip_comments(path.read_text(errors="replace"))):
        for directory in (path.parent, *include_dirs):
            candidate = (directory / name).resolve()
            if candidate.is_file():
                if candidate not in seen:
                    seen[candidate] = None
                    _included_files(candidate, include_dirs, seen)
                break


@functools.lru_cache(maxsize=None)
def _compiler_identity(compiler: str) -> str:
    try:
        result = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise EmulationError(f"the C++ compiler {compiler!r} is not usable: {exc}") from exc
    return result.stdout.strip()


def _as_dim3(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    try:
        dims = [operator.index(v) for v in value]
    except TypeError:
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}") from None
    if any(not 0 <= d < 2**32 for d in dims):
        raise EmulationError(f"invalid launch configuration: {what} {tuple(dims)}")
    dims += [1] * (3 - len(dims))
    return dims[0], dims[1], dims[2]


class EmulatedModule:
    """One ``.cu`` file built for the CPU; the counterpart of ``cupy.RawModule``.

    ``include_dirs`` are searched after the ``.cu`` file's own directory. ``workers`` OS threads
    run blocks in parallel (default ``$GPU_TEXT_EMU_WORKERS`` or 1); ``stack_kib`` is the stack
    of every emulated CUDA thread. ``defines`` become ``-D`` options. ``interleave`` (default
    ``$GPU_TEXT_EMU_INTERLEAVE`` or 0, off) is the number of resident blocks whose threads
    interleave, ``interleave_seed`` (default ``$GPU_TEXT_EMU_INTERLEAVE_SEED`` or 1) their
    schedule; see the module docstring.

    Attributes: ``kernel_names``, ``library_path``, ``built`` (whether this construction ran
    the compiler rather than reusing the cache), ``build_seconds``, ``build_log`` (compiler
    warnings).
    """

    def __init__(
        self,
        cu_path: str,
        include_dirs: Sequence[str] = (),
        cache_dir: str | None = None,
        *,
        workers: int | None = None,
        stack_kib: int = _DEFAULT_STACK_KIB,
        defines: Sequence[str] = (),
        interleave: int | None = None,
        interleave_seed: int | None = None,
    ) -> None:
        self.cu_path = Path(cu_path).resolve()
        if not self.cu_path.is_file():
            raise FileNotFoundError(f"no kernel file {self.cu_path}")
        self.include_dirs = [self.cu_path.parent] + [Path(d).resolve() for d in include_dirs]
        self.workers = max(1, int(workers if workers is not None else os.environ.get("GPU_TEXT_EMU_WORKERS", 1)))
        self.stack_kib = int(stack_kib)
        self.interleave = int(interleave if interleave is not None else os.environ.get("GPU_TEXT_EMU_INTERLEAVE", 0))
        if not 0 <= self.interleave <= MAX_RESIDENT:
            raise ValueError(f"interleave must be 0 (off) or up to {MAX_RESIDENT} resident blocks, "
                             f"got {self.interleave}")
        self.interleave_seed = int(interleave_seed if interleave_seed is not None
                                   else os.environ.get("GPU_TEXT_EMU_INTERLEAVE_SEED", 1))
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()

        source = self.cu_path.read_text()
        self._kernels = _find_kernels(source)
        flags = [*_FLAGS, *(f"-D{d}" for d in defines), *(f"-I{d}" for d in self.include_dirs)]
        inputs = self._key_inputs()
        key = hashlib.sha256()
        for part in (_GENERATOR_VERSION, _compiler_identity(_COMPILER), " ".join(flags), str(self.cu_path)):
            key.update(part.encode() + b"\0")
        for path in inputs:
            key.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
        self.library_path = cache / f"{self.cu_path.stem}-{key.hexdigest()[:24]}.so"

        self.built = False
        self.build_seconds = 0.0
        self.build_log = ""
        if not self.library_path.exists():
            names = self._dynamic_shared_names(inputs)
            self._build(flags, names)
        self._load()

    # ------------------------------------------------------------------ build
    def _key_inputs(self) -> list[Path]:
        """Every file whose content changes the library: the header, the .cu, its includes and
        every .cuh in its include directories (also ones included only under some #if)."""
        files: dict[Path, None] = {HEADER: None, self.cu_path: None}
        for directory in self.include_dirs:
            for header in sorted(directory.glob("*.cuh")):
                files[header.resolve()] = None
        _included_files(self.cu_path, self.include_dirs, files)
        return list(files)

    def _dynamic_shared_names(self, inputs: Sequence[Path]) -> list[str]:
        names: set[str] = set()
        for path in inputs:
            if path != HEADER:
                names.update(_DYNAMIC_SHARED_RE.findall(_strip_comments(path.read_text(errors="replace"))))
        return sorted(names)

    def _generated_sources(self, dynamic_shared_names: Sequence[str]) -> tuple[str, str]:
        entries = "".join(
            f'    ::cuemu::kernel_entry("{name}", &{name}, '
            f"{'0u' if bound is None else f'static_cast<unsigned>({bound})'}),\n"
            for name, bound in self._kernels
        )
        unit = (
            f"// Generated by {Path(__file__).name} for {self.cu_path}; do not edit.\n"
            f'#include "{HEADER}"\n'
            f'#include "{self.cu_path}"\n\n'
            "extern const ::cuemu::KernelEntry cuemu_kernel_table[] = {\n"
            f"{entries}    {{}},  // sentinel: keeps the array non-empty\n}};\n"
            f"extern const unsigned cuemu_kernel_table_size = {len(self._kernels)};\n"
        )
        # A separate translation unit: the kernel file declares these names with its own types.
        aliases = "".join(
            f'extern __attribute__((visibility("hidden"), alias("cuemu_dynamic_shared"))) thread_local '
            f"unsigned char {name}[{MAX_DYNAMIC_SHARED}];\n"
            for name in dynamic_shared_names
        )
        shared = (
            "// Generated: dynamic shared memory, one buffer per OS thread; every `extern __shared__`\n"
            "// array of the kernel file is an alias of it, as they all start at one address on a GPU.\n"
            'extern "C" {\n'
            f'__attribute__((visibility("hidden"), aligned(16))) thread_local unsigned char '
            f"cuemu_dynamic_shared[{MAX_DYNAMIC_SHARED}];\n{aliases}}}\n"
        )
        return unit, shared

    def _build(self, flags: Sequence[str], dynamic_shared_names: Sequence[str]) -> None:
        self.library_path.parent.mkdir(parents=True, exist_ok=True)
        unit, shared = self._generated_sources(dynamic_shared_names)
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=self.library_path.parent))
        try:
            (work / "unit.cpp").write_text(unit)
            (work / "dynamic_shared.cpp").write_text(shared)
            output = work / self.library_path.name
            command = [_COMPILER, *flags, str(work / "unit.cpp"), str(work / "dynamic_shared.cpp"), "-o", str(output)]
            started = time.perf_counter()
            result = subprocess.run(command, capture_output=True, text=True)
            self.build_seconds = time.perf_counter() - started
            if result.returncode != 0:
                raise EmulationError(
                    f"building {self.cu_path} for the CPU emulator failed:\n{' '.join(command)}\n{result.stderr}"
                )
            self.build_log = result.stderr
            os.replace(output, self.library_path)  # atomic: concurrent builders each install a whole file
            self.built = True
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _load(self) -> None:
        try:
            lib = ctypes.CDLL(str(self.library_path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as exc:
            raise EmulationError(f"loading {self.library_path} failed: {exc}") from exc
        lib.cuemu_kernel_count.restype = ctypes.c_uint
        lib.cuemu_kernel_name.restype = ctypes.c_char_p
        lib.cuemu_kernel_name.argtypes = [ctypes.c_uint]
        lib.cuemu_kernel_param_codes.restype = ctypes.c_char_p
        lib.cuemu_kernel_param_codes.argtypes = [ctypes.c_uint]
        lib.cuemu_kernel_param_size.restype = ctypes.c_uint
        lib.cuemu_kernel_param_size.argtypes = [ctypes.c_uint, ctypes.c_uint]
        lib.cuemu_kernel_max_threads.restype = ctypes.c_uint
        lib.cuemu_kernel_max_threads.argtypes = [ctypes.c_uint]
        lib.cuemu_last_launch_steps.restype = ctypes.c_ulonglong
        lib.cuemu_last_launch_steps.argtypes = []
        lib.cuemu_launch.restype = ctypes.c_int
        lib.cuemu_launch.argtypes = [
            ctypes.c_uint, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.c_ulonglong,
            ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_uint,
            ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_char_p, ctypes.c_ulonglong,
        ]
        self._lib = lib
        self._params: dict[str, tuple[int, tuple[tuple[str, int], ...], int]] = {}
        for k in range(lib.cuemu_kernel_count()):
            name = lib.cuemu_kernel_name(k).decode()
            codes = lib.cuemu_kernel_param_codes(k).decode()
            params = tuple((code, lib.cuemu_kernel_param_size(k, i)) for i, code in enumerate(codes))
            self._params[name] = (k, params, lib.cuemu_kernel_max_threads(k))
        self.kernel_names: list[str] = list(self._params)
        self.last_max_steps = 0
        self._functions: dict[str, EmulatedKernel] = {}

    # ------------------------------------------------------------------ kernels
    def get_function(self, name: str) -> EmulatedKernel:
        """The kernel ``name`` (an ``extern "C" __global__`` function of the file)."""
        # One object per name, like CuPy's functions: attributes set on it (the dynamic shared
        # memory opt-in) hold for every later get_function of the same kernel.
        kernel = self._functions.get(name)
        if kernel is None:
            if name not in self._params:
                raise EmulationError(f"no kernel {name!r} in {self.cu_path}; it has {self.kernel_names}")
            index, params, max_threads = self._params[name]
            kernel = self._functions[name] = EmulatedKernel(self, name, index, params, max_threads)
        return kernel

    def __repr__(self) -> str:
        return f"EmulatedModule({str(self.cu_path)!r}, kernels={self.kernel_names})"


class EmulatedKernel:
    """A launchable kernel; the counterpart of ``cupy.RawKernel``.

    ``param_types`` lists the C parameter types (``"pointer"`` for any pointer).
    ``max_dynamic_shared_size_bytes`` is the per-launch dynamic shared memory limit (48 KiB
    unless raised, up to 227 KiB, like CuPy's attribute of the same name).
    ``max_threads_per_block`` comes from ``__launch_bounds__`` (1024 without).
    """

    def __init__(self, module: EmulatedModule, name: str, index: int,
                 params: tuple[tuple[str, int], ...], max_threads: int) -> None:
        self.module = module
        self.name = name
        self._index = index
        self._params = params
        self.param_types = tuple(_C_TYPE_NAMES.get(p, f"{p[1]}-byte struct" if p[0] == "V" else "?") for p in params)
        self.max_threads_per_block = max_threads or 1024
        self.last_max_steps = 0
        self._max_dynamic_shared = DEFAULT_MAX_DYNAMIC_SHARED

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return self._max_dynamic_shared

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        if not 0 <= value <= MAX_DYNAMIC_SHARED:
            raise EmulationError(f"max_dynamic_shared_size_bytes must be in [0, {MAX_DYNAMIC_SHARED}], got {value}")
        self._max_dynamic_shared = int(value)

    def __call__(self, grid, block, args, shared_mem: int = 0, *, schedule_seed: int = 0,
                 interleave_seed: int | None = None) -> None:
        """Runs the kernel to completion on ``grid`` x ``block``.

        ``schedule_seed`` 0 runs ready threads in thread order (reproducible); another value
        picks them at random, which can expose missing ``__syncthreads`` in other places.
        ``interleave_seed`` overrides the module's for this launch (interleaved modules only).
        """
        grid3 = _as_dim3(grid, "grid")
        block3 = _as_dim3(block, "block")
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"args of {self.name} must be a tuple or list, got {type(args).__name__}")
        if len(args) != len(self._params):
            raise TypeError(f"kernel {self.name} takes {len(self._params)} arguments ({', '.join(self.param_types)}), "
                            f"got {len(args)}")
        shared_mem = operator.index(shared_mem)
        if shared_mem < 0 or shared_mem > self._max_dynamic_shared:
            hint = (f"; raise max_dynamic_shared_size_bytes (up to {MAX_DYNAMIC_SHARED}) to opt in, as on a GPU"
                    if shared_mem <= MAX_DYNAMIC_SHARED else "")
            raise EmulationError(f"dynamic shared memory of {shared_mem} bytes requested for {self.name} is more than "
                                 f"the kernel's limit of {self._max_dynamic_shared} bytes{hint}")

        keep_alive = [self._pack(i, value, param) for i, (value, param) in enumerate(zip(args, self._params))]
        pointers = (ctypes.c_void_p * max(1, len(keep_alive)))(*[ctypes.addressof(slot) for slot in keep_alive])
        message = ctypes.create_string_buffer(_MESSAGE_SIZE)
        status = self.module._lib.cuemu_launch(
            self._index, (ctypes.c_uint * 3)(*grid3), (ctypes.c_uint * 3)(*block3), shared_mem, pointers,
            self.module.workers, operator.index(schedule_seed) & (2**64 - 1), self.module.stack_kib,
            self.module.interleave,
            operator.index(self.module.interleave_seed if interleave_seed is None else interleave_seed) & (2**64 - 1),
            message, _MESSAGE_SIZE,
        )
        # GT_STEP() counts of the launch just finished (also after a failed one)
        self.last_max_steps = self.module.last_max_steps = int(self.module._lib.cuemu_last_launch_steps())
        if status:
            raise EmulationError(message.value.decode(errors="replace"))

    def _pack(self, i: int, value, param: tuple[str, int]):
        """A ctypes object holding the bytes of argument ``i``, checked against its parameter."""
        code, size = param
        where = f"argument {i} of {self.name} ({self.param_types[i]})"
        if code == "p":
            if not isinstance(value, np.ndarray):
                raise TypeError(f"{where} expects a numpy array, got {type(value).__name__}")
            if value.dtype.hasobject:
                raise TypeError(f"{where}: arrays of Python objects cannot be passed to a kernel")
            if not value.flags.c_contiguous:
                raise ValueError(f"{where}: the array must be C-contiguous (use np.ascontiguousarray)")
            return ctypes.c_void_p(value.ctypes.data)
        wanted = _NUMPY_NAMES.get((code, size), f"a {size}-byte numpy scalar")
        # np.float64 subclasses Python's float, so test for numpy scalars first
        if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
            raise TypeError(f"{where} got a Python {type(value).__name__}; pass a numpy scalar of the parameter's "
                            f"type such as {wanted}(...) (the emulator, unlike CuPy, does not guess C types)")
        if not isinstance(value, np.generic):
            raise TypeError(f"{where} expects a numpy scalar such as {wanted}(...), got {type(value).__name__}")
        kind, itemsize = value.dtype.kind, value.dtype.itemsize
        matches = itemsize == size and (
            (code in "iu" and kind in "iu") or (code == "f" and kind == "f")
            or (code == "b" and kind == "b") or (code == "V" and kind == "V")
        )
        if not matches:
            raise TypeError(f"{where} got {value.dtype} ({itemsize} bytes); pass {wanted}(...)")
        return ctypes.create_string_buffer(value.tobytes(), size)

    def __repr__(self) -> str:
        return f"EmulatedKernel({self.name}({', '.join(self.param_types)}))"
