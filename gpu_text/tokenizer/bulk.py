"""Bulk tokenizing (the main job): stream documents (any input :mod:`gpu_text.documents` reads)
through a tokenizer into Parquet (a ``list<int32>`` ids column, optionally offsets) or a flat
``.npy`` pair. The command line is ``gpu-text tokenize`` (:mod:`gpu_text.tokenizer.commands`).

Memory stays bounded by the chunk size whatever the input size; documents are never dropped or
reordered (the count of documents read and rows written is checked at the end), and an output
appears only whole (written under a temporary name, renamed on success).
"""
from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.documents import DEFAULT_CHUNK_BYTES, iter_documents, total_bytes
from gpu_text.ragged import RaggedArray


def load_tokenizer(path: str | Path) -> Any:
    """A file of ``Tokenizer.save``, the seed's text model format or a SentencePiece ``.model``,
    told apart by content (:meth:`~gpu_text.tokenizer.Tokenizer.from_file`).

    >>> import gpu_text, pathlib, tempfile
    >>> saved = pathlib.Path(tempfile.mkdtemp()) / "saved.bin"  # any name
    >>> load_tokenizer(pathlib.Path(gpu_text.__file__).parent / "data/models/sample-bpe-4k.txt").save(saved)
    >>> load_tokenizer(saved).encode(["In the beginning"]).ids.to_pylist()
    [[1514, 1478, 263, 612, 270, 1478, 318]]
    """
    from gpu_text.tokenizer.tokenizer import Tokenizer

    return Tokenizer.from_file(path)


class _NpyWriter:
    """A flat ids (int32) and offsets (int64) ``.npy`` pair written chunk by chunk: the ids go to
    an anonymous scratch file first (their count, in the header, is known only at the end)."""

    def __init__(self, ids_path: str, offsets_path: str) -> None:
        self.ids_path, self.offsets_path = ids_path, offsets_path
        self.ids_raw = tempfile.TemporaryFile(dir=os.path.dirname(os.path.abspath(ids_path)))
        self.offsets = [np.zeros(1, np.int64)]
        self.total = 0

    def write(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None) -> None:
        self.ids_raw.write(np.ascontiguousarray(ids.values, np.int32).tobytes())
        self.offsets.append(ids.offsets[1:] + self.total)
        self.total += int(ids.values.size)

    def close(self) -> int:
        self.ids_raw.seek(0)
        with open(self.ids_path, "wb") as out:
            np.lib.format.write_array_header_1_0(out, {"descr": "<i4", "fortran_order": False, "shape": (self.total,)})
            while chunk := self.ids_raw.read(1 << 24):
                out.write(chunk)
        offsets = np.concatenate(self.offsets)
        with open(self.offsets_path, "wb") as out:
            np.save(out, offsets)
        self.ids_raw.close()
        return offsets.size - 1

    def discard(self) -> None:
        self.ids_raw.close()


class _ParquetWriter:
    def __init__(self, path: str, with_offsets: bool) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        fields = [pa.field("ids", pa.list_(pa.int32()))]
        if with_offsets:
            fields += [pa.field("starts", pa.list_(pa.int64())), pa.field("ends", pa.list_(pa.int64()))]
        self.schema = pa.schema(fields)
        self.writer = pq.ParquetWriter(path, self.schema)
        self.rows = 0

    def write(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None) -> None:
        import pyarrow as pa

        columns = [ids.to_arrow(large=False).cast(pa.list_(pa.int32()))]
        if starts is not None:
            columns += [starts.to_arrow(large=False), ends.to_arrow(large=False)]
        self.writer.write_table(pa.Table.from_arrays(columns, schema=self.schema))
        self.rows += len(ids)

    def close(self) -> int:
        self.writer.close()
        return self.rows

    def discard(self) -> None:
        self.writer.close()  # the file is a temporary, removed by the caller


def output_paths(output: str | Path) -> list[str]:
    """The files :func:`tokenize_files` writes for ``output``: itself, or for ``OUT.npy`` the pair
    ``OUT.ids.npy`` and ``OUT.offsets.npy``.

    >>> output_paths("ids.npy"), output_paths("ids.parquet")
    (['ids.ids.npy', 'ids.offsets.npy'], ['ids.parquet'])
    """
    output = Path(output)
    if output.suffix != ".npy":
        return [str(output)]
    stem = output.with_suffix("")
    return [f"{stem}.ids.npy", f"{stem}.offsets.npy"]


def tokenize_files(tokenizer: Any, inputs: Sequence[str | Path], output: str | Path, field: str = "text",
                   with_offsets: bool = False, backend: str | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                   add_bos: bool = False, add_eos: bool = False, progress: bool = True, format: str | None = None,
                   max_document_bytes: int | None = None) -> dict[str, Any]:
    """Tokenize every document of ``inputs`` into ``output`` (``.parquet``, or ``.npy``: writes
    ``OUT.ids.npy`` + ``OUT.offsets.npy``). Returns counts and throughput.

    The outputs are written under temporary names and renamed at the end, so a failure (named
    by input file and documents) leaves no partial output and an older output untouched; an
    output that is one of the inputs is refused before anything is read.

    >>> import os, tempfile
    >>> from gpu_text.demo import MODEL
    >>> d = tempfile.mkdtemp(); docs = os.path.join(d, "docs.txt")
    >>> _ = open(docs, "w").write("Hello world\\n\\nbye\\n")
    >>> summary = tokenize_files(load_tokenizer(MODEL), [docs], os.path.join(d, "ids.npy"), backend="cpu", progress=False)
    >>> summary["documents"], summary["bytes"], sorted(os.listdir(d))
    (3, 17, ['docs.txt', 'ids.ids.npy', 'ids.offsets.npy'])
    """
    from tqdm import tqdm

    from gpu_text.backend import get_backend
    from gpu_text.cli_helpers import atomic_outputs, check_outputs, failing_documents

    if str(output) == "-":
        raise ValueError("the output must be a .parquet or .npy file, not '-' (stdout)")
    outputs = output_paths(output)
    if with_offsets and len(outputs) == 2:
        raise ValueError("offsets are written to Parquet outputs only")
    inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    check_outputs(inputs, outputs)
    total = total_bytes(inputs)  # a missing input fails before an output is created
    get_backend(backend)  # and so does a backend that cannot run here
    documents = tokens = 0
    start = time.perf_counter()
    with atomic_outputs(outputs) as temps, tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                                                desc="tokenize", disable=not progress) as bar:
        writer: Any = _NpyWriter(*temps) if len(temps) == 2 else _ParquetWriter(temps[0], with_offsets)
        try:
            for path, first, batch in iter_documents(inputs, field, chunk_bytes, bar, format, max_document_bytes):
                with failing_documents(path, first, len(batch)):
                    encoding = tokenizer.encode(batch, backend=backend, with_offsets=with_offsets, add_bos=add_bos,
                                                add_eos=add_eos)
                    ids = encoding.ids.to_numpy()
                    starts = encoding.starts.to_numpy() if encoding.starts is not None else None
                    ends = encoding.ends.to_numpy() if encoding.ends is not None else None
                    writer.write(ids, starts, ends)
                documents += len(batch)
                tokens += int(ids.values.size)
        except BaseException:
            writer.discard()
            raise
        rows = writer.close()
        if rows != documents:
            raise RuntimeError(f"read {documents} documents but wrote {rows} rows")
    seconds = time.perf_counter() - start
    return {"documents": documents, "tokens": tokens, "bytes": total, "seconds": round(seconds, 3),
            "mb_per_s": round(total / 1e6 / seconds, 2) if seconds > 0 else None}
