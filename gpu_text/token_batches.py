"""Corpora as batches of token spans: what the word2vec vocabulary and the LDA corpus both read.

A :class:`TokenBatch` is a byte buffer with the ``[starts, ends)`` spans of its tokens and the
token offsets of its documents, so tokens are counted and hashed in Numba and never become
Python strings. :func:`token_batches` takes a path or paths (documents read by
:func:`gpu_text.documents.read_documents`, split on ASCII whitespace; invalid UTF-8 is an error
naming the file and line), a ``TextBatch``, an iterable of token lists (read once) or a
``RaggedArray`` of ids (each id's four little-endian bytes are its token); documents are kept
whole, empty ones included. :func:`segmented_batches` cuts raw text into words with a
``Segmenter`` batch by batch as it is read.

>>> batches, is_ids = token_batches([["a", "bc"], [], ["d"]], "text", 1 << 20, None)
>>> batch = next(batches)
>>> is_ids, batch.starts.tolist(), batch.ends.tolist(), batch.doc_offsets.tolist()
(False, [0, 1, 3], [1, 3, 4], [0, 2, 2, 3])
"""
from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.backend import get_backend
from gpu_text.batch import TextBatch
from gpu_text.documents import read_documents
from gpu_text.ragged import RaggedArray
from gpu_text.utf8 import validate

# Token lists are packed into batches of about this many tokens.
TOKENS_PER_BATCH = 1 << 20


@dataclass
class TokenBatch:
    """Tokens ``data[starts[t]:ends[t]]``; document ``d`` holds tokens ``doc_offsets[d]`` to
    ``doc_offsets[d + 1]``.

    >>> TokenBatch(np.frombuffer(b"ab", np.uint8), np.array([0, 1]), np.array([1, 2]), np.array([0, 2])).n_tokens
    2
    """

    data: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    doc_offsets: np.ndarray

    @property
    def n_tokens(self) -> int:
        """Number of tokens."""
        return int(self.starts.size)


def token_batches(corpus: Any, field: str, chunk_bytes: int, progress: Any) -> tuple[Iterator[TokenBatch], bool]:
    """The batches of ``corpus`` (see the module docstring) and whether its tokens are ids.

    >>> ids = RaggedArray(np.array([7, 8, 9], np.int32), np.array([0, 2, 3]))
    >>> batches, is_ids = token_batches(ids, "text", 1 << 20, None)
    >>> is_ids, next(batches).doc_offsets.tolist()
    (True, [0, 2, 3])
    """
    if isinstance(corpus, TextBatch):
        return _split_batches([corpus], "the TextBatch"), False
    if isinstance(corpus, RaggedArray):
        return iter([_id_batch(corpus)]), True
    if isinstance(corpus, (str, os.PathLike)):
        return _file_batches([corpus], field, chunk_bytes, progress), False
    if isinstance(corpus, (bytes, bytearray)) or not isinstance(corpus, Iterable):
        raise TypeError(f"corpus must be a path, a list of paths, a TextBatch, a RaggedArray of ids or an iterable "
                        f"of token lists, not {type(corpus).__name__}")
    items = iter(corpus)
    first = next(items, None)
    if first is None:
        return iter(()), False
    items = itertools.chain([first], items)
    if isinstance(first, (str, os.PathLike)):
        return _file_batches(list(items), field, chunk_bytes, progress), False
    if isinstance(first, RaggedArray) and not isinstance(first, TextBatch):
        return (_id_batch(part) for part in items), True
    return _list_batches(items), False


def _valid_batches(batches: Iterable[TextBatch], where: str) -> Iterator[TextBatch]:
    """The batches on the host, each checked to be UTF-8 (an error names ``where`` and the line)."""
    line = 1
    for batch in batches:
        batch = batch.to_numpy()
        ok = validate(batch, backend="cpu")
        if not bool(ok.all()):
            bad = int(np.argmin(ok))
            raise ValueError(f"{where}:{line + bad}: not UTF-8 text (line {line + bad} has an invalid byte sequence)")
        line += len(batch)
        yield batch


def _split_batches(batches: Iterable[TextBatch], where: str) -> Iterator[TokenBatch]:
    split = get_backend("cpu").op("word2vec_vocab", "split_whitespace")
    for batch in _valid_batches(batches, where):
        starts, ends, doc_offsets = split(batch.data, batch.offsets)
        yield TokenBatch(batch.data, starts, ends, doc_offsets)


