"""Splitting a buffer of text lines into a batch: the row bytes without their ``\\n`` or
``\\r\\n``, and the row offsets. No CUDA twin: host reading (:func:`gpu_text.textio.iter_line_batches`).

The reader of every ``.txt`` input runs this on each chunk it reads, on its own thread while the
encoder works on the previous chunk, so its cost is cores taken from the encoder: newlines are
found eight bytes at a time (an exact zero-byte test on ``word ^ 0x0a0a...``, no false hits from
borrows), and each line is copied in one vectorised loop.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from .jit import NOREF, inline

NEWLINE = 0x0A
CARRIAGE_RETURN = 0x0D
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_NEWLINES = np.uint64(0x0A0A0A0A0A0A0A0A)
_HIGH = np.uint64(0x8080808080808080)
_ONES = np.uint64(0x0101010101010101)


@inline
def _newline_bits(word):
    """The high bit of every byte of ``word`` that is ``\\n``, and no other bit."""
    y = word ^ _NEWLINES
    # a byte of y is zero exactly when adding 0x7f to its low seven bits sets no high bit and its own
    # high bit is clear: no carry crosses bytes, so, unlike (y - 0x01..) & ~y, no false hits
    return ~(((y & _LOW7) + _LOW7) | y) & _HIGH


@njit(**NOREF)
def count_newlines(data, n):
    """The number of ``\\n`` bytes in ``data[:n]``.

    >>> import numpy as np
    >>> count_newlines(np.frombuffer(b"a\\nb\\n\\nc\\n", np.uint8), 6)
    3
    """
    words = data[:n - n % 8].view(np.uint64)
    count = 0
    for i in range(words.size):
        # the bytes' high bits, moved to the low bits and summed into the top byte by the multiply
        count += ((_newline_bits(words[i]) >> np.uint64(7)) * _ONES) >> np.uint64(56)
    for i in range(n - n % 8, n):
        count += data[i] == NEWLINE
    return count


@inline
def _copy_line(data, start, end, out, at):
    """``out[at:at + end - start] = data[start:end]``, one loop LLVM vectorises (no allocation)."""
    source = data[start:end]
    target = out[at:at + end - start]
    for j in range(source.size):
        target[j] = source[j]
    return at + end - start


@njit(**NOREF)
def split_lines(data, n, final, out, offsets):
    """Copy the lines of ``data[:n]`` into ``out`` without their ``\\n`` or ``\\r\\n``, the end of
    line ``k`` in ``out`` at ``offsets[k + 1]`` (``offsets[0] = 0``). Bytes after the last ``\\n``
    form a last line only when ``final`` (the end of the stream). ``offsets`` needs room for every
    line, ``out`` for ``n`` bytes. Returns the number of lines and the index of the longest.

    >>> import numpy as np
    >>> data = np.frombuffer(b"ab\\r\\n\\nc\\rd\\n\\x0ce", np.uint8)
    >>> out, offsets = np.empty(16, np.uint8), np.empty(5, np.int64)
    >>> split_lines(data, 11, True, out, offsets), offsets.tolist()[:5], bytes(out[:offsets[4]])
    ((4, 2), [0, 2, 2, 5, 7], b'abc\\rd\\x0ce')
    """
    words = data[:n - n % 8].view(np.uint64)
    offsets[0] = 0
    lines = 0
    longest, longest_length = 0, -1
    # typed, not literal, zeros: a literal argument makes Numba compile _copy_line once more
    written = np.int64(0)
    start = np.int64(0)
    position = 0
    while position < n:
        if position + 8 <= n:
            bits = _newline_bits(words[position >> 3])
            base = position
            position += 8
        else:  # the last few bytes, one at a time
            bits = np.uint64(0x80) if data[position] == NEWLINE else np.uint64(0)
            base = position
            position += 1
        while bits:
            at = base + (trailing_zeros(bits) >> 3)
            bits &= bits - np.uint64(1)
            end = at - 1 if at > start and data[at - 1] == CARRIAGE_RETURN else at
            if end - start > longest_length:
                longest, longest_length = lines, end - start
            written = _copy_line(data, start, end, out, written)
            lines += 1
            offsets[lines] = written
            start = at + 1
    if final and start < n:  # an unterminated last line keeps a \r it ends with
        if n - start > longest_length:
            longest = lines
        written = _copy_line(data, start, n, out, written)
        lines += 1
        offsets[lines] = written
    return lines, longest


@njit(**NOREF)
def last_newline(data, n):
    """The index of the last ``\\n`` in ``data[:n]``, -1 when there is none.

    >>> import numpy as np
    >>> last_newline(np.frombuffer(b"a\\nb\\nc", np.uint8), 5), last_newline(np.zeros(3, np.uint8), 3)
    (3, -1)
    """
    for i in range(n - 1, -1, -1):
        if data[i] == NEWLINE:
            return i
    return -1
