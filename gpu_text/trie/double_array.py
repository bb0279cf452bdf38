"""Static dictionaries as a double-array trie (DictCut's XOR layout), built in Numba.

The trie is four flat arrays, one slot per index, slot 0 the root:

- ``state`` (int32): for an internal slot ``p``, ``p ^ base`` where ``base ^ byte`` is the slot of
  the child on ``byte`` (so a child is ``p ^ state[p] ^ byte``); for a value slot, the word's value.
- ``check`` (int32): the parent slot + 1; 0 marks a free slot (and the root), which therefore never
  validates as anyone's child.
- ``label`` (uint8): the byte on the edge into the slot (0 for value slots).
- ``eow`` (uint8): 1 when the path to the slot spells a whole word. That word's value sits in the
  slot's child on byte 0 (its *value slot*); words never contain NUL, so byte 0 is free for it.

For a fixed base, ``base ^ byte`` over all 256 bytes is one aligned block of 256 slots, so a node's
children always share a block. The builder keeps the free slots of the last few blocks in a
circular free list and tries each free slot ``f`` as the home of the first child (``base = f ^
first_byte``) instead of probing bases one by one; blocks that stay crowded are closed.

The walk, the builder and the single-word queries are Numba helpers of the CPU layer
(``cpu_fallback/double_array.py``; on the GPU ``cuda/double_array.cuh``), reached through the
backend. Batched queries are the ``trie`` kernel family (``cuda/trie.cu``, ``cpu_fallback/trie.py``).
Saved files: :mod:`gpu_text.trie.double_array_file` (``DoubleArrayTrie.load(path, mmap=True)``
maps them straight from the file).
"""
from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import as_text_batch
from gpu_text.ragged import RaggedArray
from gpu_text.trie.double_array_file import FORMAT, MAX_VALUE, checked_arrays, read_arrays, write_npz


def as_word(word: str | bytes, adding: str | None = None) -> bytes:
    """``word`` as dictionary bytes: UTF-8 for ``str`` (lone surrogates kept, as in ``TextBatch``).

    With ``adding`` (how to name the word in errors) the word is being added to a dictionary:
    empty words and words containing NUL are a ``ValueError`` (byte 0 is the edge to a value slot,
    and the padding of the critbit trie).

    >>> as_word("你"), as_word(b"ab")
    (b'\\xe4\\xbd\\xa0', b'ab')
    >>> as_word("a\\0b", adding="word 3")
    Traceback (most recent call last):
    ...
    ValueError: word 3 ('a\\x00b') contains a NUL byte
    """
    raw = word.encode("utf-8", "surrogatepass") if isinstance(word, str) else bytes(word)
    if adding is not None:
        if not raw:
            raise ValueError(f"{adding} is empty")
        if 0 in raw:
            raise ValueError(f"{adding} ({word!r}) contains a NUL byte")
    return raw


# ----------------------------------------------------------------------------------- the trie


def _integer_values(values: Any, n_words: int) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (n_words,) or not (array.dtype.kind in "iu" or array.size == 0):
        raise ValueError(f"values must be {n_words} integers, one per word (got shape {array.shape}, "
                         f"dtype {array.dtype})")
    if array.size and (int(array.min()) < 0 or int(array.max()) > MAX_VALUE):
        raise ValueError(f"values must lie in [0, {MAX_VALUE}] (-1 means 'no word' to the kernels)")
    return array.astype(np.int32)


def _bytes_array(text: str | bytes) -> np.ndarray:
    return np.frombuffer(as_word(text), np.uint8)


def _cpu() -> Backend:
    """The builder and the single-word queries are host-only Numba helpers (the CPU layer)."""
    return get_backend("cpu")


def _device_key(xp: Any) -> tuple[str, int]:
    cuda = getattr(xp, "cuda", None)
    return xp.__name__, (cuda.Device().id if cuda is not None else -1)


@dataclass(frozen=True)
class PrefixMatches:
    """Dictionary words found in a batch: ``starts``, ``ends`` (byte offsets within each string)
    and ``values``, ragged with one row per string and the same row offsets.

    Within a row, matches are ordered by start, then end.
    """

    starts: RaggedArray
    ends: RaggedArray
    values: RaggedArray

    def to_pylist(self) -> list[list[tuple[int, int, int]]]:
        """Per string, ``(start, end, value)`` of every match.

        >>> DoubleArrayTrie.build(["a", "ab"]).prefix_search(["ab", ""], "cpu").to_pylist()
        [[(0, 1, 0), (0, 2, 1)], []]
        """
        rows = zip(self.starts.to_pylist(), self.ends.to_pylist(), self.values.to_pylist())
        return [list(zip(*row)) for row in rows]


