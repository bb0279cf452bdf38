"""The bytes ``gpu-text segment`` writes: every row's words joined by a separator byte, one line
per row, straight from the ragged byte buffer and the words' byte spans (no Python strings).

No CUDA twin: writing is host work, so on the GPU backend the word offsets are copied back and
joined here with the same function (the text is already on the host, where it was read).

>>> import numpy as np
>>> data = np.frombuffer(b"ab cdXY", np.uint8)
>>> out, newlines = join_words(data, np.array([0, 5, 5, 7]), np.array([0, 2, 2, 3]),
...                            np.array([0, 3, 0]), np.array([2, 5, 2]))
>>> out.tobytes(), newlines
(b'ab cd\\n\\nXY\\n', 3)
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jit import JIT

NEWLINE = 0x0A
SPACE = 0x20


@njit(**JIT)
def _joined_size(text_offsets, word_offsets, starts, ends):
    """Bytes of the output, or -1 - row for the first row whose words do not fit it (a span
    outside the row, empty or reversed, or not after the previous word)."""
    size = 0
    for row in range(text_offsets.size - 1):
        length = text_offsets[row + 1] - text_offsets[row]
        first, last = word_offsets[row], word_offsets[row + 1]
        if first > last or first < 0 or last > starts.size:
            return -1 - row
        previous_end = 0
        for w in range(first, last):
            if starts[w] < previous_end or ends[w] <= starts[w] or ends[w] > length:
                return -1 - row
            previous_end = ends[w]
            size += ends[w] - starts[w]
        # a separator after every word but the last, a newline after the last (or alone)
        size += max(last - first, 1)
    return size


@njit(**JIT)
def _fill(data, text_offsets, word_offsets, starts, ends, separator, out):
    """Writes the joined rows into ``out``; returns how many newline bytes it holds (one per row
    plus any inside the words, which would make the output's line count differ from the rows)."""
    at = 0
    newlines = 0
    for row in range(text_offsets.size - 1):
        base = text_offsets[row]
        for w in range(word_offsets[row], word_offsets[row + 1]):
            if w > word_offsets[row]:
                out[at] = separator
                at += 1
            for i in range(base + starts[w], base + ends[w]):
                byte = data[i]
                out[at] = byte
                at += 1
                if byte == NEWLINE:
                    newlines += 1
        out[at] = NEWLINE
        at += 1
        newlines += 1
    return newlines


def join_words(data: np.ndarray, text_offsets: np.ndarray, word_offsets: np.ndarray, starts: np.ndarray,
               ends: np.ndarray, separator: int = SPACE) -> tuple[np.ndarray, int]:
    """Row ``r`` of the text (``data[text_offsets[r]:text_offsets[r + 1]]``) as its words (spans
    ``[starts[w], ends[w])`` relative to the row, for ``w`` in ``word_offsets[r]:word_offsets[r + 1]``,
    non-empty and ascending) joined by ``separator``, ending in a newline; an empty row is a lone
    newline. Returns the output bytes (uint8) and the number of newline bytes in them.

    Spans that do not fit their row are a ``ValueError`` naming the row (0-based), checked before
    anything is written. Serial on purpose: a memory copy that a writer thread runs while the
    segmenter's parallel kernels work on the next batch (and that needs no thread-safe pool).

    >>> join_words(np.frombuffer(b"abc", np.uint8), np.array([0, 3]), np.array([0, 1]),
    ...            np.array([1]), np.array([4]))
    Traceback (most recent call last):
    ...
    ValueError: row 0: a word span does not fit the row (outside it, empty, or overlapping the previous word)
    """
    if not 0 <= separator <= 255:
        raise ValueError(f"separator must be a byte value (0-255), got {separator}")
    data = np.ascontiguousarray(data, np.uint8)
    text_offsets = np.ascontiguousarray(text_offsets, np.int64)
    word_offsets = np.ascontiguousarray(word_offsets, np.int64)
    starts, ends = np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64)
    rows = text_offsets.size - 1
    if rows < 0 or word_offsets.size != rows + 1 or starts.shape != ends.shape or starts.ndim != 1:
        raise ValueError(f"{max(rows, 0)} rows need {max(rows, 0) + 1} word offsets (got {word_offsets.size}) "
                         f"and starts/ends of one shape (got {starts.shape} and {ends.shape})")
    if rows and (text_offsets[0] < 0 or text_offsets[-1] > data.size or np.any(np.diff(text_offsets) < 0)):
        raise ValueError(f"text offsets must ascend within the {data.size} bytes of data")
    size = _joined_size(text_offsets, word_offsets, starts, ends)
    if size < 0:
        raise ValueError(f"row {-1 - size}: a word span does not fit the row (outside it, empty, or overlapping "
                         "the previous word)")
    out = np.empty(size, np.uint8)
    newlines = _fill(data, text_offsets, word_offsets, starts, ends, np.uint8(separator), out)
    return out, int(newlines)
