"""The CRF's math against brute force (every label sequence) and finite differences, Numba ==
Python reference, and the estimator: patterns, training, save/load, segmentation."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from cpu_fallback import crf as numba_crf
from gpu_text.crf import CRF, parse_patterns, read_conll, read_segmented_bmes
from gpu_text.crf.features import Encoded, FeatureSpace, occurrences
from gpu_text.crf.patterns import flatten
from tests.reference import crf as reference

# Numba sums in another order than the reference's log-space recursion.
RTOL, ATOL = 1e-9, 1e-11


def random_problem(seed: int, n_seqs: int = 4, n_labels: int = 3, n_u: int = 6, n_b: int = 3, max_len: int = 5):
    """A random model and batch: tokens with 0-3 unigram and 0-2 bigram observations (none at t=0)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, max_len + 1, n_seqs)
    seq_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(seq_offsets[-1])
    first = np.zeros(n, bool)
    first[seq_offsets[:-1][lengths > 0]] = True

    def ragged(max_count, n_features, skip):
        counts = rng.integers(0, max_count + 1, n)
        counts[skip] = 0
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return offsets, rng.integers(0, n_features, int(offsets[-1])).astype(np.int64)

    u_offsets, u_ids = ragged(3, n_u, np.zeros(n, bool))
    b_offsets, b_ids = ragged(2, n_b, first)
    labels = rng.integers(0, n_labels, n).astype(np.int32)
    unigram = rng.normal(0, 1.5, (n_u, n_labels))
    bigram = rng.normal(0, 1.5, (n_b, n_labels, n_labels))
    return unigram, bigram, Encoded(seq_offsets, u_offsets, u_ids, b_offsets, b_ids, labels)


def objective(unigram, bigram, data: Encoded, fb=numba_crf):
    _, _, _, log_z, gold = fb.forward_backward(unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids,
                                               data.b_offsets, data.b_ids, data.labels)
    return float((log_z - gold).sum())


def gradients(unigram, bigram, data: Encoded, ops=numba_crf):
    alpha, omega, marginals, _, _ = ops.forward_backward(unigram, bigram, data.seq_offsets, data.u_offsets,
                                                         data.u_ids, data.b_offsets, data.b_ids, data.labels)
    gu = ops.unigram_gradient(marginals, data.labels, *occurrences(data.u_ids, data.u_offsets, unigram.shape[0], 2))
    gb = ops.bigram_gradient(bigram, alpha, omega, data.labels, data.b_offsets, data.b_ids,
                             *occurrences(data.b_ids, data.b_offsets, bigram.shape[0], 2))
    return gu, gb


def path_score(unigram, bigram, data, start, path):
    score = sum(unigram[data.u_ids[data.u_offsets[start + t]:data.u_offsets[start + t + 1]], y].sum()
                for t, y in enumerate(path))
    for t in range(1, len(path)):
        k = slice(data.b_offsets[start + t], data.b_offsets[start + t + 1])
        score += bigram[data.b_ids[k], path[t - 1], path[t]].sum()
    return score


