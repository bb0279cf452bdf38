"""Batches of strings in the Arrow string layout: one ``uint8`` byte buffer and int64 offsets.

String ``i`` is ``data[offsets[i]:offsets[i + 1]]``; ``offsets[0] == 0`` and
``offsets[-1] == len(data)``. The arrays live on numpy (host) or cupy (device). pyarrow string and
binary arrays convert without copying the bytes.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gpu_text.arrays import array_module, to_host
from gpu_text.ragged import RaggedArray


class TextBatch(RaggedArray):
    """A batch of byte strings (usually UTF-8 text).

    >>> b = TextBatch.from_strings(["héllo", "", "世界"])
    >>> len(b), b.lengths.tolist(), b[2].decode()
    (3, [6, 0, 6], '世界')
    """

    def __init__(self, data: Any, offsets: Any, *, check: bool = True) -> None:
        if data.dtype != np.uint8:
            raise TypeError(f"TextBatch data must be uint8 bytes (got {data.dtype})")
        super().__init__(data, offsets, check=check)

    @property
    def data(self) -> Any:
        """The byte buffer (``values``)."""
        return self.values

    @property
    def nbytes(self) -> int:
        """Total bytes of text.

        >>> TextBatch.from_strings(["ab", "c"]).nbytes
        3
        """
        return int(self.values.size)

    def __repr__(self) -> str:
        return f"TextBatch(strings={len(self)}, bytes={self.nbytes})"

    def __getitem__(self, i: int) -> bytes:
        return to_host(self.row(i)).tobytes()

    @classmethod
    def from_strings(cls, items: Iterable[str | bytes | bytearray | memoryview]) -> "TextBatch":
        """From Python ``str`` (encoded as UTF-8), ``bytes``, ``bytearray`` or ``memoryview`` items.

        Lone surrogates in a ``str`` are kept as their (invalid) UTF-8 bytes, so nothing is lost;
        decoding turns them into U+FFFD. Any other item (a number, ``None``) is a ``TypeError``
        naming its index, and so is a bare string (it is one text, not a batch of characters).

        >>> TextBatch.from_strings([b"\\xff", "a", bytearray(b"b")]).to_bytes_list()
        [b'\\xff', b'a', b'b']
        >>> TextBatch.from_strings(["a", 5])
        Traceback (most recent call last):
        ...
        TypeError: item 1 is int, not str, bytes, bytearray or memoryview
        """
        if isinstance(items, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"expected a batch of strings, got a single {type(items).__name__}; wrap it in a list")
        encoded = [_item_bytes(i, s) for i, s in enumerate(items)]
        offsets = np.zeros(len(encoded) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
        data = np.frombuffer(b"".join(encoded), np.uint8)
        return cls(data, offsets, check=False)

    @classmethod
    def from_buffers(cls, data: Any, offsets: Any) -> "TextBatch":
        """From an existing byte buffer and offsets (numpy or cupy), without copying the bytes.

        Offsets that do not start at 0 (a slice of a larger buffer) are rebased; the bytes are
        viewed, not copied.

        >>> TextBatch.from_buffers(np.frombuffer(b"xxabc", np.uint8), [2, 4, 5]).to_bytes_list()
        [b'ab', b'c']
        """
        xp = array_module(data)
        offsets = xp.asarray(offsets, dtype=xp.int64)
        data = xp.asarray(data)
        if data.dtype != np.uint8:
            data = data.view(xp.uint8)
        if offsets.ndim != 1 or offsets.size == 0:
            raise ValueError("offsets must be 1-D with at least one entry")
        first, last = int(offsets[0]), int(offsets[-1])
        if first < 0 or last > data.size:
            raise ValueError(f"offsets span [{first}, {last}) outside a buffer of {data.size} bytes")
        if first != 0:
            offsets = offsets - first
        return cls(data[first:last], offsets)

    @classmethod
    def from_arrow(cls, array: Any, *, nulls: str = "error") -> "TextBatch":
        """From a pyarrow ``(Large)StringArray`` or ``(Large)BinaryArray`` (or a chunked one).

        The bytes are not copied. int32 offsets are widened (a copy of the offsets only); a slice
        (non-zero ``array.offset``) is handled. Nulls raise unless ``nulls="empty"``.

        >>> import pyarrow as pa
        >>> TextBatch.from_arrow(pa.array(["a", "bc", "d"]).slice(1)).to_bytes_list()
        [b'bc', b'd']
        """
        import pyarrow as pa

        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
        kinds = {pa.string(): np.int32, pa.binary(): np.int32, pa.large_string(): np.int64, pa.large_binary(): np.int64}
        offset_dtype = kinds.get(array.type)
        if offset_dtype is None:
            raise TypeError(f"expected a pyarrow string or binary array, got type {array.type}")
        if array.null_count:
            if nulls != "empty":
                raise ValueError(f"{array.null_count} null strings in the array; pass nulls='empty' to read them as ''")
            import pyarrow.compute as pc

            empty = b"" if array.type in (pa.binary(), pa.large_binary()) else ""
            array = pc.fill_null(array, pa.scalar(empty, array.type))
        _, offsets_buf, data_buf = array.buffers()
        offsets = np.frombuffer(offsets_buf, offset_dtype)[array.offset:array.offset + len(array) + 1]
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        return cls.from_buffers(data, offsets.astype(np.int64, copy=False))

    def to_bytes_list(self) -> list[bytes]:
        """Every string as ``bytes``.

        >>> TextBatch.from_strings(["a", ""]).to_bytes_list()
        [b'a', b'']
        """
        raw = to_host(self.values).tobytes()
        bounds = to_host(self.offsets).tolist()
        return [raw[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def to_pylist(self, errors: str = "replace") -> list[str]:  # type: ignore[override]
        """Every string as ``str`` (malformed UTF-8 handled by ``errors``, as in ``bytes.decode``).

        >>> TextBatch.from_strings(["a", "世"]).to_pylist()
        ['a', '世']
        """
        return [b.decode("utf-8", errors) for b in self.to_bytes_list()]

    def to_arrow(self, large: bool | None = None, binary: bool = False) -> Any:  # type: ignore[override]
        """A pyarrow ``LargeStringArray`` sharing the bytes (``binary=True``: ``LargeBinaryArray``).

        A string array must hold valid UTF-8, so this raises on malformed text unless ``binary``.
        ``large=False`` gives int32 offsets (a copy of the offsets).

        >>> TextBatch.from_strings(["a", "bc"]).to_arrow().to_pylist()
        ['a', 'bc']
        """
        import pyarrow as pa

        host = self.to_numpy()
        if large is None:
            large = host.nbytes > np.iinfo(np.int32).max
        offsets = host.offsets if large else host.offsets.astype(np.int32)
        kind = {(True, False): pa.large_string(), (True, True): pa.large_binary(),
                (False, False): pa.string(), (False, True): pa.binary()}[(bool(large), bool(binary))]
        array = pa.Array.from_buffers(kind, len(host), [None, pa.py_buffer(offsets), pa.py_buffer(host.values)])
        if not binary:
            try:
                array.validate(full=True)
            except pa.ArrowInvalid:
                raise ValueError(f"string {host._first_invalid_utf8()} is not valid UTF-8; use binary=True") from None
        return array

    def _first_invalid_utf8(self) -> int:
        """Index of the first row that is not valid UTF-8 (the error path of :meth:`to_arrow`)."""
        for i in range(len(self)):
            try:
                self[i].decode("utf-8")
            except UnicodeDecodeError:
                return i
        return -1

    def to_numpy(self) -> "TextBatch":
        """This batch on the host.

        >>> TextBatch.from_strings(["a"]).to_numpy().nbytes
        1
        """
        return TextBatch(to_host(self.values), to_host(self.offsets), check=False)

    def to_device(self, xp: Any) -> "TextBatch":
        """This batch on ``xp``'s device (``numpy`` or ``cupy``); no copy when already there.

        >>> TextBatch.from_strings(["a"]).to_device(np).nbytes
        1
        """
        if xp is np:
            return self.to_numpy()
        return TextBatch(xp.asarray(self.values), xp.asarray(self.offsets), check=False)


def _item_bytes(index: int, item: Any) -> bytes:
    if isinstance(item, str):
        return item.encode("utf-8", "surrogatepass")
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    raise TypeError(f"item {index} is {type(item).__name__}, not str, bytes, bytearray or memoryview")


def as_text_batch(texts: Any) -> TextBatch:
    """Accept a :class:`TextBatch`, a pyarrow array, or an iterable of ``str``/``bytes``.

    >>> as_text_batch(["a", "b"]).nbytes
    2
    """
    if isinstance(texts, TextBatch):
        return texts
    if type(texts).__module__.startswith("pyarrow"):
        return TextBatch.from_arrow(texts)
    return TextBatch.from_strings(texts)
