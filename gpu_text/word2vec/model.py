"""``Word2Vec``: CBOW and skip-gram, hierarchical softmax and negative sampling, parameters as gensim's.

``fit(corpus)`` counts the vocabulary in one pass while encoding the corpus to ids (see
:mod:`gpu_text.word2vec.vocabulary`), then trains ``epochs`` epochs over the encoded ids, which
stay on the backend's device. Every epoch draws the subsampling, the reduced windows and the
negatives from a counter-based hash of (seed, epoch, position), so the draws do not depend on how
the work is split.

Reproducibility: the default is Hogwild (units of ``batch_words`` positions updated in parallel
without locks, as gensim's workers), reproducible in distribution, not bit for bit: which update
lands first varies from run to run. ``deterministic=True`` trains every epoch as one sequential
unit, so the same seed gives bit-identical vectors on the same backend whatever the thread count
or ``batch_words``. It costs all parallelism: one CPU core, or one warp of the GPU.

Initialisation: ``syn0`` uniform in ±0.5/``vector_size`` from ``numpy.random.default_rng(seed)``
(``compat="gensim"``: ±1/``vector_size``, gensim 4.4's draw), ``syn1``/``syn1neg`` zero.

>>> corpus = [["a", "b", "c", "a", "b"], ["b", "c", "a"]] * 20
>>> model = Word2Vec(vector_size=8, min_count=1, epochs=2, deterministic=True, backend="cpu").fit(corpus)
>>> model.wv_.vectors.shape, model.wv_.index_to_key, len(model.history_)
((3, 8), ['b', 'a', 'c'], 2)
"""
from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gpu_text.backend import BACKEND_NAMES, Backend, get_backend
from gpu_text.estimator import Estimator
from gpu_text.word2vec.huffman import huffman_tree
from gpu_text.word2vec.keyed_vectors import KeyedVectors
from gpu_text.word2vec.vocabulary import Vocabulary, build_vocabulary

MASK = (1 << 64) - 1
# gensim's make_cum_table domain
CUM_DOMAIN = 2**31 - 1
# No trained weight comes near this; (1e15)**2 * dim overflows float32 within a few products.
DIVERGED = 1e15


def _mix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def epoch_key(seed: int, epoch: int) -> int:
    """The 64-bit key of every draw of one epoch.

    >>> epoch_key(1, 0) != epoch_key(1, 1) != epoch_key(2, 0)
    True
    """
    return _mix(_mix(seed & MASK) ^ epoch)


def sample_ints(counts: np.ndarray, sample: float) -> np.ndarray:
    """gensim's ``sample_int`` of every word: keep probability ``(sqrt(c/t) + 1) * t/c`` (capped at
    1) times ``2**32 - 1``, with ``t = sample * retained words`` (``sample >= 1``: ``t`` is
    ``int(sample * (3 + sqrt 5) / 2)``, gensim's shorthand).

    >>> sample_ints(np.array([1000, 10]), 1e-3).tolist()
    [140834112, 1798753656]
    """
    counts = np.asarray(counts, np.float64)
    if not sample:
        return np.full(counts.size, 2**32 - 1, np.uint32)
    threshold = sample * counts.sum() if sample < 1.0 else float(int(sample * (3 + np.sqrt(5)) / 2))
    probability = np.minimum((np.sqrt(counts / threshold) + 1) * (threshold / counts), 1.0)
    return (probability * (2**32 - 1)).astype(np.uint32)


def cum_table(counts: np.ndarray, ns_exponent: float) -> np.ndarray:
    """gensim's ``make_cum_table``: rounded cumulative ``count**ns_exponent`` scaled to 2**31 - 1.

    >>> cum_table(np.array([4, 1]), 0.5).tolist()
    [1431655765, 2147483647]
    """
    weights = np.asarray(counts, np.float64) ** float(ns_exponent)
    return np.round(np.cumsum(weights) / weights.sum() * CUM_DOMAIN).astype(np.uint32)


