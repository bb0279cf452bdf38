"""Topic coherence: top words per topic, NPMI and C_v over a reference corpus with a sliding window.

The definitions are gensim 4.4's ``CoherenceModel`` (``coherence="c_npmi"`` and ``"c_v"``), computed
here from co-occurrence counts of the topics' top words only, with numpy, never a loop over tokens:

- Windows: a document of ``L >= window_size`` tokens gives the ``L - window_size + 1`` windows
  starting at each of its tokens; a shorter document (an empty one too) is one window, itself.
  ``N`` is the number of windows, ``n(a)`` the windows holding word ``a``, ``n(a, b)`` those
  holding both (``n(a, a) = n(a)``).
- ``windows="gensim"`` (the default) reproduces gensim's accumulator exactly, including the way it
  slides: when a token leaves a window the word is marked absent even if another occurrence of it
  is still inside, until the word next enters at the window's right edge. So a word is in window
  ``j`` (covering tokens ``j .. j + W - 1``) when its first occurrence at or after position ``j'``
  lies inside, for some entry point ``j' = p - W + 1 <= j`` of an occurrence ``p``; in effect a
  word repeated within a window counts in fewer windows than it appears in. ``windows="boolean"``
  is the plain definition (a word is in every window holding one of its occurrences).
- ``npmi(a, b) = log((n(a,b)/N + eps) / (n(a)/N * n(b)/N)) / -log(n(a,b)/N + eps)``, ``eps = 1e-12``.
- ``c_npmi`` of a topic: the mean of ``npmi`` over the ordered pairs of distinct top words (gensim's
  ``s_one_one`` segmentation); default window 10.
- ``c_v`` of a topic with top words ``w_1..w_n``: the context vector of ``w_i`` is
  ``v_i = (npmi(w_i, w_j))_j`` (``j`` over the topic's words, ``w_i`` itself included), that of the
  whole topic ``s = sum_i v_i``; ``c_v`` is the mean over ``i`` of the cosine of ``v_i`` and ``s``
  (``s_one_set`` segmentation, indirect cosine confirmation, ``gamma = 1``); default window 110.
- A model's coherence is the mean over its topics (:func:`coherence`).

A top word absent from the reference corpus (gensim raises an error) has ``n(a) = 0``: every
``npmi`` involving it is taken as 0 (as gensim's ``u_mass`` treats a division by zero), and a zero
context vector has cosine 0.

>>> texts = [["cat", "dog", "cat", "fish"], ["dog", "cat"], ["fish", "bird", "sea"]]
>>> round(coherence([["cat", "dog"], ["fish", "sea"]], texts, "c_npmi", window_size=2), 6)
-0.155216
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpu_text.lda.corpus import TokenCorpus, as_corpus

EPSILON = 1e-12
MEASURES = ("c_npmi", "c_v")
WINDOW_SIZES = {"c_npmi": 10, "c_v": 110}
WINDOW_MODES = ("gensim", "boolean")
# Overlapping window-interval pairs are expanded this many at a time (memory: ~40 bytes each).
PAIR_CHUNK = 1 << 22


def top_words(topic_word: Any, vocabulary: list[str], n: int = 10) -> list[list[str]]:
    """The ``n`` most probable words of every topic (rows of ``topic_word``, K x V), most
    probable first; equal probabilities in word-id order.

    >>> top_words(np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]]), ["a", "b", "c"], 2)
    [['b', 'c'], ['a', 'b']]
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    phi = np.asarray(topic_word)
    if phi.ndim != 2 or phi.shape[1] != len(vocabulary):
        raise ValueError(f"topic_word must be K x V with V = len(vocabulary) = {len(vocabulary)}, got {phi.shape}")
    order = np.argsort(-phi, axis=1, kind="stable")[:, :n]
    return [[vocabulary[w] for w in row] for row in order.tolist()]


