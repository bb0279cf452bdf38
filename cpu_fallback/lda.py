"""Numba twins of ``cuda/lda.cu``: collapsed Gibbs sampling for LDA; the CPU's SparseLDA and block
samplers live in ``cpu_fallback/lda_blocks.py`` and are re-exported here (one family, one op set).

Every draw comes from the counter-based hash of (iteration key, token index): the uniform of token
``i`` is ``(draw(key, i, 0) >> 11) * 2**-53``, so the draws do not depend on how the work is split.

- :func:`sample_dense` is the canonical draw rule (``p_k = (n_dk + alpha_k) * (n_wk + beta) /
  (n_k + V beta)`` in float64 in that order, cumulated left to right, first ``k`` with
  ``cum_k > u``). Schedule 0 (sequential) is plain collapsed Gibbs in token order on one thread and
  draws exactly the topics of the Python reference and of the CUDA kernel run on one thread;
  schedule 1 (jacobi) samples every token against the counts of the start of the sweep (minus its
  own assignment), in parallel over documents, then rebuilds the counts.
- :func:`sample_sparse` (No CUDA twin: the GPU samples differently) is SparseLDA: the conditional
  split into the smoothing bucket ``s = sum_k alpha_k beta / (n_k + V beta)``, the document bucket
  ``r = sum_k n_dk beta / (n_k + V beta)`` and the word bucket ``q = sum_k (alpha_k + n_dk) n_wk /
  (n_k + V beta)`` over the word's nonzero topics; ``s`` and ``r`` are updated exactly (O(1)) as each
  count changes, ``q`` is summed over the word's topic list with the document's cached coefficients
  ``(alpha_k + n_dk) / (n_k + V beta)``. Per-token cost is O(nonzero topics of the word and the
  document), sublinear in K once the model is sparse. Threads run the N-Queen schedule: documents
  and words are cut into ``P`` blocks each (``P`` chosen from the data, never from the thread
  count); sub-pass ``p`` runs the ``P`` cells (document block ``b``, word block ``(b + p) % P``) in
  parallel. No two cells of a sub-pass share a document or a word, so ``n_dk`` and ``n_wk`` are
  written race-free; every cell keeps its own copy of the topic totals ``n_k`` and the copies'
  deltas are merged exactly after the sub-pass. The result is the same for any numba thread count,
  and ``n_dk``, ``n_wk``, ``n_k`` agree with the assignments exactly after every sweep.
  :func:`sample_blocks_dense` runs the dense draw on the same blocks (small K); ``initial=True``
  makes either one the progressive initialisation (tokens added one by one).
- :func:`sample_mh`: jacobi Metropolis-Hastings with document / word proposals (the CUDA kernel's
  large-K sampler, draw for draw); :func:`fold_in` / :func:`fold_in_phi`: documents resampled
  against fixed topics (``transform``, held-out perplexity).

Speed: the hot loops read borrowed views (``cpu_fallback/borrow.py``) and allocate nothing per
token; counts are int32, masses float64. A word's topic entries are (topic, count) pairs kept in
decreasing count order next to each other, so the word bucket reads one run of memory and its
linear search usually stops early.

>>> words = np.array([0, 1, 0, 2, 2, 1], np.int32)
>>> offsets = np.array([0, 3, 6], np.int64)
>>> z = init_topics(6, 2, 12345)
>>> n_dk, n_wk, n_k = count_topics(words, offsets, z, 3, 2)
>>> int(n_k.sum()), n_dk.sum(1).tolist()
(6, [3, 3])
>>> sample_dense(words, offsets, z, n_dk, n_wk, n_k, np.full(2, 0.1), 0.01, 7, 0)
>>> bool((count_topics(words, offsets, z, 3, 2)[1] == n_wk).all())
True
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .borrow import borrow
from .jit import JIT
from .lda_draw import UNIT, pick as _pick, uniform as _uniform
from .prng import draw as _draw

SEQUENTIAL = 0
JACOBI = 1
# the CUDA kernel's warp-parallel jacobi (its sums reassociated): the same chain in distribution,
# run here as plain jacobi
WARP_JACOBI = 2


@njit(parallel=True, **JIT)
def _init_topics(n_tokens, n_topics, key):
    z = np.empty(n_tokens, np.int32)
    for i in prange(n_tokens):
        z[i] = np.int32(_draw(key, i, 0) % np.uint64(n_topics))
    return z


def init_topics(n_tokens: int, n_topics: int, key: int) -> np.ndarray:
    """The initial topic of every token: ``draw(key, i, 0) % n_topics``.

    >>> init_topics(5, 3, 1).tolist() == init_topics(5, 3, 1).tolist()
    True
    """
    return _init_topics(np.int64(n_tokens), np.int64(n_topics), np.uint64(key))


@njit(parallel=True, **JIT)
def _count_docs(doc_offsets, topics, n_dk):
    for d in prange(doc_offsets.size - 1):
        for i in range(doc_offsets[d], doc_offsets[d + 1]):
            n_dk[d, topics[i]] += 1


@njit(**JIT)
def _count_words(words, topics, n_wk, n_k):
    for i in range(words.size):
        n_wk[words[i], topics[i]] += 1
        n_k[topics[i]] += 1


def count_topics(words: np.ndarray, doc_offsets: np.ndarray, topics: np.ndarray, n_words: int,
                 n_topics: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact counts of the assignments: ``(n_dk int32[D, K], n_wk int32[V, K], n_k int32[K])``.

    >>> n_dk, n_wk, n_k = count_topics(np.array([0, 1, 1], np.int32), np.array([0, 1, 3]),
    ...                                np.array([1, 0, 1], np.int32), 2, 2)
    >>> n_dk.tolist(), n_wk.tolist(), n_k.tolist()
    ([[0, 1], [1, 1]], [[0, 1], [1, 1]], [1, 2])
    """
    n_docs = len(doc_offsets) - 1
    n_dk = np.zeros((n_docs, n_topics), np.int32)
    n_wk = np.zeros((n_words, n_topics), np.int32)
    n_k = np.zeros(n_topics, np.int32)
    if len(words):
        _count_docs(np.asarray(doc_offsets, np.int64), np.asarray(topics, np.int32), n_dk)
        _count_words(np.asarray(words, np.int32), np.asarray(topics, np.int32), n_wk, n_k)
    return n_dk, n_wk, n_k



