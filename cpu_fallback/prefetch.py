"""A software prefetch of one array element, for the samplers whose next tokens' rows are known
ahead but lie anywhere in memory (the CPU LDA samplers read a word's topic list per token: without
a prefetch every token waits on one or two cache misses). No CUDA twin: a CPU memory hint (GPUs
hide latency with other warps).

>>> import numpy as np
>>> from numba import njit
>>> @njit
... def total(a):
...     s = 0
...     for i in range(a.size):
...         prefetch(a, min(i + 8, a.size - 1))
...         s += a[i]
...     return s
>>> int(total(np.arange(100)))
4950
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Hints the cache to load ``array.ravel()[index]`` (a C-contiguous array, ``index`` in
    range): a read, kept in every cache level. It changes no value."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None
    signature = types.void(array, index)

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        address = builder.gep(data, [builder.sext(args[1], ir.IntType(64)) if sig.args[1].bitwidth < 64
                                     else args[1]])
        pointer = builder.bitcast(address, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        # (address, read, keep in every level, data cache). llvmlite writes typed pointers (i8*), so the
        # name is LLVM 14's "p0i8"; LLVM 15+ (opaque pointers) upgrades it to "p0" when it reads the IR
        hint = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [pointer.type] + [i32] * 3),
                                              "llvm.prefetch.p0i8")
        builder.call(hint, [pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return signature, codegen
