"""What one call would cost on a GPU, counted on the CPU: kernel launches, array operations,
device→host reads (syncs) and host→device copies (uploads).

The emulated backend's arrays are numpy arrays, so nothing tells a "device" array from a host
one. :func:`counting_backend` gives a backend whose arrays are :class:`DeviceArray` (a numpy
subclass standing for a CuPy array) and whose ``xp`` is :data:`device_xp`, which makes its
results device arrays. Inside :func:`measure` every point where CuPy would work or wait is
recorded, with the ``gpu_text`` source line that caused it:

- ``launches``: a ``RawKernel`` of ``cuda/*.cu`` launched (exact);
- ``array_ops``: an ``xp`` function or ufunc, an array method that computes (``astype``,
  ``cumsum``, ...), fancy indexing or an item assignment on a device array: each is at least one
  CuPy kernel (allocation alone, ``xp.empty``, is not counted);
- ``syncs``: the host reads device memory: ``int()``/``float()``/``bool()``/``.item()``/
  ``.tolist()``/``.get()`` of a device array, ``gpu_text.arrays.to_host`` of one, and the CuPy
  operations whose output size depends on the data (``flatnonzero``, ``nonzero``, ``unique``,
  boolean-mask indexing, ...), which read a count back before allocating;
- ``uploads``: host data reaches the device: ``xp.asarray`` (``array``, ``ascontiguousarray``)
  of a host array or list, a host array passed to a kernel or used as an operand or an assigned
  value of a device operation (CuPy would refuse the last two; here they count as copies).

Counting is per :func:`measure` block; outside one, device arrays behave as numpy arrays.
"""
from __future__ import annotations

import contextlib
import sys
import types
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_GPU_TEXT = str(Path(__file__).resolve().parents[2] / "gpu_text")

# CuPy functions whose output size depends on the data: they read a count from the device first.
SYNCING_FUNCTIONS = frozenset({"flatnonzero", "nonzero", "argwhere", "unique", "compress", "extract", "trim_zeros"})
# Functions that only allocate (no kernel) or only view.
NO_KERNEL_FUNCTIONS = frozenset({"empty", "empty_like", "asarray", "ascontiguousarray", "asanyarray", "shape", "ndim",
                                 "size", "result_type", "dtype", "can_cast", "iinfo", "finfo", "promote_types"})
UPLOADING_FUNCTIONS = frozenset({"asarray", "array", "ascontiguousarray", "asanyarray"})


@dataclass
class Counts:
    """The costs of the calls made inside one :func:`measure` block (see the module docstring)."""

    launches: int = 0
    array_ops: int = 0
    syncs: int = 0
    uploads: int = 0
    upload_bytes: int = 0
    sites: Counter = field(default_factory=Counter)  # (kind, what, "file:line") -> times

    def record(self, kind: str, what: str, nbytes: int = 0) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if kind == "uploads":
            self.upload_bytes += nbytes
        self.sites[(kind, what, _caller())] += 1

    def summary(self) -> str:
        """One line of the four counts."""
        return (f"{self.launches} kernel launches, {self.array_ops} array ops, {self.syncs} syncs, "
                f"{self.uploads} uploads ({self.upload_bytes} bytes)")

    def listing(self, kind: str) -> list[str]:
        """``what @ file:line xN`` for every recorded event of ``kind``, most frequent first."""
        rows = [(n, what, site) for (k, what, site), n in self.sites.items() if k == kind]
        return [f"{what} @ {site} x{n}" for n, what, site in sorted(rows, key=lambda r: (-r[0], r[2]))]


_ACTIVE: list[Counts] = []


def _record(kind: str, what: str, nbytes: int = 0) -> None:
    if _ACTIVE:
        _ACTIVE[-1].record(kind, what, nbytes)


