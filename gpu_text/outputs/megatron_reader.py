"""A small reader of Megatron-LM indexed datasets (``PREFIX.idx`` + ``PREFIX.bin``), written from
the file format alone (not from :mod:`gpu_text.outputs.megatron`'s writer), so that tests check the
writer against an independent reading of the bytes. Both files are memory-mapped: opening a
dataset reads only its 34-byte header.

>>> import os, struct, tempfile
>>> import numpy as np
>>> prefix = os.path.join(tempfile.mkdtemp(), "tiny")
>>> np.array([7, 8, 9], np.uint16).tofile(prefix + ".bin")
>>> with open(prefix + ".idx", "wb") as idx:  # two sequences (2 and 1 tokens), two documents
...     _ = idx.write(b"MMIDIDX\\x00\\x00" + struct.pack("<QBQQ", 1, 8, 2, 3))
...     _ = idx.write(np.array([2, 1], "<i4").tobytes() + np.array([0, 4], "<i8").tobytes())
...     _ = idx.write(np.array([0, 1, 2], "<i8").tobytes())
>>> data = read_megatron(prefix)
>>> [s.tolist() for s in data.sequences], data.document_index.tolist(), data.dtype
([[7, 8], [9]], [0, 1, 2], dtype('uint16'))
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

# the header: magic, version, dtype code, sequence count, document index entries (packed, little-endian)
_HEADER = np.dtype([("magic", "S9"), ("version", "<u8"), ("code", "u1"), ("sequences", "<u8"),
                    ("document_entries", "<u8")])
# the dtype codes of the format: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16
_CODE_DTYPES = {1: "u1", 2: "i1", 3: "<i2", 4: "<i4", 5: "<i8", 6: "<f8", 7: "<f4", 8: "<u2"}


@dataclass
class MegatronDataset:
    """What :func:`read_megatron` finds: the tokens of each sequence (views of the memory-mapped
    ``.bin``), the per-sequence lengths and byte pointers, the document index and the token dtype."""

    sequences: list[np.ndarray]
    lengths: np.ndarray
    pointers: np.ndarray
    document_index: np.ndarray
    dtype: np.dtype

    def documents(self) -> list[np.ndarray]:
        """The tokens of each document: its sequences, joined.

        >>> MegatronDataset([np.array([1]), np.array([2])], np.array([1, 1]), np.array([0, 2]),
        ...                 np.array([0, 2, 2]), np.dtype("u2")).documents()
        [array([1, 2]), array([], dtype=uint16)]
        """
        bounds = self.document_index
        return [np.concatenate(self.sequences[a:b]) if b > a else np.zeros(0, self.dtype)
                for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def read_megatron(prefix: str | os.PathLike) -> MegatronDataset:
    """Map ``PREFIX.idx`` and ``PREFIX.bin`` (a ``.bin``/``.idx`` name is taken as its prefix);
    a damaged file is a ``ValueError`` naming it (see the module example)."""
    prefix = str(prefix)
    if prefix.endswith((".bin", ".idx")):
        prefix = prefix[:-4]
    idx_path, bin_path = prefix + ".idx", prefix + ".bin"
    size = os.path.getsize(idx_path)
    if size < _HEADER.itemsize:
        raise ValueError(f"{idx_path}: {size} bytes, shorter than the {_HEADER.itemsize}-byte header")
    index = np.memmap(idx_path, np.uint8, mode="r")
    header = np.frombuffer(index[:_HEADER.itemsize].tobytes(), _HEADER)[0]
    if header["magic"] != b"MMIDIDX" or index[7] != 0 or index[8] != 0 or header["version"] != 1:
        raise ValueError(f"{idx_path}: not a Megatron index (magic MMIDIDX\\x00\\x00, version 1)")
    if int(header["code"]) not in _CODE_DTYPES:
        raise ValueError(f"{idx_path}: unknown dtype code {int(header['code'])}")
    dtype = np.dtype(_CODE_DTYPES[int(header["code"])])
    count, entries = int(header["sequences"]), int(header["document_entries"])
    body = _HEADER.itemsize + 12 * count + 8 * entries
    if entries < 1 or size < body:
        raise ValueError(f"{idx_path}: {size} bytes, but its header announces {count} sequences and "
                         f"{entries} document index entries ({body} bytes)")
    start = _HEADER.itemsize
    lengths = np.frombuffer(index, "<i4", count, start)
    pointers = np.frombuffer(index, "<i8", count, start + 4 * count)
    document_index = np.frombuffer(index, "<i8", entries, start + 12 * count)
    data = np.memmap(bin_path, np.uint8, mode="r") if os.path.getsize(bin_path) else np.zeros(0, np.uint8)
    ends = pointers + lengths.astype(np.int64) * dtype.itemsize
    if count and (int(pointers.min()) < 0 or int(ends.max()) > data.size):
        raise ValueError(f"{bin_path}: {data.size} bytes, but {idx_path} points past its end")
    if document_index[0] != 0 or document_index[-1] != count or bool((np.diff(document_index) < 0).any()):
        raise ValueError(f"{idx_path}: the document index does not run from 0 to {count} in order")
    sequences = [np.frombuffer(data, dtype, int(n), int(p)) for n, p in zip(lengths.tolist(), pointers.tolist())]
    return MegatronDataset(sequences, lengths, pointers, document_index, dtype)


__all__ = ["MegatronDataset", "read_megatron"]
