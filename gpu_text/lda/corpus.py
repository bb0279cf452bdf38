"""The LDA input: every accepted form turned into one flat :class:`TokenCorpus` of word ids.

:func:`as_corpus` accepts

- a scipy.sparse document-term matrix (CSR, or anything ``tocsr()`` turns into one) or a dense
  2-D array of non-negative integer counts: a count ``c`` at ``(d, w)`` becomes ``c`` tokens of
  word ``w`` in document ``d``, words within a document in column order; the vocabulary has
  ``shape[1]`` words;
- a :class:`~gpu_text.ragged.RaggedArray` of integer word ids, a row per document (a tokenizer's
  or segmenter's id output); the vocabulary has ``max(id) + 1`` words;
- a list (any iterable, read once) of token lists: ``str`` tokens, or integer ids as for a
  ``RaggedArray``;
- a :class:`~gpu_text.batch.TextBatch` of documents, or a path or a list of paths of text files
  read by the project's document reader (:func:`gpu_text.documents.read_documents`: a document
  per line, also JSON Lines, Parquet, compressed files), split on ASCII whitespace; with
  ``segment`` (a :class:`~gpu_text.segment.Segmenter`), raw text (Chinese) is cut into words
  instead, batch by batch, as it is read;
- LDA-C files (Blei's format, ``n id:count id:count ...`` a document per line, ``n`` the number of
  pairs; ``reuters.ldac``): a path ending ``.ldac`` (also ``.ldac.gz`` ...) or whose first
  non-blank line has that shape;
- a :class:`TokenCorpus` (returned as is unless ``vocabulary`` or a pruning option is given; with a
  ``vocabulary`` its words are matched by name).

Vocabulary of words (``str`` input), built when ``vocabulary`` is None: every distinct word
counted in one streaming pass by the word2vec vocabulary's Numba hash table (no Python loop over
tokens), then pruned: ``stop_words`` removed, words seen fewer than ``min_count`` times removed,
words in more than ``max_df * n_docs`` documents removed (``max_df`` a fraction, as
scikit-learn's float ``max_df``). The kept words are ordered by count, descending; ties by first
appearance in the corpus (so the order is deterministic and does not depend on batch sizes).

Vocabulary of ids (CSR, ``RaggedArray``, integer token lists, LDA-C): the ids are the columns and
keep their order, so ``components_`` columns match the input's; without a ``vocabulary`` the
words are named ``"w0"``, ``"w1"``...; pruning removes ids and renumbers the kept ones in their
id order (``vocabulary`` names the new ids).

A given ``vocabulary`` (a list of words, a dict ``word -> id`` over ``0..V-1``, or a path of a
word per line such as ``reuters.tokens``) fixes the words, as for ``transform``: ``str`` words
outside it, and ids ``>= V``, are dropped and counted in ``n_unknown``. It cannot be combined with
pruning (the ids must stay those of the vocabulary).

Empty documents are kept (their offsets repeat); an empty corpus has ``doc_offsets == [0]``.

Memory: the result holds 4 bytes per token (``words``, int32) and 8 per document
(``doc_offsets``). Building it from text peaks at about 9 bytes per token more, transiently (the
raw hash-table ids, then the renumbered ids and a keep mask), plus one read batch of text and the
distinct words; ``max_df < 1`` adds 16 bytes per token for at most :data:`DF_CHUNK_TOKENS` tokens at
a time; a CSR input costs the result only (4 bytes per token). 100M tokens: 400 MB kept, about
1.3 GB at the peak of the build.

>>> c = as_corpus([["apple", "apple", "pie"], [], ["pie", "tea"]])
>>> c.vocabulary, c.words.tolist(), c.doc_offsets.tolist(), c.n_docs, c.n_words
(['apple', 'pie', 'tea'], [0, 0, 1, 1, 2], [0, 3, 3, 5], 3, 3)
>>> import scipy.sparse as sp
>>> as_corpus(sp.csr_matrix([[2, 1, 0], [0, 0, 0], [0, 1, 1]]), vocabulary=c.vocabulary) == c
True
"""
from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.backend import get_backend
from gpu_text.batch import TextBatch
from gpu_text.documents import DEFAULT_CHUNK_BYTES, iter_documents
from gpu_text.ragged import RaggedArray, row_ids
# The word2vec vocabulary's batch readers: whitespace splitting, segmentation and UTF-8 checks of
# every accepted text form, shared so that both trainers read text the same way.
from gpu_text.token_batches import segmented_batches, token_batches

