"""``KeyedVectors``: the learned vectors by word, nearest neighbours, gensim's evaluations, and files.

Similarities are cosines computed on the backend's array module in batches (a matrix product of
the unit vectors with a block of queries). The evaluations follow gensim 4.4's rules so the numbers
compare: upper-cased matching over the ``restrict_vocab`` most frequent words (the most frequent
spelling wins), out-of-vocabulary pairs and questions skipped and counted, 3CosAdd analogies
whose answer is the best of the top 5 that is not a question word. Pearson and Spearman are the
coefficients only (gensim also returns scipy's p-values).

Files: word2vec's text format (``V dim`` header, a word and its numbers per line, numbers written
with 9 significant digits so float32 values round-trip exactly), its binary format (the header,
then per word the word, a space, ``dim`` little-endian float32 and a newline, as word2vec.c
writes), or a ``.npy`` matrix with a ``.vocab`` file of one key per line; never pickle.

>>> kv = KeyedVectors(["a", "b", "c"], np.array([[1, 0], [0.9, 0.1], [0, 1]], np.float32))
>>> [(w, round(s, 3)) for w, s in kv.most_similar("a", topn=2)]
[('b', 0.994), ('c', 0.0)]
>>> round(kv.similarity("a", "c"), 6)
0.0
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.word2vec.significance import correlation_pvalue

QUERY_BLOCK = 1024


class WordPairsScore(NamedTuple):
    """Correlation of the model's cosines with human judgements: gensim's three numbers, then the
    two-sided p-values gensim reports with the coefficients (scipy's)."""

    pearson: float
    spearman: float
    oov_ratio: float
    pearson_pvalue: float = math.nan
    spearman_pvalue: float = math.nan


class KeyedVectors:
    """Vectors (rows of ``vectors``, on the backend's device) and the keys naming them.

    >>> kv = KeyedVectors(["x", "y"], np.eye(2, dtype=np.float32))
    >>> kv.key_to_index["y"], kv["y"].tolist(), "z" in kv, len(kv)
    (1, [0.0, 1.0], False, 2)
    """

    def __init__(self, index_to_key: Sequence[Any], vectors: Any, backend: str | Backend | None = "cpu") -> None:
        self.backend = get_backend(backend)
        self.index_to_key = list(index_to_key)
        self.vectors = self.backend.asarray(vectors)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.index_to_key):
            raise ValueError(f"vectors must be a ({len(self.index_to_key)}, dim) matrix, got shape {self.vectors.shape}")
        self.key_to_index = {key: i for i, key in enumerate(self.index_to_key)}
        if len(self.key_to_index) != len(self.index_to_key):
            raise ValueError("the keys are not unique")
        self._unit: Any = None

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, key: Any) -> bool:
        return key in self.key_to_index

    def __getitem__(self, key: Any) -> Any:
        return self.vectors[self._index(key)]

    @property
    def vector_size(self) -> int:
        """Dimensions of a vector."""
        return int(self.vectors.shape[1])

    def _index(self, key: Any, key_to_index: dict[Any, int] | None = None) -> int:
        try:
            return (key_to_index or self.key_to_index)[key]
        except KeyError:
            raise KeyError(f"{key!r} is not in the vocabulary") from None

    def unit_vectors(self) -> Any:
        """Every vector divided by its length (zero vectors stay zero); computed once.

        >>> KeyedVectors(["a"], np.array([[3, 4]], np.float32)).unit_vectors().tolist()
        [[0.6000000238418579, 0.800000011920929]]
        """
        if self._unit is None:
            xp = self.backend.xp
            norms = xp.sqrt((self.vectors.astype(xp.float32) ** 2).sum(axis=1, keepdims=True))
            self._unit = self.vectors / xp.where(norms > 0, norms, xp.float32(1))
        return self._unit

    def similarity(self, key1: Any, key2: Any) -> float:
        """Cosine similarity of two keys' vectors.

        >>> KeyedVectors(["a", "b"], np.array([[1, 0], [1, 1]], np.float32)).similarity("a", "b")  # doctest: +ELLIPSIS
        0.7071...
        """
        unit = self.unit_vectors()
        return float(unit[self._index(key1)] @ unit[self._index(key2)])

    def most_similar(self, positive: Any = None, negative: Any = None, topn: int | None = 10,
                     restrict_vocab: int | None = None) -> Any:
        """The ``topn`` keys closest (cosine) to the mean of the unit vectors of ``positive``
        minus those of ``negative`` (keys or vectors), the query keys left out; ``topn=None``:
        the similarities to every key instead.

        >>> kv = KeyedVectors(["a", "b", "c"], np.array([[1, 0], [0, 1], [1, 1]], np.float32))
        >>> kv.most_similar(positive=["a", "b"], topn=1)  # doctest: +ELLIPSIS
        [('c', 0.99999...)]
        """
        return self._most_similar(positive, negative, topn, restrict_vocab, self.key_to_index)

    def _most_similar(self, positive: Any, negative: Any, topn: int | None, restrict_vocab: int | None,
                      key_to_index: dict[Any, int]) -> Any:
        xp = self.backend.xp
        unit = self.unit_vectors()
        terms, exclude = [], []
        for items, weight in ((positive, 1.0), (negative, -1.0)):
            if items is None:
                continue
            for item in [items] if isinstance(items, (str, int)) or getattr(items, "ndim", 2) == 1 else items:
                if isinstance(item, (str, int, np.integer)):
                    index = self._index(item, key_to_index)
                    exclude.append(index)
                    terms.append(weight * unit[index])
                else:
                    terms.append(weight * self.backend.asarray(np.asarray(to_host(item), np.float32)))
        if not terms:
            raise ValueError("most_similar needs at least one positive or negative key")
        mean = xp.stack(terms).mean(axis=0)
        norm = float(xp.sqrt((mean ** 2).sum()))
        mean = mean / norm if norm > 0 else mean
        limit = len(self) if restrict_vocab is None else min(restrict_vocab, len(self))
        sims = unit[:limit] @ mean.astype(unit.dtype)
        if topn is None:
            return sims
        sims = to_host(sims).astype(np.float64)
        order = np.argsort(-sims, kind="stable")[:topn + len(exclude)]
        skip = set(exclude)
        return [(self.index_to_key[i], float(sims[i])) for i in order if i not in skip][:topn]

    def cluster(self, k: int, iterations: int = 50, seed: int = 1) -> np.ndarray:
        """The spherical k-means cluster of every key (:class:`~gpu_text.word2vec.cluster.SphericalKMeans`
        on this object's backend), deterministic for a ``seed``.

        >>> kv = KeyedVectors(["a", "b", "c"], np.array([[1, 0], [0, 1], [0.9, 0.2]], np.float32))
        >>> labels = kv.cluster(2)
        >>> bool(labels[0] == labels[2] != labels[1])
        True
        """
        from gpu_text.word2vec.cluster import SphericalKMeans

        return SphericalKMeans(n_clusters=k, max_iter=iterations, seed=seed, backend=self.backend).fit(self).labels_

    def evaluate_word_pairs(self, path: str | os.PathLike[str], delimiter: str = "\t", restrict_vocab: int = 300000,
                            case_insensitive: bool = True, dummy4unknown: bool = False) -> WordPairsScore:
        """Pearson and Spearman correlation of the cosines with a file's ``word1 word2 score``
        lines, and the percentage of pairs left out for an unknown word (gensim's rules).

        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "pairs.tsv")
        >>> _ = open(path, "w").write("# comment\\nA\\tb\\t9\\na\\tc\\t1\\nb\\tc\\t2\\na\\tzz\\t5\\n")
        >>> kv = KeyedVectors(["a", "b", "c"], np.array([[1, 0], [0.9, 0.1], [0, 1]], np.float32))
        >>> kv.evaluate_word_pairs(path)  # doctest: +ELLIPSIS
        WordPairsScore(pearson=0.99..., spearman=1.0, oov_ratio=25.0, pearson_pvalue=0.008..., spearman_pvalue=0.0)
        """
        ok_vocab = self._ok_vocab(restrict_vocab, case_insensitive)
        gold, pairs, oov = [], [], 0
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if not line or line.startswith("#"):
                    continue
                fields = line.split(delimiter)
                try:
                    a, b, score = [w.upper() if case_insensitive else w for w in fields]
                    value = float(score)
                except ValueError:
                    continue
                if a not in ok_vocab or b not in ok_vocab:
                    oov += 1
                    if dummy4unknown:
                        pairs.append(None)
                        gold.append(value)
                    continue
                gold.append(value)
                pairs.append((ok_vocab[a], ok_vocab[b]))
        if not gold:
            raise ValueError(f"{path}: no similarity judgements with both words in the vocabulary")
        unit = to_host(self.unit_vectors()).astype(np.float64)
        model = np.array([0.0 if p is None else float(unit[p[0]] @ unit[p[1]]) for p in pairs])
        gold_arr = np.array(gold)
        pearson, spearman = _pearson(gold_arr, model), _pearson(_rank(gold_arr), _rank(model))
        return WordPairsScore(pearson, spearman, 100.0 * oov / (len(gold) + (0 if dummy4unknown else oov)),
                              correlation_pvalue(pearson, gold_arr.size), correlation_pvalue(spearman, gold_arr.size))

    def evaluate_word_analogies(self, path: str | os.PathLike[str], restrict_vocab: int = 300000,
                                case_insensitive: bool = True, dummy4unknown: bool = False
                                ) -> tuple[float, list[dict[str, Any]]]:
        """3CosAdd accuracy on a ``: section`` / ``a b c expected`` file (Google's
        questions-words.txt), gensim's rules; returns ``(accuracy, sections)``, the last section
        being ``Total accuracy``.

        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "q.txt")
        >>> _ = open(path, "w").write(": s\\na b c d\\na b c zz\\n")
        >>> kv = KeyedVectors(list("abcd"), np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]], np.float32))
        >>> score, sections = kv.evaluate_word_analogies(path)
        >>> score, [(s["section"], len(s["correct"]), len(s["incorrect"])) for s in sections]
        (1.0, [('s', 1, 0), ('Total accuracy', 1, 0)])
        """
        ok_vocab = self._ok_vocab(restrict_vocab, case_insensitive)
        sections: list[dict[str, Any]] = []
        questions: list[tuple[dict[str, Any], tuple[str, ...]]] = []
        with open(path, encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, 1):
                if line.startswith(": "):
                    sections.append({"section": line.lstrip(": ").strip(), "correct": [], "incorrect": []})
                    continue
                if not sections:
                    raise ValueError(f"{path}:{number}: a question before the first ': section' line")
                words = tuple(w.upper() if case_insensitive else w for w in line.split())
                if len(words) != 4:
                    continue
                if any(w not in ok_vocab for w in words):
                    if dummy4unknown:
                        sections[-1]["incorrect"].append(words)
                    continue
                questions.append((sections[-1], words))
        limit = min(restrict_vocab, len(self))
        keys = [k.upper() if case_insensitive else k for k in self.index_to_key[:limit]]
        for start in range(0, len(questions), QUERY_BLOCK):
            block = questions[start:start + QUERY_BLOCK]
            top = self._analogy_candidates([[ok_vocab[w] for w in q[:3]] for _, q in block], limit)
            for (section, words), candidates in zip(block, top):
                predicted = None
                for index in candidates:
                    predicted = keys[index]
                    if predicted in ok_vocab and predicted not in words[:3]:
                        break
                section["correct" if predicted == words[3] else "incorrect"].append(words)
        sections = [s for s in sections if s["correct"] or s["incorrect"]]
        total = {"section": "Total accuracy", "correct": [q for s in sections for q in s["correct"]],
                 "incorrect": [q for s in sections for q in s["incorrect"]]}
        answered = len(total["correct"]) + len(total["incorrect"])
        return (len(total["correct"]) / answered if answered else 0.0), sections + [total]

    def _analogy_candidates(self, abc: list[list[int]], limit: int, k: int = 5) -> np.ndarray:
        """The ``k`` best indices for each (a, b, c) by cosine to unit(b) + unit(c) - unit(a),
        a, b and c themselves left out (gensim's ``most_similar(positive=[b, c], negative=[a])``)."""
        xp = self.backend.xp
        unit = self.unit_vectors()
        index = self.backend.asarray(np.array(abc, np.int64))
        query = unit[index[:, 1]] + unit[index[:, 2]] - unit[index[:, 0]]
        sims = query @ unit[:limit].T
        rows = xp.arange(len(abc))[:, None]
        inside = index < limit
        sims[xp.broadcast_to(rows, index.shape)[inside], index[inside]] = -xp.inf
        k = min(k, limit)
        top = xp.argsort(-sims, axis=1)[:, :k]
        return to_host(top)

    def _ok_vocab(self, restrict_vocab: int, case_insensitive: bool) -> dict[Any, int]:
        keys = self.index_to_key[:restrict_vocab]
        if case_insensitive:  # reversed: the most frequent spelling of an upper-cased key wins
            return {str(k).upper(): i for i, k in reversed(list(enumerate(keys)))}
        return {k: i for i, k in reversed(list(enumerate(keys)))}

    def save(self, path: str | os.PathLike[str], binary: bool | None = None) -> None:
        """Writes the word2vec binary format to ``*.bin`` (or ``binary=True``), a ``.npy``
        matrix plus ``<path>.vocab`` to ``*.npy``, else the word2vec text format.

        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "v.txt")
        >>> KeyedVectors(["a", "b"], np.array([[0.5, -1], [2, 0.1]], np.float32)).save(path)
        >>> open(path).read()
        '2 2\\na 0.5 -1\\nb 2 0.100000001\\n'
        >>> KeyedVectors.load(path).vectors.tolist() == [[0.5, -1.0], [2.0, np.float32(0.1)]]
        True
        """
        path = os.fspath(path)
        vectors = np.ascontiguousarray(to_host(self.vectors), np.float32)
        names = [str(k) for k in self.index_to_key]
        bad = next((n for n in names if not n or any(c.isspace() for c in n)), None)
        if bad is not None:
            raise ValueError(f"the key {bad!r} cannot be written: word2vec files need keys without whitespace")
        if path.endswith(".npy"):
            np.save(path, vectors, allow_pickle=False)
            with open(path + ".vocab", "w", encoding="utf-8") as out:
                out.write("".join(n + "\n" for n in names))
            return
        binary = path.endswith(".bin") if binary is None else binary
        with open(path, "wb") as out:
            out.write(f"{len(names)} {vectors.shape[1]}\n".encode())
            for name, row in zip(names, vectors):
                if binary:
                    out.write(name.encode("utf-8") + b" " + row.astype("<f4").tobytes() + b"\n")
                else:
                    out.write((name + " " + " ".join("%.9g" % v for v in row.tolist()) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike[str], binary: bool | None = None,
             backend: str | Backend | None = "cpu") -> "KeyedVectors":
        """Reads what :meth:`save` writes (and gensim's ``save_word2vec_format``); errors name
        the file and line.

        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "v.bin")
        >>> KeyedVectors(["x"], np.array([[1.5, 2]], np.float32)).save(path)
        >>> KeyedVectors.load(path).index_to_key
        ['x']
        """
        path = os.fspath(path)
        if path.endswith(".npy"):
            vectors = np.load(path, allow_pickle=False)
            with open(path + ".vocab", encoding="utf-8") as keys:
                names = keys.read().split("\n")[:-1]
            return cls(names, vectors, backend=backend)
        with open(path, "rb") as handle:
            data = handle.read()
        binary = path.endswith(".bin") if binary is None else binary
        header_end = data.find(b"\n")
        try:
            count, dim = (int(v) for v in data[:max(header_end, 0)].split())
        except ValueError:
            raise ValueError(f"{path}:1: not a word2vec header (expected 'count dimensions')") from None
        if count < 0 or dim < 1:
            raise ValueError(f"{path}:1: not a word2vec header (expected 'count dimensions')")
        reader = _read_binary if binary else _read_text
        names, vectors = reader(path, data, header_end + 1, count, dim)
        return cls(names, vectors, backend=backend)


def _read_text(path: str, data: bytes, start: int, count: int, dim: int) -> tuple[list[str], np.ndarray]:
    lines = data[start:].decode("utf-8").splitlines()
    if len(lines) < count:
        raise ValueError(f"{path}: the header promises {count} words, the file has {len(lines)}")
    names, vectors = [], np.empty((count, dim), np.float32)
    for i, line in enumerate(lines[:count]):
        parts = line.rstrip().split(" ")
        if len(parts) != dim + 1:
            raise ValueError(f"{path}:{i + 2}: expected a word and {dim} numbers, got {len(parts)} fields")
        names.append(parts[0])
        try:
            vectors[i] = [float(v) for v in parts[1:]]
        except ValueError as exc:
            raise ValueError(f"{path}:{i + 2}: {exc}") from None
    return names, vectors


def _read_binary(path: str, data: bytes, start: int, count: int, dim: int) -> tuple[list[str], np.ndarray]:
    names, vectors = [], np.empty((count, dim), np.float32)
    pos, width = start, 4 * dim
    for i in range(count):
        space = data.find(b" ", pos)
        if space < 0 or space + 1 + width > len(data):
            raise ValueError(f"{path}: word {i + 1} of {count} is cut short (the file ends early)")
        names.append(data[pos:space].lstrip(b"\n").decode("utf-8"))
        vectors[i] = np.frombuffer(data, "<f4", dim, space + 1)
        pos = space + 1 + width
    return names, vectors


def _rank(values: np.ndarray) -> np.ndarray:
    """Ranks with ties given their mean rank (what Spearman's coefficient correlates)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    sorted_values = values[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_values[1:] != sorted_values[:-1])))
    ends = np.concatenate((starts[1:], [values.size]))
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = (s + e - 1) / 2.0 + 1
    return ranks


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x ** 2).sum() * (y ** 2).sum())
    return float((x * y).sum() / denominator) if denominator > 0 else float("nan")


def load_vectors(path: str | os.PathLike[str], backend: str | Backend | None = "cpu") -> KeyedVectors:
    """:meth:`KeyedVectors.load` as a function (the CLI's loader).

    >>> load_vectors  # doctest: +ELLIPSIS
    <function load_vectors at ...>
    """
    return KeyedVectors.load(path, backend=backend)


__all__ = ["KeyedVectors", "WordPairsScore", "load_vectors"]
