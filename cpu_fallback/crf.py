"""Numba twins of ``cuda/crf.cu``: the linear-chain CRF's forward-backward, gradient scatter and
Viterbi, parallel over sequences (forward-backward, Viterbi) and over feature chunks (gradients).

Scaled forward-backward (Rabiner): per token, emissions ``e_t`` are shifted by their maximum
``m_t`` before ``exp`` and ``alpha`` is renormalised to sum 1, so ``logZ = Σ_t log s_t + m_t``.
The transition factor of token t is ``M_t = Π_f exp(B[f])`` over its bigram observations (the
exponentials are taken once per call, not per token). Outputs, per token and label:
``alpha`` (normalised forward), ``marginals`` = p(y_t = y), and ``omega`` with
p(y_{t-1} = a, y_t = b) = alpha[t-1, a] · M_t[a, b] · omega[t, b].
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jit import JIT

@njit(inline="always", **JIT)
def _same_bigrams(b_offsets, b_ids, t, u):
    """Whether tokens t and u have the same bigram observation list."""
    if u < 0 or b_offsets[t + 1] - b_offsets[t] != b_offsets[u + 1] - b_offsets[u]:
        return False
    for k in range(b_offsets[t + 1] - b_offsets[t]):
        if b_ids[b_offsets[t] + k] != b_ids[b_offsets[u] + k]:
            return False
    return True


@njit(inline="always", **JIT)
def _transition_factors(exp_bigram, b_offsets, b_ids, t, out):
    out[:, :] = 1.0
    for k in range(b_offsets[t], b_offsets[t + 1]):
        out *= exp_bigram[b_ids[k]]


@njit(parallel=True, **JIT)
def _forward_backward(unigram, bigram, exp_bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, labels,
                      alpha, omega, marginals, log_z, gold):
    n_labels = unigram.shape[1]
    for s in prange(seq_offsets.size - 1):
        start, end = seq_offsets[s], seq_offsets[s + 1]
        factors = np.empty((n_labels, n_labels))
        scale = np.empty(max(end - start, 1))
        emission = np.empty(n_labels)
        cached = -1
        total = 0.0
        for t in range(start, end):
            emission[:] = 0.0
            for k in range(u_offsets[t], u_offsets[t + 1]):
                for y in range(n_labels):
                    emission[y] += unigram[u_ids[k], y]
            shift = emission.max()
            for y in range(n_labels):
                omega[t, y] = np.exp(emission[y] - shift)  # psi_t, turned into omega below
            if t > start and not _same_bigrams(b_offsets, b_ids, t, cached):
                _transition_factors(exp_bigram, b_offsets, b_ids, t, factors)
                cached = t
            norm = 0.0
            for y in range(n_labels):
                a = omega[t, y]
                if t > start:
                    acc = 0.0
                    for yp in range(n_labels):
                        acc += alpha[t - 1, yp] * factors[yp, y]
                    a *= acc
                alpha[t, y] = a
                norm += a
            for y in range(n_labels):
                alpha[t, y] /= norm
            scale[t - start] = norm
            total += np.log(norm) + shift
        log_z[s] = total
        beta = np.ones(n_labels)
        for t in range(end - 1, start - 1, -1):
            if t < end - 1:
                if not _same_bigrams(b_offsets, b_ids, t + 1, cached):
                    _transition_factors(exp_bigram, b_offsets, b_ids, t + 1, factors)
                    cached = t + 1
                for yp in range(n_labels):
                    acc = 0.0
                    for y in range(n_labels):
                        acc += factors[yp, y] * omega[t + 1, y]
                    beta[yp] = acc
            for y in range(n_labels):
                marginals[t, y] = alpha[t, y] * beta[y]
                omega[t, y] = omega[t, y] * beta[y] / scale[t - start]
        score = 0.0
        if labels.size:
            for t in range(start, end):
                for k in range(u_offsets[t], u_offsets[t + 1]):
                    score += unigram[u_ids[k], labels[t]]
                if t > start:
                    for k in range(b_offsets[t], b_offsets[t + 1]):
                        score += bigram[b_ids[k], labels[t - 1], labels[t]]
        gold[s] = score


def forward_backward(unigram: np.ndarray, bigram: np.ndarray, seq_offsets: np.ndarray, u_offsets: np.ndarray,
                     u_ids: np.ndarray, b_offsets: np.ndarray, b_ids: np.ndarray, labels: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(alpha, omega, marginals, log_z, gold_score) of every sequence; ``labels`` may be empty
    (then gold_score is 0)."""
    n, n_labels = int(u_offsets.size - 1), unigram.shape[1]
    alpha = np.empty((n, n_labels))
    omega = np.empty((n, n_labels))
    marginals = np.empty((n, n_labels))
    log_z = np.empty(seq_offsets.size - 1)
    gold = np.empty(seq_offsets.size - 1)
    _forward_backward(unigram, bigram, np.exp(bigram), seq_offsets, u_offsets, u_ids, b_offsets, b_ids, labels,
                      alpha, omega, marginals, log_z, gold)
    return alpha, omega, marginals, log_z, gold