# Document-frequency counting (max_df) sorts (document, word) keys this many tokens at a time.
DF_CHUNK_TOKENS = 1 << 22
LDAC_SUFFIX = ".ldac"
_COMPRESSED = (".gz", ".gzip", ".zst", ".zstd", ".bz2")
_LDAC_LINE = re.compile(r"\s*\d+(\s+\d+:\d+)*\s*")


@dataclass(frozen=True, eq=False)
class TokenCorpus:
    """Documents as flat word ids: document ``d`` is ``words[doc_offsets[d]:doc_offsets[d + 1]]``.

    ``vocabulary[w]`` names word id ``w``; ``n_unknown`` counts the tokens dropped because they
    were not in a given vocabulary. Equality compares ids, offsets and vocabulary.

    >>> c = TokenCorpus(np.array([1, 0, 1], np.int32), np.array([0, 2, 2, 3]), ["a", "b"])
    >>> c.n_docs, c.n_words, c.n_tokens, c.doc_lengths.tolist(), c.word_counts().tolist()
    (3, 2, 3, [2, 0, 1], [1, 2])
    """

    words: np.ndarray
    doc_offsets: np.ndarray
    vocabulary: list[str]
    n_unknown: int = 0

    def __post_init__(self) -> None:
        words = np.ascontiguousarray(self.words, dtype=np.int32)
        offsets = np.ascontiguousarray(self.doc_offsets, dtype=np.int64)
        if words.ndim != 1 or offsets.ndim != 1 or offsets.size == 0:
            raise ValueError("words must be 1-D and doc_offsets 1-D with at least one entry")
        if offsets[0] != 0 or offsets[-1] != words.size or bool((np.diff(offsets) < 0).any()):
            raise ValueError(f"doc_offsets must rise from 0 to len(words)={words.size}")
        if words.size and (int(words.min()) < 0 or int(words.max()) >= len(self.vocabulary)):
            raise ValueError(f"word ids must lie in [0, {len(self.vocabulary)}) (the vocabulary's size)")
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "doc_offsets", offsets)
        object.__setattr__(self, "vocabulary", list(self.vocabulary))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TokenCorpus):
            return NotImplemented
        return (np.array_equal(self.words, other.words) and np.array_equal(self.doc_offsets, other.doc_offsets)
                and self.vocabulary == other.vocabulary)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TokenCorpus(docs={self.n_docs}, tokens={self.n_tokens}, words={self.n_words})"

    @property
    def n_docs(self) -> int:
        """Number of documents (D), empty ones included."""
        return int(self.doc_offsets.size - 1)

    @property
    def n_words(self) -> int:
        """Vocabulary size (V)."""
        return len(self.vocabulary)

    @property
    def n_tokens(self) -> int:
        """Number of tokens (N)."""
        return int(self.words.size)

    @property
    def doc_lengths(self) -> np.ndarray:
        """Tokens in every document (int64[D])."""
        return np.diff(self.doc_offsets)

    def doc_ids(self) -> np.ndarray:
        """The document of every token (int64[N]).

        >>> TokenCorpus(np.array([0, 0, 0], np.int32), np.array([0, 1, 1, 3]), ["a"]).doc_ids().tolist()
        [0, 2, 2]
        """
        return row_ids(self.doc_offsets)

    def word_counts(self) -> np.ndarray:
        """Occurrences of every word (int64[V]), the term frequencies.

        >>> as_corpus([["b", "a", "b"]]).word_counts().tolist()
        [2, 1]
        """
        return np.bincount(self.words, minlength=self.n_words).astype(np.int64)

    def document_frequency(self) -> np.ndarray:
        """Documents containing every word (int64[V]).

        >>> as_corpus([["b", "a", "b"], ["b"]]).document_frequency().tolist()
        [2, 1]
        """
        return _document_frequency(self.words, self.doc_offsets, self.n_words)

    def to_csr(self) -> Any:
        """The document-term count matrix (scipy CSR, int32, D x V).

        >>> as_corpus([["b", "a", "b"], []]).to_csr().toarray().tolist()
        [[2, 1], [0, 0]]
        """
        import scipy.sparse as sp

        data = np.ones(self.n_tokens, np.int32)
        # copies: scipy keeps the index arrays it is given and sum_duplicates sorts them in place
        m = sp.csr_matrix((data, self.words.copy(), self.doc_offsets.copy()), shape=(self.n_docs, self.n_words))
        m.sum_duplicates()
        return m

    def documents(self, select: Any) -> "TokenCorpus":
        """The documents ``select`` (indices or a boolean mask), same vocabulary.

        >>> as_corpus([["a"], ["b", "b"], ["a", "b"]]).documents([2, 0]).words.tolist()
        [1, 0, 1]
        """
        index = np.arange(self.n_docs)[np.asarray(select)]
        lengths = self.doc_lengths[index]
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        take = np.repeat(self.doc_offsets[index] - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
        return TokenCorpus(self.words[take], offsets, self.vocabulary)

    def split_halves(self) -> tuple["TokenCorpus", "TokenCorpus"]:
        """Every document cut in two: its first ``len // 2`` tokens and the rest (the document
        completion split of held-out perplexity).

        >>> a, b = as_corpus([[0, 1, 2], [2]]).split_halves()
        >>> a.words.tolist(), a.doc_offsets.tolist(), b.words.tolist(), b.doc_offsets.tolist()
        ([0], [0, 1, 1], [1, 2, 2], [0, 2, 3])
        """
        lengths = self.doc_lengths
        first = lengths // 2
        position = np.arange(self.n_tokens) - np.repeat(self.doc_offsets[:-1], lengths)
        in_first = position < np.repeat(first, lengths)
        off_a = np.concatenate(([0], np.cumsum(first))).astype(np.int64)
        off_b = np.concatenate(([0], np.cumsum(lengths - first))).astype(np.int64)
        return (TokenCorpus(self.words[in_first], off_a, self.vocabulary),
                TokenCorpus(self.words[~in_first], off_b, self.vocabulary))


def as_corpus(X: Any, vocabulary: Any = None, min_count: int = 1, max_df: float = 1.0, stop_words: Any = None,
              segment: Any = None, *, field: str = "text", chunk_bytes: int = DEFAULT_CHUNK_BYTES,
              progress: Any = None, backend: Any = None) -> TokenCorpus:
    """``X`` (any form of the module docstring) as a :class:`TokenCorpus`.

    ``field``, ``chunk_bytes`` and ``progress`` go to the document reader; ``backend`` runs the
    segmenter.

    >>> as_corpus([["a", "b", "a"], ["b", "c"]], min_count=2).vocabulary
    ['a', 'b']
    >>> as_corpus([["a", "b", "a"], ["b", "c"]], max_df=0.5, stop_words={"c"}).vocabulary
    ['a']
    >>> c = as_corpus([["a", "x", "b"]], vocabulary={"b": 0, "a": 1})
    >>> c.words.tolist(), c.n_unknown
    ([1, 0], 1)
    """
    if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) or min_count < 1:
        raise ValueError(f"min_count must be a positive integer, got {min_count!r}")
    if isinstance(max_df, bool) or not isinstance(max_df, (int, float, np.number)) or not 0 < max_df <= 1:
        raise ValueError(f"max_df must be a fraction of the documents in (0, 1], got {max_df!r}")
    stops = load_stop_words(stop_words)
    pruning = min_count > 1 or max_df < 1 or bool(stops)
    names = load_vocabulary(vocabulary) if vocabulary is not None else None
    if names is not None and pruning:
        raise ValueError("a given vocabulary fixes the words: min_count, max_df and stop_words apply only when the "
                         "vocabulary is built")
    if segment is not None and isinstance(X, (TokenCorpus, RaggedArray)) and not isinstance(X, TextBatch):
        raise TypeError("segment applies to raw text (a path, a list of paths or a TextBatch), not to ids")
    if isinstance(X, TokenCorpus):
        if names is None and not pruning:
            return X
        if names is not None:  # its words by name: another corpus's ids mean other words
            index = {word: i for i, word in enumerate(names)}
            remap = np.array([index.get(w, -1) for w in X.vocabulary] + [-1], np.int32)
            new = remap[X.words]
            return _kept(new, X.doc_offsets, new >= 0, names, X.n_unknown + int(np.count_nonzero(new < 0)))
        return _from_ids(X.words, X.doc_offsets, X.n_words, None, X.vocabulary, min_count, max_df, stops)
    if _is_matrix(X):
        words, offsets, n_columns = _expand_matrix(X)
        return _from_ids(words, offsets, n_columns, names, None, min_count, max_df, stops)
    if isinstance(X, RaggedArray) and not isinstance(X, TextBatch):
        words, offsets = _ragged_ids(X)
        return _from_ids(words, offsets, None, names, None, min_count, max_df, stops)
    if segment is not None:
        batches = segmented_batches(X, segment, field, chunk_bytes, progress, backend)
        return _from_text(batches, names, min_count, max_df, stops)
    if isinstance(X, TextBatch):
        return _from_text(token_batches(X, field, chunk_bytes, progress)[0], names, min_count, max_df, stops)
    if isinstance(X, (str, os.PathLike)):
        X = [X]
    if isinstance(X, (bytes, bytearray)) or not isinstance(X, Iterable):
        raise TypeError(f"X must be a scipy.sparse matrix, a RaggedArray of ids, token lists, a TextBatch, a path or "
                        f"a list of paths, not {type(X).__name__}")
    items = iter(X)
    leading: list[Any] = []
    for item in items:  # the documents up to the first non-empty one say what the input is
        leading.append(item)
        if isinstance(item, (str, os.PathLike)) or len(item):
            break
    items = itertools.chain(leading, items)
    first = leading[-1] if leading else None
    if isinstance(first, (str, os.PathLike)):
        return _from_paths(list(items), names, min_count, max_df, stops, field, chunk_bytes, progress)
    if first is not None and len(first) and isinstance(next(iter(first)), (int, np.integer)) \
            and not isinstance(next(iter(first)), bool):
        words, offsets = _id_lists(items)
        return _from_ids(words, offsets, None, names, None, min_count, max_df, stops)
    return _from_text(token_batches(items, field, chunk_bytes, progress)[0], names, min_count, max_df, stops)


