"""Borrowed views of arrays: the same memory, without Numba's reference counting.

Numba counts the references to an array with atomic increments and decrements wherever a function
binds it, inlined helpers included; a helper run once per token with a dozen arrays spends several
times its own work on those. A view made by :func:`borrow` has no owner to count, like an array
over foreign memory. It is valid only while the array it views is alive, so it is made and used
inside one jitted function where the original is an argument or stays in use to the end.
No CUDA twin: a Numba technicality of the CPU layer.
"""
from __future__ import annotations

import numpy as np  # noqa: F401 (the doctest uses it)
from numba import carray, njit, types
from numba.extending import intrinsic

from .jit import JIT

@intrinsic
def _data_pointer(typingctx, array):
    signature = types.CPointer(array.dtype)(array)

    def codegen(context, builder, sig, args):
        return context.make_array(sig.args[0])(context, builder, args[0]).data

    return signature, codegen


@njit(inline="always", **JIT)
def borrow(array):
    """A view of the C-contiguous ``array`` that is not reference-counted.

    >>> a = np.arange(6).reshape(2, 3)
    >>> borrow(a).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    return carray(_data_pointer(array), array.shape)
