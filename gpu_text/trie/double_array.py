"""Static dictionaries as a double-array trie (the seed's XOR layout), built in Numba.

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

Helpers for other Numba code (the segmenter's lattice): :func:`trie_step`, :func:`trie_value` and
:func:`walk_prefixes`. The CUDA ``trie_step`` and ``trie_value`` take the same arguments plus the
array length (before ``pos``) and live in ``cuda/double_array.cuh``. Batched queries are the
``trie`` kernel family (``cuda/trie.cu``, ``cpu_fallback/trie.py``).

Saved files are uncompressed ``.npz`` archives (members ``format``, ``state``, ``check``, ``label``,
``eow``; no pickle) whose array data start on 64-byte boundaries, so that
``DoubleArrayTrie.load(path, mmap=True)`` can map them straight from the file.
"""
from __future__ import annotations

import io
import os
import struct
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import as_text_batch
from gpu_text.ragged import RaggedArray

_JIT = dict(cache=True, nogil=True)

BLOCK_SLOTS = 256  # children of one base: base ^ byte for the 256 bytes, one aligned block
OPEN_BLOCKS = 16  # blocks whose free slots the builder still searches; older ones are closed
MAX_VALUE = np.iinfo(np.int32).max
FORMAT = "gpu_text.DoubleArrayTrie/1"
ARRAY_DTYPES = {"state": np.int32, "check": np.int32, "label": np.uint8, "eow": np.uint8}
_ALIGN = 64  # members of a saved file start on 64-byte boundaries, so mapped arrays are aligned
_PAD_FIELD_ID = 0x6774  # a private zip extra-field id ("gt"); readers skip ids they do not know


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


# ------------------------------------------------------------------------- Numba device helpers


@njit(inline="always", **_JIT)
def trie_step(state, check, label, pos, byte):
    """The slot reached from slot ``pos`` on ``byte`` (uint8), or -1 when there is no such edge.

    Byte 0 never steps (it leads to value slots, and no word contains it). Every read is bounded
    by the array length, so corrupt arrays give wrong answers, never a read out of bounds.

    >>> t = DoubleArrayTrie.build(["he"])
    >>> h = trie_step(t.state, t.check, t.label, 0, np.uint8(ord("h")))
    >>> trie_step(t.state, t.check, t.label, h, np.uint8(ord("x")))
    -1
    """
    if byte == 0:
        return -1
    nxt = pos ^ np.int64(state[pos]) ^ np.int64(byte)
    # no label test: a slot whose parent is pos and that sits at base ^ byte can only be the child
    # on byte (XOR with a fixed base is one-to-one), and this is the hot loop of every query
    if nxt < 0 or nxt >= state.size or check[nxt] != pos + 1:
        return -1
    return nxt


@njit(inline="always", **_JIT)
def trie_value(state, check, label, eow, pos):
    """The value of the word ending at slot ``pos`` (a slot :func:`trie_step` returned), or -1.

    >>> t = DoubleArrayTrie.build(["h", "he"], [7, 8])
    >>> h = trie_step(t.state, t.check, t.label, 0, np.uint8(ord("h")))
    >>> trie_value(t.state, t.check, t.label, t.eow, h), trie_value(t.state, t.check, t.label, t.eow, 0)
    (7, -1)
    """
    if eow[pos] == 0:
        return -1
    slot = pos ^ np.int64(state[pos])  # base ^ 0: the child on byte 0
    if slot < 0 or slot >= state.size or check[slot] != pos + 1:
        return -1
    return np.int64(state[slot])


