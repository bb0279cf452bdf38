"""LDA evaluation and files: coherence against gensim's CoherenceModel, top words, the seed's files."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpu_text.lda.coherence import coherence, top_words, topic_coherence, window_counts
from gpu_text.lda.corpus import as_corpus
from gpu_text.lda.files import (load_pyldavis, phi_matrix, pyldavis_data, read_phi, read_theta, read_vocab,
                                save_pyldavis, write_model_files, write_phi, write_theta, write_vocab)
import gpu_text.lda.coherence as coherence_module
from tests.conftest import require


def random_texts(seed, n_docs=50, vocab=25, longest=140):
    """Skewed word frequencies: words repeat within windows (where gensim's sliding differs from
    the plain definition), short and empty documents too."""
    rng = np.random.default_rng(seed)
    words = [f"t{i}" for i in range(vocab)]
    p = rng.dirichlet(np.full(vocab, 0.4))
    texts = [list(rng.choice(words, size=int(rng.integers(0, longest)), p=p)) for _ in range(n_docs)]
    texts[0] = []
    return texts


def random_topics(seed, texts, k=5, n=6):
    rng = np.random.default_rng(seed)
    present = sorted({w for t in texts for w in t})
    return [list(rng.choice(present, n, replace=False)) for _ in range(k)]


@pytest.mark.parametrize("measure", ["c_npmi", "c_v"])
@pytest.mark.parametrize("window_size", [None, 2, 5, 30])
@pytest.mark.parametrize("seed", [1, 2])
def test_coherence_equals_gensims(measure, window_size, seed):
    gensim = require("gensim")
    from gensim.corpora import Dictionary
    from gensim.models import CoherenceModel

    texts = random_texts(seed)
    topics = random_topics(seed, texts)
    model = CoherenceModel(topics=topics, texts=texts, dictionary=Dictionary(texts), coherence=measure,
                           window_size=window_size, processes=1)
    expected = np.array(model.get_coherence_per_topic())
    got = topic_coherence(topics, texts, measure, window_size)
    # the same counts, the same float64 formulas: only the summation order differs
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert coherence(topics, texts, measure, window_size) == pytest.approx(model.get_coherence(), abs=1e-12)
    assert gensim.__version__.startswith("4.")


def brute_force_counts(texts, window_size, words):
    """Windows, and for each word and pair the windows holding them, by visiting every window."""
    windows = []
    for t in texts:
        if len(t) < window_size:
            windows.append(set(t))
        else:
            windows += [set(t[j:j + window_size]) for j in range(len(t) - window_size + 1)]
    occ = {w: sum(w in s for s in windows) for w in words}
    co = {(a, b): sum(a in s and b in s for s in windows) for a, b in itertools.combinations(words, 2)}
    return occ, co, len(windows)


@pytest.mark.parametrize("window_size", [1, 3, 12])
def test_boolean_windows_equal_a_brute_force_count(window_size):
    texts = random_texts(5, n_docs=30, vocab=12, longest=60)
    corpus = as_corpus(texts)
    words = corpus.vocabulary[:8]
    relevant = np.arange(8)
    pairs = np.array([a * 8 + b for a, b in itertools.combinations(range(8), 2)])
    occ, co, n = window_counts(corpus, relevant, pairs, window_size, "boolean")
    b_occ, b_co, b_n = brute_force_counts(texts, window_size, words)
    assert n == b_n
    assert occ.tolist() == [b_occ[w] for w in words]
    assert co.tolist() == [b_co[words[a], words[b]] for a, b in itertools.combinations(range(8), 2)]


def test_chunked_pair_expansion_gives_the_same_counts(monkeypatch):
    texts = random_texts(7)
    topics = random_topics(7, texts)
    whole = topic_coherence(topics, texts, "c_v", 20)
    monkeypatch.setattr(coherence_module, "PAIR_CHUNK", 5)
    np.testing.assert_array_equal(topic_coherence(topics, texts, "c_v", 20), whole)


def test_windows_modes_differ_only_with_repeats():
    no_repeats = [["a", "b", "c", "d", "e"], ["c", "a", "e"]]
    topics = [["a", "b", "c"], ["d", "e", "a"]]
    for measure in ("c_npmi", "c_v"):
        g = topic_coherence(topics, no_repeats, measure, 3)
        np.testing.assert_array_equal(g, topic_coherence(topics, no_repeats, measure, 3, windows="boolean"))
    repeats = [["a", "b", "a", "c", "d", "a", "b"]]
    assert not np.array_equal(topic_coherence(topics, repeats, "c_npmi", 3),
                              topic_coherence(topics, repeats, "c_npmi", 3, windows="boolean"))


def test_coherence_inputs():
    texts = [["apple", "pie", "apple", "tea"], ["tea", "cake"]]
    class Model:  # anything with top_words(n)
        def top_words(self, n):
            return [["apple", "pie", "tea"][:n]]
    assert topic_coherence(Model(), texts, top_n=2).tolist() == topic_coherence([["apple", "pie"]], texts).tolist()
    corpus = as_corpus(texts)
    assert topic_coherence([["tea", "cake"]], corpus).tolist() == topic_coherence([["tea", "cake"]], texts).tolist()
    # a word the reference corpus lacks: its pairs count 0, nothing is NaN
    assert topic_coherence([["apple", "nowhere"]], texts).tolist() == [0.0]
    assert np.isfinite(topic_coherence([["apple", "nowhere", "tea"]], texts, "c_v")).all()
    with pytest.raises(ValueError, match="measure"):
        topic_coherence([["a"]], texts, "u_mass")
    with pytest.raises(ValueError, match="window_size"):
        topic_coherence([["a"]], texts, window_size=0)
    with pytest.raises(ValueError, match="repeats"):
        topic_coherence([["a", "a"]], texts)
    with pytest.raises(TypeError, match="list of words"):
        topic_coherence([[1, 2]], texts)


def test_top_words():
    phi = np.array([[0.2, 0.5, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]])
    assert top_words(phi, list("abcd"), 3) == [["b", "a", "c"], ["a", "b", "c"]]
    assert top_words(phi, list("abcd"), 10)[0] == ["b", "a", "c", "d"]
    with pytest.raises(ValueError, match="K x V"):
        top_words(phi, list("abc"))


class Fitted:
    """What the writers read of a fitted LDA."""

    def __init__(self, seed=0, k=3, v=7, d=4):
        rng = np.random.default_rng(seed)
        self.n_wk_ = rng.integers(0, 5, (v, k)).astype(np.int32)
        self.n_dk_ = rng.integers(0, 5, (d, k)).astype(np.int32)
        self.topic_word_ = (self.n_wk_.T + 0.01) / (self.n_wk_.sum(0)[:, None] + v * 0.01)
        self.doc_topic_ = (self.n_dk_ + 0.1) / (self.n_dk_.sum(1)[:, None] + k * 0.1)
        self.vocabulary_ = ["w:0", "ü", "x y", "w3", "w4", "w5", "w6"]


def test_files_round_trip(tmp_path):
    model = Fitted()
    paths = write_model_files(model, tmp_path)
    assert read_vocab(paths[0]) == model.vocabulary_
    topics = read_phi(paths[1])
    assert len(topics) == 3 and all(len(t) == 7 for t in topics)
    assert [p for _, p in topics[0]] == sorted((p for _, p in topics[0]), reverse=True)
    np.testing.assert_allclose(phi_matrix(topics, model.vocabulary_), model.topic_word_, rtol=1e-8)
    np.testing.assert_allclose(read_theta(paths[2]), model.doc_topic_, rtol=1e-8)
    data = load_pyldavis(paths[3])
    expected = pyldavis_data(model)
    assert data["vocab"] == model.vocabulary_
    for key in ("topic_term_dists", "doc_topic_dists", "doc_lengths", "term_frequency"):
        np.testing.assert_array_equal(data[key], expected[key])
    assert data["doc_lengths"].tolist() == model.n_dk_.sum(1).tolist()
    write_phi(tmp_path / "top.phi", model.topic_word_, model.vocabulary_, top=2)
    top = read_phi(tmp_path / "top.phi")
    assert [[w for w, _ in t] for t in top] == top_words(model.topic_word_, model.vocabulary_, 2)
    text = (tmp_path / "top.phi").read_text()
    assert text.startswith("Topic 0:\n") and "\nTopic 2:\n" in text


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.phi"
    for content, message in [("a:0.5\n", ":1: expected 'Topic k:'"), ("Topic 1:\n", "expected 'Topic 0:'"),
                             ("Topic 0:\na:x\n", ":2: 'x' is not a probability"), ("Topic 0:\nnocolon\n", ":2:")]:
        bad.write_text(content)
        with pytest.raises(ValueError, match=message):
            read_phi(bad)
    (tmp_path / "bad.theta").write_text("0.5 0.5\n1\n")
    with pytest.raises(ValueError, match=":2: 1 values"):
        read_theta(tmp_path / "bad.theta")
    with pytest.raises(ValueError, match="a word per line"):
        write_vocab(tmp_path / "v", ["a\nb"])
    assert not (tmp_path / "v").exists()
    with pytest.raises(ValueError, match="lacks"):
        save_pyldavis(tmp_path / "x.npz", {"vocab": []})
    np.savez(tmp_path / "other.npz", a=np.zeros(1))
    with pytest.raises(ValueError, match="not a pyLDAvis data file"):
        load_pyldavis(tmp_path / "other.npz")
    write_theta(tmp_path / "ok.theta", np.zeros((0, 3)))
    assert read_theta(tmp_path / "ok.theta").shape == (0, 0)


# -- the .theta text: %.9g exactly, from the Numba formatter --------------------------------------

def test_theta_text_is_printf_percent_9g_to_the_character(tmp_path):
    from gpu_text.lda.files import read_theta, write_theta

    rng = np.random.default_rng(11)
    theta = rng.dirichlet(np.full(30, 0.05), 500)
    # exact ties of the ninth digit (binary fractions), their neighbours, powers of ten and the
    # exponent form's edges
    ties = np.array([k / 2 ** 10 for k in range(1, 1024)] + [k / 2 ** 20 for k in range(1, 1000, 3)])
    edges = np.array([1.0, 0.1, 1e-4, 9.99999999e-05, 1e-05, 0.99999999949, 0.9999999995, 1e-12, 3e-12, 5e8])
    special = np.concatenate([ties, np.nextafter(ties, 0), np.nextafter(ties, 1), edges])
    special = np.resize(special, (len(special) // 30 + 1) * 30).reshape(-1, 30)
    for values in (theta, special, np.array([[0.0, np.nan, 0.5]]), np.zeros((0, 3))):
        path = tmp_path / "m.theta"
        write_theta(path, values)
        expected = "".join(" ".join(row) + "\n" for row in np.char.mod("%.9g", values).tolist())
        assert path.read_text() == expected
        if values.size and np.isfinite(values).all():
            np.testing.assert_allclose(read_theta(path), values, rtol=1e-8)
