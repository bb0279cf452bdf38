"""The one document reader: text files, JSON Lines, JSON arrays and Parquet, plain or
compressed, or stdin.

Every command and trainer reads its input through :func:`read_documents`, so the formats and
their rules are the same everywhere:

- ``txt``: a document per line; ``\\n`` and ``\\r\\n`` end a line, nothing else does (U+2028,
  U+0085 or a form feed stay inside their document).
- ``jsonl``: the string ``field`` of every JSON object, one per line; blank lines are skipped, a
  ``null`` is an empty document.
- ``json``: a JSON array of strings or of objects with the string ``field`` (read element by
  element, never whole), or else JSON Lines.
- ``parquet``: the string column ``field``, zero-copy from Arrow; nulls are empty documents.
- ``-``: standard input, a document per line unless ``format`` says otherwise.

The format (``format="auto"``) comes from the content first: Parquet by its ``PAR1`` magic bytes,
gzip, zstd and bz2 by theirs (decompressed transparently, whatever the name), then from the name
without its compression suffix (``.txt``, ``.jsonl``/``.ndjson``, ``.json``, ``.parquet``, in any
case); a file whose name says nothing (``notes``, ``x.md``, ``dump.gz``) is JSON Lines when its
first line is a JSON object, else text. A UTF-8 byte order mark opening a text file is dropped.

Input is read ``chunk_bytes`` at a time, never whole; a document longer than
``max_document_bytes`` is an error naming it (a file without newlines cannot fill the memory).
``progress`` (a tqdm bar, anything with ``update(n)``) advances by the bytes read from the file,
compressed bytes for a compressed one. Every error names the file (and line, element or row).
"""
from __future__ import annotations

import bz2
import codecs
import contextlib
import contextvars
import gzip
import io
import json
import os
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, Union

import numpy as np

from gpu_text.batch import TextBatch
from gpu_text.textio import DEFAULT_CHUNK_BYTES, UTF8_BOM, LineTooLong, iter_line_batches, iter_line_chunks

PathLike = Union[str, "os.PathLike[str]"]
STDIN = "-"
FORMATS = ("auto", "txt", "jsonl", "json", "parquet")
DEFAULT_MAX_DOCUMENT_BYTES = 1 << 30
COMPRESSION_SUFFIXES = {".gz", ".gzip", ".zst", ".zstd", ".bz2"}
NAMED_FORMATS = {".txt": "txt", ".text": "txt", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json",
                 ".parquet": "parquet", ".pq": "parquet"}
MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bz2"}
PARQUET_MAGIC = b"PAR1"
SNIFF_BYTES = 1 << 16
# the limit for what a document's size was checked against: callers such as trainers read
# through read_documents without knowing the option, so the command sets it for a block
_OPTIONS: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("gpu_text_document_options", default={})


class Documents(NamedTuple):
    """A batch of :func:`iter_documents`: the file, the 1-based number of the batch's first
    document in it, and the documents."""

    path: str
    first: int
    batch: TextBatch


@contextlib.contextmanager
def document_options(format: str | None = None, max_document_bytes: int | None = None) -> Iterator[None]:
    """Defaults for every :func:`read_documents` call in the block that does not pass its own
    (a command sets them for the trainers it calls).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.txt"); _ = open(p, "w").write("long line\\n")
    >>> with document_options(max_document_bytes=4):
    ...     list(read_documents(p))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...a.txt:1: document longer than 4 bytes (the limit is --max-document-mb)
    """
    options = {k: v for k, v in (("format", format), ("max_document_bytes", max_document_bytes)) if v is not None}
    token = _OPTIONS.set({**_OPTIONS.get(), **options})
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def read_documents(paths: PathLike | Iterable[PathLike], field: str = "text",
                   chunk_bytes: int = DEFAULT_CHUNK_BYTES, progress: Any = None, format: str | None = None,
                   max_document_bytes: int | None = None) -> Iterator[TextBatch]:
    """Batches of documents from ``paths`` (one path or several, read in order), each batch
    about ``chunk_bytes`` of input. See the module docstring for the formats; ``format`` and
    ``max_document_bytes`` default to :func:`document_options`, else ``"auto"`` and 1 GiB.

    >>> import gzip, os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "a.txt"), "w", encoding="utf-8", newline="").write("one\\r\\ntwo\\u2028halves\\n")
    >>> _ = gzip.open(os.path.join(d, "b.JSONL.gz"), "wt").write('{"text": "three", "id": 3}\\n')
    >>> [b.to_pylist() for b in read_documents([os.path.join(d, "a.txt"), os.path.join(d, "b.JSONL.gz")])]
    [['one', 'two\\u2028halves'], ['three']]
    """
    for located in iter_documents(paths, field, chunk_bytes, progress, format, max_document_bytes):
        yield located.batch


