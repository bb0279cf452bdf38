"""Spherical k-means of word vectors: planted clusters, determinism, backends, files and the CLI.

No kernel of its own: both steps are matrix products of the backend's array module, so the CPU
and the emulated CUDA backend (numpy too) run the same code; on a real GPU it is cupy's.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from gpu_text.word2vec import KeyedVectors, SphericalKMeans, write_clusters
from tests.test_word2vec import assert_one_line_error, run_cli


def planted(seed, k=8, n=2000, dim=24, noise=0.25):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, dim))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    truth = rng.integers(0, k, n)
    points = centers[truth] + noise * rng.standard_normal((n, dim)) / np.sqrt(dim)
    # lengths vary: only the directions may matter
    points *= rng.uniform(0.1, 10.0, (n, 1))
    return points.astype(np.float32), truth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_planted_clusters(seed):
    points, truth = planted(seed)
    model = SphericalKMeans(n_clusters=8, seed=seed, batch_rows=300, backend="cpu").fit(points)
    # every planted cluster is one found cluster and the other way round
    mapping = {c: Counter(model.labels_[truth == c]).most_common(1)[0][0] for c in range(8)}
    assert sorted(mapping.values()) == list(range(8))
    assert all((model.labels_[truth == c] == mapping[c]).all() for c in range(8))
    assert model.similarity_ > 0.9 and model.n_iter_ < 50
    norms = np.linalg.norm(model.centroids_, axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-5)
    np.testing.assert_array_equal(model.predict(points), model.labels_)


def test_deterministic_for_a_seed_and_independent_of_the_block_size():
    points, _ = planted(5, k=20, noise=1.5)
    a = SphericalKMeans(n_clusters=20, seed=3, batch_rows=128, backend="cpu").fit(points)
    b = SphericalKMeans(n_clusters=20, seed=3, batch_rows=128, backend="cpu").fit(points)
    c = SphericalKMeans(n_clusters=20, seed=4, batch_rows=128, backend="cpu").fit(points)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.centroids_, b.centroids_)
    assert (a.labels_ != c.labels_).any()
    d = SphericalKMeans(n_clusters=20, seed=3, batch_rows=4096, backend="cpu").fit(points)
    # block sums are added in another order: the same clusters, centroids to float32 rounding
    np.testing.assert_array_equal(a.labels_, d.labels_)
    np.testing.assert_allclose(a.centroids_, d.centroids_, atol=1e-5)


def test_cpu_equals_the_emulated_backend(backend):
    points, _ = planted(6)
    cpu = SphericalKMeans(n_clusters=8, seed=1, backend="cpu").fit(points)
    other = SphericalKMeans(n_clusters=8, seed=1, backend=backend).fit(backend.asarray(points))
    np.testing.assert_array_equal(cpu.labels_, other.labels_)
    np.testing.assert_allclose(cpu.centroids_, np.asarray(other.centroids_), atol=1e-6)


def test_empty_clusters_are_refilled_and_duplicates_handled():
    points = np.array([[1, 0]] * 5 + [[0, 1]] * 5, np.float32)
    model = SphericalKMeans(n_clusters=3, backend="cpu").fit(points)
    assert len(set(model.labels_.tolist())) >= 2 and np.isfinite(model.centroids_).all()


def test_bad_parameters_and_inputs():
    with pytest.raises(ValueError, match="n_clusters must be an integer >= 1"):
        SphericalKMeans(n_clusters=0).fit(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="more than the 3 vectors"):
        SphericalKMeans(n_clusters=4, backend="cpu").fit(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="vectors must be finite"):
        SphericalKMeans(n_clusters=1, backend="cpu").fit(np.array([[np.nan, 1.0]], np.float32))
    with pytest.raises(ValueError, match="non-empty"):
        SphericalKMeans(n_clusters=1, backend="cpu").fit(np.zeros((0, 3), np.float32))


def test_keyed_vectors_cluster_and_the_word_cluster_file(tmp_path):
    points, truth = planted(7, k=4, n=200)
    kv = KeyedVectors([f"w{i}" for i in range(200)], points)
    labels = kv.cluster(4, seed=2)
    np.testing.assert_array_equal(labels, SphericalKMeans(n_clusters=4, seed=2, backend="cpu").fit(kv).labels_)
    write_clusters(tmp_path / "c.txt", kv.index_to_key, labels)
    lines = (tmp_path / "c.txt").read_text().splitlines()
    assert lines[:2] == [f"w0 {labels[0]}", f"w1 {labels[1]}"] and len(lines) == 200
    with pytest.raises(ValueError, match="200 keys but 3 labels"):
        write_clusters(tmp_path / "d.txt", kv.index_to_key, labels[:3])
    assert not (tmp_path / "d.txt").exists()


def test_cli_cluster(tmp_path):
    points, truth = planted(8, k=3, n=90, dim=8)
    vectors = tmp_path / "v.txt"
    KeyedVectors([f"w{i}" for i in range(90)], points).save(vectors)
    output = tmp_path / "clusters.txt"
    result = run_cli("word2vec", "cluster", vectors, "--k", "3", "--output", output, "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    pairs = [line.split(" ") for line in output.read_text().splitlines()]
    assert [w for w, _ in pairs] == [f"w{i}" for i in range(90)]
    found = np.array([int(c) for _, c in pairs])
    assert all(len(set(found[truth == c])) == 1 for c in range(3))
    before = vectors.read_bytes()
    bad = tmp_path / "bad.txt"
    assert_one_line_error(run_cli("word2vec", "cluster", vectors, "--k", "91", "--output", bad, "--backend", "cpu"),
                          "--k 91 is more than the 90 words", str(vectors))
    damaged = tmp_path / "damaged.txt"
    damaged.write_text("3 8\nw0 1 2\n")
    assert_one_line_error(run_cli("word2vec", "cluster", damaged, "--k", "2", "--output", bad), str(damaged))
    assert not bad.exists() and vectors.read_bytes() == before


def test_estimator_rules():
    from gpu_text.estimator import NotFittedError

    model = SphericalKMeans(n_clusters=np.int64(2), max_iter=3, n_init=1, seed=9, backend="cpu")
    assert type(model.get_params()["n_clusters"]) is np.int64  # stored unchanged
    with pytest.raises(NotFittedError):
        model.labels_
    points, _ = planted(9, k=2, n=50)
    clone = type(model)(**model.get_params())
    assert model.fit(points) is model
    np.testing.assert_array_equal(clone.fit(points).labels_, model.labels_)
    with pytest.raises(ValueError, match="SphericalKMeans: n_init must be an integer >= 1"):
        SphericalKMeans(n_init=0).fit(points)
    with pytest.raises(ValueError, match="backend must be a Backend or one of"):
        SphericalKMeans(backend="tpu").fit(points)