@njit(inline="always", **_JIT)
def walk_prefixes(state, check, label, eow, data, begin, end, ends, values, out, write):
    """Every word ``data[begin:e)`` with ``e <= end``, shortest first: when ``write``, its end ``e``
    goes to ``ends[out]`` and its value to ``values[out]``; ``out`` counts the words either way.

    Returns ``(out, e, value)`` where ``e`` and ``value`` are those of the last (longest) word, or
    ``begin`` and -1 when there is none. Count with ``write=False``, allocate, then fill.

    >>> t = DoubleArrayTrie.build(["a", "ab", "abc"])
    >>> ends, values = np.zeros(3, np.int64), np.zeros(3, np.int32)
    >>> walk_prefixes(t.state, t.check, t.label, t.eow, np.frombuffer(b"xabd", np.uint8), 1, 4, ends, values, 0, True)
    (2, 3, 1)
    >>> ends[:2].tolist(), values[:2].tolist()
    ([2, 3], [0, 1])
    """
    last_end, last_value = begin, np.int64(-1)
    pos = 0
    for i in range(begin, end):
        pos = trie_step(state, check, label, pos, data[i])
        if pos < 0:
            break
        value = trie_value(state, check, label, eow, pos)
        if value >= 0:
            if write:
                ends[out] = i + 1
                values[out] = value
            out += 1
            last_end, last_value = i + 1, value
    return out, last_end, last_value


# ------------------------------------------------------------------------------------ building


@njit(**_JIT)
def _grown(array, size):
    out = np.zeros(size, array.dtype)
    out[:array.size] = array
    return out


@njit(**_JIT)
def _unlink(slot, head, next_free, prev_free):
    """Removes ``slot`` from the circular free list; returns the new head (-1: list empty)."""
    nxt = next_free[slot]
    if nxt == slot:
        return -1
    prv = prev_free[slot]
    next_free[prv] = nxt
    prev_free[nxt] = prv
    return nxt if head == slot else head


@njit(**_JIT)
def _open_block(block, first_open, head, used, next_free, prev_free):
    """Appends the slots of ``block`` to the free list and, past :data:`OPEN_BLOCKS` open blocks,
    closes the oldest (its free slots leave the list and stay unused), so that searching the free
    list stays short. Returns the new ``(first_open, head)``."""
    for slot in range(block * BLOCK_SLOTS, (block + 1) * BLOCK_SLOTS):
        if head == -1:
            head = slot
            next_free[slot] = slot
            prev_free[slot] = slot
        else:
            tail = prev_free[head]
            next_free[tail] = slot
            prev_free[slot] = tail
            next_free[slot] = head
            prev_free[head] = slot
    if block + 1 - first_open > OPEN_BLOCKS:
        for slot in range(first_open * BLOCK_SLOTS, (first_open + 1) * BLOCK_SLOTS):
            if not used[slot]:
                head = _unlink(slot, head, next_free, prev_free)
        first_open += 1
    return first_open, head


@njit(**_JIT)
def _find_base(labels, k, head, used, next_free):
    """A base whose slots ``base ^ labels[j]`` are all free, or -1.

    Each free slot ``f`` of the open blocks is tried as the home of the first child (``base = f ^
    labels[0]``), so only bases with at least one free child slot are ever tested; this is what
    the free list buys over probing bases one by one.
    """
    if head == -1:
        return -1
    f = head
    while True:
        base = f ^ labels[0]
        fits = True
        for j in range(1, k):
            if used[base ^ labels[j]]:
                fits = False
                break
        if fits:
            return base
        f = next_free[f]
        if f == head:
            return -1