def iter_documents(paths: PathLike | Iterable[PathLike], field: str = "text",
                   chunk_bytes: int = DEFAULT_CHUNK_BYTES, progress: Any = None, format: str | None = None,
                   max_document_bytes: int | None = None) -> Iterator[Documents]:
    """:func:`read_documents`, each batch with its file and the number of its first document
    there, so that whoever processes it can say where a failure happened.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.txt"); _ = open(p, "w").write("a\\nb\\nc\\n")
    >>> [(d.first, d.batch.to_pylist()) for d in iter_documents(p, chunk_bytes=4)]
    [(1, ['a', 'b']), (3, ['c'])]
    """
    options = _OPTIONS.get()
    format = format or options.get("format", "auto")
    limit = max_document_bytes or options.get("max_document_bytes", DEFAULT_MAX_DOCUMENT_BYTES)
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes}")
    if limit < 1:
        raise ValueError(f"max_document_bytes must be at least 1, got {limit}")
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)} (got {format!r})")
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        first = 1
        for batch in _read_file(path, field, chunk_bytes, progress, format, limit):
            yield Documents(str(path), first, batch)
            first += len(batch)


def total_bytes(paths: PathLike | Iterable[PathLike]) -> int:
    """Bytes :func:`read_documents` will report as progress: the files' sizes on disk (stdin
    counts 0, it has no size).

    >>> total_bytes([__file__, "-"]) == os.path.getsize(__file__)
    True
    """
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    return sum(0 if str(p) == STDIN else os.path.getsize(p) for p in paths)


def input_format(path: PathLike) -> str:
    """The format :func:`read_documents` reads ``path`` as: ``"txt"``, ``"jsonl"``, ``"json"`` or
    ``"parquet"``, told by content and name (see the module docstring).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> for name, text in [("a.JSONL", "x\\n"), ("b.md", '{"text": "x"}\\n'), ("c", "{not json}\\n")]:
    ...     _ = open(os.path.join(d, name), "w").write(text)
    >>> [input_format(os.path.join(d, n)) for n in ["a.JSONL", "b.md", "c"]], input_format("-")
    (['jsonl', 'jsonl', 'txt'], 'txt')
    """
    if str(path) == STDIN:
        return "txt"
    if _has_parquet_magic(path):
        return "parquet"
    with _open_binary(path) as raw, _decompressed(_Counter(raw), path) as stream:
        return _text_format(path, _Prefixed(stream))


def name_format(path: PathLike) -> str | None:
    """The format ``path``'s name says, ignoring case and a compression suffix; ``None`` when it
    says nothing.

    >>> name_format("docs.JSONL.gz"), name_format("docs.parquet"), name_format("notes.md"), name_format("a.json")
    ('jsonl', 'parquet', None, 'json')
    """
    suffixes = [s.lower() for s in Path(str(path)).suffixes]
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes.pop()
    return NAMED_FORMATS.get(suffixes[-1]) if suffixes else None


def _has_parquet_magic(path: PathLike) -> bool:
    with open(path, "rb") as raw:
        return raw.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC


def _text_format(path: PathLike, stream: "_Prefixed") -> str:
    """The format of a file that is not Parquet, from its name, else its first line."""
    if str(path) == STDIN:
        return "txt"
    named = name_format(path)
    if named == "parquet":
        raise ValueError(f"{path} is not a Parquet file (no PAR1 magic bytes; compressed Parquet files are not "
                         "read: Parquet compresses inside)")
    if named is not None:
        return named
    line = stream.first_line()
    if line.lstrip().startswith(b"{"):
        try:
            if isinstance(json.loads(line), dict):
                return "jsonl"
        except ValueError:  # not JSON, or not UTF-8: a text line that starts with a brace
            pass
    return "txt"


def _read_file(path: PathLike, field: str, chunk_bytes: int, progress: Any, format: str,
               limit: int) -> Iterator[TextBatch]:
    is_stdin = str(path) == STDIN
    if format == "parquet" or (format == "auto" and not is_stdin and _has_parquet_magic(path)):
        if is_stdin:
            raise ValueError("Parquet cannot be read from stdin (it is read by seeking); give a file")
        yield from _parquet(path, field, chunk_bytes, progress, limit)
        return
    with _open_binary(path) as raw:
        counter = _Counter(raw)
        with _decompressed(counter, path) as decompressed:
            stream = _Prefixed(decompressed, limit)
            try:
                kind = _text_format(path, stream) if format == "auto" else format
                if kind == "json" and stream.first_byte() == b"[":
                    batches: Iterator[TextBatch] = _JsonArray(path, field, chunk_bytes, limit).batches(stream)
                elif kind in ("jsonl", "json"):
                    batches = map(_JsonLines(path, field).parse, iter_line_chunks(stream, chunk_bytes, limit))
                else:
                    batches = iter_line_batches(stream, chunk_bytes, limit)
                yield from _counted(batches, counter, progress)
            except LineTooLong as exc:
                raise ValueError(f"{path}:{exc.line}: document longer than {limit} bytes (the limit is "
                                 "--max-document-mb)") from None
            except (EOFError, OSError, zlib.error) as exc:
                if decompressed is counter:  # not compressed: an I/O error of the file itself
                    raise
                raise ValueError(f"{path}: damaged compressed data ({exc})") from exc


