"""Splitting a byte stream into lines: bounded chunks of whole lines, and a chunk into a batch.

A line ends at ``\\n`` or ``\\r\\n`` and nowhere else (U+2028, U+0085, form feed... stay inside
the line), so the document count of a file is exactly its line count. Readers of whole files
(formats, compression, progress) live in :mod:`gpu_text.documents`.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from gpu_text.batch import TextBatch

NEWLINE = 0x0A
CARRIAGE_RETURN = 0x0D
DEFAULT_CHUNK_BYTES = 16 << 20
UTF8_BOM = b"\xef\xbb\xbf"


def lines_to_batch(buffer: bytes | np.ndarray) -> TextBatch:
    """Split a buffer of whole lines into a batch, one row per line without its ``\\n`` or
    ``\\r\\n`` (a final line without a newline counts too).

    >>> lines_to_batch(b"ab\\r\\n\\nc\\rd\\n\\x0ce").to_pylist()
    ['ab', '', 'c\\rd', '\\x0ce']
    """
    data = np.frombuffer(buffer, np.uint8) if isinstance(buffer, (bytes, bytearray)) else buffer
    newlines = np.flatnonzero(data == NEWLINE)
    crlf = (newlines > 0) & (data[np.maximum(newlines - 1, 0)] == CARRIAGE_RETURN)
    ends = newlines - crlf
    terminator = 1 + crlf.astype(np.int64)
    if data.size and (newlines.size == 0 or newlines[-1] != data.size - 1):
        ends = np.append(ends, data.size)  # an unterminated last line
        terminator = np.append(terminator, 0)
    offsets = np.zeros(ends.size + 1, np.int64)
    # every earlier line's terminator is removed, shifting this line's end left by that much
    offsets[1:] = ends - (np.cumsum(terminator) - terminator)
    keep = np.ones(data.size, bool)
    keep[newlines] = False
    keep[newlines[crlf] - 1] = False
    return TextBatch(data[keep], offsets, check=False)


class LineTooLong(ValueError):
    """A line longer than the ``max_line_bytes`` given to :func:`iter_line_chunks`; ``line`` is
    its 1-based number in the stream (readers add the file name)."""

    def __init__(self, line: int, limit: int) -> None:
        super().__init__(f"line {line} is longer than {limit} bytes")
        self.line, self.limit = line, limit


def iter_line_chunks(stream: BinaryIO, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                     max_line_bytes: int | None = None) -> Iterator[bytes]:
    """Chunks of whole lines from a binary stream, each at most ``chunk_bytes`` unless a single
    line is longer (that line then comes alone, whole). A UTF-8 byte order mark opening the
    stream is dropped. A line longer than ``max_line_bytes`` raises :class:`LineTooLong` as soon
    as that much of it is read, so a stream without newlines (``/dev/zero``) cannot grow memory
    without bound.

    >>> import io
    >>> list(iter_line_chunks(io.BytesIO(b"\\xef\\xbb\\xbfa\\nbb\\nccc\\nd"), chunk_bytes=4))
    [b'a\\n', b'bb\\n', b'ccc\\n', b'd']
    >>> try:
    ...     list(iter_line_chunks(io.BytesIO(b"ok\\ntoo long\\n"), max_line_bytes=4))
    ... except LineTooLong as too_long:
    ...     print(too_long)
    line 2 is longer than 4 bytes
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes}")
    head = _read_up_to(stream, len(UTF8_BOM))
    piece = head[len(UTF8_BOM):] if head.startswith(UTF8_BOM) else head
    if head.startswith(UTF8_BOM) and not piece:
        piece = stream.read(chunk_bytes)
    # pieces of the line still open (no newline read yet), joined once its newline comes, so a
    # long line costs one copy, not one per read
    parts: list[bytes] = []
    pending = 0
    line = 1
    while piece:
        cut = piece.rfind(b"\n") + 1
        if cut == 0:
            parts.append(piece)
            pending += len(piece)
            # +1: the \r of a \r\n may be read before its \n
            if max_line_bytes is not None and pending > max_line_bytes + 1:
                raise LineTooLong(line, max_line_bytes)
        else:
            parts.append(piece[:cut])
            chunk = b"".join(parts)
            parts, pending = [piece[cut:]], len(piece) - cut
            if max_line_bytes is not None:
                _check_lines(chunk, line, max_line_bytes)
                line += chunk.count(b"\n")
            yield chunk
        piece = stream.read(chunk_bytes - pending if pending < chunk_bytes else chunk_bytes)
    if pending:
        chunk = b"".join(parts)
        if max_line_bytes is not None:
            _check_lines(chunk, line, max_line_bytes)
        yield chunk


