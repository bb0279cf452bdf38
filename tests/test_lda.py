"""LDA: the samplers against the reference and the closed form, count invariants, the model's API.

The kernel twins' own cross-backend checks (CUDA, emulated CUDA) live in tests/test_lda_kernels.py;
here the Numba twins are checked against the Python reference and the closed-form conditional, and
the estimator end to end on the CPU.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import chi2

from cpu_fallback import lda as cpu
from gpu_text.lda import LDA, TokenCorpus, as_corpus, heldout_perplexity, log_likelihood
from gpu_text.lda.model import iteration_key, optimize_alpha
from tests.conftest import require, shared_data
from tests.reference import lda as ref


def random_corpus(seed: int, n_docs: int = 9, n_words: int = 15, max_len: int = 14, empty: bool = True):
    """(words, doc_offsets) with varied lengths, some documents empty."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0 if empty else 1, max_len, n_docs)
    offsets = np.zeros(n_docs + 1, np.int64)
    offsets[1:] = np.cumsum(lengths)
    # a skewed word distribution, so words have few topics and documents topical runs
    words = np.minimum(rng.zipf(1.6, int(offsets[-1])) - 1, n_words - 1).astype(np.int32)
    return words, offsets


def assert_counts_exact(words, offsets, topics, counts, n_words, n_topics):
    for got, want in zip(counts, ref.count_topics(words, offsets, topics, n_words, n_topics)):
        np.testing.assert_array_equal(got, want)


# -- the dense sampler: the Numba twin draws the reference's topics --------------------------------

@pytest.mark.parametrize("schedule", [0, 1])
@pytest.mark.parametrize("case", [(0, 4, 0.1, 0.01), (1, 7, 0.5, 0.2), (2, 1, 0.3, 0.05), (3, 20, 0.05, 0.5)])
def test_numba_dense_draws_the_reference_topics(schedule, case):
    seed, K, alpha, beta = case
    words, offsets = random_corpus(seed)
    V = 15
    a = np.linspace(alpha, 2 * alpha, K)  # asymmetric: the per-topic prior is honoured
    key0 = iteration_key(seed, 2**32)
    z_cpu, z_ref = cpu.init_topics(len(words), K, key0), ref.init_topics(len(words), K, key0)
    np.testing.assert_array_equal(z_cpu, z_ref)
    c_cpu = list(cpu.count_topics(words, offsets, z_cpu, V, K))
    c_ref = list(ref.count_topics(words, offsets, z_ref, V, K))
    for it in range(8):
        key = iteration_key(seed, it)
        cpu.sample_dense(words, offsets, z_cpu, *c_cpu, a, beta, key, schedule)
        ref.sample_dense(words, offsets, z_ref, *c_ref, a, beta, key, schedule)
        np.testing.assert_array_equal(z_cpu, z_ref)
        for got, want in zip(c_cpu, c_ref):
            np.testing.assert_array_equal(got, want)
        assert_counts_exact(words, offsets, z_cpu, c_cpu, V, K)


def test_numba_fold_in_draws_the_reference_topics():
    words, offsets = random_corpus(5)
    V, K = 15, 5
    rng = np.random.default_rng(1)
    n_wk = rng.integers(0, 6, (V, K)).astype(np.int32)
    n_k = n_wk.sum(0).astype(np.int32)
    alpha = np.full(K, 0.2)
    z_cpu = cpu.init_topics(len(words), K, 11)
    z_ref = z_cpu.copy()
    nd_cpu = cpu.count_topics(words, offsets, z_cpu, V, K)[0]
    nd_ref = nd_cpu.copy()
    for it in range(5):
        cpu.fold_in(words, offsets, z_cpu, nd_cpu, n_wk, n_k, alpha, 0.05, it)
        ref.fold_in(words, offsets, z_ref, nd_ref, n_wk, n_k, alpha, 0.05, it)
        np.testing.assert_array_equal(z_cpu, z_ref)
        np.testing.assert_array_equal(nd_cpu, nd_ref)
    assert (n_wk.sum(0) == n_k).all()  # the word counts are left alone


