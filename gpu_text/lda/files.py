"""A topic model's text outputs, as the seed (Semat) writes them, and pyLDAvis-ready arrays.

- ``.vocab``: a word per line, line ``i`` naming word id ``i``.
- ``.phi``: for every topic ``k`` a line ``Topic k:`` then a ``word:prob`` line per word, most
  probable first (all words, or the ``top`` most probable); ``prob`` is ``p(word | topic)``
  written with 9 significant digits. Words may hold ``:`` (a line splits at its last one).
- ``.theta``: a line per document, its ``K`` topic probabilities separated by spaces (9
  significant digits).
- pyLDAvis: :func:`pyldavis_data` gives the keyword arguments of ``pyLDAvis.prepare``
  (``topic_term_dists`` K x V, ``doc_topic_dists`` D x K, ``doc_lengths``, ``vocab``,
  ``term_frequency``); :func:`save_pyldavis` / :func:`load_pyldavis` keep them in an ``.npz``
  (vocabulary as a unicode array, no pickle).

Every writer writes to a temporary file beside the target and renames it when done, so a failure
never leaves a partial file that looks whole.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> write_phi(os.path.join(d, "m.phi"), np.array([[0.75, 0.25], [0.5, 0.5]]), ["a", "b"])
>>> print(open(os.path.join(d, "m.phi")).read(), end="")
Topic 0:
a:0.75
b:0.25
Topic 1:
a:0.5
b:0.5
"""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from gpu_text.backend import get_backend
from gpu_text.cli_helpers import atomic_outputs

PRECISION = "%.9g"
_TOPIC = re.compile(r"Topic (\d+):")
PYLDAVIS_KEYS = ("topic_term_dists", "doc_topic_dists", "doc_lengths", "vocab", "term_frequency")


def write_vocab(path: Any, vocabulary: list[str]) -> None:
    """The vocabulary, a word per line (a word holding a line break is an error).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "m.vocab"); write_vocab(p, ["a", "b"]); read_vocab(p)
    ['a', 'b']
    """
    _check_words(vocabulary)
    _write_text(path, "".join(f"{w}\n" for w in vocabulary))


def read_vocab(path: Any) -> list[str]:
    """The words of a ``.vocab`` file (see :func:`write_vocab`)."""
    with open(path, encoding="utf-8", newline="\n") as f:
        text = f.read()
    return text.split("\n")[:-1] if text else []


def write_phi(path: Any, topic_word: Any, vocabulary: list[str], top: int | None = None) -> None:
    """``topic_word`` (K x V) as ``Topic k:`` blocks of ``word:prob`` lines, most probable first
    (equal probabilities in word-id order), ``top`` words per topic or all.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "m.phi")
    >>> write_phi(p, np.array([[0.1, 0.9], [0.6, 0.4]]), ["x", "y:z"], top=1); read_phi(p)
    [[('y:z', 0.9)], [('x', 0.6)]]
    """
    phi = np.asarray(topic_word, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[1] != len(vocabulary):
        raise ValueError(f"topic_word must be K x V with V = len(vocabulary) = {len(vocabulary)}, got {phi.shape}")
    if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1):
        raise ValueError(f"top must be a positive integer or None, got {top!r}")
    _check_words(vocabulary)
    words = np.array(vocabulary, dtype=object) if vocabulary else np.zeros(0, dtype=object)
    n = phi.shape[1] if top is None else min(top, phi.shape[1])
    with atomic_outputs([path]) as (temp,), open(temp, "w", encoding="utf-8", newline="\n") as f:
        for k, row in enumerate(phi):
            order = np.argsort(-row, kind="stable")[:n]
            probs = np.char.mod(PRECISION, row[order])
            f.write(f"Topic {k}:\n")
            f.write("".join(f"{w}:{p}\n" for w, p in zip(words[order].tolist(), probs.tolist())))


