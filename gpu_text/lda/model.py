"""``LDA``: latent Dirichlet allocation by collapsed Gibbs sampling, scikit-learn conventions.

``fit(X)`` turns ``X`` into a :class:`~gpu_text.lda.corpus.TokenCorpus` (any form
:func:`~gpu_text.lda.corpus.as_corpus` takes: a CSR doc-term matrix, ragged ids, token lists,
text files, LDA-C), then runs ``n_iter`` Gibbs sweeps. Every sweep draws from a counter-based hash
of (seed, sweep, token), so a seed gives the same model on the same backend whatever the thread
count (see ``cpu_fallback/lda.py`` for the samplers).

Samplers (``sampler``) and schedules (``schedule``):

- ``"dense"``: the canonical O(K) draw per token. ``schedule="sequential"``: plain collapsed Gibbs
  in token order on one thread (the Python reference's topics, exactly); ``"blocks"`` (CPU): the
  same draw on the N-Queen document x word blocks, blocks in parallel, each with its own topic
  totals merged exactly after every sub-pass; ``"jacobi"``: every token against the counts of the
  start of the sweep, in parallel (the GPU's schedule; it mixes more slowly per sweep).
- ``"sparse"`` (CPU): SparseLDA (s/r/q buckets) on the N-Queen blocks (``"blocks"``, or one block
  with ``"sequential"``), cost per token O(nonzero topics of the word + of the document),
  sublinear in K once the chain has burnt in.
- ``"mh"``: Metropolis-Hastings with alternating document and word proposals, ``MH_STEPS`` = 4
  steps per token, O(1) per step whatever K (jacobi; for the GPU at large K).
- ``"auto"``: on the CPU dense below ``DENSE_BELOW`` = 40 topics, else sparse. Measured on 2.1M
  tokens of Sogou news (60k paragraphs, 68k words), 30 sweeps, one thread, tokens/s: K=30 dense
  blocks 9.9M, sparse 10.3M; K=50 9.6M, 9.2M; K=100 5.4M, 8.0M; K=1000 sparse 3x tomotopy. Dense
  wins below ~30 (K=20: 11.4M vs 6.7M over the first 10 sweeps), the two are even up to ~50.
  Without the sparse sampler (the GPU): dense below ``MH_FROM`` = 256 topics, else mh
  (provisional, to be measured on the device).

``schedule="auto"``: ``"blocks"`` on the CPU, ``"jacobi"`` on the GPU. The block count ``P`` comes
from the data (``n_partitions_for``: about one per 16k tokens, at most 8 and at most the mean
document length / 8 but at least 2 on corpora of 32k tokens or more), so a seed gives the same
topics whatever the number of threads.
``init="auto"`` (= ``"random"``): uniform random topics (the kernels' ``init_topics``).
``init="progressive"`` (block samplers): a first sweep drawing every token given the tokens placed
before it, as tomotopy initialises; it starts far closer to the posterior (log-likelihood -9.97 vs
-14.89 per token after the initialisation) and runs ~25% faster, but ends lower after 100 sweeps
on Sogou news, K = 100, 5 seeds: -8.572 vs -8.555 (tomotopy -8.551, the ``lda`` package -8.561), so
it is not the default.

Asymmetric alpha: ``alpha`` may be one float or K floats. ``optimize_alpha=True`` re-estimates it
every ``eval_every`` sweeps after the first ``eval_every`` (burn-in) by Minka's fixed point
(``alpha_k <- alpha_k * sum_d [psi(n_dk + alpha_k) - psi(alpha_k)] / sum_d [psi(n_d + A) -
psi(A)]``, 20 steps, each ``alpha_k`` kept >= 1e-6 so the priors stay positive).

Log-likelihood: ``loglikelihood_`` is the ``lda`` package's joint ``log p(w, z)`` per token after
the initialisation and every ``eval_every`` sweeps (and the last), so the numbers compare.

Memory on the CPU block samplers: 20 bytes per token for the block layout (word, document, topic
int32, corpus position int64) plus 4 for the corpus' own word ids, the topic lists at most 12 more
(document lists 4, word (topic, count) entries 8), and the counts, ``4 (D + V) K`` bytes. 100M
tokens: at most 3.6 GB plus the counts (V = 100k, D = 1M, K = 100: 0.44 GB).

Speed (2 cores, same machine, interleaved runs so both saw the same load; tomotopy 0.14 with
``optim_interval = 0``, the same model): 2.1M tokens of Sogou news, 50 sweeps, K = 100: 14.5M
tokens/s, tomotopy 9.4M (2 workers) / 5.8M (1); K = 1000, 20 sweeps: 3.3M vs 1.0M; K = 20 (dense
blocks): 21M vs 14.7M; the ``lda`` package: 0.47M at K = 100 (``benchmarks/lda.py`` has the
figures of the whole corpus).

>>> docs = [["apple", "pie", "apple"], ["tea", "cake", "tea"], ["apple", "pie"], ["cake", "tea"]] * 5
>>> model = LDA(n_topics=2, n_iter=30, seed=3, backend="cpu").fit(docs)
>>> model.topic_word_.shape, model.doc_topic_.shape, len(model.top_words(2))
((2, 4), (20, 2), 2)
"""
from __future__ import annotations

