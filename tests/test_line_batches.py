"""The bulk text reader (gpu_text.textio.iter_line_batches, over cpu_fallback.lines) against the
obvious reading: split on b"\\n", drop one \\r before it, a BOM dropped at the start only."""
import gzip
import io
import random

import numpy as np
import pytest

from gpu_text.textio import UTF8_BOM, LineTooLong, iter_line_batches

PIECES = [b"a", b"\n", b"\r", b"\r\n", UTF8_BOM, "中".encode(), b" ", b"\x00", b"\xff", b"\n\n"]


def reference_lines(data: bytes) -> list[bytes]:
    """Rows by the rule, in plain Python."""
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    rows = data.split(b"\n")
    if rows and rows[-1] == b"":  # the text ends with a newline: no row after it
        rows.pop()
    ended = len(rows) - (0 if data.endswith(b"\n") or not data else 1)  # rows that had a \n after them
    return [row[:-1] if k < ended and row.endswith(b"\r") else row for k, row in enumerate(rows)]


class ShortReads(io.RawIOBase):
    """A pipe-like stream: ``readinto`` returns at most ``most`` bytes a call."""

    def __init__(self, data: bytes, most: int) -> None:
        self.stream, self.most = io.BytesIO(data), most

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        piece = self.stream.read(min(len(buffer), self.most))
        buffer[:len(piece)] = piece
        return len(piece)


class ReadOnly:
    """A stream with ``read`` and no ``readinto`` (some decompressors)."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self.stream.read(size)


def rows_of(stream, chunk_bytes: int, limit: int | None = None) -> tuple[list[bytes], list[int]]:
    rows, sizes = [], []
    for batch in iter_line_batches(stream, chunk_bytes, limit):
        assert len(batch) > 0
        data, offsets = np.asarray(batch.data), np.asarray(batch.offsets)
        sizes.append(int(offsets[-1]))
        rows += [bytes(data[offsets[k]:offsets[k + 1]]) for k in range(len(batch))]
    return rows, sizes


@pytest.mark.parametrize("seed", range(4))
def test_rows_match_the_rule_for_every_chunk_size_and_stream(seed):
    rng = random.Random(seed)
    for _ in range(400):
        data = b"".join(rng.choice(PIECES) * rng.choice([1, 1, 2, 7, 13]) for _ in range(rng.randrange(0, 40)))
        if rng.random() < 0.3:
            data = UTF8_BOM + data
        chunk = rng.choice([1, 2, 3, 5, 8, 9, 16, 31, 4096])
        expected = reference_lines(data)
        for stream in (io.BytesIO(data), ShortReads(data, rng.choice([1, 3, 8])), ReadOnly(data)):
            rows, sizes = rows_of(stream, chunk)
            assert rows == expected, (data, chunk, type(stream).__name__)


def test_a_chunk_holds_at_most_chunk_bytes_unless_one_line_is_longer():
    data = b"".join(b"x" * n + b"\n" for n in [3, 0, 5, 40, 2, 2, 2, 1])
    rows, sizes = rows_of(io.BytesIO(data), 8)
    assert rows == reference_lines(data)
    long = [size for size in sizes if size >= 40]  # row bytes of each chunk; a chunk read at most 8 bytes
    assert len(long) == 1 and long[0] < 40 + 8 and all(size < 8 for size in sizes if size < 40)


def test_a_long_line_is_refused_once_that_much_is_read():
    class Endless(io.RawIOBase):  # /dev/zero: no newline ever
        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            buffer[:] = b"z" * len(buffer)
            return len(buffer)

    with pytest.raises(LineTooLong) as error:
        list(iter_line_batches(Endless(), 16, max_line_bytes=100))
    assert error.value.line == 1
    with pytest.raises(LineTooLong) as error:
        list(iter_line_batches(io.BytesIO(b"ok\nfine\n" + b"y" * 30 + b"\nz\n"), 64, max_line_bytes=10))
    assert error.value.line == 3


def test_gzip_stream_and_large_random_text_match_the_rule(tmp_path):
    rng = np.random.default_rng(7)
    alphabet = np.frombuffer(b"abc \n\r\x00\xe4\xb8\xad\n", np.uint8)
    data = alphabet[rng.integers(0, alphabet.size, 300_000)].tobytes()
    path = tmp_path / "t.gz"
    with gzip.open(path, "wb") as out:
        out.write(data)
    with gzip.open(path, "rb") as stream:
        assert rows_of(stream, 1 << 12)[0] == reference_lines(data)
