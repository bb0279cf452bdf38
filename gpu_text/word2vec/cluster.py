"""Spherical k-means of word vectors (the seed Wavec's clustering tool), batched on the backend.

Vectors are normalised to unit length and clustered by cosine: each point goes to the centroid it
has the largest dot product with, and each centroid becomes the normalised sum of its points
(Dhillon and Modha's spherical k-means). Both steps are matrix products on the backend's array
module (numpy or cupy) over blocks of ``batch_rows`` points: the assignment multiplies a block by
the ``k × dim`` centroids, the update multiplies a one-hot ``k × block`` matrix by the block, so
no kernel of its own is needed and the CPU and CUDA paths share this code. Memory beyond the
vectors is ``batch_rows × k`` floats for the similarities and the one-hot block.

Initialisation is greedy k-means++ on the sphere (as scikit-learn's, seeded
``numpy.random.default_rng(seed)``): the first centroid a uniformly drawn point; for each next one
``2 + ln k`` points are drawn with probability proportional to ``1 - cos`` to their nearest
centroid so far (half the squared distance between unit vectors) and the one leaving the smallest
total is taken. A seed gives the same clusters every time. A cluster left empty takes the point worst served by its
centroid. Iteration stops when no assignment changes or after ``max_iter`` rounds; of ``n_init``
starts (one seeded generator draws them all), the one with the largest mean cosine is kept.

>>> x = np.array([[1, 0.1], [1, -0.1], [-0.1, 1], [0.1, 1]], np.float32)
>>> km = SphericalKMeans(n_clusters=2, backend="cpu").fit(x)
>>> km.labels_.tolist(), km.n_iter_
([0, 0, 1, 1], 2)
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import BACKEND_NAMES, Backend, get_backend
from gpu_text.estimator import Estimator


class SphericalKMeans(Estimator):
    """k-means by cosine similarity (see the module docstring).

    Learned: ``centroids_`` (``k × dim`` unit vectors on the backend's device), ``labels_`` (numpy
    int32 cluster of every point), ``similarity_`` (mean cosine of the points to their centroids,
    the objective maximised), ``n_iter_``.

    >>> SphericalKMeans(n_clusters=3, seed=7)
    SphericalKMeans(n_clusters=3, seed=7)
    """

    def __init__(self, n_clusters: int = 100, max_iter: int = 50, n_init: int = 3, seed: int = 1,
                 batch_rows: int = 8192, backend: str | Backend = "auto") -> None:
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.n_init = n_init
        self.seed = seed
        self.batch_rows = batch_rows
        self.backend = backend

    def fit(self, vectors: Any) -> "SphericalKMeans":
        """Cluster the rows of ``vectors`` (a matrix, or :class:`KeyedVectors`); returns ``self``.

        >>> SphericalKMeans(n_clusters=3, backend="cpu").fit(np.eye(2, dtype=np.float32))
        Traceback (most recent call last):
        ...
        ValueError: n_clusters=3 is more than the 2 vectors to cluster
        """
        for name, minimum in (("n_clusters", 1), ("max_iter", 1), ("n_init", 1), ("seed", 0), ("batch_rows", 1)):
            self._require_int(name, minimum)
        self._require(isinstance(self.backend, Backend) or (isinstance(self.backend, str) and
                                                            self.backend.strip().lower() in BACKEND_NAMES),
                      "backend", f"a Backend or one of {', '.join(map(repr, BACKEND_NAMES))}")
        be = get_backend(self.backend)
        xp = be.xp
        matrix = be.asarray(getattr(vectors, "vectors", vectors))
        if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
            raise ValueError(f"vectors must be a non-empty (n, dim) matrix, got shape {tuple(matrix.shape)}")
        n, k = int(matrix.shape[0]), self.n_clusters
        if k > n:
            raise ValueError(f"n_clusters={k} is more than the {n} vectors to cluster")
        points = matrix.astype(xp.float32)
        norms = xp.sqrt((points * points).sum(axis=1, keepdims=True))
        if not bool(xp.isfinite(norms).all()):
            raise ValueError("vectors must be finite")
        points = points / xp.where(norms > 0, norms, xp.float32(1))
        rng = np.random.default_rng(self.seed)
        best_run = None
        for _ in range(self.n_init):
            run = self._run(xp, points, rng)
            if best_run is None or run[2] > best_run[2]:
                best_run = run
        self.centroids_, self.labels_, self.similarity_, self.n_iter_ = best_run
        return self

    def _run(self, xp: Any, points: Any, rng: np.random.Generator) -> tuple[Any, np.ndarray, float, int]:
        """One k-means++ start iterated to convergence: (centroids, labels, mean cosine, rounds)."""
        centroids = self._init(xp, points, rng)
        labels = None
        for iteration in range(1, self.max_iter + 1):
            new_labels, best = self._assign(xp, points, centroids)
            if labels is not None and bool((new_labels == labels).all()):
                break
            labels = new_labels
            centroids = self._update(xp, points, labels, best, self.n_clusters)
        else:
            iteration = self.max_iter
        labels, best = self._assign(xp, points, centroids)
        return centroids, to_host(labels).astype(np.int32), float(best.astype(xp.float64).mean()), iteration

    def _init(self, xp: Any, points: Any, rng: np.random.Generator) -> Any:
        n = int(points.shape[0])
        tries = 2 + int(np.log(self.n_clusters))
        chosen = [int(rng.integers(n))]
        nearest = points @ points[chosen[0]]
        for _ in range(1, self.n_clusters):
            gap = np.maximum(1.0 - to_host(nearest).astype(np.float64), 0.0)
            gap[chosen] = 0.0
            total = gap.sum()
            if total > 0:
                picks = np.searchsorted(np.cumsum(gap), rng.random(tries) * total, side="right")
                candidates = np.minimum(picks, n - 1)
            else:  # every point already sits on a centroid: any point not chosen yet
                candidates = rng.choice(np.setdiff1d(np.arange(n), chosen), 1)
            # greedy k-means++: of the candidates, the one leaving the smallest total gap
            sims = xp.maximum(nearest[None, :], points[xp.asarray(candidates.astype(np.int64))] @ points.T)
            best = int(np.argmax(to_host(sims.astype(xp.float64).sum(axis=1))))
            chosen.append(int(candidates[best]))
            nearest = sims[best]
        return points[xp.asarray(np.array(chosen, np.int64))].copy()

    def _assign(self, xp: Any, points: Any, centroids: Any) -> tuple[Any, Any]:
        """Best centroid of every point and its cosine, a block of ``batch_rows`` points at a time."""
        n = int(points.shape[0])
        labels = xp.empty(n, xp.int64)
        best = xp.empty(n, xp.float32)
        for start in range(0, n, self.batch_rows):
            sims = points[start:start + self.batch_rows] @ centroids.T
            labels[start:start + self.batch_rows] = xp.argmax(sims, axis=1)
            best[start:start + self.batch_rows] = sims.max(axis=1)
        return labels, best

    def _update(self, xp: Any, points: Any, labels: Any, best: Any, k: int) -> Any:
        n, dim = points.shape
        sums = xp.zeros((k, dim), xp.float32)
        members = xp.arange(k)[:, None]
        for start in range(0, n, self.batch_rows):
            block = labels[start:start + self.batch_rows]
            sums += (members == block[None, :]).astype(xp.float32) @ points[start:start + self.batch_rows]
        sizes = to_host(xp.bincount(labels, minlength=k))
        empty = np.flatnonzero(sizes == 0)
        if empty.size:  # the worst-served points become the empty clusters' centroids
            worst = to_host(xp.argsort(best, kind="stable"))[:empty.size]
            sums[xp.asarray(empty)] = points[xp.asarray(worst)]
        norms = xp.sqrt((sums * sums).sum(axis=1, keepdims=True))
        return sums / xp.where(norms > 0, norms, xp.float32(1))

    def predict(self, vectors: Any) -> np.ndarray:
        """The cluster of every row of ``vectors`` (a matrix or :class:`KeyedVectors`).

        >>> x = np.array([[1, 0], [0, 1]], np.float32)
        >>> km = SphericalKMeans(n_clusters=2, backend="cpu").fit(x)
        >>> km.predict(np.array([[0.9, 0.2]], np.float32)).tolist() == [km.labels_[0]]
        True
        """
        self._check_fitted("centroids_")
        be = get_backend(self.backend)
        xp = be.xp
        points = be.asarray(getattr(vectors, "vectors", vectors)).astype(xp.float32)
        return to_host(self._assign(xp, points, self.centroids_)[0]).astype(np.int32)


def write_clusters(path: str | os.PathLike[str], keys: Sequence[Any], labels: Any) -> None:
    """Writes a ``word cluster`` line per key (Wavec's export), in the keys' order; the file
    appears complete or not at all.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "c.txt")
    >>> write_clusters(path, ["a", "b"], np.array([1, 0]))
    >>> open(path).read()
    'a 1\\nb 0\\n'
    """
    labels = to_host(labels).tolist()
    if len(labels) != len(keys):
        raise ValueError(f"{len(keys)} keys but {len(labels)} labels")
    path = os.fspath(path)
    temporary = f"{path}.{os.getpid()}.partial"
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write("".join(f"{key} {label}\n" for key, label in zip(keys, labels)))
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


__all__ = ["SphericalKMeans", "write_clusters"]