def word_runs(words, n_words):
    word_tokens = np.argsort(words, kind="stable").astype(np.int32)
    word_offsets = np.concatenate(([0], np.cumsum(np.bincount(words, minlength=n_words)))).astype(np.int64)
    return word_offsets, word_tokens


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numba_mh_draws_the_reference_topics(seed):
    words, offsets = random_corpus(seed)
    V, K = 15, 6
    alpha = np.linspace(0.1, 0.4, K)
    word_offsets, word_tokens = word_runs(words, V)
    z_cpu = cpu.init_topics(len(words), K, 5)
    z_ref = z_cpu.copy()
    c_cpu = list(cpu.count_topics(words, offsets, z_cpu, V, K))
    c_ref = [c.copy() for c in c_cpu]
    for it in range(6):
        cpu.sample_mh(words, offsets, word_offsets, word_tokens, z_cpu, *c_cpu, alpha, 0.05, it, 4)
        ref.sample_mh(words, offsets, word_offsets, word_tokens, z_ref, *c_ref, alpha, 0.05, it, 4)
        np.testing.assert_array_equal(z_cpu, z_ref)
        assert_counts_exact(words, offsets, z_cpu, c_cpu, V, K)


def test_the_model_dense_sequential_is_plain_collapsed_gibbs():
    words, offsets = random_corpus(8, empty=False)
    corpus = TokenCorpus(words, offsets, [f"w{i}" for i in range(15)])
    model = LDA(n_topics=4, alpha=0.3, beta=0.1, n_iter=6, seed=5, sampler="dense", schedule="sequential",
                init="random", backend="cpu").fit(corpus)
    z = ref.init_topics(len(words), 4, iteration_key(5, 2**32))
    counts = list(ref.count_topics(words, offsets, z, 15, 4))
    for it in range(6):
        ref.sample_dense(words, offsets, z, *counts, np.full(4, 0.3), 0.1, iteration_key(5, it), 0)
    np.testing.assert_array_equal(model.topics_, z)
    np.testing.assert_array_equal(model.n_dk_, counts[0])


# -- invariants after every sweep --------------------------------------------------------------

def check_sparse_lists(state, n_dk, n_wk):
    """The sampler's topic lists hold exactly the nonzero topics (word lists with their counts,
    largest first)."""
    for d in range(n_dk.shape[0]):
        base, n = state.doc_list_offsets[d], state.doc_nnz[d]
        assert sorted(state.doc_lists[base:base + n].tolist()) == np.flatnonzero(n_dk[d]).tolist()
    for w in range(n_wk.shape[0]):
        base, n = state.word_list_offsets[w], state.word_nnz[w]
        topics, counts = state.word_lists[base:base + n], state.word_list_counts[base:base + n]
        assert sorted(topics.tolist()) == np.flatnonzero(n_wk[w]).tolist()
        np.testing.assert_array_equal(counts, n_wk[w, topics])
        assert (np.diff(counts) <= 0).all()


@pytest.mark.parametrize("sampler", ["sequential", "jacobi", "sparse-1", "sparse-3", "progressive-2", "blocks-3",
                                     "blocks-progressive-2"])
def test_counts_agree_with_the_assignments_after_every_sweep(sampler):
    words, offsets = random_corpus(4, n_docs=30, n_words=40, max_len=30)
    V, K = 40, 12
    alpha = np.linspace(0.05, 0.4, K)
    z = cpu.init_topics(len(words), K, 3)
    counts = list(cpu.count_topics(words, offsets, z, V, K))
    state = None
    sweep = cpu.sample_blocks_dense if sampler.startswith("blocks") else cpu.sample_sparse
    if sampler.startswith(("sparse", "progressive", "blocks")):
        P = int(sampler.split("-")[-1])
        if "progressive" in sampler:
            counts = [np.zeros_like(c) for c in counts]
        state = cpu.sparse_state(words, offsets, z, counts[0], counts[1], P)
        if "progressive" in sampler:
            sweep(state, *counts, alpha, 0.02, 99, initial=True)
    for it in range(12):
        if state is None:
            cpu.sample_dense(words, offsets, z, *counts, alpha, 0.02, it, 0 if sampler == "sequential" else 1)
            topics = z
        else:
            if it:
                sweep(state, *counts, alpha, 0.02, it)
            topics = state.corpus_topics()
            if sweep is cpu.sample_sparse:
                check_sparse_lists(state, counts[0], counts[1])
        assert_counts_exact(words, offsets, topics, counts, V, K)
        assert ((topics >= 0) & (topics < K)).all()


# -- the conditional of one token against the closed form --------------------------------------

