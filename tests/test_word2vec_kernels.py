"""Differential tests of cuda/word2vec.cu: emulated CUDA (and the GPU when present) == Numba == reference.

Deterministic mode (one unit per epoch: one warp, one thread), at 5 dimensions (a partial warp)
and 70 (two full lane rounds and a tail). Tolerance: the emulated kernel and Numba do the same
float32 operations in the same order except the dot products (a warp's 32 lane partials and xor
tree there, LLVM's vectorised, fused sum in Numba), and agree to atol 1e-6 (measured: at most
1.2e-7 on weights up to 0.46); the reference takes dot products in float64 and agrees to atol 2e-5
(measured: 1.8e-7).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from cpu_fallback import word2vec as numba_w2v
from gpu_text.word2vec.huffman import huffman_tree
from gpu_text.word2vec.model import cum_table, epoch_key, sample_ints
from tests.reference import word2vec as reference
from tests.test_utf8_kernels import host

ATOL_TWINS, ATOL_REFERENCE = 1e-6, 2e-5


def problem(seed, n_vocab=7, n_words=60, dim=5):
    rng = np.random.default_rng(seed)
    counts = np.sort(rng.integers(1, 40, n_vocab))[::-1].copy()
    ids = rng.integers(0, n_vocab, n_words).astype(np.int32)
    cuts = np.sort(rng.choice(np.arange(1, n_words), 4, replace=False))
    offsets = np.concatenate(([0], cuts, [n_words])).astype(np.int64)
    syn0 = ((rng.random((n_vocab, dim), dtype=np.float32) - np.float32(0.5)) / np.float32(dim)).astype(np.float32)
    return counts, ids, offsets, syn0


def train(ops, asarray, counts, ids, offsets, syn0, sg, hs, negative, cbow_mean, epochs=2, alpha=0.05, table=0):
    tree = huffman_tree(counts)
    n_vocab, dim = syn0.shape
    weights = [asarray(syn0.copy()), asarray(np.zeros((n_vocab - 1, dim), np.float32)),
               asarray(np.zeros((n_vocab, dim), np.float32))]
    args = [asarray(a) for a in (tree.codes, tree.points, tree.offsets, cum_table(counts, 0.75))]
    losses, keeps = [], []
    for epoch in range(epochs):
        key = epoch_key(3, epoch)
        keep = host(ops.subsample(asarray(ids), asarray(sample_ints(counts, 0.05)), key)).astype(bool)
        kept = np.concatenate(([0], np.cumsum(keep)))
        epoch_ids, epoch_offsets = np.ascontiguousarray(ids[keep]), kept[offsets].astype(np.int64)
        loss = ops.train_epoch(asarray(epoch_ids), asarray(epoch_offsets), *weights, *args, sg, hs, negative, 2,
                               cbow_mean, alpha, alpha / 2, key, max(1, epoch_ids.size), 1, table)
        losses.append(float(host(loss).sum()))
        keeps.append(keep)
    return [host(w) for w in weights], losses, keeps


class _Bound:
    def __init__(self, backend):
        self.backend = backend

    def __getattr__(self, name):
        return self.backend.op("word2vec", name)


MODES = [(0, 1, 0, 1), (0, 0, 3, 1), (0, 1, 2, 0), (1, 1, 0, 1), (1, 0, 4, 1)]


@pytest.mark.parametrize("dim,table", [(5, 0), (70, 0), (5, 1)])  # table: gensim's logistic table
@pytest.mark.parametrize("sg,hs,negative,cbow_mean", MODES)
def test_kernels_match(backend, sg, hs, negative, cbow_mean, dim, table):
    counts, ids, offsets, syn0 = problem(sg * 10 + negative, n_words=60 if dim < 32 else 200, dim=dim)
    got, got_loss, got_keep = train(_Bound(backend), backend.asarray, counts, ids, offsets, syn0, sg, hs, negative,
                                    cbow_mean, table=table)
    want, want_loss, want_keep = train(numba_w2v, np.asarray, counts, ids, offsets, syn0, sg, hs, negative, cbow_mean,
                                       table=table)
    for g, w in zip(got_keep, want_keep):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=ATOL_TWINS, rtol=0)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5)
    assert np.abs(want[0] - syn0).max() > 1e-4  # something was learnt
    ref, ref_loss, ref_keep = train(reference, np.asarray, counts, ids, offsets, syn0, sg, hs, negative, cbow_mean,
                                    table=table)
    for g, w in zip(ref_keep, want_keep):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(ref, want):
        np.testing.assert_allclose(g, w, atol=ATOL_REFERENCE, rtol=0)
    np.testing.assert_allclose(ref_loss, want_loss, rtol=1e-4)


def test_hogwild_units_cover_every_position(backend):
    """Many small units (the parallel default) train the same positions: the loss is close."""
    counts, ids, offsets, syn0 = problem(5, n_words=400)
    tree = huffman_tree(counts)
    losses = []
    for unit in (400, 7):
        weights = [backend.asarray(syn0.copy()), backend.asarray(np.zeros((6, 5), np.float32)),
                   backend.asarray(np.zeros((1, 5), np.float32))]
        loss = backend.op("word2vec", "train_epoch")(
            backend.asarray(ids), backend.asarray(offsets), *weights, *(backend.asarray(a) for a in (
                tree.codes, tree.points, tree.offsets)), backend.asarray(np.ones(1, np.uint32)), 0, 1, 0, 2, 1,
            0.001, 0.001, 9, unit, 1)
        losses.append(float(host(loss).sum()))
    assert losses[0] == pytest.approx(losses[1], rel=1e-3)


def test_one_hs_update_by_hand():
    """CBOW-HS on the sentence [0, 1] with window 1: position 0's context is word 1 and the
    other way round; every word has one code bit at inner node 0."""
    syn0 = np.array([[0.1, 0.2], [0.3, -0.1]], np.float32)
    syn1 = np.array([[0.5, 0.25]], np.float32)
    codes, points, code_offsets = np.array([0, 1], np.uint8), np.array([0, 0], np.int32), np.array([0, 1, 2])
    alpha = 0.5
    s0, s1 = syn0.copy(), syn1.copy()
    expected_loss = 0.0
    for i, (word, context) in enumerate(((0, 1), (1, 0))):
        neu1 = s0[context].astype(np.float64)
        f = float(neu1 @ s1[0])
        label = 1.0 - codes[word]
        g = (label - 1 / (1 + math.exp(-f))) * alpha
        expected_loss -= math.log(1 / (1 + math.exp(-(f if label else -f))))
        neu1e = g * s1[0].astype(np.float64)
        s1[0] += (g * neu1).astype(np.float32)
        s0[context] += neu1e.astype(np.float32)
    loss = numba_w2v.train_epoch(np.array([0, 1], np.int32), np.array([0, 2]), syn0, syn1, np.zeros((1, 2), np.float32),
                                 codes, points, code_offsets, np.ones(1, np.uint32), 0, 1, 0, 1, 1, alpha, alpha, 1, 2, 1)
    np.testing.assert_allclose(syn0, s0, rtol=1e-6)
    np.testing.assert_allclose(syn1, s1, rtol=1e-6)
    assert float(loss.sum()) == pytest.approx(expected_loss, rel=1e-6)


def test_subsampling_keeps_gensims_share():
    counts = np.array([100000, 10])
    ints = sample_ints(counts, 1e-3)
    ids = np.zeros(200000, np.int32)
    kept = numba_w2v.subsample(ids, ints, epoch_key(1, 0)).mean()
    assert kept == pytest.approx(ints[0] / 2**32, abs=0.005)


@pytest.mark.parametrize("n_vocab", [1, 2, 7, 3000])
def test_bucketed_negative_search_equals_bisect(n_vocab):
    rng = np.random.default_rng(n_vocab)
    counts = np.sort(rng.zipf(1.3, n_vocab).clip(1, 10**6))[::-1]
    for exponent in (0.75, 0.0, -0.5):
        cum = cum_table(counts, exponent)
        search, shift = numba_w2v._search_index(cum)
        total = int(cum[-1])
        draws = np.concatenate((rng.integers(0, total, 2000), [0, total - 1], np.asarray(cum[:50], np.int64) - 1,
                                np.asarray(cum[:50], np.int64))).clip(0, total - 1)
        for r in draws:
            b = int(r) >> shift
            lo, hi = int(search[b]), int(search[b + 1])
            got = numba_w2v._lower_bound(cum, np.uint64(r), lo, hi - lo + 1)
            assert got == int(np.searchsorted(cum, r, side="left")), (r, lo, hi)