@njit(**_JIT)
def _build_arrays(keys, key_offsets, values):
    """The four trie arrays of sorted, distinct, non-empty, NUL-free words.

    Iterative depth-first walk over ranges of the sorted word list: the words ``[lo, hi)`` share
    their first ``depth`` bytes and that prefix is the slot ``pos``. Its children are the distinct
    bytes at ``depth`` (one sub-range each) plus byte 0 when the prefix itself is a word (then it
    is ``keys[lo]``, the shortest).
    """
    n_words = key_offsets.size - 1
    # Room for every node (at most one per byte, one value slot per word) plus slack; grown on need.
    capacity = ((keys.size + n_words) // BLOCK_SLOTS + OPEN_BLOCKS + 1) * BLOCK_SLOTS
    state = np.zeros(capacity, np.int32)
    check = np.zeros(capacity, np.int32)
    label = np.zeros(capacity, np.uint8)
    eow = np.zeros(capacity, np.uint8)
    used = np.zeros(capacity, np.uint8)
    next_free = np.zeros(capacity, np.int32)
    prev_free = np.zeros(capacity, np.int32)
    first_open, head = _open_block(0, 0, -1, used, next_free, prev_free)
    n_blocks = 1
    used[0] = 1  # the root
    head = _unlink(0, head, next_free, prev_free)

    labels = np.zeros(257, np.int64)
    child_lo = np.zeros(258, np.int64)
    # Pending nodes hold disjoint non-empty word ranges, so there are never more than n_words.
    stack_pos = np.zeros(n_words + 1, np.int64)
    stack_lo = np.zeros(n_words + 1, np.int64)
    stack_hi = np.zeros(n_words + 1, np.int64)
    stack_depth = np.zeros(n_words + 1, np.int64)
    top = 0
    if n_words > 0:
        stack_hi[0] = n_words
        top = 1
    while top > 0:
        top -= 1
        pos, lo, hi, depth = stack_pos[top], stack_lo[top], stack_hi[top], stack_depth[top]
        k = 0
        has_word = key_offsets[lo + 1] - key_offsets[lo] == depth
        if has_word:
            labels[0] = 0
            child_lo[0] = lo
            k = 1
        i = lo + 1 if has_word else lo
        while i < hi:
            byte = keys[key_offsets[i] + depth]
            labels[k] = byte
            child_lo[k] = i
            k += 1
            i += 1
            while i < hi and keys[key_offsets[i] + depth] == byte:
                i += 1
        child_lo[k] = hi

        base = _find_base(labels, k, head, used, next_free)
        if base < 0:  # nothing fits in the open blocks: the node takes a fresh block
            if (n_blocks + 1) * BLOCK_SLOTS > capacity:
                if capacity >= 2**31 - BLOCK_SLOTS:
                    raise ValueError("the dictionary needs more than 2**31 trie slots")
                capacity = min(capacity * 2, 2**31 - BLOCK_SLOTS)
                state = _grown(state, capacity)
                check = _grown(check, capacity)
                label = _grown(label, capacity)
                eow = _grown(eow, capacity)
                used = _grown(used, capacity)
                next_free = _grown(next_free, capacity)
                prev_free = _grown(prev_free, capacity)
            first_open, head = _open_block(n_blocks, first_open, head, used, next_free, prev_free)
            base = n_blocks * BLOCK_SLOTS
            n_blocks += 1

        state[pos] = pos ^ base
        for j in range(k):
            slot = base ^ labels[j]
            used[slot] = 1
            head = _unlink(slot, head, next_free, prev_free)
            check[slot] = pos + 1
            label[slot] = labels[j]
        if has_word:
            eow[pos] = 1
            state[base] = values[lo]
        # Children go on the stack largest byte first, so the walk continues in byte order.
        for j in range(k - 1, 0 if has_word else -1, -1):
            stack_pos[top] = base ^ labels[j]
            stack_lo[top] = child_lo[j]
            stack_hi[top] = child_lo[j + 1]
            stack_depth[top] = depth + 1
            top += 1
    size = n_blocks * BLOCK_SLOTS
    return state[:size].copy(), check[:size].copy(), label[:size].copy(), eow[:size].copy()


# ------------------------------------------------------------------------- single queries (CPU)


@njit(**_JIT)
def _prefix_words(state, check, label, eow, text):
    """(lengths, values) of the words that are prefixes of ``text``, shortest first."""
    none = np.zeros(0, np.int64)
    n, _, _ = walk_prefixes(state, check, label, eow, text, 0, text.size, none, none, 0, False)
    lengths = np.zeros(n, np.int64)
    values = np.zeros(n, np.int64)
    walk_prefixes(state, check, label, eow, text, 0, text.size, lengths, values, 0, True)
    return lengths, values


@njit(**_JIT)
def _words_under(state, check, label, eow, prefix):
    """Every word starting with ``prefix``, in byte order: (suffix bytes, suffix offsets, values).

    Depth-first from the prefix's slot, the slot's own word first and then its children by
    increasing byte; ``path`` holds the bytes from the prefix slot down to the slot being visited.
    """
    pos = 0
    for i in range(prefix.size):
        pos = trie_step(state, check, label, pos, prefix[i])
        if pos < 0:
            return np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.int64)
    stack_pos = np.zeros(64, np.int64)
    stack_depth = np.zeros(64, np.int64)
    stack_pos[0] = pos
    top = 1
    path = np.zeros(16, np.uint8)
    suffixes = np.zeros(64, np.uint8)
    offsets = np.zeros(17, np.int64)
    values = np.zeros(16, np.int64)
    n = 0
    while top > 0:
        top -= 1
        pos, depth = stack_pos[top], stack_depth[top]
        if depth > 0:
            if depth > path.size:
                path = _grown(path, 2 * depth)
            path[depth - 1] = label[pos]
        value = trie_value(state, check, label, eow, pos)
        if value >= 0:
            if n == values.size:
                values = _grown(values, 2 * n)
                offsets = _grown(offsets, 2 * n + 1)
            if offsets[n] + depth > suffixes.size:
                suffixes = _grown(suffixes, 2 * (offsets[n] + depth))
            suffixes[offsets[n]:offsets[n] + depth] = path[:depth]
            offsets[n + 1] = offsets[n] + depth
            values[n] = value
            n += 1
        if top + 256 > stack_pos.size:
            stack_pos = _grown(stack_pos, 2 * (top + 256))
            stack_depth = _grown(stack_depth, 2 * (top + 256))
        for byte in range(255, 0, -1):  # pushed largest first: visited in byte order
            child = trie_step(state, check, label, pos, np.uint8(byte))
            if child >= 0:
                stack_pos[top] = child
                stack_depth[top] = depth + 1
                top += 1
    return suffixes[:offsets[n]], offsets[:n + 1], values[:n]