def one_token_state(seed: int, K: int):
    """A small state with varied counts; token 0 (document 0) is the one resampled."""
    words, offsets = random_corpus(seed, n_docs=6, n_words=10, max_len=12, empty=False)
    rng = np.random.default_rng(seed)
    z = (rng.zipf(1.5, len(words)) % K).astype(np.int32)  # a few dominant topics: sparse rows
    return words, offsets, z


def closed_form(words, offsets, z, V, K, alpha, beta):
    n_dk, n_wk, n_k = ref.count_topics(words, offsets, z, V, K)
    t, w = z[0], words[0]
    n_dk[0, t] -= 1
    n_wk[w, t] -= 1
    n_k[t] -= 1
    p = np.array(ref.conditional(n_dk[0], n_wk[w], n_k, alpha, beta, V))
    return p / p.sum()


@pytest.mark.parametrize("sampler", ["dense", "sparse", "blocks"])
@pytest.mark.parametrize("priors", [(0.1, 0.01), (0.8, 0.5), (2.0, 0.05)])
def test_the_conditional_of_one_token_is_the_closed_form(sampler, priors):
    K, V = 7, 10
    alpha = np.linspace(priors[0], 2 * priors[0], K)
    beta = priors[1]
    words, offsets, z0 = one_token_state(3, K)
    p = closed_form(words, offsets, z0, V, K, alpha, beta)
    draws = 4000
    seen = np.zeros(K, np.int64)
    for j in range(draws):
        z = z0.copy()
        counts = list(cpu.count_topics(words, offsets, z, V, K))
        # token 0 is the first one drawn in either sampler (one block: layout order = corpus order),
        # so it sees the state exactly; the later tokens do not matter
        if sampler == "dense":
            cpu.sample_dense(words, offsets, z, *counts, alpha, beta, iteration_key(17, j), 0)
            seen[z[0]] += 1
        else:
            state = cpu.sparse_state(words, offsets, z, counts[0], counts[1], 1)
            assert state.index[0] == 0
            sweep = cpu.sample_sparse if sampler == "sparse" else cpu.sample_blocks_dense
            sweep(state, *counts, alpha, beta, iteration_key(17, j))
            seen[state.topics[0]] += 1
    expected = draws * p
    statistic = float(((seen - expected) ** 2 / expected).sum())
    assert statistic < chi2.ppf(0.999, K - 1), (seen.tolist(), expected.round(1).tolist())


# -- the SparseLDA sampler is deterministic whatever the thread count ---------------------------

@pytest.mark.parametrize("sweep", [cpu.sample_sparse, cpu.sample_blocks_dense])
def test_block_samplers_give_the_same_topics_for_any_thread_count(sweep):
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread here")
    words, offsets = random_corpus(6, n_docs=60, n_words=80, max_len=50)
    V, K = 80, 25
    results = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            z = cpu.init_topics(len(words), K, 4)
            counts = list(cpu.count_topics(words, offsets, z, V, K))
            state = cpu.sparse_state(words, offsets, z, counts[0], counts[1], 4)
            for it in range(6):
                sweep(state, *counts, np.full(K, 0.1), 0.01, it)
            results.append((state.corpus_topics(), counts))
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)


def test_partitions_come_from_the_data_only():
    assert cpu.n_partitions_for(100, 5, 5) == 1
    assert cpu.n_partitions_for(10**6, 3, 10**4) == 3
    assert cpu.n_partitions_for(10**8, 10**6, 10**6) == 8


# -- the log-likelihood is the lda package's ----------------------------------------------------

def test_log_likelihood_is_the_lda_packages():
    lda_inner = require("lda._lda")
    rng = np.random.default_rng(2)
    words, offsets = random_corpus(9, n_docs=20, n_words=30, max_len=40)
    z = rng.integers(0, 6, len(words)).astype(np.int32)
    n_dk, n_wk, n_k = cpu.count_topics(words, offsets, z, 30, 6)
    lengths = np.diff(offsets)
    theirs = lda_inner._loglikelihood(np.asfortranarray(n_wk.T.astype(np.intc)), n_dk.astype(np.intc),
                                      n_k.astype(np.intc), lengths.astype(np.intc), 0.1, 0.01)
    assert log_likelihood(n_dk, n_wk, n_k, lengths, 0.1, 0.01) == pytest.approx(theirs, rel=1e-12)
    asymmetric = np.linspace(0.05, 1.0, 6)
    assert log_likelihood(n_dk, n_wk, n_k, lengths, asymmetric, 0.3) == pytest.approx(
        ref.log_likelihood(n_dk, n_wk, n_k, lengths, asymmetric, 0.3), rel=1e-12)