@njit(inline="always", **JIT)
def _mass(n_dk, n_wk, n_k, alpha, beta, vbeta):
    """One topic's p_k of the canonical rule, in float64 and in this order."""
    return (np.float64(n_dk) + alpha) * (np.float64(n_wk) + beta) / (np.float64(n_k) + vbeta)


@njit(inline="always", **JIT)
def _cumulate(cum, nd, nw, n_k, alpha, beta, vbeta, own):
    """The canonical rule's cumulative masses into ``cum`` (returns the total); topic ``own`` has
    the token's own count left out (``-1``: the counts already exclude it). Subtracting 0 changes
    no bit, so every sampler computes the same float64 values as the reference."""
    total = 0.0
    for k in range(n_k.size):
        o = 1 if k == own else 0
        total += _mass(nd[k] - o, nw[k] - o, n_k[k] - o, alpha[k], beta, vbeta)
        cum[k] = total
    return total


@njit(**JIT)
def _dense_sequential(words_o, doc_offsets_o, topics_o, n_dk_o, n_wk_o, n_k_o, alpha_o, beta, key):
    words, doc_offsets, topics = borrow(words_o), borrow(doc_offsets_o), borrow(topics_o)
    n_dk, n_wk, n_k, alpha = borrow(n_dk_o), borrow(n_wk_o), borrow(n_k_o), borrow(alpha_o)
    n_topics = n_k.size
    vbeta = np.float64(n_wk.shape[0]) * beta
    cum_o = np.empty(n_topics, np.float64)
    cum = borrow(cum_o)
    for d in range(doc_offsets.size - 1):
        nd = n_dk[d]
        for i in range(doc_offsets[d], doc_offsets[d + 1]):
            w, t = words[i], topics[i]
            nw = n_wk[w]
            nd[t] -= 1
            nw[t] -= 1
            n_k[t] -= 1
            total = _cumulate(cum, nd, nw, n_k, alpha, beta, vbeta, -1)
            new = _pick(cum, n_topics, _uniform(key, i) * total)
            topics[i] = new
            nd[new] += 1
            nw[new] += 1
            n_k[new] += 1


