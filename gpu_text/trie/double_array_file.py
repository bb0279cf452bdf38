"""Saved double-array tries: uncompressed ``.npz`` archives (members ``format``, ``state``,
``check``, ``label``, ``eow``; no pickle) whose array data start on 64-byte boundaries, so that
they can be memory-mapped straight from the file; and the check that four arrays form a trie.
"""
from __future__ import annotations

import io
import os
import struct
import zipfile
from typing import Any

import numpy as np

MAX_VALUE = np.iinfo(np.int32).max
FORMAT = "gpu_text.DoubleArrayTrie/1"
ARRAY_DTYPES = {"state": np.int32, "check": np.int32, "label": np.uint8, "eow": np.uint8}
_ALIGN = 64  # members of a saved file start on 64-byte boundaries, so mapped arrays are aligned
_PAD_FIELD_ID = 0x6774  # a private zip extra-field id ("gt"); readers skip ids they do not know



def write_npz(path: str | os.PathLike, members: dict[str, np.ndarray]) -> None:
    """An uncompressed ``.npz`` whose array data start on :data:`_ALIGN`-byte boundaries.

    ``np.savez`` places members wherever the zip headers end; here each local header gets a
    padding extra field so that its ``.npy`` data (whose own header numpy pads to 64 bytes) is
    aligned, which keeps memory-mapped arrays aligned.
    """
    with open(path, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED) as archive:
        for name, array in members.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            header_end = raw.tell() + 30 + len(info.filename.encode()) + 4  # fixed header, name, field id+size
            padding = -header_end % _ALIGN
            info.extra = struct.pack("<HH", _PAD_FIELD_ID, padding) + bytes(padding)
            archive.writestr(info, buffer.getvalue())


def _mapped_member(path: str | os.PathLike, archive: zipfile.ZipFile, name: str) -> np.ndarray:
    """Member ``name`` of an uncompressed ``.npz`` as a read-only memory map of the file."""
    info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"member {name!r} is compressed and cannot be memory-mapped; load with mmap=False")
    with open(path, "rb") as raw:
        raw.seek(info.header_offset)
        local = raw.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError(f"member {name!r} has no zip local header")
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        start = info.header_offset + 30 + name_length + extra_length
        raw.seek(start)
        version = np.lib.format.read_magic(raw)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(raw)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(raw)
        else:
            raise ValueError(f"member {name!r} has .npy format {version}, which cannot be memory-mapped")
        offset = raw.tell()
        raw.seek(0, os.SEEK_END)
        file_size = raw.tell()
    count = int(np.prod(shape)) if len(shape) else 1
    if dtype.hasobject or fortran and len(shape) > 1:
        raise ValueError(f"member {name!r} is not a plain C-ordered array")
    if offset + count * dtype.itemsize > min(file_size, start + info.file_size):
        raise ValueError(f"member {name!r} is truncated")
    if count == 0:
        return np.zeros(shape, dtype)
    return np.asarray(np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape))


def _read_member(archive: zipfile.ZipFile, name: str) -> np.ndarray:
    with archive.open(f"{name}.npy") as member:
        return np.lib.format.read_array(member, allow_pickle=False)


def read_arrays(path: str | os.PathLike, mmap: bool) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(path) as archive:
        kind = _read_member(archive, "format")
        if kind.shape != () or str(kind) != FORMAT:
            raise ValueError(f"format is {kind!r}, expected {FORMAT!r}")
        return {name: _mapped_member(path, archive, name) if mmap else _read_member(archive, name)
                for name in ARRAY_DTYPES}


def checked_arrays(state: Any, check: Any, label: Any, eow: Any) -> tuple[np.ndarray, ...]:
    """The four arrays as numpy, after checking they form a trie (dtypes, sizes, every edge)."""
    arrays = {"state": state, "check": check, "label": label, "eow": eow}
    for name, dtype in ARRAY_DTYPES.items():
        array = arrays[name]
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
            raise ValueError(f"{name} must be a 1-D numpy array of {np.dtype(dtype)}")
    size = state.size
    if not 1 <= size <= MAX_VALUE or any(a.size != size for a in arrays.values()):
        raise ValueError(f"the four arrays must have one common length in [1, 2**31) (got "
                         f"{', '.join(f'{k}={v.size}' for k, v in arrays.items())})")
    if check[0] != 0 or int(check.min()) < 0 or int(check.max()) > size:
        raise ValueError("check holds slots outside the array (or the root has a parent)")
    # Every occupied slot must sit where its parent's base puts its label: p ^ state[p] ^ label.
    children = np.flatnonzero(check).astype(np.int64)
    parents = check[children].astype(np.int64) - 1
    if not np.array_equal(parents ^ state[parents] ^ label[children], children):
        raise ValueError("some slots are not where their parent's state and label put them")
    return state, check, label, eow