import json
import math
import numbers
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import BACKEND_NAMES, get_backend
from gpu_text.estimator import Estimator
from gpu_text.lda.coherence import top_words
from gpu_text.lda.corpus import TokenCorpus, as_corpus
from gpu_text.lda.likelihood import log_likelihood, log_likelihood_per_token
from gpu_text.lda.special import digamma
from gpu_text.word2vec.model import epoch_key

# K below which auto picks the dense sampler on the CPU (see the module docstring)
DENSE_BELOW = 40
SAMPLERS = ("auto", "dense", "sparse", "mh")
# Metropolis-Hastings steps per token and sweep (doc and word proposals alternate)
MH_STEPS = 4
# K from which auto picks the MH sampler where there is no sparse sampler (the GPU): provisional,
# to be measured on the device
MH_FROM = 256
SCHEDULES = ("auto", "sequential", "blocks", "jacobi")
INITS = ("auto", "random", "progressive")
INIT_SWEEP = 2**32
TRANSFORM_INIT = 2**32 + 1
TRANSFORM_SWEEPS = 2**33
MIN_ALPHA = 1e-6
FORMAT = "gpu_text.lda/1"


def iteration_key(seed: int, iteration: int) -> int:
    """The 64-bit key of every draw of sweep ``iteration`` (word2vec's epoch key).

    >>> iteration_key(1, 0) == iteration_key(1, 0) != iteration_key(1, 1)
    True
    """
    return epoch_key(seed, iteration)


def _alpha_vector(alpha: Any, n_topics: int) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(alpha, np.float64), (n_topics,)), np.float64).copy()


def _check_alpha(alpha: Any, n_topics: int) -> str | None:
    """Why ``alpha`` is not a valid prior for ``n_topics`` topics, or None."""
    if isinstance(alpha, bool):
        return "a number > 0 or K numbers > 0"
    try:
        values = np.asarray(alpha, np.float64)
    except (TypeError, ValueError):
        return "a number > 0 or K numbers > 0"
    if values.ndim > 1 or (values.ndim == 1 and values.size != n_topics):
        return f"a number > 0 or {n_topics} numbers > 0 (one per topic)"
    if not (np.isfinite(values).all() and (values > 0).all()):
        return "finite and > 0"
    return None