# --------------------------------------------------------------------------------- saved files


def _write_npz(path: str | os.PathLike, members: dict[str, np.ndarray]) -> None:
    """An uncompressed ``.npz`` whose array data start on :data:`_ALIGN`-byte boundaries.

    ``np.savez`` places members wherever the zip headers end; here each local header gets a
    padding extra field so that its ``.npy`` data (whose own header numpy pads to 64 bytes) is
    aligned, which keeps memory-mapped arrays aligned.
    """
    with open(path, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED) as archive:
        for name, array in members.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            header_end = raw.tell() + 30 + len(info.filename.encode()) + 4  # fixed header, name, field id+size
            padding = -header_end % _ALIGN
            info.extra = struct.pack("<HH", _PAD_FIELD_ID, padding) + bytes(padding)
            archive.writestr(info, buffer.getvalue())


def _mapped_member(path: str | os.PathLike, archive: zipfile.ZipFile, name: str) -> np.ndarray:
    """Member ``name`` of an uncompressed ``.npz`` as a read-only memory map of the file."""
    info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"member {name!r} is compressed and cannot be memory-mapped; load with mmap=False")
    with open(path, "rb") as raw:
        raw.seek(info.header_offset)
        local = raw.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError(f"member {name!r} has no zip local header")
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        start = info.header_offset + 30 + name_length + extra_length
        raw.seek(start)
        version = np.lib.format.read_magic(raw)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(raw)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(raw)
        else:
            raise ValueError(f"member {name!r} has .npy format {version}, which cannot be memory-mapped")
        offset = raw.tell()
        raw.seek(0, os.SEEK_END)
        file_size = raw.tell()
    count = int(np.prod(shape)) if len(shape) else 1
    if dtype.hasobject or fortran and len(shape) > 1:
        raise ValueError(f"member {name!r} is not a plain C-ordered array")
    if offset + count * dtype.itemsize > min(file_size, start + info.file_size):
        raise ValueError(f"member {name!r} is truncated")
    if count == 0:
        return np.zeros(shape, dtype)
    return np.asarray(np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape))


def _read_member(archive: zipfile.ZipFile, name: str) -> np.ndarray:
    with archive.open(f"{name}.npy") as member:
        return np.lib.format.read_array(member, allow_pickle=False)