def test_a_fitted_model_reports_the_lda_packages_log_likelihood_of_its_counts():
    lda_inner = require("lda._lda")
    docs = [["a", "b", "a", "c"], ["c", "d", "d"], ["a", "b"], ["d", "c", "e"]] * 4
    model = LDA(n_topics=3, n_iter=7, eval_every=7, backend="cpu").fit(docs)
    theirs = lda_inner._loglikelihood(np.asfortranarray(model.n_wk_.T.astype(np.intc)), model.n_dk_.astype(np.intc),
                                      model.n_k_.astype(np.intc), model.n_dk_.sum(1).astype(np.intc), 0.1, 0.01)
    assert model.loglikelihood_[-1][0] == 7
    assert model.loglikelihood_[-1][1] == pytest.approx(theirs / model.n_dk_.sum(), rel=1e-12)


# -- the estimator ------------------------------------------------------------------------------

TOY = [["apple", "banana", "apple", "cherry"], ["dog", "cat", "dog", "mouse"], ["banana", "cherry", "apple"],
       ["cat", "mouse", "dog"], []] * 8


@pytest.mark.parametrize("sampler, schedule", [("dense", "sequential"), ("dense", "blocks"), ("dense", "jacobi"),
                                               ("sparse", "blocks"), ("sparse", "sequential"), ("mh", "jacobi")])
def test_fit_learns_the_two_obvious_topics(sampler, schedule):
    model = LDA(n_topics=2, alpha=0.1, beta=0.01, n_iter=60, seed=2, sampler=sampler, schedule=schedule,
                backend="cpu").fit(TOY)
    assert (model.sampler_, model.schedule_) == (sampler, schedule)
    assert model.fit(TOY) is model
    K, V, D = 2, 6, len(TOY)
    assert model.topic_word_.shape == (K, V) and model.components_.shape == (K, V)
    assert model.doc_topic_.shape == (D, K) and model.n_dk_.shape == (D, K) and model.n_wk_.shape == (V, K)
    np.testing.assert_allclose(model.topic_word_.sum(1), 1.0)
    np.testing.assert_allclose(model.doc_topic_.sum(1), 1.0)
    np.testing.assert_array_equal(model.doc_topic_[4], [0.5, 0.5])  # the empty document: alpha normalised
    fruit = {frozenset(words) for words in model.top_words(3)}
    assert fruit == {frozenset({"apple", "banana", "cherry"}), frozenset({"dog", "cat", "mouse"})}
    lls = [ll for _, ll in model.loglikelihood_]
    assert lls[-1] > lls[0] and all(np.isfinite(lls))
    assert model.topics_.shape == (sum(map(len, TOY)),)


def test_same_seed_same_model_and_seeds_differ():
    a = LDA(n_topics=3, n_iter=10, seed=4, backend="cpu").fit(TOY)
    b = LDA(n_topics=3, n_iter=10, seed=4, backend="cpu").fit(TOY)
    c = LDA(n_topics=3, n_iter=10, seed=5, backend="cpu").fit(TOY)
    np.testing.assert_array_equal(a.topics_, b.topics_)
    assert not np.array_equal(a.topics_, c.topics_)


def test_inputs_csr_token_lists_and_ldac_give_one_model(tmp_path):
    docs = [[0, 1, 1, 3], [2, 2, 3], [], [0, 3]]
    X = sp.csr_matrix(np.array([[1, 2, 0, 1], [0, 0, 2, 1], [0, 0, 0, 0], [1, 0, 0, 1]]))
    ldac = tmp_path / "c.ldac"
    ldac.write_text("3 0:1 1:2 3:1\n2 2:2 3:1\n0\n2 0:1 3:1\n")
    models = [LDA(n_topics=2, n_iter=5, seed=1, backend="cpu").fit(x) for x in (docs, X, str(ldac))]
    for m in models[1:]:
        np.testing.assert_array_equal(m.n_wk_, models[0].n_wk_)