def load_vocabulary(vocabulary: Any) -> list[str]:
    """A vocabulary as the list of its words by id: from a list, a dict ``word -> id`` (ids
    ``0..V-1``, each once) or a path of a word per line (blank lines are an error).

    >>> load_vocabulary({"b": 1, "a": 0})
    ['a', 'b']
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        with open(vocabulary, encoding="utf-8") as f:
            words = f.read().splitlines()
        for number, word in enumerate(words, 1):
            if not word.strip():
                raise ValueError(f"{vocabulary}:{number}: empty line in a vocabulary file (a word per line)")
        words = [w.strip() for w in words]
    elif isinstance(vocabulary, Mapping):
        ids = list(vocabulary.values())
        if any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in ids) \
                or sorted(ids) != list(range(len(ids))):
            raise ValueError(f"a vocabulary dict must map its {len(ids)} words to the ids 0..{len(ids) - 1}, each once")
        words = [""] * len(ids)
        for word, i in vocabulary.items():
            words[int(i)] = word
    elif isinstance(vocabulary, Iterable) and not isinstance(vocabulary, (bytes, bytearray)):
        words = list(vocabulary)
    else:
        raise TypeError(f"vocabulary must be a list of words, a dict word -> id or a path, not "
                        f"{type(vocabulary).__name__}")
    if not all(isinstance(w, str) for w in words):
        raise TypeError("vocabulary words must be str")
    if len(set(words)) != len(words):
        raise ValueError("vocabulary words must be distinct")
    return words


def load_stop_words(stop_words: Any) -> frozenset[str]:
    """Stop words from a set (any iterable of ``str``) or a path of a word per line (blank lines
    and surrounding whitespace ignored); ``None`` is none.

    >>> sorted(load_stop_words(["the", "of"]))
    ['of', 'the']
    """
    if stop_words is None:
        return frozenset()
    if isinstance(stop_words, (str, os.PathLike)):
        with open(stop_words, encoding="utf-8") as f:
            return frozenset(w.strip() for w in f if w.strip())
    if isinstance(stop_words, (bytes, bytearray)) or not isinstance(stop_words, Iterable):
        raise TypeError(f"stop_words must be a set of words or a path, not {type(stop_words).__name__}")
    words = frozenset(stop_words)
    if not all(isinstance(w, str) for w in words):
        raise TypeError("stop words must be str")
    return words


def is_ldac(path: Any) -> bool:
    """Whether ``path`` is an LDA-C file: its name ends ``.ldac`` (before a compression suffix),
    or its first non-blank line reads ``n id:count ...`` with ``n`` pairs, ``n >= 1``.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "x.txt"); _ = open(p, "w").write("2 0:1 5:3\\n")
    >>> is_ldac(p), is_ldac(os.path.join(d, "y.ldac"))
    (True, True)
    """
    name = os.fspath(path).lower()
    for suffix in _COMPRESSED:
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    if name.endswith(LDAC_SUFFIX):
        return True
    if name == "-" or not os.path.isfile(path):
        return False
    for located in iter_documents(path, chunk_bytes=1 << 16, format="txt"):
        for line in located.batch.to_pylist():
            if line.strip():
                fields = line.split()
                return bool(_LDAC_LINE.fullmatch(line)) and int(fields[0]) == len(fields) - 1 >= 1
    return False


def read_ldac(path: Any, chunk_bytes: int = DEFAULT_CHUNK_BYTES, progress: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """An LDA-C file as ``(words, doc_offsets)`` (tokens expanded, a document per line, words in
    the file's order). A line ``0`` is an empty document; a malformed line is an error naming the
    file and line.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "c.ldac"); _ = open(p, "w").write("2 3:2 1:1\\n0\\n1 0:1\\n")
    >>> [a.tolist() for a in read_ldac(p)]
    [[3, 3, 1, 0], [0, 3, 3, 4]]
    """
    words: list[np.ndarray] = []
    lengths: list[int] = []
    for located in iter_documents(path, chunk_bytes=chunk_bytes, progress=progress, format="txt"):
        for number, line in enumerate(located.batch.to_pylist(errors="strict"), located.first):
            fields = line.split()
            where = f"{path}:{number}"
            if not fields:
                raise ValueError(f"{where}: empty line in an LDA-C file (an empty document is written 0)")
            if not fields[0].isdigit():
                raise ValueError(f"{where}: an LDA-C line starts with its number of id:count pairs, got {fields[0]!r}")
            n = int(fields[0])
            if len(fields) != n + 1 or line.count(":") != n:
                raise ValueError(f"{where}: expected {n} id:count pairs, got {len(fields) - 1} fields")
            if not _LDAC_LINE.fullmatch(line):
                raise ValueError(f"{where}: malformed id:count pair (ids and counts are non-negative integers)")
            numbers = np.array(line.replace(":", " ").split()[1:], dtype=np.int64) if n else np.zeros(0, np.int64)
            ids, counts = numbers[0::2], numbers[1::2]
            if ids.size and (ids.max() > np.iinfo(np.int32).max or counts.max() > np.iinfo(np.int32).max):
                raise ValueError(f"{where}: id or count too large")
            words.append(np.repeat(ids, counts).astype(np.int32))
            lengths.append(int(counts.sum()))
    flat = np.concatenate(words) if words else np.zeros(0, np.int32)
    return flat, np.concatenate(([0], np.cumsum(lengths, dtype=np.int64))).astype(np.int64)


# ---------------------------------------------------------------------------------------- forms

def _is_matrix(X: Any) -> bool:
    if isinstance(X, np.ndarray):
        return X.ndim == 2
    return hasattr(X, "tocsr") and hasattr(X, "shape")


def _expand_matrix(X: Any) -> tuple[np.ndarray, np.ndarray, int]:
    import scipy.sparse as sp

    m = sp.csr_matrix(X) if isinstance(X, np.ndarray) else X.tocsr()
    if m.ndim != 2:
        raise ValueError(f"a document-term matrix must be 2-D, got shape {m.shape}")
    m = m.copy()
    m.sum_duplicates()  # also sorts the column indices: words within a document in column order
    m.eliminate_zeros()
    data = m.data
    if data.size and (data.dtype.kind not in "iub" and not bool(np.all(np.isfinite(data)))):
        raise ValueError("document-term counts must be finite")
    counts = data.astype(np.int64) if data.size else np.zeros(0, np.int64)
    if data.size and (bool((counts != data).any()) or int(counts.min()) < 0):
        raise ValueError("document-term counts must be non-negative integers")
    words = np.repeat(m.indices.astype(np.int32), counts)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)[m.indptr]
    return words, offsets, int(m.shape[1])


def _ragged_ids(X: RaggedArray) -> tuple[np.ndarray, np.ndarray]:
    host = X.to_numpy()
    values = np.asarray(host.values)
    if values.dtype.kind not in "iu":
        raise TypeError(f"a RaggedArray corpus must hold integer word ids, not {values.dtype}")
    return _check_ids(values), np.asarray(host.offsets, dtype=np.int64)


def _id_lists(items: Iterable[Any]) -> tuple[np.ndarray, np.ndarray]:
    parts, lengths = [], []
    for number, doc in enumerate(items):
        ids = np.asarray(doc)
        if ids.size and (ids.ndim != 1 or ids.dtype.kind not in "iu"):
            raise TypeError(f"document {number}: a document of ids must hold integers only")
        parts.append(ids.astype(np.int64, copy=False).ravel())
        lengths.append(ids.size)
    values = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return _check_ids(values), np.concatenate(([0], np.cumsum(lengths, dtype=np.int64))).astype(np.int64)


def _check_ids(values: np.ndarray) -> np.ndarray:
    if values.size and (int(values.min()) < 0 or int(values.max()) > np.iinfo(np.int32).max):
        raise ValueError("word ids must be non-negative and fit in int32")
    return np.ascontiguousarray(values, dtype=np.int32)


def _from_paths(paths: list[Any], names: list[str] | None, min_count: int, max_df: float, stops: frozenset[str],
                field: str, chunk_bytes: int, progress: Any) -> TokenCorpus:
    if not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise TypeError("a list of paths must hold paths only")
    kinds = [is_ldac(p) for p in paths]
    if any(kinds) and not all(kinds):
        raise ValueError("LDA-C files and text files cannot be mixed in one corpus")
    if not all(kinds):
        return _from_text(token_batches(paths, field, chunk_bytes, progress)[0], names, min_count, max_df, stops)
    words, offsets = [], [np.zeros(1, np.int64)]
    for path in paths:
        w, o = read_ldac(path, chunk_bytes, progress)
        offsets.append(o[1:] + sum(x.size for x in words))
        words.append(w)
    return _from_ids(np.concatenate(words), np.concatenate(offsets), None, names, None, min_count, max_df, stops)


# ------------------------------------------------------------------------------ vocabularies

def _from_ids(words: np.ndarray, offsets: np.ndarray, n_columns: int | None, names: list[str] | None,
              own_names: list[str] | None, min_count: int, max_df: float, stops: frozenset[str]) -> TokenCorpus:
    """Ids keep their order; a given vocabulary drops ids past its end; pruning renumbers."""
    n_ids = n_columns if n_columns is not None else (int(words.max()) + 1 if words.size else 0)
    if names is not None:
        known = words < len(names)
        unknown = int(words.size - np.count_nonzero(known))
        return _kept(words, offsets, known, names, unknown)
    vocabulary = own_names if own_names is not None else [f"w{i}" for i in range(n_ids)]
    if not (min_count > 1 or max_df < 1 or stops):
        return TokenCorpus(words, offsets, vocabulary)
    keep = _pruned(np.bincount(words, minlength=n_ids), words, offsets, n_ids, vocabulary, min_count, max_df,
                   stops)
    kept_ids = np.flatnonzero(keep)
    remap = np.full(max(n_ids, 1), -1, np.int32)
    remap[kept_ids] = np.arange(kept_ids.size, dtype=np.int32)
    new = remap[words]
    return _kept(new, offsets, new >= 0, [vocabulary[i] for i in kept_ids], 0)


def _from_text(batches: Iterator[Any], names: list[str] | None, min_count: int, max_df: float,
               stops: frozenset[str]) -> TokenCorpus:
    """Counts every batch of words into the hash table, then prunes, orders and renumbers."""
    cpu = get_backend("cpu")
    count, state = cpu.op("word2vec_vocab", "count_tokens"), cpu.op("word2vec_vocab", "new_state")()
    raw_parts, length_parts = [], []
    position = 0
    for batch in batches:
        raw = np.empty(batch.starts.size, np.int32)
        state = count(batch.data, batch.starts, batch.ends, batch.doc_offsets, position, 0, raw, *state)
        raw_parts.append(raw)
        length_parts.append(np.diff(batch.doc_offsets))
        position += raw.size
    arena, key_start, counts, stamps, key_len, n_entries = state[1], state[2], state[3], state[4], state[6], state[7]
    raw_ids = np.concatenate(raw_parts) if raw_parts else np.zeros(0, np.int32)
    del raw_parts  # one copy of the raw ids at a time
    lengths = np.concatenate(length_parts) if length_parts else np.zeros(0, np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    keys = [arena[key_start[e]:key_start[e] + key_len[e]].tobytes().decode("utf-8") for e in range(n_entries)]
    remap = np.full(max(n_entries, 1), -1, np.int32)
    if names is not None:
        index = {word: i for i, word in enumerate(names)}
        remap[:n_entries] = [index.get(key, -1) for key in keys]
        new = remap[raw_ids]
        del raw_ids
        known = new >= 0
        return _kept(new, offsets, known, names, int(new.size - np.count_nonzero(known)))
    counts = counts[:n_entries]
    keep = _pruned(counts, raw_ids, offsets, n_entries, keys, min_count, max_df, stops)
    kept = np.flatnonzero(keep)
    # count descending, ties by first appearance (the insertion stamp: the token's position)
    order = kept[np.lexsort((stamps[:n_entries][kept], -counts[kept]))]
    remap[order] = np.arange(order.size, dtype=np.int32)
    new = remap[raw_ids]
    del raw_ids
    return _kept(new, offsets, new >= 0, [keys[e] for e in order], 0)


def _pruned(counts: np.ndarray, words: np.ndarray, offsets: np.ndarray, n_words: int, names: list[str],
            min_count: int, max_df: float, stops: frozenset[str]) -> np.ndarray:
    keep = counts[:n_words] >= min_count
    if stops:
        keep &= np.array([name not in stops for name in names], dtype=bool)
    if max_df < 1:
        keep &= _document_frequency(words, offsets, n_words) <= max_df * (offsets.size - 1)
    return keep


def _document_frequency(words: np.ndarray, offsets: np.ndarray, n_words: int) -> np.ndarray:
    """Documents containing each word: distinct (document, word) keys counted, a bounded number
    of whole documents at a time so that the sort's memory stays bounded."""
    df = np.zeros(n_words, np.int64)
    n_docs = offsets.size - 1
    start = 0
    while start < n_docs:
        # the documents whose tokens end within DF_CHUNK_TOKENS of this chunk's first token
        stop = max(start + 1, int(np.searchsorted(offsets, offsets[start] + DF_CHUNK_TOKENS, side="right")) - 1)
        stop = min(stop, n_docs)
        lo, hi = int(offsets[start]), int(offsets[stop])
        if hi > lo:
            doc = np.repeat(np.arange(start, stop, dtype=np.int64), np.diff(offsets[start:stop + 1]))
            keys = np.unique(doc * n_words + words[lo:hi])
            df += np.bincount(keys % n_words, minlength=n_words)
        start = stop
    return df


def _kept(words: np.ndarray, offsets: np.ndarray, keep: np.ndarray, vocabulary: list[str],
          n_unknown: int) -> TokenCorpus:
    """The tokens where ``keep``, documents (empty ones too) where they were; the new offsets are
    counted per document (no per-token running sum: memory stays at the kept ids and the mask)."""
    per_doc = np.zeros(offsets.size - 1, np.int64)
    filled = np.diff(offsets) > 0
    if filled.any():  # segments between the starts of the non-empty documents are those documents
        per_doc[filled] = np.add.reduceat(keep, offsets[:-1][filled], dtype=np.int64)
    new_offsets = np.concatenate(([0], np.cumsum(per_doc))).astype(np.int64)
    return TokenCorpus(np.ascontiguousarray(words[keep], dtype=np.int32), new_offsets, vocabulary, n_unknown)


__all__ = ["DF_CHUNK_TOKENS", "TokenCorpus", "as_corpus", "is_ldac", "load_stop_words", "load_vocabulary",
           "read_ldac"]
