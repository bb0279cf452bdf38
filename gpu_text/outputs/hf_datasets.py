"""The Hugging Face ``datasets`` output: a dataset directory as ``Dataset.save_to_disk`` makes it
and ``datasets.load_from_disk`` opens it (memory-mapped), written with pyarrow alone, so neither
writing nor the package's import needs ``datasets``.

The directory holds Arrow IPC stream files ``data-00000-of-0000N.arrow`` (a new shard every
``shard_bytes``, 500 MB by default as in ``save_to_disk``), ``state.json`` (the shard list and a
fingerprint) and ``dataset_info.json`` (the features: ``input_ids`` as a sequence of int32,
``starts``/``ends`` of int64 with offsets). Every chunk is appended as record batches as it comes,
so no more than a chunk is ever in memory. The directory is built under a temporary name beside
the output and renamed into place when complete; an existing dataset directory there is then
replaced, anything else there is refused before anything is read (:func:`check_dataset_output`).
The fingerprint is a hash of the ids, so the same corpus gives the same dataset, bit for bit.

>>> import os, tempfile
>>> import numpy as np
>>> from gpu_text.ragged import RaggedArray
>>> out = os.path.join(tempfile.mkdtemp(), "tokens")
>>> writer = HFDatasetWriter(out)
>>> writer.write(RaggedArray(np.array([5, 6, 7], np.int32), np.array([0, 2, 2, 3])), None, None)
>>> writer.close(), sorted(os.listdir(out))
(3, ['data-00000-of-00001.arrow', 'dataset_info.json', 'state.json'])
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from typing import Any

from gpu_text.outputs.arrow_rows import list_column, row_ranges
from gpu_text.ragged import RaggedArray

DEFAULT_SHARD_BYTES = 500 << 20  # save_to_disk's default max_shard_size
IDS_COLUMN = "input_ids"  # the name transformers' models take the ids by


def _features(with_offsets: bool) -> dict[str, Any]:
    # "Sequence" rather than the newer "List": every datasets version reads it
    def sequence(dtype: str) -> dict[str, Any]:
        return {"feature": {"dtype": dtype, "_type": "Value"}, "_type": "Sequence"}

    features = {IDS_COLUMN: sequence("int32")}
    if with_offsets:
        features.update(starts=sequence("int64"), ends=sequence("int64"))
    return features


def check_dataset_output(path: str | os.PathLike, inputs: Iterable[str | os.PathLike | None] = ()) -> None:
    """Refuse, before anything is read, an output directory that cannot be written: its parent
    missing or read-only, a file or a non-dataset directory in its place, or an input inside it.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); check_dataset_output(os.path.join(d, "new"))
    >>> check_dataset_output(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...: exists and is not a datasets directory (no state.json); choose another output path
    """
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise ValueError(f"{path}: the output directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{path}: the output directory {parent} is not writable")
    if os.path.lexists(path) and not (os.path.isdir(path) and os.path.isfile(os.path.join(path, "state.json"))):
        what = "is not a datasets directory (no state.json)" if os.path.isdir(path) else "is a file"
        raise ValueError(f"{path}: exists and {what}; choose another output path")
    inside = os.path.realpath(path) + os.sep
    for source in inputs:
        if source is not None and str(source) != "-" and os.path.realpath(source).startswith(inside):
            raise ValueError(f"{path}: the output directory holds the input {source}; choose another output path")


class HFDatasetWriter:
    """Writes a ``datasets`` directory at ``path`` (see the module docstring)."""

    def __init__(self, path: str, with_offsets: bool = False, shard_bytes: int = DEFAULT_SHARD_BYTES) -> None:
        import pyarrow as pa

        if shard_bytes < 1:
            raise ValueError(f"shard_bytes must be at least 1, got {shard_bytes}")
        self.path = os.path.abspath(path)
        directory, name = os.path.split(self.path)
        self.temp = tempfile.mkdtemp(prefix=".gpu-text-", suffix=f".{name}", dir=directory)
        fields = [pa.field(IDS_COLUMN, pa.list_(pa.int32()))]
        if with_offsets:
            fields += [pa.field("starts", pa.list_(pa.int64())), pa.field("ends", pa.list_(pa.int64()))]
        self.schema = pa.schema(fields)
        self.with_offsets, self.shard_bytes = with_offsets, shard_bytes
        self.shards: list[str] = []
        self.sink: Any = None
        self.stream: Any = None
        self.shard_size = 0
        self.rows = 0
        self.digest = hashlib.blake2b(digest_size=8)

    def _open_shard(self) -> None:
        import pyarrow as pa

        self.shards.append(os.path.join(self.temp, f"shard-{len(self.shards):05d}.arrow"))
        self.sink = pa.OSFile(self.shards[-1], "wb")
        self.stream = pa.ipc.new_stream(self.sink, self.schema)
        self.shard_size = 0

    def _close_shard(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.sink.close()
            self.stream = self.sink = None

    def write(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None) -> None:
        """Append the rows of ``ids`` (and their spans, when made with offsets) to the current shard."""
        import pyarrow as pa

        if self.with_offsets and (starts is None or ends is None):
            raise ValueError("this dataset has offset columns: starts and ends are needed")
        for first, stop in row_ranges(ids.offsets):
            part = ids.rows(first, stop)
            columns = [list_column(part, "int32")]
            if self.with_offsets:
                columns += [list_column(starts.rows(first, stop), "int64"),  # type: ignore[union-attr]
                            list_column(ends.rows(first, stop), "int64")]  # type: ignore[union-attr]
            if self.stream is None or self.shard_size >= self.shard_bytes:
                self._close_shard()
                self._open_shard()
            table = pa.Table.from_arrays(columns, schema=self.schema)
            self.stream.write_table(table)
            self.shard_size += table.nbytes
            self.digest.update(part.lengths.astype("<i8").tobytes())
            self.digest.update(part.values.astype("<i4").tobytes())
        self.rows += len(ids)

    def close(self) -> int:
        """Name the shards, write the two JSON files and move the directory into place; returns the rows."""
        if not self.shards:
            self._open_shard()  # an empty corpus is an empty dataset, not a missing one
        self._close_shard()
        names = [f"data-{i:05d}-of-{len(self.shards):05d}.arrow" for i in range(len(self.shards))]
        for shard, name in zip(self.shards, names):
            os.replace(shard, os.path.join(self.temp, name))
        state = {"_data_files": [{"filename": name} for name in names], "_fingerprint": self.digest.hexdigest(),
                 "_format_columns": None, "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False,
                 "_split": None}
        info = {"citation": "", "description": "", "features": _features(self.with_offsets), "homepage": "",
                "license": ""}
        for name, content in (("state.json", state), ("dataset_info.json", info)):
            with open(os.path.join(self.temp, name), "w", encoding="utf-8") as handle:
                json.dump(content, handle, indent=2)
        os.chmod(self.temp, 0o777 & ~_umask())  # mkdtemp's 0700 would survive the rename
        self._move_into_place()
        return self.rows

    def _move_into_place(self) -> None:
        if not os.path.lexists(self.path):
            os.rename(self.temp, self.path)
            return
        check_dataset_output(self.path)  # still a dataset directory: replace it
        old = tempfile.mkdtemp(prefix=".gpu-text-old-", dir=os.path.dirname(self.path))
        os.rename(self.path, os.path.join(old, "dataset"))
        os.rename(self.temp, self.path)
        shutil.rmtree(old, ignore_errors=True)

    def discard(self) -> None:
        """Stop writing and remove the temporary directory (an older dataset at ``path`` stays)."""
        try:
            self._close_shard()
        finally:
            shutil.rmtree(self.temp, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["DEFAULT_SHARD_BYTES", "HFDatasetWriter", "IDS_COLUMN", "check_dataset_output"]
