"""The one document reader: text files, JSON Lines and Parquet, plain or compressed, or stdin.

Every command and trainer reads its input through :func:`read_documents`, so the formats and
their rules are the same everywhere:

- ``.txt`` (and any other suffix): a document per line; ``\\n`` and ``\\r\\n`` end a line, nothing
  else does (U+2028, U+0085 or a form feed stay inside their document).
- ``.jsonl``: the string ``field`` of every JSON object, one per line; blank lines are skipped, a
  ``null`` is an empty document.
- ``.parquet``: the string column ``field``, zero-copy from Arrow; nulls are empty documents.
- ``-``: standard input, a document per line (compressed or not).
- gzip, zstd and bz2 files are recognised by their first bytes, whatever their name; the format
  inside comes from the name without its compression suffix (``x.JSONL.gz`` is JSON Lines).

Input is read ``chunk_bytes`` at a time, never whole, and ``progress`` (a tqdm bar, anything with
``update(n)``) advances by the bytes read from the file, compressed bytes for a compressed one.
"""
from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import json
import os
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Union

from gpu_text.batch import TextBatch
from gpu_text.textio import DEFAULT_CHUNK_BYTES, iter_line_chunks, lines_to_batch

PathLike = Union[str, "os.PathLike[str]"]
STDIN = "-"
COMPRESSION_SUFFIXES = {".gz", ".gzip", ".zst", ".zstd", ".bz2"}
MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bz2"}


def read_documents(paths: PathLike | Iterable[PathLike], field: str = "text",
                   chunk_bytes: int = DEFAULT_CHUNK_BYTES, progress: Any = None) -> Iterator[TextBatch]:
    """Batches of documents from ``paths`` (one path or several, read in order), each batch
    about ``chunk_bytes`` of input. See the module docstring for the formats.

    >>> import gzip, os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "a.txt"), "w", encoding="utf-8", newline="").write("one\\r\\ntwo\\u2028halves\\n")
    >>> _ = gzip.open(os.path.join(d, "b.JSONL.gz"), "wt").write('{"text": "three", "id": 3}\\n')
    >>> [b.to_pylist() for b in read_documents([os.path.join(d, "a.txt"), os.path.join(d, "b.JSONL.gz")])]
    [['one', 'two\\u2028halves'], ['three']]
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes}")
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        kind = input_format(path)
        if kind == "parquet":
            yield from _parquet(path, field, chunk_bytes, progress)
            continue
        with _open_binary(path) as raw:
            counter = _Counter(raw)
            with _decompressed(counter, path) as stream:
                chunks = iter_line_chunks(stream, chunk_bytes)
                parse = _JsonLines(path, field).parse if kind == "jsonl" else lines_to_batch
                try:
                    yield from _counted(chunks, counter, progress, parse)
                except (EOFError, OSError, zlib.error) as exc:
                    if stream is counter:  # not compressed: an I/O error of the file itself
                        raise
                    raise ValueError(f"{path}: damaged compressed data ({exc})") from exc


def total_bytes(paths: PathLike | Iterable[PathLike]) -> int:
    """Bytes :func:`read_documents` will report as progress: the files' sizes on disk (stdin
    counts 0, it has no size).

    >>> total_bytes([__file__, "-"]) == os.path.getsize(__file__)
    True
    """
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    return sum(0 if str(p) == STDIN else os.path.getsize(p) for p in paths)


def input_format(path: PathLike) -> str:
    """``"txt"``, ``"jsonl"`` or ``"parquet"``, from the name without a compression suffix,
    ignoring case.

    >>> input_format("docs.JSONL.gz"), input_format("docs.parquet"), input_format("notes.md"), input_format("-")
    ('jsonl', 'parquet', 'txt', 'txt')
    """
    if str(path) == STDIN:
        return "txt"
    suffixes = [s.lower() for s in Path(str(path)).suffixes]
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes.pop()
    inner = suffixes[-1] if suffixes else ""
    return {".jsonl": "jsonl", ".parquet": "parquet"}.get(inner, "txt")


def _open_binary(path: PathLike) -> Any:
    if str(path) != STDIN:
        return open(path, "rb")
    stdin = sys.stdin.buffer
    # peek (for the magic bytes) needs a buffered stream; stdin stays open for the caller
    return contextlib.nullcontext(stdin if hasattr(stdin, "peek") else io.BufferedReader(stdin))


class _Counter:
    """A file that counts the bytes read from it, so a decompressor's input is the progress."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.bytes_read += len(data)
        return data

    def peek(self, size: int) -> bytes:
        return self.raw.peek(size)[:size]

    @property
    def closed(self) -> bool:
        return self.raw.closed

    def close(self) -> None:
        """Nothing: the file belongs to the ``with`` block that opened it (a decompressor closes
        its input when it is closed)."""

    def __enter__(self) -> "_Counter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _decompressed(counter: _Counter, path: PathLike) -> Any:
    head = counter.peek(4)
    compression = next((name for magic, name in MAGIC.items() if head.startswith(magic)), None)
    if compression == "gzip":
        return gzip.GzipFile(fileobj=counter, mode="rb")
    if compression == "bz2":
        return bz2.BZ2File(counter, "rb")
    if compression == "zstd":
        return _zstd_stream(counter, path)
    return counter


