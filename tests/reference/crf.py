"""Slow, obvious references for cuda/crf.cu and cpu_fallback/crf.py: log-space forward-backward
(logsumexp per step), gradients scattered token by token, Viterbi by dynamic programming."""
from __future__ import annotations

import numpy as np


def _logsumexp(v: np.ndarray, axis=None):
    m = np.max(v, axis=axis, keepdims=True)
    return (np.log(np.exp(v - m).sum(axis=axis, keepdims=True)) + m).squeeze(axis=axis)


def _scores(unigram, bigram, u_offsets, u_ids, b_offsets, b_ids, start, end):
    """Emissions (n, Y) and transitions (n, Y, Y) of one sequence (row 0 of transitions unused)."""
    n_labels = unigram.shape[1]
    emissions = np.array([unigram[u_ids[u_offsets[t]:u_offsets[t + 1]]].sum(axis=0) for t in range(start, end)])
    transitions = np.zeros((end - start, n_labels, n_labels))
    for t in range(start + 1, end):
        transitions[t - start] = bigram[b_ids[b_offsets[t]:b_offsets[t + 1]]].sum(axis=0)
    return emissions.reshape(end - start, n_labels), transitions


def forward_backward(unigram, bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, labels, exp_bigram=None,
                     order=None):  # exp_bigram and order only save the twins work
    n, n_labels = u_offsets.size - 1, unigram.shape[1]
    alpha, omega, marginals = (np.zeros((n, n_labels)) for _ in range(3))
    log_z, gold = np.zeros(seq_offsets.size - 1), np.zeros(seq_offsets.size - 1)
    for s in range(seq_offsets.size - 1):
        start, end = int(seq_offsets[s]), int(seq_offsets[s + 1])
        if end == start:
            continue
        e, trans = _scores(unigram, bigram, u_offsets, u_ids, b_offsets, b_ids, start, end)
        la = np.zeros_like(e)
        lb = np.zeros_like(e)
        la[0] = e[0]
        for t in range(1, end - start):
            la[t] = _logsumexp(la[t - 1][:, None] + trans[t], axis=0) + e[t]
        for t in range(end - start - 2, -1, -1):
            lb[t] = _logsumexp(trans[t + 1] + (e[t + 1] + lb[t + 1])[None, :], axis=1)
        log_z[s] = _logsumexp(la[-1])
        for t in range(end - start):
            alpha[start + t] = np.exp(la[t] - _logsumexp(la[t]))
            marginals[start + t] = np.exp(la[t] + lb[t] - log_z[s])
            previous = _logsumexp(la[t - 1]) if t else 0.0
            omega[start + t] = np.exp(previous + e[t] + lb[t] - log_z[s])
        if labels.size:
            y = labels[start:end]
            gold[s] = e[np.arange(end - start), y].sum() + sum(trans[t, y[t - 1], y[t]] for t in range(1, end - start))
    return alpha, omega, marginals, log_z, gold


def _token_of_occurrence(occ_tokens, chunk_offsets, feature_chunks):
    """(feature, token) of every occurrence, from the chunked layout."""
    for f in range(feature_chunks.size - 1):
        for c in range(feature_chunks[f], feature_chunks[f + 1]):
            for o in range(chunk_offsets[c], chunk_offsets[c + 1]):
                yield f, int(occ_tokens[o])


def _finish(gradient, weights, l2, out):
    """The optional L2 term and output array of the gradient kernels."""
    if weights is not None:
        gradient = gradient + l2 * weights.reshape(gradient.shape)
    if out is None:
        return gradient
    out.reshape(gradient.shape)[...] = gradient
    return out.reshape(gradient.shape)


def unigram_gradient(marginals, labels, occ_tokens, chunk_offsets, feature_chunks, weights=None, l2=0.0, out=None,
                     u_offsets=None, u_ids=None):  # the same counts whichever layout a twin reads
    gradient = np.zeros((feature_chunks.size - 1, marginals.shape[1]))
    for f, t in _token_of_occurrence(occ_tokens, chunk_offsets, feature_chunks):
        gradient[f] += marginals[t]
        gradient[f, labels[t]] -= 1
    return _finish(gradient, weights, l2, out)


def bigram_gradient(bigram, alpha, omega, labels, b_offsets, b_ids, occ_tokens, chunk_offsets, feature_chunks,
                    weights=None, l2=0.0, out=None, exp_bigram=None):
    n_labels = alpha.shape[1]
    gradient = np.zeros((feature_chunks.size - 1, n_labels, n_labels))
    for f, t in _token_of_occurrence(occ_tokens, chunk_offsets, feature_chunks):
        trans = bigram[b_ids[b_offsets[t]:b_offsets[t + 1]]].sum(axis=0)
        gradient[f] += alpha[t - 1][:, None] * np.exp(trans) * omega[t][None, :]
        gradient[f, labels[t - 1], labels[t]] -= 1
    return _finish(gradient, weights, l2, out)


def viterbi(unigram, bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids):
    out = np.zeros(u_offsets.size - 1, np.int32)
    scores = np.zeros(seq_offsets.size - 1)
    for s in range(seq_offsets.size - 1):
        start, end = int(seq_offsets[s]), int(seq_offsets[s + 1])
        if end == start:
            continue
        e, trans = _scores(unigram, bigram, u_offsets, u_ids, b_offsets, b_ids, start, end)
        delta = e[0].copy()
        back = []
        for t in range(1, end - start):
            candidates = delta[:, None] + trans[t]
            back.append(np.argmax(candidates, axis=0))  # first maximum: the lowest previous label
            delta = candidates[back[-1], np.arange(e.shape[1])] + e[t]
        y = int(np.argmax(delta))
        scores[s] = delta[y]
        path = [y]
        for pointers in reversed(back):
            y = int(pointers[y])
            path.append(y)
        out[start:end] = path[::-1]
    return out, scores


def posterior_errors(marginals, labels):
    return int((np.argmax(marginals, axis=1) != labels).sum()) if labels.size else 0


def sequence_order(seq_offsets):
    lengths = [int(seq_offsets[s + 1] - seq_offsets[s]) for s in range(seq_offsets.size - 1)]
    return np.array(sorted(range(len(lengths)), key=lambda s: (-lengths[s], s)), np.int64)


def emissions(unigram, bigram, u_offsets, u_ids, b_offsets, b_ids, labels):
    n, n_labels = u_offsets.size - 1, unigram.shape[1]
    psi, shift, gold_u, gold_b = np.zeros((n, n_labels)), np.zeros(n), np.zeros(n), np.zeros(n)
    repeat = np.zeros(n, np.uint8)
    for t in range(n):
        e = unigram[u_ids[u_offsets[t]:u_offsets[t + 1]]].sum(axis=0).reshape(n_labels)
        shift[t] = e.max() if n_labels else 0.0
        psi[t] = np.exp(e - shift[t])
        if labels.size:
            gold_u[t] = e[labels[t]]
            if t:
                gold_b[t] = bigram[b_ids[b_offsets[t]:b_offsets[t + 1]], labels[t - 1], labels[t]].sum()
        ids = b_ids[b_offsets[t]:b_offsets[t + 1]].tolist()
        repeat[t] = t > 0 and ids == b_ids[b_offsets[t - 1]:b_offsets[t]].tolist()
    return psi, shift, gold_u, gold_b, repeat