def _open_binary(path: PathLike) -> Any:
    if str(path) != STDIN:
        return open(path, "rb")
    stdin = sys.stdin.buffer
    # peek (for the magic bytes) needs a buffered stream; stdin stays open for the caller
    return contextlib.nullcontext(stdin if hasattr(stdin, "peek") else io.BufferedReader(stdin))


class _Prefixed:
    """A decompressed stream whose first bytes can be looked at (to sniff the format) and then
    read again, without seeking (stdin and decompressors cannot seek)."""

    def __init__(self, stream: BinaryIO, limit: int = DEFAULT_MAX_DOCUMENT_BYTES) -> None:
        self.stream, self.limit = stream, limit
        self.head = b""
        self.at_end = False

    def _fill(self, size: int) -> bool:
        piece = b"" if self.at_end else self.stream.read(size)
        self.at_end = not piece
        self.head += piece
        return bool(piece)

    def first_line(self) -> bytes:
        """The first line without a byte order mark (at most the document limit, plus one byte)."""
        while b"\n" not in self.head and len(self.head) <= self.limit and self._fill(max(SNIFF_BYTES, len(self.head))):
            pass
        return self.head.removeprefix(UTF8_BOM).split(b"\n", 1)[0]

    def first_byte(self) -> bytes:
        """The first byte that is not a byte order mark or whitespace (``b""`` for none)."""
        while not self.head.removeprefix(UTF8_BOM).lstrip() and self._fill(SNIFF_BYTES):
            pass
        return self.head.removeprefix(UTF8_BOM).lstrip()[:1]

    def readinto(self, buffer: Any) -> int:
        """Read into ``buffer`` (the sniffed bytes first), without a ``bytes`` in between where the
        stream can do the same."""
        if self.head or not hasattr(self.stream, "readinto"):
            data = self.read(len(buffer))
            buffer[:len(data)] = data
            return len(data)
        return self.stream.readinto(buffer)

    def read(self, size: int = -1) -> bytes:
        if not self.head:
            return self.stream.read(size)
        if size < 0:
            data, self.head = self.head + self.stream.read(), b""
        else:
            data, self.head = self.head[:size], self.head[size:]
        return data