def iter_line_batches(stream: BinaryIO, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                      max_line_bytes: int | None = None) -> Iterator[TextBatch]:
    """:func:`iter_line_chunks` split by :func:`lines_to_batch`, the way the bulk jobs read text:
    the stream is read (``readinto`` where it has it) into one reused buffer and each chunk's lines
    are copied out of it once (:func:`cpu_fallback.lines.split_lines`), so reading costs the
    encoder, on the other core, a copy instead of the several passes and allocations of splitting
    a ``bytes``. The same rows, chunks of at most ``chunk_bytes`` of the stream unless one line is
    longer (then that line and at most ``chunk_bytes`` more), the same :class:`LineTooLong` (raised
    once that much of a line is read).

    >>> import io
    >>> [b.to_pylist() for b in iter_line_batches(io.BytesIO(b"\\xef\\xbb\\xbfa\\r\\nbb\\nccc\\nd"), chunk_bytes=4)]
    [['a'], ['bb'], ['ccc'], ['d']]
    """
    from gpu_text.backend import get_backend

    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes}")
    lines = get_backend("cpu").ops("lines")
    buffer = np.empty(max(chunk_bytes, len(UTF8_BOM)), np.uint8)  # room to sniff the mark at any chunk size
    held = 0  # bytes of a line not ended yet, at the front of the buffer
    line = 1
    sniffed = False
    while True:
        if held == buffer.size:  # one line longer than the buffer: read on into a larger one
            buffer = np.concatenate((buffer, np.empty(buffer.size, np.uint8)))
        # a chunk of a long line reads on chunk_bytes at a time, as far as the buffer has room
        stop = buffer.size if not sniffed else min(buffer.size, max(chunk_bytes, held + chunk_bytes))
        got = _fill(stream, buffer, held, stop)
        size, final = held + got, held + got < stop
        if not sniffed:
            sniffed = True
            if size >= len(UTF8_BOM) and bytes(buffer[:len(UTF8_BOM)]) == UTF8_BOM:
                size -= len(UTF8_BOM)
                buffer[:size] = buffer[len(UTF8_BOM):size + len(UTF8_BOM)].copy()
        cut = size if final else int(lines.last_newline(buffer, size)) + 1
        if cut == 0:
            if final:
                return
            if max_line_bytes is not None and size > max_line_bytes + 1:  # +1: a \r read before its \n
                raise LineTooLong(line, max_line_bytes)
            held = size
            continue
        out = np.empty(cut, np.uint8)
        offsets = np.empty(int(lines.count_newlines(buffer, cut)) + 2, np.int64)
        rows, longest = lines.split_lines(buffer, cut, final, out, offsets)
        if max_line_bytes is not None and offsets[longest + 1] - offsets[longest] > max_line_bytes:
            _check_lines(bytes(buffer[:cut]), line, max_line_bytes)  # raises, naming the first long line
        yield TextBatch(out[:offsets[rows]], offsets[:rows + 1], check=False)
        if final:
            return
        line += rows
        held = size - cut
        if buffer.size > chunk_bytes and held < chunk_bytes:
            buffer = np.concatenate((buffer[cut:size], np.empty(chunk_bytes - held, np.uint8)))
        else:
            buffer[:held] = buffer[cut:size].copy()


def _fill(stream: BinaryIO, buffer: np.ndarray, at: int, stop: int) -> int:
    """Read into ``buffer[at:stop]`` until it is full or the stream ends; returns the bytes read."""
    view = memoryview(buffer)
    readinto = getattr(stream, "readinto", None)
    got = at
    while got < stop:
        if readinto is not None:
            n = readinto(view[got:stop])
        else:
            piece = stream.read(stop - got)
            n = len(piece)
            buffer[got:got + n] = np.frombuffer(piece, np.uint8)
        if not n:
            break
        got += n
    return got - at


def _read_up_to(stream: BinaryIO, size: int) -> bytes:
    """``size`` bytes, fewer only at the end of the stream (a pipe may return short reads)."""
    data = b""
    while len(data) < size:
        piece = stream.read(size - len(data))
        if not piece:
            break
        data += piece
    return data


def _check_lines(chunk: bytes, first_line: int, limit: int) -> None:
    if len(chunk) <= limit:  # no line of it can be longer: the common case costs nothing
        return
    data = np.frombuffer(chunk, np.uint8)
    ends = np.flatnonzero(data == NEWLINE)
    if ends.size == 0 or ends[-1] != data.size - 1:
        ends = np.append(ends, data.size)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts
    lengths -= (lengths > 0) & (data[np.maximum(ends - 1, 0)] == CARRIAGE_RETURN) & (ends < data.size)
    long = np.flatnonzero(lengths > limit)
    if long.size:
        raise LineTooLong(first_line + int(long[0]), limit)