def topic_coherence(topics: Any, texts: Any, measure: str = "c_npmi", window_size: int | None = None,
                    top_n: int = 10, windows: str = "gensim", segment: Any = None) -> np.ndarray:
    """The coherence of every topic (float64[K]) over the reference corpus ``texts``.

    ``topics``: lists of words (most probable first), or a fitted model with ``top_words`` (its
    ``top_n`` words per topic are used). ``texts``: anything :func:`~gpu_text.lda.corpus.as_corpus`
    accepts (token lists, a ``TokenCorpus``, text files, with ``segment`` raw Chinese); words are
    matched by string, so the reference may have its own vocabulary. ``measure``: ``"c_npmi"`` or
    ``"c_v"``; ``window_size`` defaults to gensim's (10 and 110). See the module docstring.

    >>> texts = [["a", "b", "a", "c"], ["b", "a"], ["c", "d"]]
    >>> topic_coherence([["a", "b"], ["c", "d"]], texts, "c_v", window_size=3).round(4).tolist()
    [0.9241, 0.9487]
    """
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    if windows not in WINDOW_MODES:
        raise ValueError(f"windows must be one of {', '.join(WINDOW_MODES)}, got {windows!r}")
    size = WINDOW_SIZES[measure] if window_size is None else window_size
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"window_size must be a positive integer, got {window_size!r}")
    word_lists = _topic_words(topics, top_n)
    corpus = texts if isinstance(texts, TokenCorpus) else as_corpus(texts, segment=segment)
    index = {word: i for i, word in enumerate(corpus.vocabulary)}
    ids = [np.array([index.get(w, -1) for w in words], np.int64) for words in word_lists]
    relevant = np.unique(np.concatenate([t[t >= 0] for t in ids] + [np.zeros(0, np.int64)]))
    # each topic as positions in `relevant` (-1: not in the reference corpus)
    local = [np.where(t >= 0, np.searchsorted(relevant, t), -1) for t in ids]
    needed = _needed_pairs(local, relevant.size)
    occurrences, pair_counts, n_windows = window_counts(corpus, relevant, needed, int(size), windows)
    scores = np.zeros(len(local))
    for k, topic in enumerate(local):
        npmi = _npmi_matrix(topic, occurrences, needed, pair_counts, n_windows)
        n = topic.size
        if measure == "c_npmi":
            off = ~np.eye(n, dtype=bool)
            scores[k] = npmi[off].mean() if n > 1 else float("nan")
        else:
            total = npmi.sum(axis=0)
            norms = np.sqrt((npmi ** 2).sum(axis=1)) * math.sqrt(float((total ** 2).sum()))
            dots = npmi @ total
            cos = np.divide(dots, norms, out=np.zeros(n), where=norms > 0)
            scores[k] = cos.mean() if n else float("nan")
    return scores


def coherence(topics: Any, texts: Any, measure: str = "c_npmi", window_size: int | None = None, top_n: int = 10,
              windows: str = "gensim", segment: Any = None) -> float:
    """The mean of :func:`topic_coherence` over the topics (gensim's ``get_coherence``).

    >>> round(coherence([["a", "b"]], [["a", "b"], ["c"]], window_size=2), 9)
    1.0
    """
    return float(np.mean(topic_coherence(topics, texts, measure, window_size, top_n, windows, segment)))


def window_counts(corpus: TokenCorpus, relevant: np.ndarray, pairs: np.ndarray, window_size: int,
                  windows: str = "gensim") -> tuple[np.ndarray, np.ndarray, int]:
    """``(n(a) for a in relevant, n(a, b) for every key of pairs, N)``: windows holding each
    relevant word (ids of ``corpus``), holding both words of each pair (keys ``i * R + j`` of
    positions ``i < j`` in ``relevant``, sorted), and the number of windows.

    Every word's windows are a few intervals of window indices (per document: the windows an
    occurrence is in, merged); co-occurrences are the overlaps of intervals of different words,
    found by sorting the intervals by start, never by visiting windows.

    >>> c = as_corpus([["a", "b", "x", "a"]])
    >>> occ, co, n = window_counts(c, np.array([0, 1]), np.array([1]), 2, "boolean")
    >>> occ.tolist(), co.tolist(), n
    ([2, 2], [1], 3)
    """
    lengths = corpus.doc_lengths
    n_win = np.where(lengths >= window_size, lengths - window_size + 1, 1)
    total_windows = int(n_win.sum())
    r = relevant.size
    lookup = np.full(max(corpus.n_words, 1), -1, np.int64)
    lookup[relevant] = np.arange(r)
    rel = lookup[corpus.words] if corpus.n_tokens else np.zeros(0, np.int64)
    where = np.flatnonzero(rel >= 0)
    doc = np.searchsorted(corpus.doc_offsets, where, side="right") - 1
    pos = where - corpus.doc_offsets[doc]
    word = rel[where]
    short = lengths[doc] < window_size
    starts = np.where(short, 0, np.maximum(pos - window_size + 1, 0))
    # group the occurrences by (word, document), in position order
    order = np.lexsort((pos, doc, word))
    doc, pos, word, short, starts = doc[order], pos[order], word[order], short[order], starts[order]
    new_group = np.ones(word.size, bool)
    new_group[1:] = (word[1:] != word[:-1]) | (doc[1:] != doc[:-1])
    group = np.cumsum(new_group) - 1
    if windows == "boolean":
        last = pos
    else:
        # gensim's slide: presence from the entry point to the first occurrence at or after it
        span = int(lengths.max()) + 1 if lengths.size else 1
        keys = group * span + pos
        last = pos[np.searchsorted(keys, group * span + starts, side="left")]
    ends = np.where(short, 1, np.minimum(last + 1, n_win[doc]))
    # merge each group's intervals (starts and ends both rise within a group)
    new_run = new_group.copy()
    new_run[1:] |= starts[1:] > ends[:-1]
    first = np.flatnonzero(new_run)
    run_start, run_doc, run_word = starts[first], doc[first], word[first]
    run_end = np.maximum.reduceat(ends, first) if first.size else ends[:0]
    occurrences = np.bincount(run_word, weights=run_end - run_start, minlength=r).astype(np.int64)
    co = np.zeros(pairs.size)
    if pairs.size and run_start.size:
        order = np.lexsort((run_start, run_doc))
        run_start, run_end, run_doc, run_word = run_start[order], run_end[order], run_doc[order], run_word[order]
        span = int(n_win.max()) + 1
        key = run_doc * span + run_start
        # the runs after run i (in start order) that start before it ends overlap it
        stop = np.searchsorted(key, run_doc * span + run_end, side="left")
        partners = stop - np.arange(stop.size) - 1
        bounds = np.concatenate(([0], np.cumsum(partners)))
        i = 0
        while i < partners.size:
            j = int(np.searchsorted(bounds, bounds[i] + PAIR_CHUNK, side="right")) - 1
            j = min(max(j, i + 1), partners.size)
            _overlaps(i, j, partners, bounds, run_start, run_end, run_word, pairs, r, co)
            i = j
    return occurrences, co.astype(np.int64), total_windows


