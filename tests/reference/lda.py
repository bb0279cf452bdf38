"""The obvious Python of LDA's collapsed Gibbs sampling, one token at a time: the reference the
CUDA kernels and their Numba twins are compared with.

Same draws as the kernels (the counter-based hash of ``tests/reference/word2vec.py``, uniform ``(draw >> 11) * 2**-53``) and the
canonical draw rule: ``p_k = (n_dk + alpha_k) * (n_wk + beta) / (n_k + V beta)`` in float64 in this
order, cumulated left to right, the first ``k`` with ``cum_k > u``. Python floats are IEEE doubles,
so the sequential and jacobi schedules give the kernels' topics exactly.
"""
from __future__ import annotations

import math

import numpy as np

from tests.reference.word2vec import draw, mix  # the one reference of the counter-based stream

MASK = (1 << 64) - 1
UNIT = 2.0**-53


def uniform_bits(bits: int) -> float:
    return (bits >> 11) * UNIT


def uniform(key: int, i: int) -> float:
    return uniform_bits(draw(key, i, 0))


def iteration_key(seed: int, iteration: int) -> int:
    """The key of one sweep (word2vec's epoch key)."""
    return mix(mix(seed & MASK) ^ iteration)


def init_topics(n_tokens, n_topics, key):
    key = int(key)
    return np.array([draw(key, i, 0) % n_topics for i in range(n_tokens)], np.int32)


def count_topics(words, doc_offsets, topics, n_words, n_topics):
    n_docs = len(doc_offsets) - 1
    n_dk = np.zeros((n_docs, n_topics), np.int32)
    n_wk = np.zeros((n_words, n_topics), np.int32)
    for d in range(n_docs):
        for i in range(int(doc_offsets[d]), int(doc_offsets[d + 1])):
            n_dk[d, topics[i]] += 1
            n_wk[words[i], topics[i]] += 1
    return n_dk, n_wk, n_wk.sum(0).astype(np.int32)


def _draw_topic(weights, u):
    total = 0.0
    cum = []
    for p in weights:
        total += p
        cum.append(total)
    u = u * total
    for k, c in enumerate(cum):
        if c > u:
            return k
    return len(weights) - 1


def conditional(n_dk_row, n_wk_row, n_k, alpha, beta, n_words):
    """The unnormalised p_k of one token whose own counts are already removed (Python floats)."""
    vbeta = float(n_words) * beta
    return [(float(n_dk_row[k]) + float(alpha[k])) * (float(n_wk_row[k]) + beta) / (float(n_k[k]) + vbeta)
            for k in range(len(n_k))]


def sample_dense(words, doc_offsets, topics, n_dk, n_wk, n_k, alpha, beta, key, schedule):
    """One sweep in place; schedule 0 sequential, 1 jacobi (counts of the sweep's start minus the
    token itself, counts rebuilt after); 2 (the CUDA kernel's warp-parallel jacobi) is jacobi here."""
    key, beta = int(key), float(beta)
    n_words = n_wk.shape[0]
    old = topics.copy()
    for d in range(len(doc_offsets) - 1):
        for i in range(int(doc_offsets[d]), int(doc_offsets[d + 1])):
            w, t = int(words[i]), int(old[i] if schedule else topics[i])
            if schedule == 0:
                n_dk[d, t] -= 1
                n_wk[w, t] -= 1
                n_k[t] -= 1
                p = conditional(n_dk[d], n_wk[w], n_k, alpha, beta, n_words)
            else:
                own = np.zeros(len(n_k), np.int64)
                own[t] = 1
                p = conditional(n_dk[d] - own, n_wk[w] - own, n_k - own, alpha, beta, n_words)
            new = _draw_topic(p, uniform(key, i))
            topics[i] = new
            if schedule == 0:
                n_dk[d, new] += 1
                n_wk[w, new] += 1
                n_k[new] += 1
    if schedule:
        for target, source in zip((n_dk, n_wk, n_k), count_topics(words, doc_offsets, topics, n_words, len(n_k))):
            target[...] = source


def fold_in(words, doc_offsets, topics, n_dk, n_wk, n_k, alpha, beta, key):
    """One fold-in sweep: word counts fixed, each document sequential with its n_dk row updated."""
    key, beta = int(key), float(beta)
    for d in range(len(doc_offsets) - 1):
        for i in range(int(doc_offsets[d]), int(doc_offsets[d + 1])):
            w, t = int(words[i]), int(topics[i])
            n_dk[d, t] -= 1
            new = _draw_topic(conditional(n_dk[d], n_wk[w], n_k, alpha, beta, n_wk.shape[0]), uniform(key, i))
            topics[i] = new
            n_dk[d, new] += 1