def optimize_alpha(alpha: np.ndarray, n_dk: Any, doc_lengths: Any, steps: int = 20) -> np.ndarray:
    """Minka's fixed-point update of an asymmetric Dirichlet prior from the document-topic counts.

    >>> n_dk = np.array([[9, 1], [8, 2], [10, 0]]); a = optimize_alpha(np.full(2, 0.5), n_dk, n_dk.sum(1))
    >>> bool(a[0] > a[1] > 0)
    True
    """
    n_dk = np.asarray(to_host(n_dk))
    lengths = np.asarray(to_host(doc_lengths))
    keep = lengths > 0
    n_dk, lengths = n_dk[keep], lengths[keep]
    alpha = np.asarray(alpha, np.float64).copy()
    if not len(lengths):
        return alpha
    # the sums only need how often each count occurs (per topic): the fixed point changes alpha alone.
    # A zero count adds digamma(alpha) - digamma(alpha) = 0, so only the nonzero cells are kept.
    length_values, length_counts = np.unique(lengths, return_counts=True)
    columns = [np.unique(column[column > 0], return_counts=True) for column in n_dk.T]
    for _ in range(steps):
        total = float(alpha.sum())
        denominator = float(np.dot(length_counts, [digamma(v + total) for v in length_values.tolist()]))
        denominator -= len(lengths) * digamma(total)
        numerator = np.array([float(np.dot(c, [digamma(v + a) for v in values.tolist()])) - c.sum() * digamma(a)
                              for (values, c), a in zip(columns, alpha.tolist())])
        if denominator <= 0:
            break
        alpha = np.maximum(alpha * numerator / denominator, MIN_ALPHA)
    return alpha


def _fold_in_theta(corpus: TokenCorpus, n_topics: int, alpha: np.ndarray, n_iter: int, seed: int,
                   sweep: Callable[[np.ndarray, np.ndarray, Any, int], None], init: Callable[..., Any],
                   counts: Callable[..., Any]) -> np.ndarray:
    """theta (D x K) of ``corpus`` by fold-in Gibbs: ``sweep(topics, n_dk, key)`` resamples the
    documents with the topics fixed; theta is averaged over the sweeps of the second half."""
    n_docs = corpus.n_docs
    a_sum = float(alpha.sum())
    if corpus.n_tokens == 0:
        return np.tile(alpha / a_sum, (n_docs, 1))
    topics = init(corpus.n_tokens, n_topics, iteration_key(seed, TRANSFORM_INIT))
    n_dk = counts(topics)
    total = np.zeros((n_docs, n_topics), np.float64)
    burn_in = n_iter // 2
    for it in range(n_iter):
        sweep(topics, n_dk, iteration_key(seed, TRANSFORM_SWEEPS + it), it)
        if it >= burn_in:
            total += np.asarray(to_host(n_dk), np.float64)
    samples = max(1, n_iter - burn_in)
    if n_iter == 0:
        total = np.asarray(to_host(n_dk), np.float64)
    mean = total / samples
    lengths = corpus.doc_lengths.astype(np.float64)
    return (mean + alpha) / (lengths + a_sum)[:, None]


def heldout_perplexity(topic_word: Any, X_heldout: Any, alpha: Any, n_iter: int = 50, seed: int = 1,
                       backend: str = "auto", vocabulary: Any = None) -> float:
    """Held-out perplexity of any topic model's ``topic_word`` (phi, K x V) by document completion:
    every document's first half (``TokenCorpus.split_halves``) is folded in with phi fixed
    (``n_iter`` Gibbs sweeps, theta averaged over the second half of them), then the second half is
    scored: ``exp(-sum log sum_k theta_dk phi_kw / n)``. ``X_heldout`` is anything ``as_corpus``
    takes (with ``vocabulary`` naming phi's columns for text input; ids beyond phi are dropped).

    >>> phi = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]]) * 0.98 + 0.005
    >>> round(heldout_perplexity(phi, [[0, 1, 0, 1], [2, 3, 3, 2]], 0.1, n_iter=20, backend="cpu"), 2)
    2.12
    """
    phi = np.asarray(to_host(topic_word), np.float64)
    if phi.ndim != 2 or not np.isfinite(phi).all() or (phi < 0).any():
        raise ValueError("topic_word must be a K x V matrix of finite non-negative probabilities")
    n_topics, n_words = phi.shape
    problem = _check_alpha(alpha, n_topics)
    if problem:
        raise ValueError(f"alpha must be {problem}, got {alpha!r}")
    alpha = _alpha_vector(alpha, n_topics)
    corpus = _heldout_corpus(X_heldout, vocabulary, n_words)
    first, second = corpus.split_halves()
    if second.n_tokens == 0:
        raise ValueError("the held-out corpus has no tokens to score (every document is empty)")
    be = get_backend(backend)
    if not be.has_op("lda", "fold_in_phi"):
        be = get_backend("cpu")
    ops = be.ops("lda")
    phi_wk = be.asarray(np.ascontiguousarray(phi.T))
    words, offsets = be.asarray(first.words), be.asarray(first.doc_offsets)
    alpha_dev = be.asarray(alpha)
    theta = _fold_in_theta(
        first, n_topics, alpha, n_iter, seed,
        lambda z, n_dk, key, it: ops.fold_in_phi(words, offsets, z, n_dk, phi_wk, alpha_dev, key),
        lambda n, k, key: ops.init_topics(n, k, key),
        lambda z: _doc_counts(first, z, n_topics, be))
    return float(math.exp(-_mean_log_prob(theta, phi, second)))


