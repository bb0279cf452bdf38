"""Ragged rows to Arrow ``list`` columns in pieces whose offsets fit int32, for the Arrow-based
outputs (Parquet, HF datasets): a ``list<int32>`` column has int32 offsets, so one chunk of more
than 2**31 - 1 values (a huge ``--chunk-mb``) is cut into several record batches instead of
having its offsets wrap around.

>>> import numpy as np
>>> from gpu_text.ragged import RaggedArray
>>> rows = RaggedArray(np.arange(5, dtype=np.int32), np.array([0, 2, 2, 5]))
>>> [(a, b) for a, b in row_ranges(rows.offsets, max_values=3)]
[(0, 2), (2, 3)]
>>> list_column(rows.rows(0, 2), "int32").to_pylist()
[[0, 1], []]
>>> list_column(rows.rows(1, 3), "int64").type, list_column(rows.rows(1, 3), "int64").to_pylist()
(ListType(list<item: int64>), [[], [2, 3, 4]])
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from gpu_text.ragged import RaggedArray

MAX_ARROW_VALUES = int(np.iinfo(np.int32).max)


def row_ranges(offsets: np.ndarray, max_values: int = MAX_ARROW_VALUES) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` row ranges covering every row, each with at most ``max_values`` values
    (a single longer row gets a range of its own). No range is yielded for zero rows."""
    rows, start = offsets.size - 1, 0
    while start < rows:
        limit = int(offsets[start]) + max_values
        stop = int(np.searchsorted(offsets, limit, side="right")) - 1
        stop = min(max(stop, start + 1), rows)
        yield start, stop
        start = stop


def list_column(rows: RaggedArray, value_type: str) -> Any:
    """A ``pyarrow.ListArray`` of ``value_type`` (``"int32"``, ``"int64"``) over ``rows``, which
    must hold at most 2**31 - 1 values (see :func:`row_ranges`)."""
    import pyarrow as pa

    values = np.ascontiguousarray(rows.values, dtype=np.dtype(value_type).newbyteorder("="))
    offsets = np.asarray(rows.offsets)
    if int(offsets[-1]) > MAX_ARROW_VALUES:
        raise ValueError(f"{int(offsets[-1])} values do not fit one int32-offset list column; cut with row_ranges")
    return pa.ListArray.from_arrays(_flat(pa, offsets.astype(np.int32), pa.int32()),
                                    _flat(pa, values, pa.from_numpy_dtype(values.dtype)))


def _flat(pa: Any, array: np.ndarray, kind: Any) -> Any:
    """A null-free Arrow array over ``array``'s memory (zero-copy). Not ``pa.array``: for a numpy
    argument it imports pandas (about 0.4 CPU-s and the GIL held, on the writer thread of a bulk
    job, while the encoder's Python glue waits for the GIL), and checks each value for nulls."""
    return pa.Array.from_buffers(kind, array.size, [None, pa.py_buffer(array)])


__all__ = ["MAX_ARROW_VALUES", "list_column", "row_ranges"]
