"""The joint log-likelihood ``log p(w, z)`` of an LDA state, as the ``lda`` package reports it.

With ``V`` words, ``K`` topics, symmetric ``beta`` and per-topic ``alpha_k`` (``A = sum_k alpha_k``)::

    log p(w | z) = sum_k [ lgamma(V beta) - lgamma(V beta + n_k) + sum_w (lgamma(beta + n_wk) - lgamma(beta)) ]
    log p(z)     = sum_d [ lgamma(A) - lgamma(A + n_d) + sum_k (lgamma(alpha_k + n_dk) - lgamma(alpha_k)) ]

the Dirichlet-multinomial marginals of the collapsed model; ``lda.LDA.loglikelihood()`` is their
sum with a symmetric alpha (zero counts contribute nothing, so only nonzero cells are visited).
Host code (numpy and :mod:`gpu_text.lda.special`), not a kernel: it runs once per evaluation.

>>> n_dk = np.array([[2, 0], [1, 1]]); n_wk = np.array([[2, 0], [1, 1]]); n_k = n_wk.sum(0)
>>> round(log_likelihood(n_dk, n_wk, n_k, n_dk.sum(1), 0.1, 0.01), 6)
-10.662627
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from gpu_text.arrays import to_host
from gpu_text.lda.special import lgamma_sum


def _nonzero_lgamma_sum(counts: np.ndarray, prior: np.ndarray | float) -> float:
    """sum over nonzero cells of lgamma(prior + count) - lgamma(prior); ``prior`` per column or scalar."""
    rows, cols = np.nonzero(counts)
    values = counts[rows, cols].astype(np.float64)
    if not isinstance(prior, np.ndarray):
        return lgamma_sum(prior + values) - values.size * math.lgamma(prior)
    return lgamma_sum(prior[cols] + values) - lgamma_sum(prior[cols])


def log_likelihood(n_dk: Any, n_wk: Any, n_k: Any, doc_lengths: Any, alpha: Any, beta: float) -> float:
    """``log p(w, z)`` of the counts ``n_dk`` (D x K), ``n_wk`` (V x K), ``n_k`` (K), document
    lengths ``n_d``, prior ``alpha`` (a float or one per topic) and ``beta``.

    >>> round(log_likelihood(np.array([[1]]), np.array([[1]]), np.array([1]), np.array([1]), 0.5, 0.5), 6)
    0.0
    """
    n_dk, n_wk, n_k, doc_lengths = (np.asarray(to_host(a)) for a in (n_dk, n_wk, n_k, doc_lengths))
    n_words, n_topics = n_wk.shape
    alpha = np.broadcast_to(np.asarray(to_host(alpha), np.float64), (n_topics,)).copy()
    beta = float(beta)
    vbeta = n_words * beta
    ll = n_topics * math.lgamma(vbeta) - lgamma_sum(vbeta + n_k.astype(np.float64))
    ll += _nonzero_lgamma_sum(n_wk, beta)
    a_sum = float(alpha.sum())
    ll += len(doc_lengths) * math.lgamma(a_sum) - lgamma_sum(a_sum + doc_lengths.astype(np.float64))
    ll += _nonzero_lgamma_sum(n_dk, alpha)
    return ll


def log_likelihood_per_token(n_dk: Any, n_wk: Any, n_k: Any, doc_lengths: Any, alpha: Any, beta: float) -> float:
    """:func:`log_likelihood` divided by the number of tokens (0 tokens: 0.0).

    >>> n = np.array([[3, 1]]); round(log_likelihood_per_token(n, n, n[0], np.array([4]), 0.1, 0.1), 4)
    -1.0731
    """
    n_tokens = int(np.asarray(to_host(doc_lengths)).sum())
    if n_tokens == 0:
        return 0.0
    return log_likelihood(n_dk, n_wk, n_k, doc_lengths, alpha, beta) / n_tokens


__all__ = ["log_likelihood", "log_likelihood_per_token"]