def _overlaps(i: int, j: int, partners: np.ndarray, bounds: np.ndarray, starts: np.ndarray, ends: np.ndarray,
              words: np.ndarray, pairs: np.ndarray, r: int, co: np.ndarray) -> None:
    """Adds the overlaps of runs ``i..j-1`` with their partners to ``co`` (the needed pairs only)."""
    count = partners[i:j]
    total = int(count.sum())
    if total == 0:
        return
    left = np.repeat(np.arange(i, j), count)
    right = left + 1 + (np.arange(total) - np.repeat(bounds[i:j] - bounds[i], count))
    a, b = words[left], words[right]
    key = np.minimum(a, b) * r + np.maximum(a, b)
    slot = np.minimum(np.searchsorted(pairs, key), pairs.size - 1)
    hit = (pairs[slot] == key) & (a != b)
    overlap = np.minimum(ends[left], ends[right]) - starts[right]
    co += np.bincount(slot[hit], weights=overlap[hit], minlength=pairs.size)


def _topic_words(topics: Any, top_n: int) -> list[list[str]]:
    if hasattr(topics, "top_words"):
        topics = topics.top_words(top_n)
    if isinstance(topics, (str, bytes)) or not hasattr(topics, "__iter__"):
        raise TypeError("topics must be lists of words or a fitted model with top_words()")
    lists = [list(t) for t in topics]
    for k, words in enumerate(lists):
        if isinstance(words, str) or not all(isinstance(w, str) for w in words):
            raise TypeError(f"topic {k} must be a list of words (str)")
        if len(set(words)) != len(words):
            raise ValueError(f"topic {k} repeats a word")
    return lists


def _needed_pairs(topics: list[np.ndarray], r: int) -> np.ndarray:
    keys = []
    for topic in topics:
        t = topic[topic >= 0]
        a, b = np.meshgrid(t, t, indexing="ij")
        upper = a < b
        keys.append(a[upper] * r + b[upper])
        lower = a > b
        keys.append(b[lower] * r + a[lower])
    return np.unique(np.concatenate(keys + [np.zeros(0, np.int64)]))


def _npmi_matrix(topic: np.ndarray, occurrences: np.ndarray, pairs: np.ndarray, pair_counts: np.ndarray,
                 n_windows: int) -> np.ndarray:
    """``npmi(w_i, w_j)`` for every pair of the topic's words, the diagonal included."""
    n = topic.size
    a, b = np.meshgrid(topic, topic, indexing="ij")
    known = (a >= 0) & (b >= 0)
    co = np.zeros((n, n))
    same = known & (a == b)
    co[same] = occurrences[a[same]]
    other = known & (a != b)
    if other.any():
        key = np.minimum(a[other], b[other]) * max(occurrences.size, 1) + np.maximum(a[other], b[other])
        co[other] = pair_counts[np.searchsorted(pairs, key)]
    count_a = np.where(known, occurrences[np.maximum(a, 0)], 0).astype(np.float64)
    count_b = np.where(known, occurrences[np.maximum(b, 0)], 0).astype(np.float64)
    valid = known & (count_a > 0) & (count_b > 0)
    out = np.zeros((n, n))
    N = float(n_windows)
    p_ab = co[valid] / N
    ratio = np.log((p_ab + EPSILON) / ((count_a[valid] / N) * (count_b[valid] / N)))
    out[valid] = ratio / -np.log(p_ab + EPSILON)
    return out


__all__ = ["EPSILON", "MEASURES", "WINDOW_MODES", "WINDOW_SIZES", "coherence", "top_words", "topic_coherence",
           "window_counts"]
