"""Packing for pretraining (``gpu-text tokenize --pack N``): documents joined into one token
stream, each followed by the end-of-sequence id, and cut into rows of exactly ``N`` tokens. The
tokens left at the end (fewer than ``N``) are the last, shorter row: nothing is dropped. An
empty document adds nothing, not even the end-of-sequence id (as Megatron's ``preprocess_data.py``
gives an empty document no end-of-document token).

:class:`PackingWriter` sits in front of any output writer (same interface), so packed rows go to
Parquet, ``.npy``, Megatron or HF datasets alike; the stream is cut as chunks come, carrying at
most ``N - 1`` tokens from one chunk to the next.

>>> import numpy as np
>>> from gpu_text.ragged import RaggedArray
>>> rows = []
>>> class Collect:
...     def write(self, ids, starts, ends): rows.extend(ids.to_pylist())
...     def close(self): return len(rows)
...     def discard(self): pass
>>> packer = PackingWriter(Collect(), length=4, eos_id=2)
>>> packer.write(RaggedArray(np.array([5, 6, 7, 8, 9], np.int32), np.array([0, 3, 3, 5])), None, None)
>>> packer.close(), rows
(2, [[5, 6, 7, 2], [8, 9, 2]])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.ragged import RaggedArray


def append_to_rows(values: np.ndarray, lengths: np.ndarray, token: int) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (rows of ``lengths`` tokens) with ``token`` after the last token of every
    non-empty row, and the new lengths (Megatron's ``--append-eod`` and packing's separator).

    >>> out, lengths = append_to_rows(np.array([1, 2, 3], np.int32), np.array([2, 0, 1]), 0)
    >>> out.tolist(), lengths.tolist()
    ([1, 2, 0, 3, 0], [3, 0, 2])
    """
    grown = lengths + (lengths > 0)
    ends = np.cumsum(grown)  # where each row's run ends, its token included
    out = np.empty(int(ends[-1]) if ends.size else 0, values.dtype)
    is_token = np.zeros(out.size, bool)
    is_token[ends[lengths > 0] - 1] = True
    out[is_token] = token
    out[~is_token] = values
    return out, grown


def join_with_eos(ids: RaggedArray, eos_id: int) -> np.ndarray:
    """The tokens of every non-empty row of ``ids``, each row followed by ``eos_id``, in one int32 array.

    >>> join_with_eos(RaggedArray(np.array([1, 2, 3], np.int32), np.array([0, 2, 2, 3])), 0).tolist()
    [1, 2, 0, 3, 0]
    """
    values = np.asarray(ids.values).astype(np.int32, copy=False)
    return append_to_rows(values, np.asarray(ids.lengths), eos_id)[0]


class PackingWriter:
    """Packs rows into ``length``-token rows for ``writer`` (see the module docstring).

    :meth:`close` returns the number of packed rows the inner writer reports, after checking it
    against the rows sent; :attr:`tokens` counts the tokens sent (end-of-sequence ids included).
    """

    def __init__(self, writer: Any, length: int, eos_id: int) -> None:
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
            raise ValueError(f"the packed length must be a positive integer, got {length!r}")
        if isinstance(eos_id, bool) or not isinstance(eos_id, (int, np.integer)) or eos_id < 0:
            raise ValueError(f"packing needs an end-of-sequence id (got {eos_id!r}): the model has no eos piece")
        self.writer, self.length, self.eos_id = writer, int(length), int(eos_id)
        self.carry = np.zeros(0, np.int32)  # the start of the next row, fewer than ``length`` tokens
        self.rows = self.tokens = 0

    def write(self, ids: RaggedArray, starts: RaggedArray | None = None, ends: RaggedArray | None = None) -> None:
        """Add the documents of ``ids``; whole rows go to the writer now, the rest waits."""
        if starts is not None or ends is not None:
            raise ValueError("packed rows have no byte spans: offsets cannot be written with packing")
        stream = np.concatenate([self.carry, join_with_eos(ids, self.eos_id)])
        whole = stream.size // self.length * self.length
        if whole:
            self._send(stream[:whole])
        self.carry = stream[whole:].copy()  # a copy: the chunk's arrays are not kept alive

    def _send(self, tokens: np.ndarray) -> None:
        count = -(-tokens.size // self.length)
        offsets = np.minimum(np.arange(count + 1, dtype=np.int64) * self.length, tokens.size)
        self.writer.write(RaggedArray(tokens, offsets, check=False), None, None)
        self.rows += count
        self.tokens += int(tokens.size)

    def close(self) -> int:
        """Send the remainder as a last, shorter row and close the writer; returns the packed rows."""
        if self.carry.size:
            self._send(self.carry)
            self.carry = self.carry[:0]
        written = self.writer.close()
        if written != self.rows:
            raise RuntimeError(f"packed {self.rows} rows but the writer wrote {written}")
        return written

    def discard(self) -> None:
        """Drop what waits and discard the writer."""
        self.carry = self.carry[:0]
        self.writer.discard()


__all__ = ["PackingWriter", "append_to_rows", "join_with_eos"]
