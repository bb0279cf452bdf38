"""The word2vec vocabulary, counted in one streaming pass, and the corpus encoded to ids on the way.

A corpus is any of:

- a path or a list of paths: documents read by :func:`gpu_text.documents.read_documents` (a line
  each in a text file), split on ASCII whitespace (space, ``\\t``, ``\\n``, ``\\v``, ``\\f``,
  ``\\r``), never held as Python strings; invalid UTF-8 is an error naming the file and line;
- a :class:`~gpu_text.batch.TextBatch` of documents (split the same way);
- an iterable of token lists (gensim's ``corpus_iterable``), read once;
- a :class:`~gpu_text.ragged.RaggedArray` of token ids (a tokenizer's output): the keys are the ids.

With ``segment`` (a :class:`~gpu_text.segment.Segmenter`), the documents are raw text (Chinese,
say) in a path, a list of paths or a ``TextBatch``, cut into words by the segmenter batch by batch
as they are read (whitespace is dropped, punctuation marks are words), so raw text goes to ids in
the same single pass and is never held as Python strings.

Counting is a Numba hash table (``cpu_fallback/word2vec_vocab.py``); pruning and ordering are
gensim 4.4's: ``max_vocab_size`` prunes while scanning as ``_scan_vocab`` does, ``min_count``
keeps words counted at least that often, and the order is count descending, ties broken as
gensim's ``sort_by_descending_frequency`` does (the word inserted *later* first; insertion is
the first occurrence, or the first one after the word was pruned). Documents longer than
:data:`MAX_WORDS` tokens are cut into chunks of that many tokens (gensim's ``LineSentence``).

>>> vocab, corpus = build_vocabulary([["a", "b", "a"], ["c", "b", "a"]], min_count=2)
>>> vocab.index_to_key, vocab.counts.tolist(), vocab.total_words
(['a', 'b'], [3, 2], 6)
>>> corpus.ids.tolist(), corpus.offsets.tolist()
([0, 1, 0, 1, 0], [0, 3, 5])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu_text.backend import get_backend
from gpu_text.documents import DEFAULT_CHUNK_BYTES
from gpu_text.token_batches import segmented_batches, token_batches

# gensim's MAX_WORDS_IN_BATCH: LineSentence and word2vec_inner cut sentences at this length.
MAX_WORDS = 10000


@dataclass
class Vocabulary:
    """Words by descending count: ``index_to_key[i]`` was seen ``counts[i]`` times.

    ``total_words`` is every token scanned (gensim's ``corpus_total_words``), ``n_documents``
    the documents (token lists, lines) read.

    >>> v = Vocabulary(["x", "y"], np.array([5, 2]), 9, 3)
    >>> v.key_to_index["y"], len(v), v.retained_words
    (1, 2, 7)
    """

    index_to_key: list[Any]
    counts: np.ndarray
    total_words: int
    n_documents: int
    _index: dict[Any, int] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.index_to_key)

    @property
    def key_to_index(self) -> dict[Any, int]:
        """``{key: index}`` (built on first use)."""
        if self._index is None:
            self._index = {key: i for i, key in enumerate(self.index_to_key)}
        return self._index

    @property
    def retained_words(self) -> int:
        """Occurrences of the kept words (gensim's ``retain_total``)."""
        return int(self.counts.sum())


@dataclass
class EncodedCorpus:
    """The corpus as vocabulary ids: row ``i`` (a document or a chunk of one) is
    ``ids[offsets[i]:offsets[i + 1]]``; words outside the vocabulary are left out.

    >>> EncodedCorpus(np.array([0, 1, 0], np.int32), np.array([0, 2, 3])).n_words
    3
    """

    ids: np.ndarray
    offsets: np.ndarray

    @property
    def n_words(self) -> int:
        """Number of ids."""
        return int(self.ids.size)


def build_vocabulary(corpus: Any, min_count: int = 5, max_vocab_size: int | None = None, field: str = "text",
                     chunk_bytes: int = DEFAULT_CHUNK_BYTES, progress: Any = None, segment: Any = None,
                     backend: Any = None) -> tuple[Vocabulary, EncodedCorpus]:
    """Count ``corpus`` (see the module docstring) and encode it; returns ``(vocabulary, corpus)``.
    ``segment``: a ``Segmenter`` cutting raw text into the words, run on ``backend``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "c.txt")
    >>> _ = open(path, "w").write("the cat\\nthe  dog the\\n")
    >>> vocab, encoded = build_vocabulary(path, min_count=1)
    >>> vocab.index_to_key, encoded.ids.tolist(), encoded.offsets.tolist()
    (['the', 'dog', 'cat'], [0, 2, 0, 1, 0], [0, 2, 5])
    >>> from gpu_text.batch import TextBatch
    >>> from gpu_text.segment import Dictionary, Segmenter
    >>> seg = Segmenter(Dictionary(["英国", "英国人", "是"], np.array([8, 10, 5]), 30))
    >>> texts = TextBatch.from_strings(["他是英国人。", "英国人"])
    >>> build_vocabulary(texts, min_count=1, segment=seg)[0].index_to_key
    ['英国人', '。', '是', '他']
    """
    count = get_backend("cpu").op("word2vec_vocab", "count_tokens")
    state = get_backend("cpu").op("word2vec_vocab", "new_state")()
    raw_parts, doc_lengths = [], []
    position = 0
    if segment is not None:
        batches, is_ids = segmented_batches(corpus, segment, field, chunk_bytes, progress, backend), False
    else:
        batches, is_ids = token_batches(corpus, field, chunk_bytes, progress)
    for batch in batches:
        raw = np.empty(batch.starts.size, np.int32)
        state = count(batch.data, batch.starts, batch.ends, batch.doc_offsets, position, max_vocab_size or 0, raw,
                      *state)
        raw_parts.append(raw)
        doc_lengths.append(np.diff(batch.doc_offsets))
        position += raw.size
    table, arena, key_start, counts, stamps, _, key_len, n_entries = state[:8]
    counts, stamps = counts[:n_entries], stamps[:n_entries]
    kept = np.flatnonzero((counts >= max(min_count, 1)))
    order = kept[np.lexsort((-stamps[kept], -counts[kept]))]
    keys = [_key(arena, int(key_start[e]), int(key_len[e]), is_ids) for e in order]
    vocab = Vocabulary(keys, counts[order].astype(np.int64), position, int(sum(d.size for d in doc_lengths)))
    remap = np.full(max(n_entries, 1), -1, np.int32)
    remap[order] = np.arange(order.size, dtype=np.int32)
    raw_ids = np.concatenate(raw_parts) if raw_parts else np.zeros(0, np.int32)
    lengths = np.concatenate(doc_lengths) if doc_lengths else np.zeros(0, np.int64)
    return vocab, encode_chunks(remap[raw_ids], lengths)


def encode_chunks(ids: np.ndarray, doc_lengths: np.ndarray, max_words: int = MAX_WORDS) -> EncodedCorpus:
    """Rows of at most ``max_words`` raw tokens per document, then the ``-1`` (unknown) ids left
    out; rows left empty are dropped.

    >>> c = encode_chunks(np.array([0, -1, 1, 2, 3], np.int32), np.array([3, 0, 2]), max_words=2)
    >>> c.ids.tolist(), c.offsets.tolist()
    ([0, 1, 2, 3], [0, 1, 2, 4])
    """
    doc_starts = np.concatenate(([0], np.cumsum(doc_lengths)))[:-1].astype(np.int64)
    pieces = -(-doc_lengths // max_words)
    # the raw start of every chunk: its document's start plus a multiple of max_words
    first_chunk = np.concatenate(([0], np.cumsum(pieces)))[:-1]
    chunk_doc = np.repeat(np.arange(doc_lengths.size), pieces)
    within = np.arange(chunk_doc.size) - first_chunk[chunk_doc]
    raw_offsets = np.concatenate((doc_starts[chunk_doc] + within * max_words, [ids.size])).astype(np.int64)
    known = ids >= 0
    kept_before = np.concatenate(([0], np.cumsum(known)))
    offsets = np.unique(kept_before[raw_offsets]).astype(np.int64)
    if offsets.size == 0 or offsets[0] != 0:
        offsets = np.concatenate(([0], offsets)).astype(np.int64)
    return EncodedCorpus(np.ascontiguousarray(ids[known], dtype=np.int32), offsets)


def _key(arena: np.ndarray, start: int, length: int, is_ids: bool) -> Any:
    raw = arena[start:start + length].tobytes()
    return int(np.frombuffer(raw, "<i4")[0]) if is_ids else raw.decode("utf-8")


__all__ = ["EncodedCorpus", "MAX_WORDS", "Vocabulary", "build_vocabulary", "encode_chunks"]