def test_empty_corpus_and_bad_parameters_raise_clear_errors():
    for empty in ([], [[], []], sp.csr_matrix((3, 4), dtype=np.int64)):
        with pytest.raises(ValueError, match="no tokens"):
            LDA(n_topics=2, backend="cpu").fit(empty)
    for bad, match in [(dict(alpha=0.0), "alpha"), (dict(alpha=-1), "alpha"), (dict(alpha=float("nan")), "alpha"),
                       (dict(alpha=[0.1, 0.2]), "alpha"), (dict(beta=0), "beta"), (dict(beta=float("inf")), "beta"),
                       (dict(n_topics=0), "n_topics"), (dict(n_iter=-1), "n_iter"), (dict(sampler="x"), "sampler"),
                       (dict(schedule="x"), "schedule"), (dict(init="x"), "init"),
                       (dict(optimize_alpha=1), "optimize_alpha"),
                       (dict(sampler="sparse", schedule="jacobi"), "jacobi"),
                       (dict(sampler="mh", schedule="blocks"), "jacobi"),
                       (dict(sampler="dense", schedule="jacobi", init="progressive"), "progressive")]:
        with pytest.raises(ValueError, match=match):
            LDA(**{"n_topics": 3, "backend": "cpu", **bad}).fit(TOY)


@pytest.mark.parametrize("priors", [(1e-6, 1e-6), (1e-3, 50.0), (100.0, 1e-5), (5.0, 5.0)])
@pytest.mark.parametrize("sampler", ["dense", "sparse"])
def test_no_nan_for_any_positive_priors_and_more_topics_than_words(priors, sampler):
    model = LDA(n_topics=9, alpha=priors[0], beta=priors[1], n_iter=8, seed=3, sampler=sampler,
                backend="cpu").fit(TOY)  # 9 topics > 6 words
    for array in (model.topic_word_, model.doc_topic_):
        assert np.isfinite(array).all()
    assert all(math.isfinite(ll) for _, ll in model.loglikelihood_)
    theta = model.transform([["apple", "unknown"], ["zzz"]], n_iter=6)
    assert np.isfinite(theta).all()
    np.testing.assert_allclose(theta.sum(1), 1.0)
    assert math.isfinite(model.perplexity(TOY[:4], n_iter=4))


def test_transform_drops_unknown_words_and_keeps_empty_documents():
    model = LDA(n_topics=2, n_iter=60, seed=2, backend="cpu").fit(TOY)
    fruit = int(np.argmax(model.topic_word_[:, model.vocabulary_.index("apple")]))
    theta = model.transform([["apple", "banana", "nonsense", "words"], [], ["unheard", "of"]], n_iter=40)
    assert theta[0, fruit] > 0.7
    np.testing.assert_allclose(theta[1], model.alpha_ / model.alpha_.sum())
    np.testing.assert_allclose(theta[2], model.alpha_ / model.alpha_.sum())
    # a corpus with another vocabulary is mapped by word
    other = as_corpus([["banana", "apple", "kiwi"]])
    assert model.transform(other, n_iter=40)[0, fruit] > 0.7


def test_perplexity_by_document_completion():
    model = LDA(n_topics=2, n_iter=60, seed=2, backend="cpu").fit(TOY)
    perplexity = model.perplexity(TOY[:4] * 3)
    assert 1.0 < perplexity < 6.0  # 6 words: a uniform model scores 6; the topics do better
    assert model.score(TOY[:4] * 3) == pytest.approx(-math.log(perplexity))
    uniform = np.full((2, 6), 1 / 6)
    words = as_corpus(TOY[:4] * 3, vocabulary=model.vocabulary_)
    assert heldout_perplexity(uniform, words, 0.1) == pytest.approx(6.0)
    # ids beyond phi's columns are dropped; empty documents (a trailing one too) are fine
    assert heldout_perplexity(uniform, [[0, 1, 9, 2], [], [0, 1], []], [0.1, 0.2]) == pytest.approx(6.0)
    with pytest.raises(ValueError, match="no tokens"):
        model.perplexity([[], []])  # nothing to score


