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