def _read_arrays(path: str | os.PathLike, mmap: bool) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(path) as archive:
        kind = _read_member(archive, "format")
        if kind.shape != () or str(kind) != FORMAT:
            raise ValueError(f"format is {kind!r}, expected {FORMAT!r}")
        return {name: _mapped_member(path, archive, name) if mmap else _read_member(archive, name)
                for name in ARRAY_DTYPES}


def _checked_arrays(state: Any, check: Any, label: Any, eow: Any) -> tuple[np.ndarray, ...]:
    """The four arrays as numpy, after checking they form a trie (dtypes, sizes, every edge)."""
    arrays = {"state": state, "check": check, "label": label, "eow": eow}
    for name, dtype in ARRAY_DTYPES.items():
        array = arrays[name]
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
            raise ValueError(f"{name} must be a 1-D numpy array of {np.dtype(dtype)}")
    size = state.size
    if not 1 <= size <= MAX_VALUE or any(a.size != size for a in arrays.values()):
        raise ValueError(f"the four arrays must have one common length in [1, 2**31) (got "
                         f"{', '.join(f'{k}={v.size}' for k, v in arrays.items())})")
    if check[0] != 0 or int(check.min()) < 0 or int(check.max()) > size:
        raise ValueError("check holds slots outside the array (or the root has a parent)")
    # Every occupied slot must sit where its parent's base puts its label: p ^ state[p] ^ label.
    children = np.flatnonzero(check).astype(np.int64)
    parents = check[children].astype(np.int64) - 1
    if not np.array_equal(parents ^ state[parents] ^ label[children], children):
        raise ValueError("some slots are not where their parent's state and label put them")
    return state, check, label, eow


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
    Numba code calling :func:`trie_step` / :func:`trie_value`.
    """

    def __init__(self, state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray) -> None:
        """Wraps existing arrays after checking them (``ValueError`` when they are not a trie).

        >>> t = DoubleArrayTrie.build(["a"])
        >>> len(DoubleArrayTrie(t.state, t.check, t.label, t.eow))
        1
        """
        self.state, self.check, self.label, self.eow = _checked_arrays(state, check, label, eow)
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
        arrays = _build_arrays(data, offsets, vals[np.asarray(order, np.int64)])
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
        _write_npz(path, {"format": np.array(FORMAT), "state": self.state, "check": self.check,
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
            arrays = _read_arrays(path, mmap)
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
        lengths, values = _prefix_words(self.state, self.check, self.label, self.eow, raw)
        return int(values[-1]) if lengths.size and lengths[-1] == raw.size else None

    def common_prefixes(self, text: str | bytes) -> list[tuple[int, int]]:
        """``(length in bytes, value)`` of every word that is a prefix of ``text``, shortest first.

        >>> DoubleArrayTrie.build(["car", "card", "care"]).common_prefixes("card")
        [(3, 0), (4, 1)]
        """
        lengths, values = _prefix_words(self.state, self.check, self.label, self.eow, _bytes_array(text))
        return list(zip(lengths.tolist(), values.tolist()))

    def longest_prefix(self, text: str | bytes) -> tuple[int, int] | None:
        """``(length in bytes, value)`` of the longest word that is a prefix of ``text``, or ``None``.

        >>> t = DoubleArrayTrie.build(["中", "中国"])
        >>> t.longest_prefix("中国人"), t.longest_prefix("人")
        ((6, 1), None)
        """
        lengths, values = _prefix_words(self.state, self.check, self.label, self.eow, _bytes_array(text))
        return (int(lengths[-1]), int(values[-1])) if lengths.size else None

    def predictive(self, prefix: str | bytes) -> list[tuple[bytes, int]]:
        """``(word, value)`` of every word starting with ``prefix`` (itself included), in byte order.

        >>> [w for w, _ in DoubleArrayTrie.build(["cat", "car", "card", "care", "can"]).predictive("ca")]
        [b'can', b'car', b'card', b'care', b'cat']
        """
        raw = as_word(prefix)
        suffixes, offsets, values = _words_under(self.state, self.check, self.label, self.eow,
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