def _caller() -> str:
    """The innermost gpu_text source line on the stack (where the cost comes from)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_GPU_TEXT):
            return f"{name[len(_GPU_TEXT) - len('gpu_text'):]}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def _is_host_data(value: Any) -> bool:
    return (isinstance(value, np.ndarray) and not isinstance(value, DeviceArray)) or isinstance(value, list)


def _unwrap(value: Any, what: str) -> Any:
    """``value`` with device arrays as plain numpy arrays; host arrays in it count as uploads."""
    if isinstance(value, DeviceArray):
        return value.view(np.ndarray)
    if isinstance(value, np.ndarray):
        if value.ndim > 0:
            _record("uploads", f"host operand of {what}", value.nbytes)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, what) for v in value)
    return value


def _wrap(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value if isinstance(value, DeviceArray) else value.view(DeviceArray)
    if isinstance(value, np.generic):  # CuPy returns 0-d device arrays where numpy returns scalars
        return np.asarray(value).view(DeviceArray)
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _sync(what: str) -> None:
    _record("syncs", what)


class DeviceArray(np.ndarray):
    """A numpy array standing for a CuPy array: operations on it stay device arrays and are
    counted, reading it on the host is a counted sync.

    >>> a = np.arange(4).view(DeviceArray)
    >>> with measure() as counts:
    ...     b = a * 2
    ...     total = int(b.sum())
    >>> total, counts.array_ops, counts.syncs
    (12, 2, 1)
    """

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        what = f"{ufunc.__name__}.{method}" if method != "__call__" else ufunc.__name__
        _record("array_ops", what)
        inputs = tuple(_unwrap(x, what) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_unwrap(x, what) for x in kwargs["out"])
        return _wrap(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func, types_, args, kwargs):
        name = func.__name__
        if name not in NO_KERNEL_FUNCTIONS:
            _record("array_ops", name)
        if name in SYNCING_FUNCTIONS:
            _sync(name)
        return _wrap(func(*_unwrap(args, name), **{k: _unwrap(v, name) for k, v in kwargs.items()}))

    def __getitem__(self, key):
        fancy = _is_fancy(key)
        if fancy:
            _record("array_ops", "fancy indexing")
            if _is_boolean_mask(key):
                _sync("boolean-mask indexing")
        return _wrap(self.view(np.ndarray)[_unwrap(key, "indexing")])

    def __setitem__(self, key, value):
        _record("array_ops", "item assignment")
        self.view(np.ndarray)[_unwrap(key, "item assignment")] = _unwrap(value, "item assignment")

    # host reads
    def __int__(self):
        _sync("int()")
        return int(self.view(np.ndarray))

    def __index__(self):
        _sync("index()")
        return self.view(np.ndarray).__index__()

    def __float__(self):
        _sync("float()")
        return float(self.view(np.ndarray))

    def __bool__(self):
        _sync("bool()")
        return bool(self.view(np.ndarray))

    def __iter__(self):  # CuPy yields device sub-arrays (views): nothing is read yet
        return (self[i] for i in range(len(self)))

    def item(self, *args):
        _sync("item()")
        return self.view(np.ndarray).item(*args)

    def tolist(self):
        _sync("tolist()")
        return self.view(np.ndarray).tolist()

    def get(self) -> np.ndarray:
        """The host copy (CuPy's ``ndarray.get``)."""
        _sync("get()")
        return np.array(self.view(np.ndarray))

    # methods that run a kernel without passing through __array_ufunc__
    def astype(self, dtype, *args, **kwargs):
        _record("array_ops", "astype")
        return _wrap(self.view(np.ndarray).astype(dtype, *args, **kwargs))

    def copy(self, *args, **kwargs):
        _record("array_ops", "copy")
        return _wrap(self.view(np.ndarray).copy(*args, **kwargs))

    def cumsum(self, *args, **kwargs):
        _record("array_ops", "cumsum")
        return _wrap(self.view(np.ndarray).cumsum(*args, **kwargs))

    def argsort(self, *args, **kwargs):
        _record("array_ops", "argsort")
        return _wrap(self.view(np.ndarray).argsort(*args, **kwargs))

    def nonzero(self):
        _record("array_ops", "nonzero")
        _sync("nonzero")
        return _wrap(self.view(np.ndarray).nonzero())

    def fill(self, value):
        _record("array_ops", "fill")
        self.view(np.ndarray).fill(value)


def _is_fancy(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (np.ndarray, list)) for k in keys)


def _is_boolean_mask(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, np.ndarray) and k.dtype == np.bool_ for k in keys)


