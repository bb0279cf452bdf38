"""Bulk tokenizing (the main job): stream documents from .txt/.jsonl/.parquet files through a
tokenizer into Parquet (a ``list<int32>`` ids column, optionally offsets) or a flat ``.npy`` pair.

Memory stays bounded by the chunk size whatever the input size; documents are never dropped or
reordered (the count of documents read and rows written is checked at the end).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.batch import TextBatch
from gpu_text.ragged import RaggedArray
from gpu_text.textio import DEFAULT_CHUNK_BYTES, iter_line_batches

PARQUET_ROWS = 65_536


def load_tokenizer(path: str | Path) -> Any:
    """A SentencePiece ``.model`` (by its extension) or the seed's text model format.

    >>> load_tokenizer  # doctest: +ELLIPSIS
    <function load_tokenizer at ...>
    """
    from gpu_text.tokenizer.tokenizer import Tokenizer

    return Tokenizer.from_sentencepiece(path) if str(path).endswith(".model") else Tokenizer.from_model_file(path)


def iter_documents(path: str | Path, field: str = "text", chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                   progress: Any = None) -> Iterator[TextBatch]:
    """Batches of documents: lines of a ``.txt``, ``field`` of each ``.jsonl`` object, or column
    ``field`` of a ``.parquet`` file (zero-copy from Arrow).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "d.jsonl")
    >>> _ = open(p, "w").write('{"text": "a"}\\n{"text": "bc"}\\n')
    >>> [b.to_pylist() for b in iter_documents(p)]
    [['a', 'bc']]
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        reader = pq.ParquetFile(path)
        for record_batch in reader.iter_batches(batch_size=PARQUET_ROWS, columns=[field]):
            column = record_batch.column(0)
            if progress is not None:
                progress.update(column.nbytes)
            yield TextBatch.from_arrow(column, nulls="empty")
    elif suffix == ".jsonl":
        import pyarrow.json as pj

        options = pj.ReadOptions(block_size=max(1 << 20, min(chunk_bytes, 1 << 30)))
        with pj.open_json(path, read_options=options) as reader:
            for record_batch in reader:
                if field not in record_batch.schema.names:
                    raise ValueError(f"{path}: no field {field!r} in {record_batch.schema.names}")
                column = record_batch.column(record_batch.schema.get_field_index(field))
                if progress is not None:
                    progress.update(column.nbytes)
                yield TextBatch.from_arrow(column, nulls="empty")
    else:
        with open(path, "rb") as stream:
            yield from iter_line_batches(stream, chunk_bytes, progress)


class _NpyWriter:
    """A flat ``OUT.ids.npy`` (int32) and ``OUT.offsets.npy`` (int64) written chunk by chunk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids_raw = open(f"{path}.ids.tmp", "wb")
        self.offsets = [np.zeros(1, np.int64)]
        self.total = 0

    def write(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None) -> None:
        self.ids_raw.write(np.ascontiguousarray(ids.values, np.int32).tobytes())
        self.offsets.append(ids.offsets[1:] + self.total)
        self.total += int(ids.values.size)

    def close(self) -> int:
        self.ids_raw.close()
        stem = str(self.path)
        with open(f"{stem}.ids.npy", "wb") as out, open(f"{stem}.ids.tmp", "rb") as raw:
            np.lib.format.write_array_header_1_0(out, {"descr": "<i4", "fortran_order": False, "shape": (self.total,)})
            while chunk := raw.read(1 << 24):
                out.write(chunk)
        os.remove(f"{stem}.ids.tmp")
        offsets = np.concatenate(self.offsets)
        np.save(f"{stem}.offsets.npy", offsets)
        return offsets.size - 1


class _ParquetWriter:
    def __init__(self, path: Path, with_offsets: bool) -> None:
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


def tokenize_files(tokenizer: Any, inputs: Sequence[str | Path], output: str | Path, field: str = "text",
                   with_offsets: bool = False, backend: str | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                   add_bos: bool = False, add_eos: bool = False, progress: bool = True) -> dict[str, Any]:
    """Tokenize every document of ``inputs`` into ``output`` (``.parquet``, or ``.npy``: writes
    ``OUT.ids.npy`` + ``OUT.offsets.npy``). Returns counts and throughput.

    >>> tokenize_files  # doctest: +ELLIPSIS
    <function tokenize_files at ...>
    """
    from tqdm import tqdm

    output = Path(output)
    if output.suffix == ".npy":
        if with_offsets:
            raise ValueError("offsets are written to Parquet outputs only")
        writer: Any = _NpyWriter(output.with_suffix(""))
    else:
        writer = _ParquetWriter(output, with_offsets)
    documents = tokens = 0
    total = sum(os.path.getsize(p) for p in inputs)
    start = time.perf_counter()
    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="tokenize", disable=not progress) as bar:
        for path in inputs:
            for batch in iter_documents(path, field, chunk_bytes, bar):
                encoding = tokenizer.encode(batch, backend=backend, with_offsets=with_offsets, add_bos=add_bos,
                                            add_eos=add_eos)
                ids = encoding.ids.to_numpy()
                starts = encoding.starts.to_numpy() if encoding.starts is not None else None
                ends = encoding.ends.to_numpy() if encoding.ends is not None else None
                writer.write(ids, starts, ends)
                documents += len(batch)
                tokens += int(ids.values.size)
    rows = writer.close()
    if rows != documents:
        raise RuntimeError(f"read {documents} documents but wrote {rows} rows")
    seconds = time.perf_counter() - start
    return {"documents": documents, "tokens": tokens, "bytes": total, "seconds": round(seconds, 3),
            "mb_per_s": round(total / 1e6 / seconds, 2) if seconds > 0 else None}


def cmd_tokenize(args: argparse.Namespace) -> int:
    """``gpu-text tokenize --model M IN... OUT``."""
    tokenizer = load_tokenizer(args.model)
    summary = tokenize_files(tokenizer, args.inputs, args.output, field=args.field, with_offsets=args.offsets,
                             backend=args.backend, chunk_bytes=args.chunk_mb << 20, add_bos=args.add_bos,
                             add_eos=args.add_eos, progress=sys.stderr.isatty())
    print(json.dumps(summary), file=sys.stderr)
    return 0


def add_commands(commands: Any) -> None:
    """Register ``tokenize`` on the ``gpu-text`` command line.

    >>> parser = argparse.ArgumentParser(); add_commands(parser.add_subparsers())
    >>> parser.parse_args(["tokenize", "--model", "m.model", "a.txt", "out.parquet"]).inputs
    ['a.txt']
    """
    from gpu_text.cli import add_backend_options

    tokenize = commands.add_parser("tokenize", help="bulk-tokenize .txt/.jsonl/.parquet into Parquet or .npy")
    tokenize.add_argument("--model", required=True, help="a SentencePiece .model (BPE) or a gpu_text model file")
    tokenize.add_argument("inputs", nargs="+", help="input files (.txt: a document per line; .jsonl; .parquet)")
    tokenize.add_argument("output", help="OUT.parquet (list<int32> ids column) or OUT.npy (OUT.ids.npy + OUT.offsets.npy)")
    tokenize.add_argument("--field", default="text", help="the .jsonl field or .parquet column holding the text")
    tokenize.add_argument("--offsets", action="store_true", help="also write each token's byte span (Parquet)")
    tokenize.add_argument("--add-bos", action="store_true")
    tokenize.add_argument("--add-eos", action="store_true")
    add_backend_options(tokenize)
    tokenize.set_defaults(run=cmd_tokenize)
