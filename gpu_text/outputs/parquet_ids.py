"""A Parquet file of one ``ids: list<int32>`` column, written without pyarrow: the pages come from
:func:`cpu_fallback.parquet_pages.encode_pages` (levels as runs, ids bit-packed as dictionary
indices), the page headers and the footer are Thrift compact structs written here. Read back by
any Parquet reader as pyarrow's own ``list<int32>`` output is; what
:class:`gpu_text.outputs.parquet.ParquetWriter` uses when no offset columns are asked for.

Each :meth:`ParquetIdsWriter.write` is a row group: a dictionary page ``0..V-1`` (``V`` one more
than the chunk's largest id) and data pages of at most :data:`PAGE_ENTRIES` level entries, cut at
row starts, uncompressed (bit-packed ids do not compress: snappy gains pyarrow about 2% here).
A chunk with a negative id or a largest id of :data:`MAX_DICTIONARY` or more is written PLAIN.

>>> import os, tempfile
>>> import numpy as np, pyarrow.parquet as pq
>>> from gpu_text.ragged import RaggedArray
>>> path = os.path.join(tempfile.mkdtemp(), "ids.parquet")
>>> writer = ParquetIdsWriter(path)
>>> writer.write(RaggedArray(np.array([5, 6, 7], np.int32), np.array([0, 2, 2, 3])))
>>> writer.close(), pq.read_table(path).column("ids").to_pylist()
(3, [[5, 6], [], [7]])
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from gpu_text.outputs.direct_file import DirectFile
from gpu_text.ragged import RaggedArray

MAGIC = b"PAR1"
PAGE_ENTRIES = 1 << 20  # level entries a data page holds at most (a longer row gets a page alone)
MAX_DICTIONARY = 1 << 22  # a larger largest id is written PLAIN (a 16 MB dictionary page is too much)

# Thrift compact types and the Parquet enums used
_I32, _I64, _BINARY, _LIST, _STRUCT = 5, 6, 8, 9, 12
_INT32_TYPE, _OPTIONAL, _REPEATED, _LIST_CONVERTED = 1, 1, 2, 3
_PLAIN, _RLE, _RLE_DICTIONARY = 0, 3, 8
_DATA_PAGE, _DICTIONARY_PAGE, _UNCOMPRESSED = 0, 2, 0
_PATH = ["ids", "list", "element"]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _zigzag(value: int) -> bytes:
    return _varint((value << 1) ^ (value >> 63))


def thrift_struct(fields: list[tuple[int, int, Any]]) -> bytes:
    """A Thrift compact-protocol struct of ``(field id, type, value)`` in increasing id order:
    i32/i64 as zigzag varints, binary as a length and bytes, a list as ``(element type, items)``,
    a struct as its own field list.

    >>> thrift_struct([(1, _I32, 3), (4, _BINARY, "ids"), (20, _I64, -1)]).hex()  # 0x15: id +1, i32; 3 -> 6
    '1506380369647306280100'
    """
    out = bytearray()
    last = 0
    for field, kind, value in fields:
        delta = field - last
        out += bytes([(delta << 4) | kind]) if 0 < delta <= 15 else bytes([kind]) + _zigzag(field)
        out += _value(kind, value)
        last = field
    out.append(0)  # stop
    return bytes(out)


def _value(kind: int, value: Any) -> bytes:
    if kind in (_I32, _I64):
        return _zigzag(int(value))
    if kind == _BINARY:
        data = value.encode() if isinstance(value, str) else bytes(value)
        return _varint(len(data)) + data
    if kind == _STRUCT:
        return thrift_struct(value)
    element, items = value  # a list
    head = bytes([(len(items) << 4) | element]) if len(items) < 15 else bytes([0xF0 | element]) + _varint(len(items))
    return head + b"".join(_value(element, item) for item in items)


def _schema() -> list[list[tuple[int, int, Any]]]:
    """``required group schema { optional group ids (LIST) { repeated group list { optional int32
    element } } }``: pyarrow's own layout of a ``list<int32>`` column."""
    list_type = [(3, _STRUCT, [])]  # LogicalType.LIST: an empty ListType
    return [[(4, _BINARY, "schema"), (5, _I32, 1)],
            [(3, _I32, _OPTIONAL), (4, _BINARY, "ids"), (5, _I32, 1), (6, _I32, _LIST_CONVERTED),
             (10, _STRUCT, list_type)],
            [(3, _I32, _REPEATED), (4, _BINARY, "list"), (5, _I32, 1)],
            [(1, _I32, _INT32_TYPE), (3, _I32, _OPTIONAL), (4, _BINARY, "element")]]


def _page_header(page_type: int, size: int, header: tuple[int, list[tuple[int, int, Any]]]) -> bytes:
    return thrift_struct([(1, _I32, page_type), (2, _I32, size), (3, _I32, size), (header[0], _STRUCT, header[1])])


