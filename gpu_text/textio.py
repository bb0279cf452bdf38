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


def iter_line_chunks(stream: BinaryIO, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[bytes]:
    """Chunks of whole lines from a binary stream, each at most ``chunk_bytes`` unless a single
    line is longer (that line then comes alone, whole).

    >>> import io
    >>> list(iter_line_chunks(io.BytesIO(b"a\\nbb\\nccc\\nd"), chunk_bytes=4))
    [b'a\\n', b'bb\\n', b'ccc\\n', b'd']
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes}")
    carry = b""
    while True:
        # read only what tops the carried partial line up to a chunk, so chunks stay bounded
        piece = stream.read(chunk_bytes - len(carry) if len(carry) < chunk_bytes else chunk_bytes)
        if not piece:
            break
        chunk = carry + piece
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:  # no line ends in it yet: keep reading until one does
            carry = chunk
            continue
        carry = chunk[cut:]
        yield chunk[:cut]
    if carry:
        yield carry