@pytest.mark.parametrize("seed", range(6))
def test_log_z_marginals_viterbi_match_brute_force(seed):
    unigram, bigram, data = random_problem(seed)
    n_labels = unigram.shape[1]
    _, _, marginals, log_z, gold = numba_crf.forward_backward(unigram, bigram, data.seq_offsets, data.u_offsets,
                                                              data.u_ids, data.b_offsets, data.b_ids, data.labels)
    best, best_scores = numba_crf.viterbi(unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids,
                                          data.b_offsets, data.b_ids)
    for s in range(data.seq_offsets.size - 1):
        start, end = int(data.seq_offsets[s]), int(data.seq_offsets[s + 1])
        paths = list(itertools.product(range(n_labels), repeat=end - start))
        scores = np.array([path_score(unigram, bigram, data, start, p) for p in paths])
        z = np.logaddexp.reduce(scores) if end > start else 0.0
        np.testing.assert_allclose(log_z[s], z, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(gold[s], path_score(unigram, bigram, data, start, data.labels[start:end]),
                                   rtol=RTOL, atol=ATOL)
        probs = np.exp(scores - z)
        for t in range(end - start):
            want = [probs[[p[t] == y for p in paths]].sum() for y in range(n_labels)]
            np.testing.assert_allclose(marginals[start + t], want, rtol=1e-8, atol=ATOL)
        if end > start:
            assert tuple(best[start:end]) == paths[int(np.argmax(scores))]
            np.testing.assert_allclose(best_scores[s], scores.max(), rtol=RTOL)


@pytest.mark.parametrize("seed", range(4))
def test_gradient_matches_finite_differences(seed):
    unigram, bigram, data = random_problem(seed + 10)
    gu, gb = gradients(unigram, bigram, data)
    h = 1e-6
    for weights, grad in ((unigram, gu), (bigram, gb)):
        flat, g = weights.reshape(-1), grad.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + h
            up = objective(unigram, bigram, data)
            flat[i] = old - h
            down = objective(unigram, bigram, data)
            flat[i] = old
            assert abs((up - down) / (2 * h) - g[i]) < 1e-6 * max(1.0, abs(g[i]))


@pytest.mark.parametrize("seed", range(4))
def test_numba_matches_reference(seed):
    unigram, bigram, data = random_problem(seed + 20, n_seqs=8, n_labels=4)
    args = (unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids)
    for got, want in zip(numba_crf.forward_backward(*args, data.labels), reference.forward_backward(*args, data.labels)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    for got, want in zip(gradients(unigram, bigram, data), gradients(unigram, bigram, data, reference)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    for got, want in zip(numba_crf.viterbi(*args), reference.viterbi(*args)):
        np.testing.assert_allclose(got, want, rtol=RTOL)


def test_pattern_expansion_matches_slow_expand():
    text = "U0:%x[-1,0]/%X[0,1]\n*1:%t[1,0,\"^[0-9]+$\"]\nu2:%M[@-1,1,\"[a-z]+\"]/%x[@0,0]\nb3:%x[-6,0]\nB"
    patterns = parse_patterns(text)
    sentences = [[("12", "Ab1"), ("x", "CD"), ("7", "e")], [("y", "Q")], []]
    space = FeatureSpace(patterns).fit(sentences)
    observed = sorted(space.observation(p) for p in space.unigram_parts)
    expected = sorted({p.expand(s, t) for s in sentences for t in range(len(s)) for p in patterns if p.kind in "u*"})
    assert observed == expected
    assert "u2:e/12" in observed and "*1:true" in observed and "U0:_x-1/ab1" in observed
    bigram = sorted(space.observation(p) for p in space.bigram_parts)
    assert bigram == ["*1:false", "*1:true", "B", "b3:_x-#", "b3:_x-4"]


def test_data_readers(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a X B-NP\nb Y I-NP\n\n\nc Z O\n")
    assert read_conll(str(path)) == ([[("a", "X"), ("b", "Y")], [("c", "Z")]], [["B-NP", "I-NP"], ["O"]])
    assert read_segmented_bmes(["ab  c"])[1] == [["B", "E", "S"]]
    assert flatten([[]])[1].tolist() == [0, 0]


def test_training_is_deterministic_and_l1_sparsifies():
    X, y = read_segmented_bmes(["南京 市 长江 大桥", "大桥 在 南京", "长江 南京 市长", "市 长江"] * 3)
    models = [CRF(rho1=r1, rho2=1e-3, backend="cpu", max_iterations=30).fit(X, y) for r1 in (0.0, 0.0, 2.0)]
    np.testing.assert_array_equal(models[0].unigram_weights_, models[1].unigram_weights_)
    assert models[0].score(X, y) == 1.0
    active = [h["active_features"] for h in (models[0].history_[-1], models[2].history_[-1])]
    assert active[1] < active[0]
    assert models[2].predict(X[:1]) == [y[0]]


def test_sgd_l1_trains():
    X, y = read_segmented_bmes(["南京 市 长江 大桥", "大桥 在 南京", "长江 南京 市长"] * 4)
    crf = CRF(algorithm="sgd-l1", rho1=0.1, batch_size=3, max_iterations=15, learning_rate=0.5, backend="cpu")
    assert crf.fit(X, y).score(X, y) == 1.0


def test_save_load_round_trip(tmp_path):
    X, y = read_conll(["a\tN\tB", "b\tV\tE", "", "c\tN\tS", "", "a\tV\tB", "a\tN\tE"])
    crf = CRF(pattern="U:%x[0,0]\nU:%x[0,1]/%x[-1,0]\n*p:%x[0,1]\nB", rho1=0.0, backend="cpu").fit(X, y)
    crf.save(str(tmp_path / "m.crf"))
    loaded = CRF.load(str(tmp_path / "m.crf"), backend="cpu")
    assert loaded.predict(X) == crf.predict(X)
    np.testing.assert_allclose(loaded.predict_marginals(X)[0][0]["B"], crf.predict_marginals(X)[0][0]["B"], rtol=1e-12)
    (tmp_path / "bad.crf").write_text("something else\n")
    with pytest.raises(ValueError, match="not a"):
        CRF.load(str(tmp_path / "bad.crf"))


@pytest.mark.parametrize("pairs", [1, 2, 5])
def test_two_loop_equals_the_textbook_recursion(pairs):
    """The optimiser's two-loop recursion (the definition its two-pass ``History`` is tested against
    in tests/test_lbfgs_compact.py) against the plain formula, and the CPU's blocked dot."""
    from cpu_fallback import vectors
    from gpu_text.crf import optimize

    rng = np.random.default_rng(pairs)
    n = 10_001  # not a multiple of the block count
    g = rng.normal(size=n)
    history = []
    for _ in range(pairs):
        s = rng.normal(size=n)
        y = s + 0.3 * rng.normal(size=n)
        history.append((s, y, 1.0 / float(s @ y)))
    q, alphas = g.copy(), []
    for s, y, rho in reversed(history):
        alphas.append(rho * float(s @ q))
        q = q - alphas[-1] * y
    s, y, _ = history[-1]
    q = q * float(s @ y) / float(y @ y)
    for (s, y, rho), a in zip(history, reversed(alphas)):
        q = q + (a - rho * float(y @ q)) * s
    np.testing.assert_allclose(optimize._two_loop(g, history), -q, rtol=1e-10, atol=1e-12)
    assert vectors.dot(g, g) == vectors.dot(g.copy(), g.copy())  # the same order of additions every time
    np.testing.assert_allclose(vectors.dot(g, history[0][0]), g @ history[0][0], rtol=1e-12)


def test_observations_of_different_patterns_never_share_a_feature():
    # namespace 0 has two commands, namespace 1 one, and a pattern with none: with the namespace
    # as the top digit of the key these met (u05 over values (1, v) and u00 over v, "u:" and value 0)
    patterns = parse_patterns("u05:%x[-1,0]/%x[0,0]\nu00:%x[0,0]\nu:\n")
    sentences = [list("abcab"), list("cba"), list("aabbcc")]
    space = FeatureSpace(patterns).fit([[(c,) for c in s] for s in sentences])
    expected = set()
    for s in sentences:
        for t in range(len(s)):
            for p in patterns:
                expected.add(p.expand([(c,) for c in s], t))
    assert space.n_unigram == len(expected)
