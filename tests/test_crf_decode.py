"""CRF decoding: the n-best Viterbi kernels (emulated CUDA, and the GPU when present, == Numba ==
reference, exactly: every twin adds the same numbers in the same order), against brute force over
every path, k = 1 against the ``crf.viterbi`` op; and the estimator's ``predict(n_best=k)``,
``predict_marginals(as_arrays=True)`` and ``segment_with_confidence``."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from cpu_fallback import crf as numba_crf
from cpu_fallback import crf_decode as numba_decode
from gpu_text.crf import CRF, read_segmented_bmes
from gpu_text.crf.features import Encoded
from tests.reference import crf_decode as reference
from tests.test_crf import path_score, random_problem
from tests.test_utf8_kernels import host


def decode(backend, unigram, bigram, data: Encoded, k):
    """``nbest_viterbi`` of ``backend`` (a Backend or a twin module), outputs on the host."""
    args = (unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids)
    if hasattr(backend, "nbest_viterbi"):
        return backend.nbest_viterbi(*args, k)
    op = backend.op("crf_decode", "nbest_viterbi")
    return tuple(host(x) for x in op(*(backend.asarray(a) for a in args), k))


def assert_same(got, want):
    for g, w, name in zip(got, want, ("paths", "scores", "counts")):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_array_equal(g, w, err_msg=name)


def integer_problem(seed, n_seqs, n_labels, max_len, spread=2):
    """A random problem with small integer weights: sums are exact, so many paths tie exactly."""
    unigram, bigram, data = random_problem(seed, n_seqs=n_seqs, n_labels=n_labels, max_len=max_len)
    rng = np.random.default_rng(seed + 1000)
    return (rng.integers(-spread, spread + 1, unigram.shape).astype(float),
            rng.integers(-spread, spread + 1, bigram.shape).astype(float), data)


def brute_force(unigram, bigram, data: Encoded, s, k):
    """The k best paths of sentence s by enumeration, ordered by score, then labels read backwards."""
    start, end = int(data.seq_offsets[s]), int(data.seq_offsets[s + 1])
    paths = list(itertools.product(range(unigram.shape[1]), repeat=end - start))
    scored = sorted(((path_score(unigram, bigram, data, start, p), p) for p in paths),
                    key=lambda sp: (-sp[0], sp[1][::-1]))
    return scored[:k]


CASES = [  # n_seqs, n_labels, max_len, k: empty batch, Y = 1, length <= 1, k beyond every count, ...
    (0, 3, 4, 2), (1, 1, 6, 4), (3, 2, 1, 5), (9, 4, 6, 1), (9, 4, 6, 3), (23, 4, 9, 5), (14, 3, 4, 100),
    (6, 5, 7, 17), (4, 4, 60, 9),
]


@pytest.mark.parametrize("n_seqs,n_labels,max_len,k", CASES)
def test_kernels_match(backend, n_seqs, n_labels, max_len, k):
    unigram, bigram, data = random_problem(n_seqs * 11 + k, n_seqs=n_seqs, n_labels=n_labels, n_u=9, n_b=4,
                                           max_len=max_len)
    want = decode(numba_decode, unigram, bigram, data, k)
    assert_same(decode(backend, unigram, bigram, data, k), want)
    assert_same(decode(reference, unigram, bigram, data, k), want)


@pytest.mark.parametrize("seed", range(4))
def test_kernels_match_on_ties(backend, seed):
    """Integer weights (many exact ties, and all-zero rows) and the lists' tie order on every twin."""
    unigram, bigram, data = integer_problem(seed, n_seqs=12, n_labels=3, max_len=7, spread=1)
    unigram[: unigram.shape[0] // 2] = 0.0
    for k in (1, 4, 13):
        want = decode(reference, unigram, bigram, data, k)
        assert_same(decode(numba_decode, unigram, bigram, data, k), want)
        assert_same(decode(backend, unigram, bigram, data, k), want)


def test_many_labels_use_global_scratch(backend):
    """35 labels: the warps' lists do not fit in shared memory, so the kernel takes global scratch."""
    unigram, bigram, data = random_problem(5, n_seqs=10, n_labels=35, n_u=9, n_b=4, max_len=4)
    assert_same(decode(backend, unigram, bigram, data, 3), decode(numba_decode, unigram, bigram, data, 3))


@pytest.mark.parametrize("seed", range(6))
def test_one_best_is_the_viterbi_op(backend, seed):
    unigram, bigram, data = random_problem(seed, n_seqs=30, n_labels=4, max_len=8)
    paths, scores, counts = decode(backend, unigram, bigram, data, 1)
    viterbi = backend.op("crf", "viterbi")
    args = (unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids)
    best, best_scores = (host(x) for x in viterbi(*(backend.asarray(a) for a in args)))
    np.testing.assert_array_equal(paths[0], best)
    np.testing.assert_array_equal(scores[:, 0], host(best_scores))  # 0 for an empty sentence, as viterbi says
    assert counts.tolist() == [1] * 30


@pytest.mark.parametrize("seed", range(8))
def test_matches_brute_force(seed):
    """Every path enumerated and sorted: the kernels return exactly its first k, scores, order and ties."""
    unigram, bigram, data = integer_problem(seed, n_seqs=5, n_labels=3, max_len=5)
    n_labels = unigram.shape[1]
    for k in (1, 2, 7, 300):
        paths, scores, counts = decode(numba_decode, unigram, bigram, data, k)
        for s in range(data.seq_offsets.size - 1):
            start, end = int(data.seq_offsets[s]), int(data.seq_offsets[s + 1])
            expected = brute_force(unigram, bigram, data, s, k)
            assert counts[s] == len(expected) == min(k, n_labels ** (end - start))
            for j, (score, path) in enumerate(expected):
                assert scores[s, j] == score
                assert tuple(paths[j, start:end].tolist()) == path
            assert (scores[s, counts[s]:] == -np.inf).all()
            assert (paths[counts[s]:, start:end] == -1).all()


@pytest.mark.parametrize("seed", range(4))
def test_random_weights_are_sorted_and_distinct(seed):
    """Real-valued weights: scores are the paths' own sums, non-increasing, the paths distinct, and
    they are the top of the enumeration."""
    unigram, bigram, data = random_problem(seed, n_seqs=6, n_labels=4, max_len=5)
    paths, scores, counts = decode(numba_decode, unigram, bigram, data, 12)
    for s in range(6):
        start, end = int(data.seq_offsets[s]), int(data.seq_offsets[s + 1])
        got = [tuple(paths[j, start:end].tolist()) for j in range(counts[s])]
        assert len(set(got)) == len(got) and np.all(np.diff(scores[s, :counts[s]]) <= 0)
        expected = brute_force(unigram, bigram, data, s, 12)
        np.testing.assert_allclose(scores[s, :counts[s]], [sc for sc, _ in expected], rtol=1e-12)
        assert got == [p for _, p in expected]


def test_all_ties_come_in_backward_label_order():
    """Zero weights: every path scores 0 and they come lower last label first, then the one before."""
    data = Encoded(np.array([0, 3], np.int64), np.zeros(4, np.int64), np.zeros(0, np.int64), np.zeros(4, np.int64),
                   np.zeros(0, np.int64), np.zeros(3, np.int32))
    paths, scores, counts = numba_decode.nbest_viterbi(np.zeros((1, 2)), np.zeros((1, 2, 2)), data.seq_offsets,
                                                       data.u_offsets, data.u_ids, data.b_offsets, data.b_ids, 9)
    assert counts.tolist() == [8] and scores[0, :8].tolist() == [0.0] * 8 and scores[0, 8] == -np.inf
    assert [tuple(p) for p in paths[:8].tolist()] == sorted(itertools.product((0, 1), repeat=3), key=lambda p: p[::-1])
    assert paths[8].tolist() == [-1, -1, -1]


@pytest.mark.parametrize("op", [numba_decode.nbest_viterbi, reference.nbest_viterbi])
def test_empty_sentences_have_the_empty_path(op):
    unigram, bigram, data = random_problem(1, n_seqs=3, n_labels=2, max_len=0)
    paths, scores, counts = op(unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets,
                               data.b_ids, 4)
    assert paths.shape == (4, 0) and counts.tolist() == [1, 1, 1]
    assert scores[:, 0].tolist() == [0.0] * 3 and (scores[:, 1:] == -np.inf).all()


@pytest.mark.parametrize("k", [0, -3, True, 2.0, "3", None])
def test_bad_k_is_refused(backend, k):
    unigram, bigram, data = random_problem(0)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        decode(backend, unigram, bigram, data, k)


def test_nan_weights_give_a_result_not_a_crash(backend):
    """NaN breaks the ranking; the result is still well formed (valid labels, the counts)."""
    unigram, bigram, data = random_problem(3, n_seqs=8, n_labels=3, max_len=6)
    unigram[0] = np.nan
    bigram[1] = np.nan
    paths, scores, counts = decode(backend, unigram, bigram, data, 5)
    lengths = np.diff(data.seq_offsets)
    assert counts.tolist() == [1 if n == 0 else min(5, 3 ** int(n)) for n in lengths]
    for s in range(8):
        start, end = data.seq_offsets[s], data.seq_offsets[s + 1]
        assert ((paths[:counts[s], start:end] >= 0) & (paths[:counts[s], start:end] < 3)).all()


# -- the estimator ---------------------------------------------------------------------------------

def trained():
    X, y = read_segmented_bmes(["南京 市长 江大桥", "长江 大桥", "南京 长江", "市长 在 南京", "大桥 长"] * 2)
    return CRF(rho1=0.0, rho2=0.05, backend="cpu").fit(X, y), X


def test_predict_n_best_is_exact():
    crf, X = trained()
    sentences = [list("南京市长江大桥"), list("江"), [], list("长江长江")]
    assert crf.predict(sentences, n_best=1) == crf.predict(sentences)
    best = crf.predict(sentences, n_best=6)
    encoded = crf.space_.encode(sentences)
    index = {label: i for i, label in enumerate(crf.labels_)}
    for s, (sentence, row) in enumerate(zip(sentences, best)):
        assert row[0][0] == crf.predict([sentence])[0]
        assert len(row) == min(6, len(crf.labels_) ** len(sentence))
        start = int(encoded.seq_offsets[s])
        for labels, score in row:
            assert len(labels) == len(sentence) and isinstance(score, float)
            np.testing.assert_allclose(score, path_score(crf.unigram_weights_, crf.bigram_weights_, encoded, start,
                                                         [index[x] for x in labels]), rtol=1e-12, atol=1e-12)
        assert [score for _, score in row] == sorted((score for _, score in row), reverse=True)
        assert len({tuple(labels) for labels, _ in row}) == len(row)
    assert best[2] == [([], 0.0)]
    assert crf.predict([], n_best=3) == []


def test_predict_n_best_beyond_the_paths():
    crf, _ = trained()
    row = crf.predict([list("江大")], n_best=10 ** 9)[0]  # k is cut to Y^length: no 10^9-wide buffers
    assert len(row) == len(crf.labels_) ** 2


@pytest.mark.parametrize("n_best", [0, -1, 1.5, True, "2", None])
def test_predict_bad_n_best(n_best):
    crf, _ = trained()
    with pytest.raises(ValueError, match="n_best must be an integer >= 1"):
        crf.predict([list("南京")], n_best=n_best)


def test_predict_n_best_on_the_emulated_kernels():
    from tests.emulated_backend import emulated_backend

    crf, _ = trained()
    sentences = [list("南京市长江大桥"), [], list("长")]
    want = crf.predict(sentences, n_best=7)
    crf.backend = emulated_backend()  # the same weights (training on another backend differs in the last bits)
    assert crf.predict(sentences, n_best=7) == want


def test_marginals_as_arrays():
    crf, _ = trained()
    sentences = [list("南京市长"), [], list("桥")]
    arrays = crf.predict_marginals(sentences, as_arrays=True)
    dicts = crf.predict_marginals(sentences)
    assert [a.shape for a in arrays] == [(4, len(crf.labels_)), (0, len(crf.labels_)), (1, len(crf.labels_))]
    for a, d in zip(arrays, dicts):
        assert a.tolist() == [[p[label] for label in crf.labels_] for p in d]
        np.testing.assert_allclose(a.sum(axis=1), 1.0, rtol=1e-12)
    assert crf.predict_marginals([]) == [] and crf.predict_marginals([], as_arrays=True) == []


def test_segment_with_confidence():
    crf, _ = trained()
    texts = ["南京市长江大桥", "", "  ", "长江 大桥在南京", "江"]
    scored = crf.segment_with_confidence(texts)
    assert [[w for w, _ in row] for row in scored] == crf.segment(texts)
    assert scored[1] == [] and scored[2] == []
    # by hand: the marginal of each character's tag in its word, multiplied
    for text, row in zip(texts, scored):
        pieces = text.split()
        marginals = crf.predict_marginals([list(p) for p in pieces])
        flat = [m for piece in marginals for m in piece]
        at = 0
        for word, confidence in row:
            tags = ["S"] if len(word) == 1 else ["B"] + ["M"] * (len(word) - 2) + ["E"]
            expected = float(np.prod([flat[at + i][tag] for i, tag in enumerate(tags)]))
            assert confidence == pytest.approx(expected, rel=1e-12) and 0.0 < confidence <= 1.0
            at += len(word)


def test_confidence_without_a_tag_is_zero():
    """A model that never saw S (only two-character words): a one-character word's confidence is 0."""
    X, y = read_segmented_bmes(["南京 市长", "长江 大桥"])
    crf = CRF(rho1=0.0, backend="cpu").fit(X, y)
    assert crf.labels_ == ["B", "E"]
    crf.unigram_weights_ = np.zeros_like(crf.unigram_weights_)  # every path ties: Viterbi takes B B B
    crf.bigram_weights_ = np.zeros_like(crf.bigram_weights_)
    assert crf.segment_with_confidence(["南京市", "南京"]) == [[("南", 0.0), ("京", 0.0), ("市", 0.0)],
                                                           [("南", 0.0), ("京", 0.0)]]
    crf.bigram_weights_[:, 0, 1] = 5.0  # B -> E now pays: the words are B E pairs, each with a confidence > 0
    (row,) = crf.segment_with_confidence(["南京"])
    assert [w for w, _ in row] == ["南京"] and 0.0 < row[0][1] < 1.0


def test_segment_with_confidence_sees_the_segmentation_columns():
    """A model with segmentation columns (folded characters, classes): the same words as segment(),
    whatever the width of the input, and the confidences of the folded twin are the same."""
    from gpu_text.crf.segmenter import fit_segmenter

    crf = fit_segmenter(["１２月 ３１日 ， 南京", "２０ 日", "南京 市长 江大桥"] * 3, rho1=0.0, backend="cpu")
    texts = ["12月20日，南京市长江大桥", "１２月２０日，南京市长江大桥"]
    scored = crf.segment_with_confidence(texts)
    assert [[w for w, _ in row] for row in scored] == crf.segment(texts)
    assert [c for _, c in scored[0]] == [c for _, c in scored[1]]
    assert all(0.0 < c <= 1.0 for row in scored for _, c in row)
