"""A large output file written front to back past the page cache (``O_DIRECT``), from one reused
aligned buffer: what the bulk writers send their tokens through (Megatron's ``.bin``, the Parquet
ids file).

Why: a bulk job writes about as many bytes as it reads (1 GB of text is 0.6-0.7 GB of uint16
tokens), and through the page cache every byte is a kernel copy into a page the machine has not
touched before; measured on a 2-core VM, that is 2.5 CPU seconds per GB of text, on the cores the
encoder needs. Written directly from an aligned buffer it is a few hundredths of a second and the
device's own time, overlapped with the encoding (the writer has its own thread). It also leaves
the page cache to the input. Where ``O_DIRECT`` is missing or refused (tmpfs, some network file
systems, not Linux), or ``GPU_TEXT_DIRECT_IO=0``, the same class writes through the page cache.

The file's last partial block is written padded to the block size and the file then cut to its
length, so the bytes on disk are exactly what was written. Inside :func:`digests_kept` (a sharded
job, whose manifest records every output's SHA-256), each file's SHA-256 is computed from the bytes
as they are written and :func:`known_sha256` gives it for the closed file, rather than reading
the file back from disk (1.1 CPU s per GB of tokens, against 0.45 s for hashing them in memory).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "t.bin")
>>> out = DirectFile(path, buffer_bytes=8192)
>>> for piece in (b"abc", bytes(10000), b"xyz"):
...     _ = out.write(piece)
>>> out.close()
>>> data = open(path, "rb").read()
>>> len(data), data[:3], data[-3:]
(10006, b'abc', b'xyz')
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import mmap
import os
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

DIRECT_VAR = "GPU_TEXT_DIRECT_IO"
BLOCK = 4096  # the alignment O_DIRECT needs of offsets, sizes and memory (a page: enough for any device)
BUFFER_BYTES = 8 << 20
_DIGESTS: dict[tuple[int, int, int, int], str] = {}  # (device, inode, size, mtime) of a closed file: SHA-256
_KEEP_DIGESTS = [False]


@contextlib.contextmanager
def digests_kept() -> Iterator[None]:
    """Inside the block, hash every :class:`DirectFile` as it is written (see the module docstring)."""
    previous = _KEEP_DIGESTS[0]
    _KEEP_DIGESTS[0] = True
    try:
        yield
    finally:
        _KEEP_DIGESTS[0] = previous


def known_sha256(path: str) -> str | None:
    """The SHA-256 of the file at ``path`` if a :class:`DirectFile` of this process wrote it and it
    is unchanged since (the same inode, size and modification time; a rename keeps them), else None.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.bin")
    >>> with digests_kept():
    ...     out = DirectFile(path); _ = out.write(b"abc"); out.close()
    >>> known_sha256(path)[:16], known_sha256(__file__)
    ('ba7816bf8f01cfea', None)
    """
    try:
        status = os.stat(path)
    except OSError:
        return None
    return _DIGESTS.get((status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns))


class DirectFile:
    """``write`` and ``close`` of a new file at ``path`` (see the module docstring); ``tell`` is
    the number of bytes written so far."""

    def __init__(self, path: str, buffer_bytes: int = BUFFER_BYTES) -> None:
        if buffer_bytes < BLOCK or buffer_bytes % BLOCK:
            raise ValueError(f"buffer_bytes must be a positive multiple of {BLOCK}, got {buffer_bytes}")
        self.path = path
        self.direct = False
        direct = getattr(os, "O_DIRECT", 0)
        if direct and os.environ.get(DIRECT_VAR, "1").strip() != "0":
            try:
                self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | direct, 0o666)
                self.direct = True
            except OSError:  # refused here: the page cache it is
                pass
        if not self.direct:
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        self.buffer = mmap.mmap(-1, buffer_bytes)  # page-aligned, as O_DIRECT needs, and reused
        self.bytes = np.frombuffer(self.buffer, np.uint8)
        self.filled = 0
        self.digest = hashlib.sha256() if _KEEP_DIGESTS[0] else None
        self.written = 0  # bytes handed to write()
        self.flushed = 0  # bytes of the file on disk

    def write(self, data: Any) -> int:
        """Append ``data`` (any contiguous buffer); returns its size in bytes."""
        source = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        at = 0
        while at < source.size:
            take = min(source.size - at, self.bytes.size - self.filled)
            self.bytes[self.filled:self.filled + take] = source[at:at + take]
            self.commit(take)
            at += take
        return source.size

    def write_from(self, stream: BinaryIO) -> int:
        """Append what is left of ``stream`` (anything with ``readinto``, a scratch file), read
        straight into the aligned buffer rather than through a ``bytes`` copy; returns its size.

        >>> import io, tempfile
        >>> out = DirectFile(os.path.join(tempfile.mkdtemp(), "t.bin"), buffer_bytes=BLOCK)
        >>> _ = out.write(b"head:"); out.write_from(io.BytesIO(bytes(5000))), out.tell()
        (5000, 5005)
        """
        copied = 0
        while True:
            got = stream.readinto(memoryview(self.buffer)[self.filled:])
            if not got:
                return copied
            self.commit(got)
            copied += got

    def space(self) -> np.ndarray:
        """The free part of the aligned buffer (never empty), for a caller to write its bytes into
        directly rather than into an array of its own that :meth:`write` would copy; then
        :meth:`commit` says how many it wrote. The view must be gone by :meth:`close` (the
        buffer is unmapped there).

        >>> import tempfile
        >>> out = DirectFile(os.path.join(tempfile.mkdtemp(), "t.bin"), buffer_bytes=BLOCK)
        >>> room = out.space(); room[:3] = [1, 2, 3]; out.commit(3); out.space().size, out.tell()
        (4093, 3)
        """
        return self.bytes[self.filled:]

    def commit(self, size: int) -> None:
        """Take the first ``size`` bytes of :meth:`space` as written."""
        if not 0 <= size <= self.bytes.size - self.filled:
            raise ValueError(f"commit of {size} bytes, but the buffer has {self.bytes.size - self.filled} free")
        if self.digest is not None:
            self.digest.update(self.bytes[self.filled:self.filled + size])
        self.filled += size
        self.written += size
        if self.filled == self.bytes.size:
            self._flush(self.filled)

    def tell(self) -> int:
        return self.written

    def _flush(self, length: int) -> None:
        """Write the buffer's first ``length`` bytes (a multiple of :data:`BLOCK` when direct)."""
        view = memoryview(self.buffer)[:length]
        done = 0
        while done < length:
            try:
                done += os.write(self.fd, view[done:])
            except OSError as error:
                # a file system that opens O_DIRECT files but refuses their writes: start over cached
                if not (self.direct and error.errno == errno.EINVAL and self.flushed == 0 and done == 0):
                    raise
                os.close(self.fd)
                self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                self.direct = False
        self.flushed += length
        self.filled = 0

    def close(self) -> None:
        """Write what is left and close (the last block padded, the file then cut to its length)."""
        if self.fd < 0:
            return
        try:
            if self.filled:
                padded = -(-self.filled // BLOCK) * BLOCK if self.direct else self.filled
                self.bytes[self.filled:padded] = 0
                self._flush(padded)
            if self.flushed > self.written:  # the padding of the last block
                os.ftruncate(self.fd, self.written)
            if self.digest is not None:
                status = os.fstat(self.fd)
                _DIGESTS[(status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)] = self.digest.hexdigest()
        finally:
            os.close(self.fd)
            self.fd = -1
            self.bytes = np.zeros(0, np.uint8)  # the buffer can close: no view of it is left
            self.buffer.close()


__all__ = ["BLOCK", "DIRECT_VAR", "DirectFile", "digests_kept", "known_sha256"]