def read_phi(path: Any) -> list[list[tuple[str, float]]]:
    """The topics of a ``.phi`` file: ``(word, prob)`` lists in file order; a malformed line is an
    error naming the file and line."""
    topics: list[list[tuple[str, float]]] = []
    with open(path, encoding="utf-8", newline="\n") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            header = _TOPIC.fullmatch(line)
            if header:
                if int(header.group(1)) != len(topics):
                    raise ValueError(f"{path}:{number}: expected 'Topic {len(topics)}:', got {line!r}")
                topics.append([])
                continue
            word, colon, prob = line.rpartition(":")
            if not topics or not colon or not word:
                raise ValueError(f"{path}:{number}: expected 'Topic k:' or 'word:prob', got {line!r}")
            try:
                topics[-1].append((word, float(prob)))
            except ValueError:
                raise ValueError(f"{path}:{number}: {prob!r} is not a probability") from None
    return topics


def phi_matrix(topics: list[list[tuple[str, float]]], vocabulary: list[str]) -> np.ndarray:
    """A :func:`read_phi` result as a K x V matrix over ``vocabulary`` (words not listed: 0).

    >>> phi_matrix([[("b", 0.75), ("a", 0.25)]], ["a", "b"]).tolist()
    [[0.25, 0.75]]
    """
    index = {w: i for i, w in enumerate(vocabulary)}
    out = np.zeros((len(topics), len(vocabulary)))
    for k, pairs in enumerate(topics):
        for word, prob in pairs:
            if word not in index:
                raise ValueError(f"topic {k}: {word!r} is not in the vocabulary")
            out[k, index[word]] = prob
    return out


def write_theta(path: Any, doc_topic: Any) -> None:
    """``doc_topic`` (D x K), a line of space-separated probabilities per document.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "m.theta"); write_theta(p, np.array([[0.25, 0.75]]))
    >>> open(p).read(), read_theta(p).tolist()
    ('0.25 0.75\\n', [[0.25, 0.75]])
    """
    theta = np.asarray(doc_topic, dtype=np.float64)
    if theta.ndim != 2:
        raise ValueError(f"doc_topic must be D x K, got shape {theta.shape}")
    # the numbers formatted in Numba (the same text as PRECISION, ~20x faster than numpy's); a block
    # holding a value that path leaves out (zero, NaN, huge) is formatted by numpy instead
    format_rows = get_backend("cpu").op("decimal_text", "format_rows")
    with atomic_outputs([path]) as (temp,), open(temp, "wb") as f:
        for start in range(0, theta.shape[0], 4096):  # bounded text at a time
            text, left_out = format_rows(theta[start:start + 4096])
            if left_out.size:
                block = np.char.mod(PRECISION, theta[start:start + 4096])
                f.write("".join(" ".join(row) + "\n" for row in block.tolist()).encode("ascii"))
            else:
                f.write(text.tobytes())


