"""Ragged results: one flat ``values`` array plus int64 row ``offsets`` (Arrow list layout).

Every batched operation returns these, on the array module of the backend that made them (numpy
or cupy). They convert to padded 2-D arrays (with lengths or a mask), to Python lists, to
pyarrow list arrays, and through DLPack.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.arrays import array_module, to_host


def row_ids(offsets: Any) -> Any:
    """The row of every value of a ragged layout, as ``np.repeat(arange(rows), lengths)`` would give.

    Written with ``searchsorted`` because CuPy's ``repeat`` takes no array of counts.

    >>> row_ids(np.array([0, 2, 2, 3])).tolist()
    [0, 0, 2]
    """
    xp = array_module(offsets)
    return xp.searchsorted(offsets[1:], xp.arange(int(offsets[0]), int(offsets[-1]), dtype=offsets.dtype), side="right")


class RaggedArray:
    """Rows of varying length stored flat: row ``i`` is ``values[offsets[i]:offsets[i + 1]]``.

    >>> r = RaggedArray(np.array([1, 2, 3], np.int32), np.array([0, 2, 2, 3]))
    >>> len(r), r.to_pylist()
    (3, [[1, 2], [], [3]])
    """

    def __init__(self, values: Any, offsets: Any, *, check: bool = True) -> None:
        xp = array_module(values)
        offsets = xp.asarray(offsets, dtype=xp.int64)
        if check:
            if values.ndim != 1 or offsets.ndim != 1 or offsets.size == 0:
                raise ValueError("values must be 1-D and offsets 1-D with at least one entry")
            if int(offsets[0]) != 0 or int(offsets[-1]) != values.size:
                raise ValueError(f"offsets must start at 0 and end at len(values)={values.size}")
            if offsets.size > 1 and bool((offsets[1:] < offsets[:-1]).any()):
                raise ValueError("offsets must be non-decreasing")
        self.values = values
        self.offsets = offsets

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    def __repr__(self) -> str:
        return f"RaggedArray(rows={len(self)}, values={self.values.size}, dtype={self.values.dtype})"

    @property
    def lengths(self) -> Any:
        """Length of every row (int64).

        >>> RaggedArray(np.arange(3), np.array([0, 1, 3])).lengths.tolist()
        [1, 2]
        """
        return self.offsets[1:] - self.offsets[:-1]

    def rows(self, start: int, stop: int) -> "RaggedArray":
        """Rows ``start`` to ``stop - 1`` as a ragged array (a view of ``values``; offsets rebased).

        >>> RaggedArray(np.arange(3), np.array([0, 1, 3, 3])).rows(1, 3).to_pylist()
        [[1, 2], []]
        """
        first, last = int(self.offsets[start]), int(self.offsets[stop])
        return type(self)(self.values[first:last], self.offsets[start:stop + 1] - first, check=False)

    @classmethod
    def concat(cls, parts: "list[RaggedArray]") -> "RaggedArray":
        """The rows of ``parts``, one after another (all on one device).

        >>> a, b = RaggedArray(np.arange(2), np.array([0, 2])), RaggedArray(np.arange(1), np.array([0, 0, 1]))
        >>> RaggedArray.concat([a, b]).to_pylist()
        [[0, 1], [], [0]]
        """
        xp = array_module(parts[0].values)
        starts = np.cumsum([0] + [p.values.size for p in parts[:-1]]).tolist()
        offsets = [parts[0].offsets[:1]] + [p.offsets[1:] + start for p, start in zip(parts, starts)]
        return cls(xp.concatenate([p.values for p in parts]), xp.concatenate(offsets), check=False)

    def row(self, i: int) -> Any:
        """Row ``i`` as a view of ``values``.

        >>> RaggedArray(np.arange(3), np.array([0, 1, 3])).row(1).tolist()
        [1, 2]
        """
        if not -len(self) <= i < len(self):
            raise IndexError(f"row {i} out of range for {len(self)} rows")
        i %= len(self)
        return self.values[int(self.offsets[i]):int(self.offsets[i + 1])]

    def to_numpy(self) -> "RaggedArray":
        """The same rows with numpy arrays (a device-to-host copy for cupy).

        >>> RaggedArray(np.arange(2), np.array([0, 2])).to_numpy().values.tolist()
        [0, 1]
        """
        return RaggedArray(to_host(self.values), to_host(self.offsets), check=False)

    def to_pylist(self) -> list[list[Any]]:
        """Rows as Python lists (a conversion for inspection, not for hot paths).

        >>> RaggedArray(np.array([5, 6]), np.array([0, 0, 2])).to_pylist()
        [[], [5, 6]]
        """
        values = to_host(self.values).tolist()
        bounds = to_host(self.offsets).tolist()
        return [values[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def to_padded(self, pad_value: Any = 0, max_length: int | None = None,
                  return_mask: bool = False) -> tuple[Any, Any]:
        """A ``(rows, width)`` array padded with ``pad_value``, and the lengths (or a bool mask).

        Rows longer than ``max_length`` are truncated; width is ``max_length`` when given, else the
        longest row.

        >>> padded, lengths = RaggedArray(np.array([1, 2, 3]), np.array([0, 2, 3])).to_padded(-1)
        >>> padded.tolist(), lengths.tolist()
        ([[1, 2], [3, -1]], [2, 1])
        >>> RaggedArray(np.array([1, 2, 3]), np.array([0, 2, 3])).to_padded(max_length=1, return_mask=True)[1].tolist()
        [[True], [True]]
        """
        xp = array_module(self.values)
        lengths = self.lengths
        if max_length is not None:
            if max_length < 0:
                raise ValueError("max_length must be >= 0")
            lengths = xp.minimum(lengths, max_length)
            width = int(max_length)
        else:
            width = int(lengths.max()) if len(self) else 0
        padded = xp.full((len(self), width), pad_value, dtype=self.values.dtype)
        kept_offsets = xp.zeros(len(self) + 1, xp.int64)
        xp.cumsum(lengths, out=kept_offsets[1:])
        rows = row_ids(kept_offsets)
        cols = xp.arange(rows.size, dtype=xp.int64) - kept_offsets[rows]
        padded[rows, cols] = self.values[self.offsets[rows] + cols]
        if return_mask:
            return padded, xp.arange(width)[None, :] < lengths[:, None]
        return padded, lengths

    def to_arrow(self, large: bool | None = None) -> Any:
        """A ``pyarrow.ListArray`` (``LargeListArray`` when ``large`` or when int32 would overflow).

        Values are shared with numpy without a copy; cupy results are copied to the host first.

        >>> RaggedArray(np.array([1, 2], np.int32), np.array([0, 2, 2])).to_arrow().to_pylist()
        [[1, 2], []]
        """
        import pyarrow as pa

        values = pa.array(to_host(self.values))
        offsets = to_host(self.offsets)
        if large is None:
            large = int(offsets[-1]) > np.iinfo(np.int32).max
        if large:
            return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values)
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32), pa.int32()), values)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """Exports ``values`` (the flat data); export ``offsets`` separately the same way.

        >>> np.from_dlpack(RaggedArray(np.array([7, 8]), np.array([0, 1, 2]))).tolist()
        [7, 8]
        """
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.values.__dlpack_device__()