def _doc_counts(corpus: TokenCorpus, topics: Any, n_topics: int, be: Any) -> Any:
    """n_dk of ``topics`` over ``corpus`` (host bincount of document * K + topic), on ``be``."""
    z = np.asarray(to_host(topics), np.int64)
    flat = corpus.doc_ids().astype(np.int64) * n_topics + z
    n_dk = np.bincount(flat, minlength=corpus.n_docs * n_topics).astype(np.int32).reshape(corpus.n_docs, n_topics)
    return be.asarray(n_dk)


def _heldout_corpus(X: Any, vocabulary: Any, n_words: int) -> TokenCorpus:
    if isinstance(X, TokenCorpus) and vocabulary is None:
        corpus = X
    else:
        corpus = as_corpus(X, vocabulary=vocabulary)
    if corpus.n_tokens and int(corpus.words.max()) >= n_words:
        keep = corpus.words < n_words
        kept_before = np.concatenate(([0], np.cumsum(keep))).astype(np.int64)
        offsets = kept_before[corpus.doc_offsets]
        corpus = TokenCorpus(np.ascontiguousarray(corpus.words[keep]), offsets, corpus.vocabulary[:n_words])
    return corpus


def _mean_log_prob(theta: np.ndarray, phi: np.ndarray, corpus: TokenCorpus) -> float:
    """Mean over ``corpus``'s tokens of log sum_k theta[d, k] phi[k, w], in chunks of tokens."""
    docs, words = corpus.doc_ids(), corpus.words
    phi_wk = np.ascontiguousarray(phi.T)
    chunk = max(1, (1 << 22) // max(1, phi.shape[0]))
    total = 0.0
    for start in range(0, len(words), chunk):
        d, w = docs[start:start + chunk], words[start:start + chunk]
        p = np.einsum("ij,ij->i", theta[d], phi_wk[w])
        total += float(np.log(np.maximum(p, 1e-300)).sum())
    return total / len(words)


class LDA(Estimator):
    """Latent Dirichlet allocation by collapsed Gibbs sampling (the module docstring has the details).

    Learned attributes: ``topic_word_`` (phi, K x V, ``(n_wk + beta) / (n_k + V beta)``),
    ``doc_topic_`` (theta, D x K, ``(n_dk + alpha) / (n_d + sum alpha)``), ``components_`` (the
    counts ``n_wk`` transposed, float64, scikit-learn's name), ``n_dk_``, ``n_wk_``, ``n_k_``,
    ``topics_`` (every token's topic, corpus order), ``vocabulary_``, ``alpha_`` (K floats, the
    optimised ones with ``optimize_alpha``), ``loglikelihood_`` (``(sweep, log p(w, z) per
    token)``), ``history_`` (one dict per evaluation), ``sampler_``, ``schedule_``.

    >>> LDA(n_topics=20, alpha=0.5)
    LDA(n_topics=20, alpha=0.5)
    """

    def __init__(self, n_topics: int = 100, alpha: Any = 0.1, beta: float = 0.01, n_iter: int = 100, seed: int = 1,
                 sampler: str = "auto", schedule: str = "auto", backend: str = "auto", eval_every: int = 10,
                 optimize_alpha: bool = False, init: str = "auto") -> None:
        self.n_topics = n_topics
        self.alpha = alpha
        self.beta = beta
        self.n_iter = n_iter
        self.seed = seed
        self.sampler = sampler
        self.schedule = schedule
        self.backend = backend
        self.eval_every = eval_every
        self.optimize_alpha = optimize_alpha
        self.init = init

    # -- fitting -------------------------------------------------------------------------------

    def _validate(self) -> None:
        self._require_int("n_topics", 1)
        self._require_int("n_iter", 0)
        self._require_int("seed", 0)
        self._require_int("eval_every", 0)
        problem = _check_alpha(self.alpha, self.n_topics)
        self._require(problem is None, "alpha", problem or "")
        self._require(isinstance(self.beta, numbers.Real) and not isinstance(self.beta, bool)
                      and math.isfinite(self.beta) and self.beta > 0, "beta", "a finite number > 0")
        self._require(self.sampler in SAMPLERS, "sampler", f"one of {', '.join(map(repr, SAMPLERS))}")
        self._require(self.schedule in SCHEDULES, "schedule", f"one of {', '.join(map(repr, SCHEDULES))}")
        self._require(self.init in INITS, "init", f"one of {', '.join(map(repr, INITS))}")
        self._require(isinstance(self.optimize_alpha, bool), "optimize_alpha", "True or False")
        self._require(isinstance(self.backend, str) and self.backend.strip().lower() in BACKEND_NAMES, "backend",
                      f"one of {', '.join(map(repr, BACKEND_NAMES))}")

    def _resolve(self, be: Any) -> tuple[str, str, str]:
        blocks_here = be.has_op("lda", "sample_sparse")
        sampler = self.sampler
        if sampler == "auto" and blocks_here:
            sampler = "sparse" if self.n_topics >= DENSE_BELOW else "dense"
        elif sampler == "auto":
            sampler = "mh" if self.n_topics >= MH_FROM and be.has_op("lda", "sample_mh") else "dense"
        if sampler == "sparse" and not blocks_here:
            raise ValueError(f"LDA: sampler='sparse' runs on the CPU backend only (this is {be.name!r}); use "
                             "sampler='dense' or backend='cpu'")
        schedule = self.schedule
        if schedule == "auto":
            schedule = "blocks" if blocks_here else "jacobi"
        if schedule == "blocks" and not blocks_here:
            raise ValueError(f"LDA: schedule='blocks' runs on the CPU backend only (this is {be.name!r}); use "
                             "schedule='jacobi' or 'sequential'")
        if sampler == "mh" and schedule != "jacobi":
            if self.schedule != "auto":
                raise ValueError("LDA: the MH sampler is a jacobi sweep; use schedule='jacobi' or 'auto'")
            schedule = "jacobi"
        if sampler == "sparse" and schedule == "jacobi":
            raise ValueError("LDA: the sparse sampler is sequential inside its blocks; schedule='jacobi' needs "
                             "sampler='dense'")
        init = self.init
        if init == "auto":
            init = "random"
        if init == "progressive" and sampler == "dense" and schedule != "blocks":
            raise ValueError("LDA: init='progressive' is a first sweep of the block samplers; use init='random' with "
                             f"schedule={schedule!r}")
        return sampler, schedule, init

    def fit(self, X: Any, progress: Callable[[dict[str, Any]], None] | None = None) -> "LDA":
        """Learn the topics of ``X`` (any form ``as_corpus`` takes); ``progress`` gets every
        evaluation's history entry (sweep, log-likelihood per token, tokens/s). Returns ``self``.

        >>> LDA(n_topics=2, backend="cpu").fit([[], []])
        Traceback (most recent call last):
        ...
        ValueError: LDA.fit: the corpus has no tokens (2 documents, all empty); there is nothing to learn
        """
        self._validate()
        corpus = as_corpus(X)
        if corpus.n_tokens == 0:
            raise ValueError(f"LDA.fit: the corpus has no tokens ({corpus.n_docs} documents"
                             f"{', all empty' if corpus.n_docs else ''}); there is nothing to learn")
        be = get_backend(self.backend)
        sampler, schedule, init = self._resolve(be)
        ops = be.ops("lda")
        K, V, N = self.n_topics, corpus.n_words, corpus.n_tokens
        alpha = _alpha_vector(self.alpha, K)
        beta = float(self.beta)
        lengths = corpus.doc_lengths
        words, offsets = be.asarray(corpus.words), be.asarray(corpus.doc_offsets)
        init_key = iteration_key(self.seed, INIT_SWEEP)
        state = None
        on_blocks = sampler == "sparse" or schedule == "blocks"
        # the sparse sampler with schedule="sequential" is one block: single-threaded SparseLDA
        partitions = ops.n_partitions_for(N, corpus.n_docs, V) if schedule == "blocks" else 1
        block_sweep = ops.sample_sparse if sampler == "sparse" else (
            ops.sample_blocks_dense if on_blocks else None)
        if init == "progressive":
            n_dk = np.zeros((corpus.n_docs, K), np.int32)
            n_wk = np.zeros((V, K), np.int32)
            n_k = np.zeros(K, np.int32)
            state = ops.sparse_state(corpus.words, corpus.doc_offsets, np.zeros(N, np.int32), n_dk, n_wk, partitions)
            block_sweep(state, n_dk, n_wk, n_k, alpha, beta, init_key, True)
            topics = None
        else:
            topics = ops.init_topics(N, K, init_key)
            n_dk, n_wk, n_k = ops.count_topics(words, offsets, topics, V, K)
            if on_blocks:
                state = ops.sparse_state(corpus.words, corpus.doc_offsets, topics, n_dk, n_wk, partitions)
        if sampler == "mh":
            word_tokens = be.asarray(np.argsort(corpus.words, kind="stable").astype(np.int32))
            word_offsets = be.asarray(np.concatenate(([0], np.cumsum(corpus.word_counts()))).astype(np.int64))
        history: list[dict[str, Any]] = []
        trace: list[tuple[int, float]] = []

        def evaluate(sweep: int, seconds: float, sampled: int) -> None:
            ll = log_likelihood_per_token(n_dk, n_wk, n_k, lengths, alpha, beta)
            trace.append((sweep, ll))
            entry = {"iteration": sweep, "loglikelihood": ll, "seconds": seconds,
                     "tokens_per_second": sampled * N / seconds if seconds > 0 else math.inf,
                     "alpha_sum": float(alpha.sum())}
            history.append(entry)
            if progress is not None:
                progress(entry)

        evaluate(0, 0.0, 0)
        alpha_dev = be.asarray(alpha)
        code = 0 if schedule == "sequential" else 1
        tick, since = time.perf_counter(), 0
        for it in range(self.n_iter):
            key = iteration_key(self.seed, it)
            done = it + 1
            evaluating = done == self.n_iter or bool(self.eval_every and done % self.eval_every == 0)
            if state is not None and sampler == "sparse":
                # the dense word counts are written only where they are read: evaluation, the end
                block_sweep(state, n_dk, n_wk, n_k, alpha, beta, key, word_counts=evaluating)
            elif state is not None:
                block_sweep(state, n_dk, n_wk, n_k, alpha, beta, key)
            elif sampler == "mh":
                ops.sample_mh(words, offsets, word_offsets, word_tokens, topics, n_dk, n_wk, n_k, alpha_dev, beta, key,
                              MH_STEPS)
            else:
                ops.sample_dense(words, offsets, topics, n_dk, n_wk, n_k, alpha_dev, beta, key, code)
            since += 1
            if evaluating:
                evaluate(done, time.perf_counter() - tick, since)
                if self.optimize_alpha and done < self.n_iter and done >= max(1, self.eval_every):
                    alpha = optimize_alpha(alpha, n_dk, lengths)
                    alpha_dev = be.asarray(alpha)
                tick, since = time.perf_counter(), 0
        if state is not None:
            topics = state.corpus_topics()
        self._store(corpus, np.asarray(to_host(n_dk), np.int32), np.asarray(to_host(n_wk), np.int32),
                    np.asarray(to_host(n_k), np.int32), alpha)
        self.topics_ = np.asarray(to_host(topics), np.int32)
        self.loglikelihood_ = trace
        self.history_ = history
        self.sampler_, self.schedule_, self.init_ = sampler, schedule, init
        return self

    def _store(self, corpus_or_vocab: Any, n_dk: np.ndarray, n_wk: np.ndarray, n_k: np.ndarray,
               alpha: np.ndarray) -> None:
        vocabulary = corpus_or_vocab.vocabulary if isinstance(corpus_or_vocab, TokenCorpus) else corpus_or_vocab
        beta = float(self.beta)
        V = n_wk.shape[0]
        self.vocabulary_ = list(vocabulary)
        self.n_dk_, self.n_wk_, self.n_k_ = n_dk, n_wk, n_k
        self.alpha_ = np.asarray(alpha, np.float64)
        self.components_ = n_wk.T.astype(np.float64)
        self.topic_word_ = (n_wk.T + beta) / (n_k[:, None].astype(np.float64) + V * beta)
        lengths = n_dk.sum(1).astype(np.float64)
        self.doc_topic_ = (n_dk + self.alpha_) / (lengths + self.alpha_.sum())[:, None]

    # -- using a fitted model ------------------------------------------------------------------

    def transform(self, X_new: Any, n_iter: int = 50) -> np.ndarray:
        """theta (D x K) of new documents by fold-in Gibbs with the topics fixed: ``n_iter`` sweeps,
        theta averaged over the second half of them. Words outside the vocabulary are dropped; an
        empty document gets ``alpha`` normalised.

        >>> docs = [["a", "a", "b"], ["c", "d", "c"]] * 10
        >>> m = LDA(n_topics=2, n_iter=40, seed=1, backend="cpu").fit(docs)
        >>> theta = m.transform([["a", "b", "zzz"], []])
        >>> theta.shape, bool(np.allclose(theta.sum(1), 1)), bool(np.allclose(theta[1], 0.5))
        ((2, 2), True, True)
        """
        self._check_fitted("n_wk_")
        if isinstance(n_iter, bool) or not isinstance(n_iter, numbers.Integral) or n_iter < 0:
            raise ValueError(f"n_iter must be an integer >= 0, got {n_iter!r}")
        corpus = self._known(X_new)
        be = get_backend(self.backend)
        ops = be.ops("lda")
        K = self.n_topics
        words, offsets = be.asarray(corpus.words), be.asarray(corpus.doc_offsets)
        n_wk, n_k, alpha_dev = be.asarray(self.n_wk_), be.asarray(self.n_k_), be.asarray(self.alpha_)
        beta = float(self.beta)
        return _fold_in_theta(
            corpus, K, self.alpha_, n_iter, self.seed,
            lambda z, n_dk, key, it: ops.fold_in(words, offsets, z, n_dk, n_wk, n_k, alpha_dev, beta, key),
            lambda n, k, key: ops.init_topics(n, k, key),
            lambda z: _doc_counts(corpus, z, K, be))

    def _known(self, X: Any) -> TokenCorpus:
        """``X`` in the model's word ids (unknown words dropped)."""
        if isinstance(X, TokenCorpus) and list(X.vocabulary) == self.vocabulary_:
            return X
        if isinstance(X, TokenCorpus):
            return as_corpus([[X.vocabulary[w] for w in X.words[a:b].tolist()]
                              for a, b in zip(X.doc_offsets[:-1].tolist(), X.doc_offsets[1:].tolist())],
                             vocabulary=self.vocabulary_)
        return as_corpus(X, vocabulary=self.vocabulary_)

    def perplexity(self, X_heldout: Any, n_iter: int = 50) -> float:
        """Held-out perplexity by document completion (:func:`heldout_perplexity` with this model's
        phi and alpha): fold in on the first half of every document, score the second half.

        >>> docs = [["a", "a", "b", "b"], ["c", "d", "c", "d"]] * 10
        >>> m = LDA(n_topics=2, n_iter=40, seed=1, backend="cpu").fit(docs)
        >>> bool(1.0 < m.perplexity(docs[:4]) < 4.0)
        True
        """
        self._check_fitted("topic_word_")
        corpus = self._known(X_heldout)
        return heldout_perplexity(self.topic_word_, corpus, self.alpha_, n_iter=n_iter, seed=self.seed,
                                  backend=self.backend)

    def score(self, X: Any, n_iter: int = 50) -> float:
        """``-log(perplexity(X))``: the mean held-out log-probability per token of the second halves
        (higher is better, as scikit-learn's ``score``).

        >>> docs = [["a", "b"], ["c", "d"]] * 10
        >>> m = LDA(n_topics=2, n_iter=20, backend="cpu").fit(docs)
        >>> bool(m.score(docs) < 0)
        True
        """
        return -math.log(self.perplexity(X, n_iter=n_iter))

    def top_words(self, n: int = 10) -> list[list[str]]:
        """The ``n`` most probable words of every topic.

        >>> m = LDA(n_topics=1, n_iter=2, backend="cpu").fit([["x", "y", "x"]])
        >>> m.top_words(2)
        [['x', 'y']]
        """
        self._check_fitted("topic_word_")
        return top_words(self.topic_word_, self.vocabulary_, n)

    # -- files ---------------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Writes the model as ``.npz`` (no pickle): the word-topic counts, ``n_k``, alpha, the
        document-topic counts (as nonzero cells), the vocabulary (unicode), the trace and the
        parameters (JSON). ``topics_`` (a topic per token) is not saved.

        >>> import tempfile, os
        >>> m = LDA(n_topics=2, n_iter=3, backend="cpu").fit([["a", "b"], ["b", "c"]])
        >>> path = os.path.join(tempfile.mkdtemp(), "m.npz"); m.save(path)
        >>> bool((LDA.load(path).topic_word_ == m.topic_word_).all())
        True
        """
        self._check_fitted("n_wk_")
        rows, cols = np.nonzero(self.n_dk_)
        params = {name: (value.tolist() if isinstance(value, np.ndarray) else value)
                  for name, value in self.get_params(deep=False).items()}
        with open(path, "wb") as sink:
            np.savez(sink, format=np.array(FORMAT), params=np.array(json.dumps(params)),
                     n_wk=self.n_wk_, n_k=self.n_k_, alpha=self.alpha_, beta=np.float64(self.beta),
                     vocabulary=np.array(self.vocabulary_, dtype=str), n_docs=np.int64(self.n_dk_.shape[0]),
                     dk_rows=rows.astype(np.int32), dk_cols=cols.astype(np.int32),
                     dk_values=self.n_dk_[rows, cols].astype(np.int32),
                     loglikelihood=np.array(self.loglikelihood_, np.float64).reshape(-1, 2),
                     fitted=np.array(json.dumps({"sampler": self.sampler_, "schedule": self.schedule_,
                                                 "init": self.init_})))

    @classmethod
    def load(cls, path: str | Path) -> "LDA":
        """A model written by :meth:`save` (``np.load(allow_pickle=False)``), ready for ``transform``.

        >>> LDA.load("/nonexistent.npz")
        Traceback (most recent call last):
        ...
        FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent.npz'
        """
        with np.load(path, allow_pickle=False) as data:
            if "format" not in data.files or str(data["format"]) != FORMAT:
                raise ValueError(f"{path} is not a gpu_text LDA model file")
            params = json.loads(str(data["params"]))
            model = cls(**params)
            n_wk, n_k = data["n_wk"].astype(np.int32), data["n_k"].astype(np.int32)
            n_dk = np.zeros((int(data["n_docs"]), n_wk.shape[1]), np.int32)
            n_dk[data["dk_rows"], data["dk_cols"]] = data["dk_values"]
            model._store(data["vocabulary"].tolist(), n_dk, n_wk, n_k, data["alpha"])
            model.loglikelihood_ = [(int(a), float(b)) for a, b in data["loglikelihood"].tolist()]
            model.history_ = []
            fitted = json.loads(str(data["fitted"]))
            model.sampler_, model.schedule_, model.init_ = fitted["sampler"], fitted["schedule"], fitted["init"]
        return model


__all__ = ["LDA", "heldout_perplexity", "iteration_key", "log_likelihood", "optimize_alpha"]