class DoubleArrayTrie:
    """A static dictionary of byte-string words with int32 values, as a double-array trie.

    Build with :meth:`build`, query one string on the CPU (:meth:`lookup`, :meth:`common_prefixes`,
    :meth:`longest_prefix`, :meth:`predictive`) or whole batches on any backend
    (:meth:`lookup_batch`, :meth:`prefix_search`, :meth:`longest_prefix_batch`,
    :meth:`prefix_search_spans`). ``str`` arguments are UTF-8 encoded.

    >>> t = DoubleArrayTrie.build(["he", "she", "his"])
    >>> len(t), t.lookup("his"), t.lookup("hi"), "she" in t
    (3, 2, None, True)

    The arrays are public (``state``, ``check``, ``label``, ``eow``; see the module docstring) for
    Numba code calling ``trie_step`` / ``trie_value`` of ``cpu_fallback/double_array.py``.
    """

    def __init__(self, state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray) -> None:
        """Wraps existing arrays after checking them (``ValueError`` when they are not a trie).

        >>> t = DoubleArrayTrie.build(["a"])
        >>> len(DoubleArrayTrie(t.state, t.check, t.label, t.eow))
        1
        """
        self.state, self.check, self.label, self.eow = checked_arrays(state, check, label, eow)
        self._n_words = int(np.count_nonzero(eow))
        self._on_device: dict[tuple[str, int], tuple[Any, Any, Any, Any]] = {}

    @classmethod
    def build(cls, words: Iterable[str | bytes], values: Sequence[int] | np.ndarray | None = None
              ) -> "DoubleArrayTrie":
        """A trie of ``words`` (any order) with ``values`` (default: each word's index in ``words``).

        Values must lie in [0, 2**31). Empty words, words containing NUL and duplicate words are a
        ``ValueError``.

        >>> t = DoubleArrayTrie.build(["cat", "car", "card", "care", "can"])
        >>> t.lookup("card"), t.common_prefixes("cards")
        (2, [(3, 1), (4, 2)])
        >>> DoubleArrayTrie.build(["x", "y", "x"])
        Traceback (most recent call last):
        ...
        ValueError: duplicate word 'x' (words 0 and 2)
        """
        items = list(words)
        keys = [as_word(word, f"word {i}") for i, word in enumerate(items)]
        vals = np.arange(len(keys), dtype=np.int32) if values is None else _integer_values(values, len(keys))
        order = sorted(range(len(keys)), key=keys.__getitem__)
        ordered = [keys[i] for i in order]
        for a, b in zip(order, order[1:]):
            if keys[a] == keys[b]:
                first, second = sorted((a, b))
                raise ValueError(f"duplicate word {items[a]!r} (words {first} and {second})")
        lengths = np.fromiter(map(len, ordered), np.int64, len(ordered))
        offsets = np.zeros(len(ordered) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(ordered), np.uint8)
        arrays = _cpu().op("double_array", "build_arrays")(data, offsets, vals[np.asarray(order, np.int64)])
        return cls(*arrays)

    # ------------------------------------------------------------------------------ files

    def save(self, path: str | os.PathLike) -> None:
        """Writes an uncompressed ``.npz`` (no pickle) that :meth:`load` reads or memory-maps.

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "words.npz"
        >>> DoubleArrayTrie.build(["a", "b"]).save(path)
        >>> DoubleArrayTrie.load(path, mmap=True).lookup("b")
        1
        """
        write_npz(path, {"format": np.array(FORMAT), "state": self.state, "check": self.check,
                          "label": self.label, "eow": self.eow})

    @classmethod
    def load(cls, path: str | os.PathLike, mmap: bool = False) -> "DoubleArrayTrie":
        """Reads a file written by :meth:`save`.

        ``mmap=True`` maps the arrays read-only from the file instead of reading them (the members
        of an uncompressed ``.npz`` are plain ``.npy`` data at known offsets), so processes share
        the pages and loading costs one pass over the arrays to check them. A file that is not
        such a trie (malformed, truncated, compressed when mapping) is a ``ValueError``.

        >>> import tempfile, pathlib
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "bad.npz"
        >>> _ = bad.write_bytes(b"not a zip")
        >>> DoubleArrayTrie.load(bad)
        Traceback (most recent call last):
        ...
        ValueError: ...bad.npz is not a saved DoubleArrayTrie: File is not a zip file
        """
        try:
            arrays = read_arrays(path, mmap)
            return cls(**arrays)
        except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile, struct.error) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            reason = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise ValueError(f"{os.fspath(path)} is not a saved DoubleArrayTrie: {reason}") from exc

    @property
    def nbytes(self) -> int:
        """Bytes taken by the four arrays.

        >>> DoubleArrayTrie.build(["a"]).nbytes
        2560
        """
        return sum(a.nbytes for a in (self.state, self.check, self.label, self.eow))

    def __len__(self) -> int:
        return self._n_words

    def __repr__(self) -> str:
        return f"DoubleArrayTrie(words={len(self)}, slots={self.state.size})"

    def __contains__(self, word: object) -> bool:
        """``word in trie``.

        >>> "he" in DoubleArrayTrie.build(["he"]), b"h" in DoubleArrayTrie.build(["he"])
        (True, False)
        """
        return isinstance(word, (str, bytes)) and self.lookup(word) is not None

    # --------------------------------------------------------------------- single queries

    def lookup(self, word: str | bytes) -> int | None:
        """The value of ``word``, or ``None`` when it is not in the dictionary.

        >>> DoubleArrayTrie.build(["he", "she"]).lookup("she")
        1
        """
        raw = _bytes_array(word)
        lengths, values = _cpu().op("double_array", "prefix_words")(self.state, self.check, self.label, self.eow, raw)
        return int(values[-1]) if lengths.size and lengths[-1] == raw.size else None

    def common_prefixes(self, text: str | bytes) -> list[tuple[int, int]]:
        """``(length in bytes, value)`` of every word that is a prefix of ``text``, shortest first.

        >>> DoubleArrayTrie.build(["car", "card", "care"]).common_prefixes("card")
        [(3, 0), (4, 1)]
        """
        lengths, values = _cpu().op("double_array", "prefix_words")(self.state, self.check, self.label, self.eow, _bytes_array(text))
        return list(zip(lengths.tolist(), values.tolist()))

    def longest_prefix(self, text: str | bytes) -> tuple[int, int] | None:
        """``(length in bytes, value)`` of the longest word that is a prefix of ``text``, or ``None``.

        >>> t = DoubleArrayTrie.build(["中", "中国"])
        >>> t.longest_prefix("中国人"), t.longest_prefix("人")
        ((6, 1), None)
        """
        lengths, values = _cpu().op("double_array", "prefix_words")(self.state, self.check, self.label, self.eow, _bytes_array(text))
        return (int(lengths[-1]), int(values[-1])) if lengths.size else None

    def predictive(self, prefix: str | bytes) -> list[tuple[bytes, int]]:
        """``(word, value)`` of every word starting with ``prefix`` (itself included), in byte order.

        >>> [w for w, _ in DoubleArrayTrie.build(["cat", "car", "card", "care", "can"]).predictive("ca")]
        [b'can', b'car', b'card', b'care', b'cat']
        """
        raw = as_word(prefix)
        suffixes, offsets, values = _cpu().op("double_array", "words_under")(self.state, self.check, self.label, self.eow,
                                                 np.frombuffer(raw, np.uint8))
        tail = suffixes.tobytes()
        bounds = offsets.tolist()
        return [(raw + tail[a:b], v) for a, b, v in zip(bounds[:-1], bounds[1:], values.tolist())]

    # -------------------------------------------------------------------- batched queries

    def arrays(self, backend: str | Backend | None = None) -> tuple[Any, Any, Any, Any]:
        """``(state, check, label, eow)`` on ``backend``'s device, copied there once and kept.

        >>> DoubleArrayTrie.build(["a"]).arrays("cpu")[0].dtype
        dtype('int32')
        """
        be = get_backend(backend)
        key = _device_key(be.xp)
        if key not in self._on_device:
            self._on_device[key] = tuple(be.asarray(a) for a in (self.state, self.check, self.label, self.eow))
        return self._on_device[key]

    def lookup_batch(self, texts: Any, backend: str | Backend | None = None) -> Any:
        """The value of every string of a batch (int32, -1 when it is not a word).

        ``texts``: a ``TextBatch``, a pyarrow string/binary array or a list of str/bytes.

        >>> DoubleArrayTrie.build(["he", "she"]).lookup_batch(["she", "sh", ""], "cpu").tolist()
        [1, -1, -1]
        """
        be = get_backend(backend)
        batch = as_text_batch(texts).to_device(be.xp)
        return be.op("trie", "trie_lookup")(*self.arrays(be), batch.data, batch.offsets)

    def longest_prefix_batch(self, texts: Any, backend: str | Backend | None = None) -> tuple[Any, Any]:
        """Per string, the byte length (int64) and value (int32) of its longest prefix word; 0 and -1
        when none.

        >>> lengths, values = DoubleArrayTrie.build(["中", "中国"]).longest_prefix_batch(["中国人", "x"], "cpu")
        >>> lengths.tolist(), values.tolist()
        ([6, 0], [1, -1])
        """
        be = get_backend(backend)
        batch = as_text_batch(texts).to_device(be.xp)
        return be.op("trie", "trie_longest_prefix")(*self.arrays(be), batch.data, batch.offsets)

    def prefix_search(self, texts: Any, backend: str | Backend | None = None) -> PrefixMatches:
        """Every dictionary word found at every character start of every string (no cap).

        Offsets are bytes within each string; characters start where UTF-8 decoding (the project's
        rule, see :mod:`gpu_text.utf8`) starts one.

        >>> t = DoubleArrayTrie.build(["中国", "国", "国人", "人"])
        >>> t.prefix_search(["中国人"], "cpu").to_pylist()
        [[(0, 6, 0), (3, 6, 1), (3, 9, 2), (6, 9, 3)]]
        """
        be = get_backend(backend)
        batch = as_text_batch(texts).to_device(be.xp)
        starts, ends, values, row_offsets = self.prefix_search_spans(
            batch.data, batch.offsets[:-1], batch.offsets[1:], be)
        xp = be.xp
        # The string of every edge (cupy.repeat takes no array of counts; searchsorted runs on both).
        rows = xp.searchsorted(row_offsets, xp.arange(starts.size, dtype=xp.int64), side="right") - 1
        string_starts = batch.offsets[rows]
        return PrefixMatches(RaggedArray(starts - string_starts, row_offsets, check=False),
                             RaggedArray(ends - string_starts, row_offsets, check=False),
                             RaggedArray(values, row_offsets, check=False))

    def prefix_search_spans(self, data: Any, span_starts: Any, span_ends: Any,
                            backend: str | Backend | None = None) -> tuple[Any, Any, Any, Any]:
        """Every word ``w`` with ``data[p:p + len(w)] == w`` at every character start ``p`` of every
        span ``[span_starts[i], span_ends[i])``, not running past the span's end.

        ``data`` is a uint8 buffer; spans are int64 byte ranges of it (empty, overlapping or in any
        order). Returns ``(edge_starts, edge_ends, edge_values, span_edge_offsets)`` on the
        backend's array module: int64 positions in ``data``, int32 values, and int64 offsets (one
        per span, plus the total) of each span's edges, which are ordered by span, start, end.

        >>> t = DoubleArrayTrie.build(["ab", "b", "bc"])
        >>> data = np.frombuffer(b"abc", np.uint8)
        >>> [a.tolist() for a in t.prefix_search_spans(data, np.array([0, 1]), np.array([2, 3]), "cpu")]
        [[0, 1, 1, 1], [2, 2, 2, 3], [0, 1, 1, 2], [0, 2, 4]]
        """
        be = get_backend(backend)
        xp = be.xp
        data = be.asarray(data)
        span_starts = xp.ascontiguousarray(be.asarray(span_starts), dtype=xp.int64)
        span_ends = xp.ascontiguousarray(be.asarray(span_ends), dtype=xp.int64)
        if data.dtype != xp.uint8 or data.ndim != 1:
            raise ValueError(f"data must be a 1-D uint8 buffer (got {data.dtype}, {data.ndim}-D)")
        if span_starts.shape != span_ends.shape or span_starts.ndim != 1:
            raise ValueError("span_starts and span_ends must be 1-D and of one length")
        if span_starts.size and bool(((span_starts < 0) | (span_ends < span_starts) | (span_ends > data.size)).any()):
            raise ValueError(f"every span must satisfy 0 <= start <= end <= len(data) = {data.size}")
        return be.op("trie", "trie_prefix_search")(*self.arrays(be), xp.ascontiguousarray(data),
                                                    span_starts, span_ends)
