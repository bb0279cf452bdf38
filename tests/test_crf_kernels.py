"""Differential tests of cuda/crf.cu: emulated CUDA (and the GPU when present) == Numba == reference.

Tolerances, per quantity (emulated/GPU against Numba): rtol 1e-12, atol 1e-13 for alpha, omega,
marginals, log Z, the gold score and both gradients -- the warp kernel (Y > 6) sums each token's
normaliser across lanes (a tree), Numba label by label; the gold score is summed per token on the
GPU and running on the CPU; the group kernels (Y <= 6) and the emissions are otherwise in the same
order. Viterbi labels, the sequence order and the emissions' repeat flags: exact. Numba against
the log-space reference: rtol 1e-9, atol 1e-11 (another algorithm).
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
    # training's call: exp(bigram) and the order given (the same results)
    given = ops.forward_backward(*args, data.labels, np.exp(bigram), ops.sequence_order(data.seq_offsets))
    gu = ops.unigram_gradient(marginals, data.labels, *occurrences(data.u_ids, data.u_offsets, unigram.shape[0], chunk))
    gb = ops.bigram_gradient(bigram, alpha, omega, data.labels, data.b_offsets, data.b_ids,
                             *occurrences(data.b_ids, data.b_offsets, bigram.shape[0], chunk))
    best, scores = ops.viterbi(*args)
    emitted = ops.emissions(unigram, bigram, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids, data.labels)
    return [alpha, omega, marginals, log_z, gold, unlabelled[2], unlabelled[4], gu, gb, best, scores, *given,
            *emitted, ops.sequence_order(data.seq_offsets)]


class _Bound:
    def __init__(self, backend):
        self.backend = backend

    def __getattr__(self, name):
        op = self.backend.op("crf", name)
        return lambda *a: op(*(self.backend.asarray(x) for x in a))


def check_twins(backend, unigram, bigram, data, chunk=3, with_reference=True, reference_atol=1e-11):
    got = run_all(_Bound(backend), unigram, bigram, data, chunk)
    want = run_all(numba_crf, unigram, bigram, data, chunk)
    for g, w in zip(got, want):
        if w.dtype.kind in "iu":  # labels, order, repeat flags
            np.testing.assert_array_equal(host(g), w)
        else:
            np.testing.assert_allclose(host(g), w, rtol=RTOL, atol=ATOL)
    if with_reference:
        for g, w in zip(want, run_all(reference, unigram, bigram, data, chunk)):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=reference_atol)


# every group kernel (Y = 1..6: groups of 1, 2, 4 and 8 lanes, idle lanes at Y = 3, 5, 6) and the
# warp kernel (Y = 7 in one warp's lanes, Y = 35 over two rounds of lanes)
@pytest.mark.parametrize("n_seqs,n_labels,max_len", [(0, 3, 4), (1, 1, 6), (9, 2, 7), (2, 4, 5), (37, 5, 9),
                                                     (11, 3, 12), (13, 6, 8), (5, 7, 6), (12, 35, 4)])
def test_kernels_match(backend, n_seqs, n_labels, max_len):
    unigram, bigram, data = random_problem(n_seqs * 7 + n_labels, n_seqs=n_seqs, n_labels=n_labels, n_u=9, n_b=4,
                                           max_len=max_len)
    check_twins(backend, unigram, bigram, data, with_reference=n_labels <= 7)


def shared_transitions(data, n_b: int, seed: int):
    """``data`` with runs of tokens sharing one bigram id list (as the usual ``B`` pattern gives
    every token), so that the recursion's kept factors and the repeat flags are exercised."""
    rng = np.random.default_rng(seed)
    n = data.n_tokens
    run_ids = rng.integers(0, n_b, n)
    ids = run_ids[np.arange(n) // 4]  # runs of four tokens with the same id
    first = np.zeros(n, bool)
    first[data.seq_offsets[:-1][np.diff(data.seq_offsets) > 0]] = True
    counts = np.where(first, 0, 1)
    b_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return type(data)(data.seq_offsets, data.u_offsets, data.u_ids, b_offsets, ids[~first].astype(np.int64),
                      data.labels)


@pytest.mark.parametrize("n_labels", [4, 9])
def test_shared_transition_factors_and_long_sequences(backend, n_labels):
    """Runs of equal bigram lists (the factors are kept, not rebuilt) and sequences of 1-2K tokens
    among short ones (the order puts them first); the same results on every twin."""
    unigram, bigram, data = random_problem(n_labels, n_seqs=20, n_labels=n_labels, n_u=30, n_b=3, max_len=6)
    long_lengths = np.array([1500, 3, 2000, 0, 700])
    offsets = np.concatenate([data.seq_offsets, data.seq_offsets[-1] + np.cumsum(long_lengths)])
    extra = int(long_lengths.sum())
    rng = np.random.default_rng(1)
    u_counts = np.concatenate([np.diff(data.u_offsets), rng.integers(1, 4, extra)])
    u_offsets = np.concatenate([[0], np.cumsum(u_counts)]).astype(np.int64)
    u_ids = rng.integers(0, 30, int(u_offsets[-1])).astype(np.int64)
    labels = rng.integers(0, n_labels, int(offsets[-1])).astype(np.int32)
    from gpu_text.crf.features import Encoded

    long = Encoded(offsets.astype(np.int64), u_offsets, u_ids, np.zeros(int(offsets[-1]) + 1, np.int64),
                   np.zeros(0, np.int64), labels)
    data = shared_transitions(long, 3, n_labels)
    assert data.b_offsets[-1] > 0 and numba_crf.emissions(unigram, bigram, data.u_offsets, data.u_ids,
                                                          data.b_offsets, data.b_ids, data.labels)[4].sum() > 1000
    check_twins(backend, unigram, bigram, data, chunk=64, with_reference=False)
    # the reference on the short sequences and one long one (it is slow); a gradient sums 1500
    # tokens' terms of about 1, computed in log space there: atol 1e-9
    keep = np.flatnonzero(np.diff(data.seq_offsets) < 1000).tolist() + [20]
    small = data.subset(np.array(keep))
    check_twins(backend, unigram, bigram, small, chunk=16, with_reference=True, reference_atol=1e-9)


def test_recursion_steps_are_the_longest_sequence():
    """The longest thread (or lane) of the recursion takes two steps a token of its own sequence
    (forward and backward walks), whatever the batch; the emissions have no data-dependent loop."""
    from tests.emulated_backend import emulated_backend

    be = emulated_backend()
    module = be.runtime.module("crf")
    for n_labels, kernel in ((4, "crf_forward_backward_y4"), (9, "crf_forward_backward")):
        unigram, bigram, data = random_problem(3, n_seqs=40, n_labels=n_labels, n_u=9, n_b=4, max_len=30)
        longest = int(np.diff(data.seq_offsets).max())
        be.op("crf", "forward_backward")(unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids,
                                         data.b_offsets, data.b_ids, data.labels)
        assert module.get_function(kernel).last_max_steps == 2 * longest
        assert module.get_function("crf_emissions").last_max_steps == 0


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


def test_real_text_with_trained_weights(backend):
    """People's Daily (the first 120 lines, BMES, Wapic's template: one transition observation
    shared by every token) with weights trained for 3 iterations on the CPU: every twin agrees."""
    from gpu_text.crf import CRF
    from gpu_text.crf.data import read_segmented_bmes
    from tests.conftest import shared_data

    path = shared_data("zh-people-daily-199801/199801_segmented_words.txt")
    lines = [line for line in path.read_text(encoding="utf-8").split("\n")[:120] if line.strip()]
    X, y = read_segmented_bmes(lines)
    crf = CRF(rho1=0.0, rho2=0.01, max_iterations=3, backend="cpu").fit(X, y)
    data = crf.space_.encode(X, crf._label_ids(y))
    emitted = numba_crf.emissions(crf.unigram_weights_, crf.bigram_weights_, data.u_offsets, data.u_ids,
                                  data.b_offsets, data.b_ids, data.labels)
    # a sequence's first token has no transition observation: the first two of each are not repeats
    n_seqs = data.seq_offsets.size - 1
    assert len(crf.labels_) == 4 and emitted[4].sum() >= data.n_tokens - 2 * n_seqs  # the kept factors' path
    check_twins(backend, crf.unigram_weights_, crf.bigram_weights_, data, chunk=64, with_reference=False,
                reference_atol=1e-9)