@njit(parallel=True, **JIT)
def _reduce_chunks(partial, feature_chunks, out):
    for f in prange(feature_chunks.size - 1):
        for c in range(feature_chunks[f], feature_chunks[f + 1]):
            for k in range(partial.shape[1]):
                out[f, k] += partial[c, k]


@njit(parallel=True, **JIT)
def _unigram_partials(marginals, labels, occ_tokens, chunk_offsets, partial):
    for c in prange(chunk_offsets.size - 1):
        for o in range(chunk_offsets[c], chunk_offsets[c + 1]):
            t = occ_tokens[o]
            for y in range(marginals.shape[1]):
                partial[c, y] += marginals[t, y]
            partial[c, labels[t]] -= 1.0


def unigram_gradient(marginals: np.ndarray, labels: np.ndarray, occ_tokens: np.ndarray, chunk_offsets: np.ndarray,
                     feature_chunks: np.ndarray) -> np.ndarray:
    """Expected minus empirical counts of every unigram weight, (n_features, n_labels): each chunk of
    a feature's occurrences is summed apart, then each feature's chunks in order."""
    n_labels = marginals.shape[1]
    partial = np.zeros((chunk_offsets.size - 1, n_labels))
    _unigram_partials(marginals, labels, occ_tokens, chunk_offsets, partial)
    out = np.zeros((feature_chunks.size - 1, n_labels))
    _reduce_chunks(partial, feature_chunks, out)
    return out


@njit(parallel=True, **JIT)
def _bigram_partials(exp_bigram, alpha, omega, labels, b_offsets, b_ids, occ_tokens, chunk_offsets, partial):
    n_labels = alpha.shape[1]
    for c in prange(chunk_offsets.size - 1):
        factors = np.empty((n_labels, n_labels))
        for o in range(chunk_offsets[c], chunk_offsets[c + 1]):
            t = occ_tokens[o]
            _transition_factors(exp_bigram, b_offsets, b_ids, t, factors)
            for yp in range(n_labels):
                for y in range(n_labels):
                    partial[c, yp * n_labels + y] += alpha[t - 1, yp] * factors[yp, y] * omega[t, y]
            partial[c, labels[t - 1] * n_labels + labels[t]] -= 1.0


def bigram_gradient(bigram: np.ndarray, alpha: np.ndarray, omega: np.ndarray, labels: np.ndarray,
                    b_offsets: np.ndarray, b_ids: np.ndarray, occ_tokens: np.ndarray, chunk_offsets: np.ndarray,
                    feature_chunks: np.ndarray) -> np.ndarray:
    """Expected minus empirical counts of every bigram weight, (n_features, n_labels, n_labels)."""
    n_labels = alpha.shape[1]
    partial = np.zeros((chunk_offsets.size - 1, n_labels * n_labels))
    _bigram_partials(np.exp(bigram), alpha, omega, labels, b_offsets, b_ids, occ_tokens, chunk_offsets, partial)
    out = np.zeros((feature_chunks.size - 1, n_labels * n_labels))
    _reduce_chunks(partial, feature_chunks, out)
    return out.reshape(-1, n_labels, n_labels)


@njit(parallel=True, **JIT)
def _viterbi(unigram, bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, out, scores):
    n_labels = unigram.shape[1]
    for s in prange(seq_offsets.size - 1):
        start, end = seq_offsets[s], seq_offsets[s + 1]
        if end == start:
            scores[s] = 0.0
            continue
        delta = np.empty((end - start, n_labels))
        back = np.empty((end - start, n_labels), np.int32)
        trans = np.zeros((n_labels, n_labels))
        cached = -1
        for t in range(start, end):
            emission = np.zeros(n_labels)
            for k in range(u_offsets[t], u_offsets[t + 1]):
                for y in range(n_labels):
                    emission[y] += unigram[u_ids[k], y]
            if t == start:
                delta[0] = emission
                continue
            if not _same_bigrams(b_offsets, b_ids, t, cached):
                trans[:, :] = 0.0
                for k in range(b_offsets[t], b_offsets[t + 1]):
                    trans += bigram[b_ids[k]]
                cached = t
            for y in range(n_labels):
                best, arg = delta[t - 1 - start, 0] + trans[0, y], 0
                for yp in range(1, n_labels):
                    v = delta[t - 1 - start, yp] + trans[yp, y]
                    if v > best:
                        best, arg = v, yp
                delta[t - start, y] = best + emission[y]
                back[t - start, y] = arg
        last = end - 1 - start
        y = 0
        for k in range(1, n_labels):
            if delta[last, k] > delta[last, y]:
                y = k
        scores[s] = delta[last, y]
        for t in range(last, -1, -1):
            out[start + t] = y
            y = back[t, y]


def viterbi(unigram: np.ndarray, bigram: np.ndarray, seq_offsets: np.ndarray, u_offsets: np.ndarray,
            u_ids: np.ndarray, b_offsets: np.ndarray, b_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best label of every token (int32) and best path score of every sequence; ties go to the
    lowest label."""
    out = np.empty(u_offsets.size - 1, np.int32)
    scores = np.empty(seq_offsets.size - 1)
    _viterbi(unigram, bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, out, scores)
    return out, scores