class _CountingUfunc:
    """``xp.<ufunc>``: calls (and ``reduce``/``accumulate``/...) count, results are device arrays."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self._ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return self._run("__call__", args, kwargs)

    def _run(self, method: str, args, kwargs):
        what = self._ufunc.__name__ if method == "__call__" else f"{self._ufunc.__name__}.{method}"
        _record("array_ops", what)
        args = _unwrap(args, what)
        kwargs = {k: _unwrap(v, what) for k, v in kwargs.items()}
        return _wrap(getattr(self._ufunc, method)(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        if name in ("reduce", "accumulate", "reduceat", "outer", "at"):
            return lambda *args, **kwargs: self._run(name, args, kwargs)
        return getattr(self._ufunc, name)


def _counting_function(name: str, function: Any) -> Any:
    def run(*args, **kwargs):
        if name in UPLOADING_FUNCTIONS:
            source = args[0] if args else kwargs.get("a", kwargs.get("object"))
            if isinstance(source, DeviceArray):
                if name == "array" and kwargs.get("copy", True):
                    _record("array_ops", "array (copy)")
                return _wrap(function(*_unwrap(args, name), **kwargs))
            data = np.asarray(source)
            _record("uploads", f"xp.{name}", data.nbytes)
            return _wrap(function(*args, **kwargs))
        if name not in NO_KERNEL_FUNCTIONS:
            _record("array_ops", name)
        if name in SYNCING_FUNCTIONS:
            _sync(name)
        return _wrap(function(*_unwrap(args, name), **{k: _unwrap(v, name) for k, v in kwargs.items()}))

    run.__name__ = name
    run.__doc__ = function.__doc__
    return run


class _DeviceXp(types.ModuleType):
    """numpy, with functions returning device arrays and counting (the emulated CuPy module)."""

    def __init__(self) -> None:
        super().__init__("cupy_emulated", "numpy with counted device arrays (tests/cuda_emulator/device_counts.py)")
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        cache = self.__dict__["_cache"]
        if name not in cache:
            value = getattr(np, name)
            if isinstance(value, np.ufunc):
                value = _CountingUfunc(value)
            elif callable(value) and not isinstance(value, type) and not isinstance(value, types.ModuleType):
                value = _counting_function(name, value)
            cache[name] = value
        return cache[name]


device_xp = _DeviceXp()


def _counting_to_host(original):
    def to_host(array: Any) -> np.ndarray:
        if isinstance(array, DeviceArray):
            _sync("to_host")
            return np.array(array.view(np.ndarray))
        return original(array)

    return to_host


def _counting_array_module(original):
    def array_module(array: Any) -> types.ModuleType:
        return device_xp if isinstance(array, DeviceArray) else original(array)

    return array_module


@contextlib.contextmanager
def measure() -> Iterator[Counts]:
    """Counts the costs of the calls made inside the block. While it runs, ``gpu_text.arrays``'
    helpers know device arrays: ``to_host`` of one is a sync, ``array_module`` of one is
    :data:`device_xp` (as it would be ``cupy``)."""
    import gpu_text.arrays

    swaps = []
    for helper, counting in (("to_host", _counting_to_host), ("array_module", _counting_array_module)):
        original = getattr(gpu_text.arrays, helper)
        patched = counting(original)
        swaps += [(m, helper, original, patched) for name, m in list(sys.modules.items())
                  if name.startswith("gpu_text") and getattr(m, helper, None) is original]
    counts = Counts()
    _ACTIVE.append(counts)
    for m, helper, _, patched in swaps:
        setattr(m, helper, patched)
    try:
        yield counts
    finally:
        for m, helper, original, _ in swaps:
            setattr(m, helper, original)
        _ACTIVE.remove(counts)


class CountingRuntime:
    """The emulated kernel runtime with :data:`device_xp`: every kernel launch counts, and a host
    array passed to a kernel counts as an upload."""

    xp = device_xp

    def __init__(self, runtime: Any) -> None:
        self._runtime = runtime

    def function(self, family: str, name: str):
        kernel = self._runtime.function(family, name)

        def launch(grid, block, args, **kwargs):
            _record("launches", name)
            args = tuple(_unwrap(a, f"{name} argument {i}") if isinstance(a, np.ndarray) else a
                         for i, a in enumerate(args))
            return kernel(grid, block, args, **kwargs)

        launch.kernel = kernel
        return launch