def test_save_and_load_round_trip_without_pickle(tmp_path):
    model = LDA(n_topics=3, alpha=[0.1, 0.2, 0.3], n_iter=12, seed=7, backend="cpu").fit(TOY)
    path = tmp_path / "model.npz"
    model.save(path)
    with np.load(path, allow_pickle=False) as data:
        assert data["vocabulary"].dtype.kind == "U"
    loaded = LDA.load(path)
    assert loaded.get_params() == {**model.get_params(), "alpha": [0.1, 0.2, 0.3]}
    for name in ("topic_word_", "components_", "doc_topic_", "n_wk_", "n_k_", "n_dk_", "alpha_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(model, name))
    assert loaded.vocabulary_ == model.vocabulary_ and loaded.loglikelihood_ == model.loglikelihood_
    np.testing.assert_array_equal(loaded.transform(TOY[:3], 10), model.transform(TOY[:3], 10))
    (tmp_path / "other.npz").write_bytes(b"not a model")
    with pytest.raises(Exception):
        LDA.load(tmp_path / "other.npz")


def test_progress_gets_every_evaluation_with_its_speed():
    seen = []
    model = LDA(n_topics=2, n_iter=25, eval_every=10, backend="cpu").fit(TOY, progress=seen.append)
    assert [e["iteration"] for e in seen] == [0, 10, 20, 25] == [i for i, _ in model.loglikelihood_]
    assert all(e["tokens_per_second"] > 0 for e in seen[1:])
    assert model.history_ == seen


def test_optimize_alpha_learns_an_asymmetric_prior():
    rng = np.random.default_rng(0)
    # documents dominated by topic 0's words, a few of topic 1's
    docs = [["a", "b", "c"] * int(rng.integers(3, 8)) + ["x", "y"] * int(rng.integers(0, 2)) for _ in range(60)]
    model = LDA(n_topics=2, alpha=0.5, n_iter=40, eval_every=5, optimize_alpha=True, seed=1, backend="cpu").fit(docs)
    assert model.alpha_.shape == (2,) and (model.alpha_ > 0).all()
    assert not np.allclose(model.alpha_, 0.5)
    assert model.history_[-1]["alpha_sum"] == pytest.approx(model.alpha_.sum())
    n_dk = np.array([[9, 1], [8, 2], [10, 0]])
    a = optimize_alpha(np.full(2, 0.5), n_dk, n_dk.sum(1))
    assert a[0] > a[1] > 0


# -- Reuters: the log-likelihood trace within the lda package's seed-to-seed spread ----------------

@pytest.mark.slow
def test_reuters_trace_within_the_lda_packages_seed_spread():
    """K=20, alpha=0.1, beta=0.01 on Reuters (84k tokens), from random topics as the lda package
    starts: at every evaluation from 20 sweeps on, the mean of our chains over three seeds lies in
    the band of the lda package's four seeds widened by their seed-to-seed spread (the widest
    min-max gap over the evaluations: one chain's position at one sweep is noisy)."""
    lda = require("lda")
    import logging

    logging.getLogger("lda").setLevel(logging.WARNING)
    corpus = as_corpus(str(shared_data("lda-reuters/reuters.ldac")))
    X = corpus.to_csr()
    iters, every, K = 80, 10, 20
    theirs = []
    for seed in (1, 2, 3, 4):
        m = lda.LDA(n_topics=K, n_iter=iters + 1, alpha=0.1, eta=0.01, random_state=seed, refresh=every).fit(X)
        theirs.append(np.array(m.loglikelihoods_[1:]) / corpus.n_tokens)  # after 10, 20, ... sweeps
    theirs = np.array(theirs)[:, 1:]
    low, high = theirs.min(0), theirs.max(0)
    spread = float((high - low).max())
    for kwargs in (dict(sampler="sparse", init="random"), dict(sampler="dense", schedule="sequential", init="random")):
        traces = [[ll for it, ll in LDA(n_topics=K, n_iter=iters, eval_every=every, seed=seed, backend="cpu",
                                        **kwargs).fit(corpus).loglikelihood_ if it >= 2 * every]
                  for seed in (1, 2, 3)]
        mean = np.array(traces).mean(0)
        assert ((mean >= low - spread) & (mean <= high + spread)).all(), (kwargs, mean, low, high, spread)
    # the progressive start (init="progressive") is at least as good at every evaluation
    progressive = LDA(n_topics=K, n_iter=iters, eval_every=every, seed=1, init="progressive", backend="cpu").fit(corpus)
    assert (np.array([ll for it, ll in progressive.loglikelihood_ if it >= 2 * every]) >= low - spread).all()