def _zstd_stream(counter: _Counter, path: PathLike) -> Any:
    try:
        import pyarrow as pa

        if pa.Codec.is_available("zstd"):
            return pa.CompressedInputStream(counter, "zstd")
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise ValueError(f"{path} is zstd-compressed: reading it needs pyarrow (with zstd) or the zstandard "
                         "package") from None
    return zstandard.ZstdDecompressor().stream_reader(counter)


def _counted(chunks: Iterator[bytes], counter: _Counter, progress: Any, parse: Any) -> Iterator[TextBatch]:
    """Parse every chunk of lines, first advancing ``progress`` by the file bytes read for it."""
    reported = 0
    for chunk in chunks:
        if progress is not None:
            progress.update(counter.bytes_read - reported)
        reported = counter.bytes_read
        yield parse(chunk)
    if progress is not None and counter.bytes_read > reported:  # a decompressor's trailing reads
        progress.update(counter.bytes_read - reported)


class _JsonLines:
    """The ``field`` of each record of a ``.jsonl`` file, chunk by chunk, remembering line numbers
    so that an error names its line."""

    def __init__(self, path: PathLike, field: str) -> None:
        self.path, self.field = path, field
        self.first_line = 1

    def parse(self, chunk: bytes) -> TextBatch:
        first, self.first_line = self.first_line, self.first_line + chunk.count(b"\n")
        batch = self._parse_with_arrow(chunk)
        if batch is None:  # no pyarrow, or something it cannot vouch for: parse line by line
            batch = TextBatch.from_strings(self._parse_lines(chunk, first))
        return batch

    def _parse_with_arrow(self, chunk: bytes) -> TextBatch | None:
        """Arrow's multi-threaded parser when its answer is surely right: one row per non-blank
        line (it also accepts several objects on a line) and no nulls (a missing field reads as
        null too; the line-by-line parser tells those apart)."""
        try:
            import pyarrow as pa
            import pyarrow.json as pj
        except ImportError:
            return None
        longest = max(len(line) for line in chunk.split(b"\n"))
        options = pj.ReadOptions(block_size=max(1 << 20, longest + 2))
        parse = pj.ParseOptions(explicit_schema=pa.schema([(self.field, pa.large_string())]),
                                unexpected_field_behavior="ignore")
        try:
            table = pj.read_json(pa.BufferReader(chunk), read_options=options, parse_options=parse)
        except (pa.ArrowInvalid, UnicodeDecodeError):
            return None
        column = table.column(self.field)
        lines = chunk.count(b"\n") + (not chunk.endswith(b"\n"))
        if column.null_count or (table.num_rows != lines
                                 and table.num_rows != sum(1 for line in chunk.split(b"\n") if line.strip())):
            return None
        return TextBatch.from_arrow(column)

    def _parse_lines(self, chunk: bytes, first: int) -> list[str]:
        texts = []
        for number, line in enumerate(chunk.split(b"\n"), first):
            if not line.strip():
                continue
            where = f"{self.path}:{number}"
            try:
                record = json.loads(line)
            except ValueError as exc:  # malformed JSON or UTF-8
                raise ValueError(f"{where}: invalid JSON ({exc})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{where}: not a JSON object but {type(record).__name__} {line[:60]!r}")
            if self.field not in record:
                raise ValueError(f"{where}: no field {self.field!r} in the record (fields: {sorted(record)[:10]})")
            value = record[self.field]
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{where}: field {self.field!r} is {type(value).__name__}, not a string")
            texts.append(value or "")
        return texts


def _parquet(path: PathLike, field: str, chunk_bytes: int, progress: Any) -> Iterator[TextBatch]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path}: reading Parquet needs pyarrow (pip install 'gpu_text[arrow]')") from None
    with open(path, "rb") as raw:
        if raw.read(4) != b"PAR1":
            raise ValueError(f"{path} is not a Parquet file (compressed Parquet files are not read: Parquet "
                             "compresses inside)")
    parquet = pq.ParquetFile(path)
    schema = parquet.schema_arrow
    if field not in schema.names:
        raise ValueError(f"{path}: no field {field!r} in the columns {schema.names[:10]}")
    kind = schema.field(field).type
    if kind not in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        raise ValueError(f"{path}: field {field!r} is {kind}, not a string column")
    meta = parquet.metadata
    # rows per batch from the average uncompressed row size, so that a batch is about chunk_bytes
    data_bytes = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    rows_per_batch = max(1, chunk_bytes * max(1, meta.num_rows) // max(1, data_bytes))
    size, rows, reported = os.path.getsize(path), 0, 0
    for record_batch in parquet.iter_batches(batch_size=rows_per_batch, columns=[field]):
        rows += record_batch.num_rows
        if progress is not None:  # the file's bytes, shared out by rows
            read = size * rows // max(1, meta.num_rows)
            progress.update(read - reported)
            reported = read
        yield TextBatch.from_arrow(record_batch.column(0), nulls="empty")
    if progress is not None and size > reported:
        progress.update(size - reported)


__all__ = ["DEFAULT_CHUNK_BYTES", "input_format", "read_documents", "total_bytes"]