def read_theta(path: Any) -> np.ndarray:
    """A ``.theta`` file as a D x K float64 array; rows of unequal length are an error."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                rows.append(np.array(line.split(), dtype=np.float64))
            except ValueError:
                raise ValueError(f"{path}:{number}: not a line of numbers") from None
            if rows[-1].size != rows[0].size:
                raise ValueError(f"{path}:{number}: {rows[-1].size} values, the first line has {rows[0].size}")
    return np.stack(rows) if rows else np.zeros((0, 0))


def pyldavis_data(model: Any) -> dict[str, Any]:
    """The keyword arguments of ``pyLDAvis.prepare`` from a fitted LDA: phi, theta, the training
    documents' lengths, the vocabulary and every word's count in the training corpus.

    >>> class Fitted:  # what pyldavis_data reads of a fitted model
    ...     topic_word_ = np.array([[0.5, 0.5]]); doc_topic_ = np.array([[1.0]])
    ...     n_dk_ = np.array([[3]]); n_wk_ = np.array([[1], [2]]); vocabulary_ = ["a", "b"]
    >>> data = pyldavis_data(Fitted())
    >>> data["doc_lengths"].tolist(), data["term_frequency"].tolist(), data["vocab"]
    ([3], [1, 2], ['a', 'b'])
    """
    return {"topic_term_dists": np.asarray(model.topic_word_, dtype=np.float64),
            "doc_topic_dists": np.asarray(model.doc_topic_, dtype=np.float64),
            "doc_lengths": np.asarray(model.n_dk_).sum(axis=1).astype(np.int64),
            "vocab": list(model.vocabulary_),
            "term_frequency": np.asarray(model.n_wk_).sum(axis=1).astype(np.int64)}


def save_pyldavis(path: Any, data: dict[str, Any]) -> None:
    """:func:`pyldavis_data` arrays into an ``.npz`` (no pickle).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "vis.npz")
    >>> data = {"topic_term_dists": np.eye(2), "doc_topic_dists": np.eye(2), "doc_lengths": np.array([1, 1]),
    ...         "vocab": ["a", "b"], "term_frequency": np.array([1, 1])}
    >>> save_pyldavis(p, data); load_pyldavis(p)["vocab"]
    ['a', 'b']
    """
    missing = [k for k in PYLDAVIS_KEYS if k not in data]
    if missing:
        raise ValueError(f"pyLDAvis data lacks {', '.join(missing)}")
    arrays = {k: np.asarray(data[k]) for k in PYLDAVIS_KEYS if k != "vocab"}
    arrays["vocab"] = np.array(list(data["vocab"]), dtype=np.str_)
    with atomic_outputs([path]) as (temp,), open(temp, "wb") as f:
        np.savez_compressed(f, **arrays)


def load_pyldavis(path: Any) -> dict[str, Any]:
    """The arrays :func:`save_pyldavis` wrote; ``pyLDAvis.prepare(**load_pyldavis(path))``."""
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in PYLDAVIS_KEYS if k not in z.files]
        if missing:
            raise ValueError(f"{path}: not a pyLDAvis data file (no {', '.join(missing)})")
        data: dict[str, Any] = {k: z[k] for k in PYLDAVIS_KEYS}
    data["vocab"] = data["vocab"].tolist()
    return data


def write_model_files(model: Any, directory: Any, name: str = "model", top: int | None = None) -> list[str]:
    """The seed's three files of a fitted model, ``name.vocab``, ``name.phi`` (``top`` words per
    topic, or all) and ``name.theta`` (the training documents), plus ``name.pyldavis.npz``, in
    ``directory``; returns their paths.

    >>> import os, tempfile
    >>> class Fitted:
    ...     topic_word_ = np.array([[0.5, 0.5]]); doc_topic_ = np.array([[1.0]])
    ...     n_dk_ = np.array([[3]]); n_wk_ = np.array([[1], [2]]); vocabulary_ = ["a", "b"]
    >>> [os.path.basename(p) for p in write_model_files(Fitted(), tempfile.mkdtemp())]
    ['model.vocab', 'model.phi', 'model.theta', 'model.pyldavis.npz']
    """
    base = os.path.join(os.fspath(directory), name)
    paths = [f"{base}.vocab", f"{base}.phi", f"{base}.theta", f"{base}.pyldavis.npz"]
    write_vocab(paths[0], list(model.vocabulary_))
    write_phi(paths[1], model.topic_word_, list(model.vocabulary_), top)
    write_theta(paths[2], model.doc_topic_)
    save_pyldavis(paths[3], pyldavis_data(model))
    return paths


def _check_words(vocabulary: list[str]) -> None:
    for i, word in enumerate(vocabulary):
        if not isinstance(word, str) or "\n" in word or "\r" in word:
            raise ValueError(f"word {i} ({word!r}) cannot be written a word per line")


def _write_text(path: Any, text: str) -> None:
    with atomic_outputs([path]) as (temp,), open(temp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


__all__ = ["PYLDAVIS_KEYS", "load_pyldavis", "phi_matrix", "pyldavis_data", "read_phi", "read_theta", "read_vocab",
           "save_pyldavis", "write_model_files", "write_phi", "write_theta", "write_vocab"]