def segmented_batches(corpus: Any, segmenter: Any, field: str, chunk_bytes: int, progress: Any,
                       backend: Any) -> Iterator[TokenBatch]:
    """The words ``segmenter`` cuts the raw text of ``corpus`` (a path, paths or a ``TextBatch``)
    into, batch by batch, on ``backend``.

    >>> from gpu_text.segment import Dictionary, Segmenter
    >>> seg = Segmenter(Dictionary(["英国", "英国人"], np.array([8, 10]), 18))
    >>> batch = next(segmented_batches(TextBatch.from_strings(["英国人", ""]), seg, "text", 1 << 20, None, "cpu"))
    >>> batch.starts.tolist(), batch.ends.tolist(), batch.doc_offsets.tolist()
    ([0], [9], [0, 1, 1])
    """
    if not callable(getattr(segmenter, "segment", None)):
        raise TypeError(f"segment must be a Segmenter (with a segment() method), not {type(segmenter).__name__}")
    if isinstance(corpus, TextBatch):
        sources: Iterator[tuple[Iterable[TextBatch], str]] = iter([([corpus], "the TextBatch")])
    elif isinstance(corpus, (str, os.PathLike)):
        sources = iter([(read_documents([corpus], field, chunk_bytes, progress), str(corpus))])
    elif isinstance(corpus, (bytes, bytearray)) or not isinstance(corpus, Iterable):
        raise TypeError(f"with segment, corpus must be a path, a list of paths or a TextBatch of raw text, not "
                        f"{type(corpus).__name__}")
    else:
        paths = list(corpus)
        if not all(isinstance(p, (str, os.PathLike)) for p in paths):
            raise TypeError("with segment, corpus must be a path, a list of paths or a TextBatch of raw text")
        sources = ((read_documents([p], field, chunk_bytes, progress), str(p)) for p in paths)
    for batches, where in sources:
        for batch in _valid_batches(batches, where):
            words = segmenter.segment(batch, backend=backend)
            starts, ends = words.starts.to_numpy(), words.ends.to_numpy()
            base = np.repeat(batch.offsets[:-1].astype(np.int64), np.diff(starts.offsets))
            yield TokenBatch(batch.data, base + starts.values.astype(np.int64), base + ends.values.astype(np.int64),
                              starts.offsets.astype(np.int64))


def _file_batches(paths: list[Any], field: str, chunk_bytes: int, progress: Any) -> Iterator[TokenBatch]:
    for path in paths:
        yield from _split_batches(read_documents([path], field, chunk_bytes, progress), str(path))


def _id_batch(ids: RaggedArray) -> TokenBatch:
    values = np.ascontiguousarray(ids.to_numpy().values)
    if values.dtype.kind not in "iu":
        raise TypeError(f"a RaggedArray corpus must hold integer token ids, not {values.dtype}")
    data = values.astype("<i4").view(np.uint8)
    starts = np.arange(values.size, dtype=np.int64) * 4
    return TokenBatch(data, starts, starts + 4, ids.to_numpy().offsets.astype(np.int64))


def _list_batches(sentences: Iterator[Any]) -> Iterator[TokenBatch]:
    tokens: list[str] = []
    lengths: list[int] = []
    for number, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes)):
            raise TypeError(f"corpus item {number} is a single string, not a list of tokens")
        before = len(tokens)
        tokens.extend(sentence)
        lengths.append(len(tokens) - before)
        if len(tokens) >= TOKENS_PER_BATCH:
            yield _pack(tokens, lengths)
            tokens, lengths = [], []
    if lengths:
        yield _pack(tokens, lengths)


def _pack(tokens: list[str], lengths: list[int]) -> TokenBatch:
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"tokens must be str, got {type(token).__name__} {token!r}")
    batch = TextBatch.from_strings(tokens)
    return TokenBatch(batch.data, batch.offsets[:-1].copy(), batch.offsets[1:].copy(),
                       np.concatenate(([0], np.cumsum(lengths))).astype(np.int64))


__all__ = ["TOKENS_PER_BATCH", "TokenBatch", "segmented_batches", "token_batches"]