class _Counter:
    """A file that counts the bytes read from it, so a decompressor's input is the progress."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.bytes_read += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        got = self.raw.readinto(buffer)
        self.bytes_read += got
        return got

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


def _counted(batches: Iterator[TextBatch], counter: _Counter, progress: Any) -> Iterator[TextBatch]:
    """Every batch, first advancing ``progress`` by the file bytes read for it."""
    reported = 0
    for batch in batches:
        if progress is not None:
            progress.update(counter.bytes_read - reported)
        reported = counter.bytes_read
        yield batch
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


class _JsonArray:
    """The documents of a JSON array (strings, or objects with ``field``), parsed element by
    element from a stream, so that memory stays about a chunk plus the longest document."""

    def __init__(self, path: PathLike, field: str, chunk_bytes: int, limit: int) -> None:
        self.path, self.field, self.chunk_bytes, self.limit = path, field, chunk_bytes, limit
        self.decoder = json.JSONDecoder()
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.text, self.pos, self.at_end = "", 0, False

    def batches(self, stream: Any) -> Iterator[TextBatch]:
        self.stream = stream
        self._skip_space()
        if self.text[self.pos:self.pos + 1] == "\ufeff":
            self.pos += 1
            self._skip_space()
        self._expect("[")
        texts: list[str] = []
        size, number = 0, 0
        while True:
            self._skip_space()
            if self.text[self.pos:self.pos + 1] == "]":
                self.pos += 1
                break
            if number:
                self._expect(",")
                self._skip_space()
            number += 1
            text = self._document(number)
            texts.append(text)
            size += len(text)
            if size >= self.chunk_bytes:
                yield TextBatch.from_strings(texts)
                texts, size = [], 0
        self._skip_space()
        if self.pos < len(self.text):
            raise ValueError(f"{self.path}: data after the end of the JSON array")
        if texts:
            yield TextBatch.from_strings(texts)

    def _more(self) -> bool:
        """Read more of the stream (as much again as is buffered, so a long element costs
        linear time); ``False`` at its end."""
        if self.at_end:
            return False
        piece = self.stream.read(max(self.chunk_bytes, len(self.text) - self.pos))
        try:
            decoded = self.utf8.decode(piece, final=not piece)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{self.path}: not UTF-8 ({exc.reason})") from None
        self.text, self.pos, self.at_end = self.text[self.pos:] + decoded, 0, not piece
        return True

    def _skip_space(self) -> None:
        while True:
            rest = len(self.text) - len(self.text[self.pos:].lstrip(" \t\r\n"))
            self.pos = max(self.pos, rest)
            if self.pos < len(self.text) or not self._more():
                return

    def _expect(self, char: str) -> None:
        if self.text[self.pos:self.pos + 1] != char:
            found = self.text[self.pos:self.pos + 20] or "the end of the file"
            raise ValueError(f"{self.path}: expected {char!r} in the JSON array, found {found!r}")
        self.pos += 1

    def _document(self, number: int) -> str:
        where = f"{self.path}: element {number} of the JSON array"
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
                if end < len(self.text) or self.at_end:  # a number may go on in the next read
                    break
            except ValueError as exc:
                if self.at_end:
                    raise ValueError(f"{where}: invalid JSON ({exc.msg})") from None
            if len(self.text) - self.pos > self.limit + 2:
                raise ValueError(f"{where}: document longer than {self.limit} bytes (the limit is "
                                 "--max-document-mb)")
            self._more()
        self.pos = end
        if isinstance(value, dict):
            if self.field not in value:
                raise ValueError(f"{where}: no field {self.field!r} in the record (fields: {sorted(value)[:10]})")
            value = value[self.field]
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ValueError(f"{where}: {type(value).__name__}, not a string (or an object with the field "
                             f"{self.field!r})")
        if len(value) > self.limit // 4 and len(value.encode("utf-8", "surrogatepass")) > self.limit:
            raise ValueError(f"{where}: document longer than {self.limit} bytes (the limit is --max-document-mb)")
        return value


def _parquet(path: PathLike, field: str, chunk_bytes: int, progress: Any, limit: int) -> Iterator[TextBatch]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path}: reading Parquet needs pyarrow (pip install 'gpu_text[arrow]')") from None
    if not _has_parquet_magic(path):
        raise ValueError(f"{path} is not a Parquet file (no PAR1 magic bytes; compressed Parquet files are not "
                         "read: Parquet compresses inside)")
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None
    if field not in schema.names:
        raise ValueError(f"{path}: no field {field!r} in the columns {schema.names[:10]}")
    kind = schema.field(field).type
    direct = (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())
    # dictionary-encoded and view strings are text too: they are decoded to plain strings
    castable = (pa.types.is_dictionary(kind) and kind.value_type in direct) or str(kind) in ("string_view",
                                                                                              "binary_view")
    if kind not in direct and not castable:
        raise ValueError(f"{path}: field {field!r} is {kind}, not a string column")
    meta = parquet.metadata
    # rows per batch from the average uncompressed row size, so that a batch is about chunk_bytes
    data_bytes = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    rows_per_batch = max(1, chunk_bytes * max(1, meta.num_rows) // max(1, data_bytes))
    size, rows, reported = os.path.getsize(path), 0, 0
    try:
        for record_batch in parquet.iter_batches(batch_size=rows_per_batch, columns=[field]):
            column = record_batch.column(0)
            if castable:
                column = column.cast(pa.large_binary() if "binary" in str(kind) else pa.large_string())
            batch = TextBatch.from_arrow(column, nulls="empty")
            lengths = np.diff(batch.offsets)
            if lengths.size and lengths.max() > limit:
                row = rows + 1 + int(np.argmax(lengths > limit))
                raise ValueError(f"{path}: row {row}: document longer than {limit} bytes (the limit is "
                                 "--max-document-mb)")
            rows += record_batch.num_rows
            if progress is not None:  # the file's bytes, shared out by rows
                read = size * rows // max(1, meta.num_rows)
                progress.update(read - reported)
                reported = read
            yield batch
    except pa.ArrowException as exc:
        raise ValueError(f"{path}: damaged Parquet data after row {rows} ({exc})") from None
    if progress is not None and size > reported:
        progress.update(size - reported)


__all__ = ["DEFAULT_CHUNK_BYTES", "DEFAULT_MAX_DOCUMENT_BYTES", "FORMATS", "Documents", "document_options",
           "input_format", "iter_documents", "name_format", "read_documents", "total_bytes"]