def log_likelihood(n_dk, n_wk, n_k, doc_lengths, alpha, beta):
    """The joint log p(w, z) of the `lda` package (its _loglikelihood), with alpha per topic:
    sum_k [lgamma(V b) - lgamma(V b + n_k) + sum_w (lgamma(b + n_wk) - lgamma(b))]
    + sum_d [lgamma(A) - lgamma(A + n_d) + sum_k (lgamma(a_k + n_dk) - lgamma(a_k))], A = sum_k a_k."""
    n_words, n_topics = n_wk.shape
    alpha = [float(a) for a in np.broadcast_to(np.asarray(alpha, np.float64), (n_topics,))]
    beta = float(beta)
    ll = 0.0
    for k in range(n_topics):
        ll += math.lgamma(beta * n_words) - math.lgamma(beta * n_words + int(n_k[k]))
        for w in range(n_words):
            if n_wk[w, k] > 0:
                ll += math.lgamma(beta + int(n_wk[w, k])) - math.lgamma(beta)
    a_sum = sum(alpha)
    for d in range(n_dk.shape[0]):
        ll += math.lgamma(a_sum) - math.lgamma(a_sum + int(doc_lengths[d]))
        for k in range(n_topics):
            if n_dk[d, k] > 0:
                ll += math.lgamma(alpha[k] + int(n_dk[d, k])) - math.lgamma(alpha[k])
    return ll


def sample_mh(words, doc_offsets, word_offsets, word_tokens, topics, n_dk, n_wk, n_k, alpha, beta, key, n_steps):
    """One jacobi sweep of cycling doc/word-proposal Metropolis-Hastings (the CUDA kernel's rule)."""
    key, beta = int(key), float(beta)
    n_words, n_topics = n_wk.shape
    vbeta, kbeta = float(n_words) * beta, float(n_topics) * beta
    alpha = [float(a) for a in alpha]
    alpha_cum, acc = [], 0.0
    for a in alpha:
        acc += a
        alpha_cum.append(acc)
    alpha_sum = alpha_cum[-1]
    old = topics.copy()

    def pi(d, w, t, k):
        own = 1 if k == t else 0
        return ((float(n_dk[d, k] - own) + alpha[k]) * (float(n_wk[w, k] - own) + beta)
                / (float(n_k[k] - own) + vbeta))

    for d in range(len(doc_offsets) - 1):
        start, end = int(doc_offsets[d]), int(doc_offsets[d + 1])
        for i in range(start, end):
            w, t = int(words[i]), int(old[i])
            n_w = float(word_offsets[w + 1] - word_offsets[w])
            s, pi_s = t, pi(d, w, t, t)
            for step in range(n_steps):
                sub = 1 + 3 * step
                u1 = uniform_bits(draw(key, i, sub))
                if step % 2 == 0:
                    x = u1 * (float(end - start) + alpha_sum)
                    if x < float(end - start):
                        k = int(old[start + int(x)])
                    else:
                        v = uniform_bits(draw(key, i, sub + 2)) * alpha_sum
                        k = next((j for j, c in enumerate(alpha_cum) if c > v), n_topics - 1)
                    q_k, q_s = float(n_dk[d, k]) + alpha[k], float(n_dk[d, s]) + alpha[s]
                else:
                    x = u1 * (n_w + kbeta)
                    if x < n_w:
                        k = int(old[word_tokens[int(word_offsets[w]) + int(x)]])
                    else:
                        k = min(int(uniform_bits(draw(key, i, sub + 2)) * float(n_topics)), n_topics - 1)
                    q_k, q_s = float(n_wk[w, k]) + beta, float(n_wk[w, s]) + beta
                if k == s:
                    continue
                pi_k = pi(d, w, t, k)
                if uniform_bits(draw(key, i, sub + 1)) < (pi_k * q_s) / (pi_s * q_k):
                    s, pi_s = k, pi_k
            topics[i] = s
    for target, source in zip((n_dk, n_wk, n_k), count_topics(words, doc_offsets, topics, n_words, n_topics)):
        target[...] = source
