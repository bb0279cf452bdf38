"""Streaming line-oriented text files as batches, and writing segmented lines back.

Files are read in chunks of about ``chunk_bytes`` cut at line boundaries, so memory stays bounded
whatever the file size; lines become a :class:`TextBatch` without a Python loop per line.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from gpu_text.batch import TextBatch

NEWLINE = 0x0A
DEFAULT_CHUNK_BYTES = 16 << 20


def lines_to_batch(buffer: bytes | np.ndarray) -> TextBatch:
    """Split a buffer of complete ``\\n``-terminated lines into a batch (newlines removed; a
    final line without ``\\n`` counts too).

    >>> lines_to_batch(b"ab\\n\\nc\\n").to_pylist()
    ['ab', '', 'c']
    """
    data = np.frombuffer(buffer, np.uint8) if isinstance(buffer, bytes) else buffer
    newlines = np.flatnonzero(data == NEWLINE)
    if data.size and (newlines.size == 0 or newlines[-1] != data.size - 1):
        newlines = np.append(newlines, data.size)  # an unterminated last line
    ends = newlines - np.arange(newlines.size)  # each earlier newline removed shifts a line left
    offsets = np.zeros(newlines.size + 1, np.int64)
    offsets[1:] = ends
    return TextBatch(data[data != NEWLINE], offsets, check=False)


def iter_line_batches(stream: BinaryIO, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                      progress: object | None = None) -> Iterator[TextBatch]:
    """Batches of whole lines from a binary stream, about ``chunk_bytes`` each.

    ``progress`` (a tqdm bar) is advanced by the bytes consumed.

    >>> import io
    >>> [b.to_pylist() for b in iter_line_batches(io.BytesIO(b"a\\nbb\\nccc"), chunk_bytes=3)]
    [['a'], ['bb'], ['ccc']]
    """
    carry = b""
    while True:
        chunk = stream.read(chunk_bytes)
        if not chunk:
            break
        chunk = carry + chunk
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:  # one line longer than a chunk: keep reading until it ends
            carry = chunk
            continue
        carry = chunk[cut:]
        if progress is not None:
            progress.update(cut)
        yield lines_to_batch(chunk[:cut])
    if carry:
        if progress is not None:
            progress.update(len(carry))
        yield lines_to_batch(carry)


def join_spans(data: np.ndarray, row_offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray,
               separator: bytes = b" ") -> bytes:
    """Every row's spans of ``data`` joined by ``separator``, one ``\\n``-terminated line per row.

    ``starts``/``ends`` are absolute byte positions; ``row_offsets`` groups them into rows.

    >>> join_spans(np.frombuffer(b"abcde", np.uint8), np.array([0, 2, 2]), np.array([0, 3]), np.array([2, 5]))
    b'ab de\\n\\n'
    """
    if len(separator) != 1:
        raise ValueError("separator must be one byte")
    n_rows = row_offsets.size - 1
    words_per_row = np.diff(row_offsets)
    lengths = ends - starts
    # Output items, row by row: each word followed by one byte (the separator, or a newline after
    # the row's last word), and for an empty row a lone newline.
    row_of_word = np.repeat(np.arange(n_rows), words_per_row)
    word_item = np.arange(starts.size) + row_of_word
    empty_item = row_offsets[:-1] + np.arange(n_rows)
    sizes = np.zeros(starts.size + n_rows, np.int64)
    sizes[word_item] = lengths + 1
    sizes[empty_item + words_per_row] += words_per_row == 0
    position = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes, out=position[1:])
    out = np.empty(int(position[-1]), np.uint8)
    word_out = position[word_item]
    out[_ranges(word_out, lengths)] = data[_ranges(starts, lengths)]
    after_word = word_out + lengths
    out[after_word] = separator[0]
    out[after_word[row_offsets[1:][words_per_row > 0] - 1]] = NEWLINE
    out[position[(empty_item + words_per_row)[words_per_row == 0]]] = NEWLINE
    return out.tobytes()


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + n)`` for every (s, n), vectorised."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    bases = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    return bases + np.arange(total)


def file_size(path: str) -> int:
    """Size of a file in bytes (0 for a stream such as ``-``).

    >>> file_size(__file__) > 0
    True
    """
    return os.path.getsize(path) if path != "-" and os.path.exists(path) else 0