class Word2Vec(Estimator):
    """word2vec with gensim 4.4's parameters and their meaning (see the module docstring).

    ``compat``: ``None`` (the seed's and word2vec.c's choices: word2vec.c's Huffman tie order,
    syn0 uniform in ±0.5/``vector_size``, the exact logistic function) or ``"gensim"``: gensim
    4.4's three instead (its heap's tie order, syn0 uniform in ±1/``vector_size`` drawn exactly as
    gensim draws it for the same seed, its 1000-entry logistic table read at ``(int)((f + 6) * 83)``).
    Given the same random draws a ``"gensim"`` run then makes gensim's updates (a test checks the
    vectors against gensim's after an epoch). The tie order moves the scores most (see
    :mod:`gpu_text.word2vec.huffman`).

    ``segment``: ``None``, or a :class:`~gpu_text.segment.Segmenter`; the corpus is then raw text
    (a path, paths or a ``TextBatch``) cut into its words while it is read (Chinese text to vectors
    in one pass).

    Learned: ``wv_`` (:class:`KeyedVectors`), ``vocab_`` (:class:`Vocabulary`), ``syn1_`` /
    ``syn1neg_`` (output weights, ``None`` when unused), ``loss_`` (the summed loss of all
    epochs when ``compute_loss``, else ``None``), ``history_`` (per epoch: words trained,
    seconds, words/s, final alpha, loss), ``vocab_seconds_``.

    Memory: ``vector_size * 4`` bytes per word for each of syn0 and (HS) syn1 / (NS) syn1neg,
    plus the Huffman codes (≈ 2·log2 V bytes·5 per word); 1M words at dim 300 with HS: 2.4 GB.
    The encoded corpus is 4 bytes per kept token (plus 5 bytes per token for one epoch's draw).

    >>> Word2Vec(sg=1, negative=5, hs=0)
    Word2Vec(sg=1, hs=0, negative=5)
    """

    def __init__(self, vector_size: int = 100, window: int = 5, min_count: int = 5, max_vocab_size: int | None = None,
                 sample: float = 1e-3, sg: int = 0, hs: int = 1, negative: int = 0, ns_exponent: float = 0.75,
                 cbow_mean: int = 1, alpha: float = 0.025, min_alpha: float = 1e-4, epochs: int = 5, seed: int = 1,
                 batch_words: int = 10000, deterministic: bool = False, compute_loss: bool = False,
                 compat: str | None = None, segment: Any = None, backend: str = "auto") -> None:
        self.vector_size = vector_size
        self.window = window
        self.min_count = min_count
        self.max_vocab_size = max_vocab_size
        self.sample = sample
        self.sg = sg
        self.hs = hs
        self.negative = negative
        self.ns_exponent = ns_exponent
        self.cbow_mean = cbow_mean
        self.alpha = alpha
        self.min_alpha = min_alpha
        self.epochs = epochs
        self.seed = seed
        self.batch_words = batch_words
        self.deterministic = deterministic
        self.compute_loss = compute_loss
        self.compat = compat
        self.segment = segment
        self.backend = backend

    def _validate(self) -> None:
        for name, minimum in (("vector_size", 1), ("window", 1), ("min_count", 0), ("negative", 0), ("epochs", 1),
                              ("batch_words", 1), ("seed", 0)):
            self._require_int(name, minimum)
        if self.max_vocab_size is not None:
            self._require_int("max_vocab_size", 1)
        for name in ("sg", "hs", "cbow_mean"):
            self._require(getattr(self, name) in (0, 1) and not isinstance(getattr(self, name), float), name, "0 or 1")
        self._require(bool(self.hs) or self.negative > 0, "hs", "1 when negative is 0 (nothing would be trained)")
        for name, low in (("sample", 0.0), ("min_alpha", 0.0), ("ns_exponent", -math.inf)):
            value = getattr(self, name)
            self._require(isinstance(value, numbers.Real) and math.isfinite(value) and value >= low, name,
                          f"a finite number >= {low}" if low > -math.inf else "a finite number")
        self._require(isinstance(self.alpha, numbers.Real) and math.isfinite(self.alpha) and self.alpha > 0, "alpha",
                      "a finite number > 0")
        self._require(isinstance(self.deterministic, bool), "deterministic", "True or False")
        self._require(isinstance(self.compute_loss, bool), "compute_loss", "True or False")
        self._require(self.compat in (None, "gensim"), "compat", "None or 'gensim'")
        self._require(self.segment is None or callable(getattr(self.segment, "segment", None)), "segment",
                      "None or a Segmenter (raw text is then cut into its words)")
        self._require(isinstance(self.backend, str) and self.backend.strip().lower() in BACKEND_NAMES, "backend",
                      f"one of {', '.join(map(repr, BACKEND_NAMES))}")

    def fit(self, corpus: Any, progress: Callable[[dict[str, Any]], None] | None = None) -> "Word2Vec":
        """Learn the vocabulary and the vectors of ``corpus``; ``progress`` gets each epoch's
        history entry as it ends. Returns ``self``.

        >>> Word2Vec(min_count=3, backend="cpu").fit([["a", "b"], ["a"]])
        Traceback (most recent call last):
        ...
        ValueError: no word occurs at least min_count=3 times (the most frequent, 'a', occurs 2 times)
        """
        self._validate()
        be = get_backend(self.backend)
        started = time.perf_counter()
        vocab, encoded = self._scan(corpus, be)
        vocab_seconds = time.perf_counter() - started
        xp = be.xp
        ops = be.ops("word2vec")
        n_vocab, dim = len(vocab), self.vector_size
        rng = np.random.default_rng(self.seed)
        gensim = self.compat == "gensim"
        syn0 = rng.random((n_vocab, dim), dtype=np.float32)
        if gensim:  # gensim's prep_vectors, in its order of float32 operations
            syn0 *= np.float32(2.0)
            syn0 -= np.float32(1.0)
            syn0 /= np.float32(dim)
        else:
            syn0 = (syn0 - np.float32(0.5)) / np.float32(dim)
        syn0 = be.asarray(np.ascontiguousarray(syn0, np.float32))
        tree = huffman_tree(vocab.counts, "gensim" if gensim else "word2vec") if self.hs else None
        codes = be.asarray(tree.codes if tree else np.zeros(1, np.uint8))
        points = be.asarray(tree.points if tree else np.zeros(1, np.int32))
        code_offsets = be.asarray(tree.offsets if tree else np.zeros(n_vocab + 1, np.int64))
        syn1 = xp.zeros((max(n_vocab - 1, 1), dim) if self.hs else (1, dim), xp.float32)
        syn1neg = xp.zeros((n_vocab, dim) if self.negative else (1, dim), xp.float32)
        cum = be.asarray(cum_table(vocab.counts, self.ns_exponent) if self.negative else np.ones(1, np.uint32))
        keep_ints = be.asarray(sample_ints(vocab.counts, self.sample))
        ids, offsets = be.asarray(encoded.ids), be.asarray(encoded.offsets)
        units = ops.unit_words(self.batch_words)
        history: list[dict[str, Any]] = []
        for epoch in range(self.epochs):
            tick = time.perf_counter()
            key = epoch_key(self.seed, epoch)
            keep = ops.subsample(ids, keep_ints, key).astype(bool)
            kept_before = xp.concatenate((xp.zeros(1, xp.int64), xp.cumsum(keep, dtype=xp.int64)))
            epoch_ids, epoch_offsets = xp.ascontiguousarray(ids[keep]), xp.ascontiguousarray(kept_before[offsets])
            n_words = int(epoch_ids.size)
            start_alpha = self.alpha - (self.alpha - self.min_alpha) * epoch / self.epochs
            end_alpha = self.alpha - (self.alpha - self.min_alpha) * (epoch + 1) / self.epochs
            loss = 0.0
            if n_words:
                unit = n_words if self.deterministic else units
                losses = ops.train_epoch(epoch_ids, epoch_offsets, syn0, syn1, syn1neg, codes, points, code_offsets,
                                         cum, self.sg, self.hs, self.negative, self.window, self.cbow_mean,
                                         start_alpha, end_alpha, key, unit, int(self.compute_loss), int(gensim))
                loss = float(losses.sum())
            self._check_finite(xp, (syn0, syn1, syn1neg), loss, epoch)
            seconds = time.perf_counter() - tick
            entry = {"epoch": epoch + 1, "words": n_words, "seconds": seconds,
                     "words_per_second": encoded.n_words / seconds if seconds > 0 else math.inf,
                     "alpha": end_alpha, "loss": loss if self.compute_loss else None}
            history.append(entry)
            if progress is not None:
                progress(entry)
        self.vocab_ = vocab
        self.vocab_seconds_ = vocab_seconds
        self.wv_ = KeyedVectors(vocab.index_to_key, syn0, backend=be)
        self.syn1_ = syn1 if self.hs else None
        self.syn1neg_ = syn1neg if self.negative else None
        self.loss_ = sum(h["loss"] for h in history) if self.compute_loss else None
        self.history_ = history
        return self

    def _scan(self, corpus: Any, backend: Backend) -> tuple[Vocabulary, Any]:
        vocab, encoded = build_vocabulary(corpus, self.min_count, self.max_vocab_size, segment=self.segment,
                                          backend=backend)
        if vocab.total_words == 0:
            raise ValueError("the corpus is empty: it has no tokens to learn from")
        if len(vocab) == 0:
            raise ValueError(f"no word occurs at least min_count={self.min_count} times" + self._most_frequent(corpus))
        return vocab, encoded

    def _most_frequent(self, corpus: Any) -> str:
        try:  # the same corpus counted without a floor names what came closest
            vocab, _ = build_vocabulary(corpus, 1, self.max_vocab_size, segment=self.segment, backend="cpu")
        except Exception:  # a one-shot iterator cannot be read twice; the message then says less
            return ""
        if not len(vocab):
            return ""
        return f" (the most frequent, {vocab.index_to_key[0]!r}, occurs {int(vocab.counts[0])} times)"

    def _check_finite(self, xp: Any, weights: tuple[Any, ...], loss: float, epoch: int) -> None:
        # gensim's rule of skipping |f| >= 6 keeps runaway weights finite for a while: a weight past
        # DIVERGED makes dot products overflow float32, so it counts as diverged already
        if all(bool((xp.abs(w) <= DIVERGED).all()) for w in weights) and math.isfinite(loss):
            return
        raise ValueError(f"training diverged in epoch {epoch + 1}: the weights are no longer finite or grew past "
                         f"{DIVERGED:g} (alpha={self.alpha} is too large; gensim's default is 0.025)")

    @property
    def wv(self) -> KeyedVectors:
        """``wv_`` under gensim's name."""
        return self.wv_


__all__ = ["Word2Vec", "cum_table", "epoch_key", "sample_ints"]
