"""Arrays of either backend: which array module owns an array, and its copy on the host.

The core layer (no kernels, no dispatch): ``ragged``, ``batch`` and the public API use these two
helpers instead of testing for CuPy themselves, so CuPy stays an optional import.

>>> import numpy as np
>>> array_module(np.zeros(2)).__name__, to_host(np.arange(3)).tolist()
('numpy', [0, 1, 2])
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np


def array_module(array: Any) -> ModuleType:
    """``numpy`` for host arrays, ``cupy`` for device arrays (imported only when one is seen).

    >>> array_module(np.arange(2)).__name__
    'numpy'
    """
    if isinstance(array, np.ndarray):
        return np
    return importlib.import_module("cupy") if hasattr(array, "__cuda_array_interface__") else np


def to_host(array: Any) -> np.ndarray:
    """``array`` as a numpy array: device arrays are copied to the host, host arrays returned as they are.

    >>> a = np.arange(3)
    >>> to_host(a) is a, to_host([1, 2]).tolist()
    (True, [1, 2])
    """
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "__cuda_array_interface__"):
        return array.get()
    return np.asarray(array)
