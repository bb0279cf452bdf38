"""Numba twin of ``cuda/crf_decode.cu``: exact n-best Viterbi (list Viterbi) of a linear-chain CRF,
parallel over sentences.

Each (token, label) keeps its k best partial paths, sorted. The candidates of (t, y) are the
entries (y', r) of the previous token's lists extended by y, valued ``v = delta[t-1, y', r] +
B_t[y', y]`` (the sum of the token's bigram weights, as ``crf.viterbi`` adds them); every list of
y' is already sorted, so the k best of (t, y) are a k-way merge of the Y lists, and
``delta[t, y, j] = v + e_t[y]``. The order of candidates, which every twin uses:

    higher v first; equal v: the lower previous label y'; then the lower rank r in y''s list

and for the final paths: higher score first; equal scores: the lower last label; then the lower
rank. In exact arithmetic this ranks equal-scored paths by their labels read backwards (lower
last label first, then the lower label before it, ...), the rule ``crf.viterbi`` uses for its one
path, so ``k = 1`` gives its path and score. In floating point a path's score is the sum in
token order above (a function of the path alone), and when two equal scores come from prefixes
whose partial scores differ the prefix with the higher partial score ranks first. The order is
a strict total order on paths, consistent with extension, so the k kept per state are exactly
the k best: the result is exact, not a beam.

Outputs: ``paths`` (k, n_tokens) int32 (path r of sentence s in ``paths[r, start:end]``),
``scores`` (n_sentences, k) float64 and ``counts`` (n_sentences,) int32, the number of paths
found: min(k, Y^length), and 1 for an empty sentence (the empty path, score 0). Entries past a
sentence's count are -1 and -inf.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .crf import _same_bigrams
from .jit import JIT


@njit(parallel=True, **JIT)
def _nbest_viterbi(unigram, bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, k, paths, scores, counts):
    n_labels = unigram.shape[1]
    for s in prange(seq_offsets.size - 1):
        start, end = seq_offsets[s], seq_offsets[s + 1]
        if end == start:
            counts[s] = 1
            scores[s, 0] = 0.0
            continue
        n = end - start
        previous = np.empty((n_labels, k))
        current = np.empty((n_labels, k))
        back = np.empty((n, n_labels, k), np.int32)  # y' * k + r of the entry each one extends
        trans = np.zeros((n_labels, n_labels))
        emission = np.zeros(n_labels)
        heads = np.zeros(n_labels, np.int64)
        cached = -1
        kept = 1  # entries per list at the previous token: min(k, Y^t)
        for t in range(start, end):
            emission[:] = 0.0
            for j in range(u_offsets[t], u_offsets[t + 1]):
                for y in range(n_labels):
                    emission[y] += unigram[u_ids[j], y]
            if t == start:
                for y in range(n_labels):
                    previous[y, 0] = emission[y]
                continue
            if not _same_bigrams(b_offsets, b_ids, t, cached):
                trans[:, :] = 0.0
                for j in range(b_offsets[t], b_offsets[t + 1]):
                    trans += bigram[b_ids[j]]
                cached = t
            keep = min(k, n_labels * kept)
            for y in range(n_labels):
                heads[:] = 0
                for j in range(keep):  # k-way merge: the best head, the lowest y' on ties
                    best_label, best = -1, 0.0
                    for yp in range(n_labels):
                        if heads[yp] < kept:
                            v = previous[yp, heads[yp]] + trans[yp, y]
                            if best_label < 0 or v > best:
                                best_label, best = yp, v
                    current[y, j] = best + emission[y]
                    back[t - start, y, j] = best_label * k + heads[best_label]
                    heads[best_label] += 1
            previous, current = current, previous
            kept = keep
        found = min(k, n_labels * kept)
        heads[:] = 0
        for j in range(found):
            best_label, best = -1, 0.0
            for y in range(n_labels):
                if heads[y] < kept and (best_label < 0 or previous[y, heads[y]] > best):
                    best_label, best = y, previous[y, heads[y]]
            scores[s, j] = best
            y, r = best_label, heads[best_label]
            heads[best_label] += 1
            for t in range(n - 1, -1, -1):
                paths[j, start + t] = y
                if t > 0:
                    code = back[t, y, r]
                    y, r = code // k, code % k
        counts[s] = found


def nbest_viterbi(unigram: np.ndarray, bigram: np.ndarray, seq_offsets: np.ndarray, u_offsets: np.ndarray,
                  u_ids: np.ndarray, b_offsets: np.ndarray, b_ids: np.ndarray, k: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` best label paths of every sentence: ``(paths, scores, counts)`` as the module
    docstring lays them out, best first, ties in its order.

    >>> unigram = np.array([[1.0, 0.0]])                     # one observation, labels 0 and 1
    >>> bigram = np.zeros((1, 2, 2))
    >>> paths, scores, counts = nbest_viterbi(unigram, bigram, np.array([0, 2]), np.array([0, 1, 2]),
    ...                                       np.array([0, 0]), np.array([0, 0, 1]), np.array([0]), 3)
    >>> paths.tolist(), scores.tolist(), counts.tolist()  # the tie at 1.0: the lower last label first
    ([[0, 0], [1, 0], [0, 1]], [[2.0, 1.0, 1.0]], [3])
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"nbest_viterbi: k must be an integer >= 1, got {k!r}")
    k = int(k)
    n_labels = unigram.shape[1]
    if n_labels < 1:
        raise ValueError("nbest_viterbi: the model needs at least one label")
    if n_labels * k > 2 ** 31 - 1:  # back pointers are int32 codes y' * k + r
        raise ValueError(f"nbest_viterbi: k * labels must stay below 2^31 (k={k}, {n_labels} labels)")
    n_seqs = seq_offsets.size - 1
    paths = np.full((k, u_offsets.size - 1), -1, np.int32)
    scores = np.full((n_seqs, k), -np.inf)
    counts = np.zeros(n_seqs, np.int32)
    _nbest_viterbi(np.ascontiguousarray(unigram, np.float64), np.ascontiguousarray(bigram, np.float64),
                   seq_offsets, u_offsets, u_ids, b_offsets, b_ids, k, paths, scores, counts)
    return paths, scores, counts
