"""The flat ``.npy`` pair output of bulk tokenizing: ``OUT.ids.npy`` (every token id, int32, one
document after another) and ``OUT.offsets.npy`` (int64, ``documents + 1`` row boundaries), so row
``i`` is ``ids[offsets[i]:offsets[i + 1]]``.

>>> import os, tempfile
>>> import numpy as np
>>> from gpu_text.ragged import RaggedArray
>>> d = tempfile.mkdtemp(); ids, offsets = os.path.join(d, "o.ids.npy"), os.path.join(d, "o.offsets.npy")
>>> writer = NpyWriter(ids, offsets)
>>> writer.write(RaggedArray(np.array([5, 6, 7], np.int32), np.array([0, 2, 2, 3])), None, None)
>>> writer.close()
3
>>> np.load(ids).tolist(), np.load(offsets).tolist()
([5, 6, 7], [0, 2, 2, 3])
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

from gpu_text.ragged import RaggedArray

_COPY_BYTES = 1 << 24  # the scratch file is copied in pieces of this size: memory stays flat


class NpyWriter:
    """Writes the pair chunk by chunk: the ids go to an anonymous scratch file first, because
    their count, which the ``.npy`` header holds, is known only at the end."""

    def __init__(self, ids_path: str, offsets_path: str) -> None:
        self.ids_path, self.offsets_path = ids_path, offsets_path
        self.ids_raw = tempfile.TemporaryFile(dir=os.path.dirname(os.path.abspath(ids_path)))
        self.offsets = [np.zeros(1, np.int64)]
        self.total = 0

    def write(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None) -> None:
        """Append the rows of ``ids`` (host arrays); ``starts``/``ends`` are not stored here."""
        self.ids_raw.write(np.ascontiguousarray(ids.values, np.int32).tobytes())
        self.offsets.append(ids.offsets[1:] + self.total)
        self.total += int(ids.values.size)

    def close(self) -> int:
        """Write both files; returns the number of rows written."""
        self.ids_raw.seek(0)
        with open(self.ids_path, "wb") as out:
            np.lib.format.write_array_header_1_0(out, {"descr": "<i4", "fortran_order": False, "shape": (self.total,)})
            while chunk := self.ids_raw.read(_COPY_BYTES):
                out.write(chunk)
        offsets = np.concatenate(self.offsets)
        with open(self.offsets_path, "wb") as out:
            np.save(out, offsets)
        self.ids_raw.close()
        return offsets.size - 1

    def discard(self) -> None:
        """Drop what was written (the caller removes the output files)."""
        self.ids_raw.close()


__all__ = ["NpyWriter"]