class ParquetIdsWriter:
    """Writes the ``ids`` column, a row group per :meth:`write`, the footer at :meth:`close`."""

    def __init__(self, path: str) -> None:
        self.file = DirectFile(path)
        self.file.write(MAGIC)
        self.offset = len(MAGIC)
        self.row_groups: list[list[tuple[int, int, Any]]] = []
        self.rows = 0
        self.scratch = np.zeros(0, np.uint8)  # the page buffer, reused while it is large enough
        self.page_end = np.zeros(1, np.int64)

    def write(self, ids: RaggedArray) -> None:
        """Append the rows of ``ids`` (host arrays) as a row group."""
        from gpu_text.backend import get_backend

        values = np.ascontiguousarray(ids.values, np.int32)
        offsets = np.ascontiguousarray(ids.offsets, np.int64)
        rows = offsets.size - 1
        if rows == 0:
            return
        entries = np.cumsum(np.maximum(np.diff(offsets), 1))
        cuts = np.searchsorted(entries, np.arange(PAGE_ENTRIES, int(entries[-1]), PAGE_ENTRIES), side="left")
        page_rows = np.unique(np.concatenate(([0], cuts, [rows]))).astype(np.int64)
        low, high = (int(v) for v in get_backend("cpu").op("token_ids", "id_range")(values))
        high = max(high, 0)
        width = max(1, high.bit_length()) if 0 <= low and high < MAX_DICTIONARY else 0
        start = self.offset
        dictionary_offset = None
        if width:
            dictionary = np.arange(high + 1, dtype="<i4").tobytes()
            dictionary_offset = self.offset
            self._put(_page_header(_DICTIONARY_PAGE, len(dictionary), (7, [(1, _I32, high + 1), (2, _I32, _PLAIN)])))
            self._put(dictionary)
        data_offset = self.offset
        level_entries = np.concatenate(([0], entries))[page_rows].tolist()
        encoding = _RLE_DICTIONARY if width else _PLAIN
        for p in range(page_rows.size - 1):
            self._put_page(values, offsets, page_rows[p:p + 2], width, level_entries[p + 1] - level_entries[p],
                           encoding)
        size = self.offset - start
        metadata = [(1, _I32, _INT32_TYPE), (2, _LIST, (_I32, [_PLAIN, _RLE] + ([_RLE_DICTIONARY] if width else []))),
                    (3, _LIST, (_BINARY, _PATH)), (4, _I32, _UNCOMPRESSED), (5, _I64, int(entries[-1])),
                    (6, _I64, size), (7, _I64, size), (9, _I64, data_offset)]
        if dictionary_offset is not None:
            metadata.append((11, _I64, dictionary_offset))
        chunk = [(2, _I64, start), (3, _STRUCT, metadata)]
        self.row_groups.append([(1, _LIST, (_STRUCT, [chunk])), (2, _I64, size), (3, _I64, rows),
                                (5, _I64, start), (6, _I64, size)])
        self.rows += rows

    def _put_page(self, values: np.ndarray, offsets: np.ndarray, rows: np.ndarray, width: int, entries: int,
                  encoding: int) -> None:
        """Encode the data page of ``rows`` (its first row and its end) into the scratch buffer and
        write it with its header. A page at a time: the buffer stays the size of one page (2.4 MB
        at 2**20 ids of 14 bits) and in the cache, where a chunk's pages at once needed a buffer the
        size of the chunk's output, allocated afresh whenever a chunk was larger than all before it
        (six times per 256 MB of text, 28-61 MB each, faulted in as it was written)."""
        from gpu_text.backend import get_backend

        pages = get_backend("cpu").ops("parquet_pages")
        first, last = int(offsets[rows[0]]), int(offsets[rows[1]])
        bound = pages.page_bytes_bound(entries, last - first, 1, width)
        if self.scratch.size < bound:
            self.scratch = np.empty(bound, np.uint8)
        pages.encode_pages(values, offsets, rows, width, self.scratch, self.page_end)
        end = int(self.page_end[0])
        self._put(_page_header(_DATA_PAGE, end, (5, [(1, _I32, entries), (2, _I32, encoding), (3, _I32, _RLE),
                                                   (4, _I32, _RLE)])))
        self._put(memoryview(self.scratch[:end]))

    def _put(self, data: Any) -> None:
        self.file.write(data)
        self.offset += len(data)

    def close(self) -> int:
        """Write the footer and close; returns the number of rows written."""
        footer = thrift_struct([(1, _I32, 1), (2, _LIST, (_STRUCT, _schema())), (3, _I64, self.rows),
                                (4, _LIST, (_STRUCT, self.row_groups)), (6, _BINARY, "gpu_text")])
        self.file.write(footer + struct.pack("<I", len(footer)) + MAGIC)
        self.file.close()
        return self.rows

    def discard(self) -> None:
        """Stop writing (the caller removes the file)."""
        self.file.close()


__all__ = ["MAX_DICTIONARY", "PAGE_ENTRIES", "ParquetIdsWriter", "thrift_struct"]
