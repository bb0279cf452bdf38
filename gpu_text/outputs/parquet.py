"""The Parquet output of bulk tokenizing: one row per document, an ``ids`` column of
``list<int32>`` and, when asked, each token's byte span in the original text (``starts`` and
``ends``, ``list<int64>``), written one row group per chunk. The ids alone are written by
:class:`gpu_text.outputs.parquet_ids.ParquetIdsWriter` (a fraction of pyarrow's time, which on a
2-core machine is the encoder's), with offsets by pyarrow.

>>> import os, tempfile
>>> import numpy as np, pyarrow.parquet as pq
>>> from gpu_text.ragged import RaggedArray
>>> path = os.path.join(tempfile.mkdtemp(), "o.parquet")
>>> writer = ParquetWriter(path, with_offsets=False)
>>> writer.write(RaggedArray(np.array([5, 6, 7], np.int32), np.array([0, 2, 2, 3])), None, None)
>>> writer.close(), pq.read_table(path).column("ids").to_pylist()
(3, [[5, 6], [], [7]])
"""
from __future__ import annotations

from gpu_text.outputs.arrow_rows import list_column, row_ranges
from gpu_text.outputs.parquet_ids import ParquetIdsWriter
from gpu_text.ragged import RaggedArray


class ParquetWriter:
    """A row group per :meth:`write`; the schema is fixed at the start."""

    def __init__(self, path: str, with_offsets: bool) -> None:
        self.with_offsets = with_offsets
        self.rows = 0
        if not with_offsets:
            self.ids_writer = ParquetIdsWriter(path)
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.schema = pa.schema([pa.field(name, pa.list_(kind)) for name, kind in
                                 (("ids", pa.int32()), ("starts", pa.int64()), ("ends", pa.int64()))])
        self.arrow_writer = pq.ParquetWriter(path, self.schema)

    def write(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None) -> None:
        """Append the rows of ``ids`` (and their spans, when the writer was made with offsets), a
        row group per piece of at most 2**31 - 1 tokens (the ``list<int32>`` offsets' limit)."""
        if not self.with_offsets:
            self.ids_writer.write(ids)
            self.rows += len(ids)
            return
        import pyarrow as pa

        if starts is None or ends is None:
            raise ValueError("this Parquet output has offset columns: starts and ends are needed")
        for first, stop in row_ranges(ids.offsets):
            columns = [list_column(ids.rows(first, stop), "int32"), list_column(starts.rows(first, stop), "int64"),
                       list_column(ends.rows(first, stop), "int64")]
            self.arrow_writer.write_table(pa.Table.from_arrays(columns, schema=self.schema))
        self.rows += len(ids)

    def close(self) -> int:
        """Finish the file; returns the number of rows written."""
        if self.with_offsets:
            self.arrow_writer.close()
        else:
            self.ids_writer.close()
        return self.rows

    def discard(self) -> None:
        """Stop writing (the caller removes the temporary file)."""
        if self.with_offsets:
            self.arrow_writer.close()
        else:
            self.ids_writer.discard()


__all__ = ["ParquetWriter"]