@njit(parallel=True, **JIT)
def _by_documents(words, doc_offsets, topics, out, n_dk, n_wk, n_k, alpha, beta, key, fold_in):
    """A sweep with documents in parallel: jacobi (``fold_in`` 0: each token against the counts
    as they are, its own one left out, the draw into ``out``) or fold-in (1: the token leaves its
    document's row, is drawn, and re-enters under the new topic at once; ``out`` is ``topics``)."""
    n_topics = n_k.size
    vbeta = np.float64(n_wk.shape[0]) * beta
    n_docs = doc_offsets.size - 1
    # documents in chunks so the scratch row is allocated once per chunk, not per document
    chunk = 64
    for c in prange((n_docs + chunk - 1) // chunk):
        cum = np.empty(n_topics, np.float64)
        for d in range(c * chunk, min(n_docs, (c + 1) * chunk)):
            for i in range(doc_offsets[d], doc_offsets[d + 1]):
                w, t = words[i], topics[i]
                if fold_in:
                    n_dk[d, t] -= 1
                total = _cumulate(cum, n_dk[d], n_wk[w], n_k, alpha, beta, vbeta, -1 if fold_in else t)
                new = _pick(cum, n_topics, _uniform(key, i) * total)
                out[i] = new
                if fold_in:
                    n_dk[d, new] += 1


@njit(parallel=True, **JIT)
def _copy_topics(source, target):
    for i in prange(source.size):
        target[i] = source[i]


def sample_dense(words: np.ndarray, doc_offsets: np.ndarray, topics: np.ndarray, n_dk: np.ndarray,
                 n_wk: np.ndarray, n_k: np.ndarray, alpha: np.ndarray, beta: float, key: int,
                 schedule: int) -> None:
    """One Gibbs sweep with the canonical dense draw; ``topics`` and the counts updated in place.

    ``schedule`` 0: sequential (tokens in order, counts updated at once, one thread); 1: jacobi
    (every token against the sweep's starting counts minus itself, parallel, counts rebuilt); 2:
    the CUDA kernel's warp-parallel jacobi, which here is jacobi (same distribution).

    >>> w = np.array([0, 1, 1, 0], np.int32); off = np.array([0, 2, 4]); z = np.array([0, 1, 0, 1], np.int32)
    >>> n_dk, n_wk, n_k = count_topics(w, off, z, 2, 2)
    >>> sample_dense(w, off, z, n_dk, n_wk, n_k, np.full(2, 0.5), 0.1, 3, 1)
    >>> [a.tolist() for a in count_topics(w, off, z, 2, 2)] == [n_dk.tolist(), n_wk.tolist(), n_k.tolist()]
    True
    """
    if len(words) == 0:
        return
    alpha = np.ascontiguousarray(alpha, np.float64)
    key = np.uint64(key)
    if schedule == SEQUENTIAL:
        _dense_sequential(words, doc_offsets, topics, n_dk, n_wk, n_k, alpha, np.float64(beta), key)
        return
    if schedule not in (JACOBI, WARP_JACOBI):
        raise ValueError(f"schedule must be 0 (sequential), 1 (jacobi) or 2, got {schedule!r}")
    new_topics = np.empty_like(topics)
    _by_documents(words, doc_offsets, topics, new_topics, n_dk, n_wk, n_k, alpha, np.float64(beta), key, 0)
    _copy_topics(new_topics, topics)
    counts = count_topics(words, doc_offsets, topics, n_wk.shape[0], n_k.size)
    for target, source in zip((n_dk, n_wk, n_k), counts):
        target[...] = source


@njit(inline="always", **JIT)
def _own_p(n_dk, n_wk, n_k, alpha, beta, vbeta, d, w, t, k):
    """The canonical p_k of a token of topic ``t`` against counts that still hold it."""
    own = 1 if k == t else 0
    return _mass(n_dk[d, k] - own, n_wk[w, k] - own, n_k[k] - own, alpha[k], beta, vbeta)


@njit(parallel=True, **JIT)
def _sample_mh(words, doc_offsets, word_offsets, word_tokens, topics, new_topics, n_dk, n_wk, n_k, alpha, beta, key,
               n_steps):
    n_topics = n_k.size
    vbeta = np.float64(n_wk.shape[0]) * beta
    kbeta = np.float64(n_topics) * beta
    alpha_cum = np.empty(n_topics, np.float64)
    acc = 0.0
    for k in range(n_topics):
        acc += alpha[k]
        alpha_cum[k] = acc
    alpha_sum = alpha_cum[n_topics - 1]
    n_docs = doc_offsets.size - 1
    for d in prange(n_docs):
        start = doc_offsets[d]
        length = np.float64(doc_offsets[d + 1] - start)
        for i in range(start, doc_offsets[d + 1]):
            w, t = words[i], topics[i]
            n_w = np.float64(word_offsets[w + 1] - word_offsets[w])
            s = t
            pi_s = _own_p(n_dk, n_wk, n_k, alpha, beta, vbeta, d, w, t, t)
            for step in range(n_steps):
                sub = 1 + 3 * step
                u1 = np.float64(_draw(key, i, sub) >> np.uint64(11)) * UNIT
                if step % 2 == 0:
                    x = u1 * (length + alpha_sum)
                    if x < length:
                        k = topics[start + np.int64(x)]
                    else:
                        v = np.float64(_draw(key, i, sub + 2) >> np.uint64(11)) * UNIT * alpha_sum
                        k = _pick(alpha_cum, n_topics, v)
                    q_k = np.float64(n_dk[d, k]) + alpha[k]
                    q_s = np.float64(n_dk[d, s]) + alpha[s]
                else:
                    x = u1 * (n_w + kbeta)
                    if x < n_w:
                        k = topics[word_tokens[word_offsets[w] + np.int64(x)]]
                    else:
                        v = np.float64(_draw(key, i, sub + 2) >> np.uint64(11)) * UNIT
                        k = min(np.int64(v * np.float64(n_topics)), n_topics - 1)
                    q_k = np.float64(n_wk[w, k]) + beta
                    q_s = np.float64(n_wk[w, s]) + beta
                if k == s:
                    continue
                pi_k = _own_p(n_dk, n_wk, n_k, alpha, beta, vbeta, d, w, t, k)
                ratio = (pi_k * q_s) / (pi_s * q_k)
                if np.float64(_draw(key, i, sub + 1) >> np.uint64(11)) * UNIT < ratio:
                    s = k
                    pi_s = pi_k
            new_topics[i] = s


def sample_mh(words: np.ndarray, doc_offsets: np.ndarray, word_offsets: np.ndarray, word_tokens: np.ndarray,
              topics: np.ndarray, n_dk: np.ndarray, n_wk: np.ndarray, n_k: np.ndarray, alpha: np.ndarray, beta: float,
              key: int, n_steps: int) -> None:
    """One jacobi sweep of Metropolis-Hastings with LightLDA-style cycling proposals (O(1) per
    step): even steps propose the topic of a random token of the document (or, with mass
    ``sum alpha``, a topic by alpha), odd steps that of a random token of the word (or, with mass
    ``K beta``, a uniform topic), accepted with the canonical conditional against the sweep's
    starting state. ``word_tokens`` = tokens grouped by word (a stable argsort of ``words``),
    ``word_offsets`` = where each word's run starts. The CUDA kernel's twin, draw for draw.

    >>> w = np.array([0, 1, 0, 1], np.int32); off = np.array([0, 2, 4]); z = np.array([0, 1, 1, 0], np.int32)
    >>> n_dk, n_wk, n_k = count_topics(w, off, z, 2, 2)
    >>> wt = np.argsort(w, kind="stable").astype(np.int32); wo = np.array([0, 2, 4])
    >>> sample_mh(w, off, wo, wt, z, n_dk, n_wk, n_k, np.full(2, 0.5), 0.1, 3, 4)
    >>> [a.tolist() for a in count_topics(w, off, z, 2, 2)] == [n_dk.tolist(), n_wk.tolist(), n_k.tolist()]
    True
    """
    if len(words) == 0:
        return
    new_topics = np.empty_like(topics)
    _sample_mh(words, doc_offsets, np.asarray(word_offsets, np.int64), np.asarray(word_tokens, np.int32), topics,
               new_topics, n_dk, n_wk, n_k, np.ascontiguousarray(alpha, np.float64), np.float64(beta),
               np.uint64(key), np.int64(n_steps))
    _copy_topics(new_topics, topics)
    counts = count_topics(words, doc_offsets, topics, n_wk.shape[0], n_k.size)
    for target, source in zip((n_dk, n_wk, n_k), counts):
        target[...] = source


def fold_in(words: np.ndarray, doc_offsets: np.ndarray, topics: np.ndarray, n_dk: np.ndarray, n_wk: np.ndarray,
            n_k: np.ndarray, alpha: np.ndarray, beta: float, key: int) -> None:
    """One fold-in sweep for new documents: the word counts ``n_wk``/``n_k`` of the trained model
    stay fixed (these tokens are not in them); each document's tokens are resampled in order with
    its ``n_dk`` row updated at once. Documents are independent, so they run in parallel and the
    result does not depend on the thread count.

    >>> n_wk = np.array([[9, 0], [0, 9]], np.int32); n_k = n_wk.sum(0).astype(np.int32)
    >>> w = np.array([0, 0, 1, 1], np.int32); off = np.array([0, 2, 4]); z = np.zeros(4, np.int32)
    >>> n_dk = count_topics(w, off, z, 2, 2)[0]
    >>> for it in range(5):
    ...     fold_in(w, off, z, n_dk, n_wk, n_k, np.full(2, 0.1), 0.01, it)
    >>> z.tolist(), n_dk.tolist()
    ([0, 0, 1, 1], [[2, 0], [0, 2]])
    """
    if len(words) == 0:
        return
    _by_documents(words, doc_offsets, topics, topics, n_dk, n_wk, n_k, np.ascontiguousarray(alpha, np.float64),
                  np.float64(beta), np.uint64(key), 1)


@njit(parallel=True, **JIT)
def _fold_in_phi(words, doc_offsets, topics, n_dk, phi_wk, alpha, key):
    n_topics = phi_wk.shape[1]
    n_docs = doc_offsets.size - 1
    chunk = 64
    for c in prange((n_docs + chunk - 1) // chunk):
        cum = np.empty(n_topics, np.float64)
        for d in range(c * chunk, min(n_docs, (c + 1) * chunk)):
            for i in range(doc_offsets[d], doc_offsets[d + 1]):
                w, t = words[i], topics[i]
                n_dk[d, t] -= 1
                total = 0.0
                for k in range(n_topics):
                    total += (np.float64(n_dk[d, k]) + alpha[k]) * phi_wk[w, k]
                    cum[k] = total
                new = _pick(cum, n_topics, _uniform(key, i) * total)
                topics[i] = new
                n_dk[d, new] += 1


def fold_in_phi(words: np.ndarray, doc_offsets: np.ndarray, topics: np.ndarray, n_dk: np.ndarray,
                phi_wk: np.ndarray, alpha: np.ndarray, key: int) -> None:
    """:func:`fold_in` with the topics given as probabilities, ``phi_wk[w, k] = p(w | k)`` (V x K
    float64, any model's phi transposed): ``p_k = (n_dk + alpha_k) * phi_wk[w, k]``. No CUDA twin
    (held-out evaluation of any model's phi runs on the CPU).

    >>> phi = np.array([[0.9, 0.1], [0.1, 0.9]]); w = np.array([0, 0, 1], np.int32); off = np.array([0, 3])
    >>> z = np.array([1, 1, 0], np.int32); n_dk = np.array([[1, 2]], np.int32)
    >>> fold_in_phi(w, off, z, n_dk, phi, np.full(2, 0.1), 4); int(n_dk.sum())
    3
    """
    if len(words) == 0:
        return
    _fold_in_phi(words, doc_offsets, topics, n_dk, np.ascontiguousarray(phi_wk, np.float64),
                 np.ascontiguousarray(alpha, np.float64), np.uint64(key))


# The CPU's block samplers (no CUDA twin) belong to the family too: the model asks for them with
# backend.has_op("lda", "sample_sparse").
from .lda_blocks import (SparseState, n_partitions_for, sample_blocks_dense, sample_sparse,  # noqa: E402,F401
                         sparse_state)
