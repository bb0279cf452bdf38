"""Differential tests of cuda/crf.cu: emulated CUDA (and the GPU when present) == Numba == reference.

Tolerance: the CUDA forward pass sums each token's normaliser across lanes (a warp tree), Numba
label by label, so alpha/omega/marginals/log Z agree to rtol 1e-12; everything else is computed
in the same order and agrees to the last bit in practice (still compared with the same tolerance).
"""
from __future__ import annotations

import numpy as np
import pytest

from cpu_fallback import crf as numba_crf
from gpu_text.crf.features import occurrences
from tests.reference import crf as reference
from tests.test_crf import random_problem
from tests.test_utf8_kernels import host

RTOL, ATOL = 1e-12, 1e-13


def run_all(ops, unigram, bigram, data, chunk):
    args = (unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids)
    alpha, omega, marginals, log_z, gold = ops.forward_backward(*args, data.labels)
    unlabelled = ops.forward_backward(*args, data.labels[:0])
    gu = ops.unigram_gradient(marginals, data.labels, *occurrences(data.u_ids, data.u_offsets, unigram.shape[0], chunk))
    gb = ops.bigram_gradient(bigram, alpha, omega, data.labels, data.b_offsets, data.b_ids,
                             *occurrences(data.b_ids, data.b_offsets, bigram.shape[0], chunk))
    best, scores = ops.viterbi(*args)
    return [alpha, omega, marginals, log_z, gold, unlabelled[2], unlabelled[4], gu, gb, best, scores]


class _Bound:
    def __init__(self, backend):
        self.backend = backend

    def __getattr__(self, name):
        op = self.backend.op("crf", name)
        return lambda *a: op(*(self.backend.asarray(x) for x in a))


@pytest.mark.parametrize("n_seqs,n_labels,max_len", [(0, 3, 4), (1, 1, 6), (2, 4, 5), (37, 5, 9), (12, 35, 4)])
def test_kernels_match(backend, n_seqs, n_labels, max_len):
    unigram, bigram, data = random_problem(n_seqs * 7 + n_labels, n_seqs=n_seqs, n_labels=n_labels, n_u=9, n_b=4,
                                           max_len=max_len)
    got = run_all(_Bound(backend), unigram, bigram, data, chunk=3)
    want = run_all(numba_crf, unigram, bigram, data, chunk=3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(host(g), w, rtol=RTOL, atol=ATOL)
    if n_labels <= 5:
        for g, w in zip(want, run_all(reference, unigram, bigram, data, chunk=3)):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("n_seqs,n_labels", [(0, 3), (9, 4), (6, 35)])
def test_gradients_with_penalty_into_one_vector(backend, n_seqs, n_labels):
    """The training path: both reductions write into views of one gradient vector and add l2·w;
    the result equals the plain gradient plus l2·w (computed apart) on every twin, and the ops
    refuse an output they could only fill through a copy."""
    unigram, bigram, data = random_problem(n_seqs + n_labels, n_seqs=n_seqs, n_labels=n_labels, n_u=7, n_b=3,
                                           max_len=6)
    l2 = 0.37
    cut = unigram.size
    for ops in (_Bound(backend), numba_crf, reference):
        alpha, omega, marginals, _, _ = ops.forward_backward(unigram, bigram, data.seq_offsets, data.u_offsets,
                                                            data.u_ids, data.b_offsets, data.b_ids, data.labels)
        u_tables = occurrences(data.u_ids, data.u_offsets, unigram.shape[0], 2)
        b_tables = occurrences(data.b_ids, data.b_offsets, bigram.shape[0], 2)
        b_args = (bigram, alpha, omega, data.labels, data.b_offsets, data.b_ids, *b_tables)
        plain_u = host(ops.unigram_gradient(marginals, data.labels, *u_tables))
        plain_b = host(ops.bigram_gradient(*b_args))
        vector = backend.asarray(np.full(cut + bigram.size, np.nan)) if isinstance(ops, _Bound) else \
            np.full(cut + bigram.size, np.nan)
        if isinstance(ops, _Bound):  # the bound ops move their arguments; call the backend's op directly
            op = backend.op
            m, lab = backend.asarray(marginals), backend.asarray(data.labels)
            op("crf", "unigram_gradient")(m, lab, *map(backend.asarray, u_tables), backend.asarray(unigram), l2,
                                          vector[:cut])
            op("crf", "bigram_gradient")(*map(backend.asarray, b_args), backend.asarray(bigram), l2, vector[cut:])
        else:
            ops.unigram_gradient(marginals, data.labels, *u_tables, unigram, l2, vector[:cut])
            ops.bigram_gradient(*b_args, bigram, l2, vector[cut:])
        got = host(vector)
        np.testing.assert_allclose(got[:cut], (plain_u + l2 * unigram).ravel(), rtol=RTOL, atol=ATOL)
        if ops is numba_crf:  # training's path on the CPU: the tokens' own lists, scattered in token order
            scattered = ops.unigram_gradient(marginals, data.labels, *u_tables, unigram, l2, None, data.u_offsets,
                                             data.u_ids)
            np.testing.assert_allclose(scattered.ravel(), got[:cut], rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(got[cut:], (plain_b + l2 * bigram).ravel(), rtol=RTOL, atol=ATOL)
        assert not np.isnan(got).any()
    if unigram.shape[0] > 1 and n_seqs:
        strided = np.zeros((unigram.shape[0], 2 * n_labels))[:, ::2]
        u_tables = occurrences(data.u_ids, data.u_offsets, unigram.shape[0], 2)
        with pytest.raises(ValueError, match="contiguous"):
            numba_crf.unigram_gradient(np.ones((data.n_tokens, n_labels)), data.labels, *u_tables, out=strided)


@pytest.mark.parametrize("n_labels", [1, 3, 35])
def test_posterior_errors(backend, n_labels):
    """Posterior decoding's error count, ties to the lowest label, on every twin."""
    rng = np.random.default_rng(n_labels)
    marginals = rng.integers(0, 3, (50, n_labels)).astype(float)  # many ties
    labels = rng.integers(0, n_labels, 50).astype(np.int32)
    want = int((np.argmax(marginals, axis=1) != labels).sum())
    assert reference.posterior_errors(marginals, labels) == want
    assert numba_crf.posterior_errors(marginals, labels) == want
    assert backend.op("crf", "posterior_errors")(backend.asarray(marginals), backend.asarray(labels)) == want
    assert numba_crf.posterior_errors(marginals[:0], labels[:0]) == 0
