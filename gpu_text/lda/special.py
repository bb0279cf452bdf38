"""Sums of ``lgamma`` and ``digamma`` over count arrays, without scipy.

LDA's likelihood and Minka's alpha update sum these functions over the cells of count matrices
(``prior + count``). Counts are small integers, so the cells take few distinct values: each sum
evaluates the function once per distinct value (``math.lgamma``; ``digamma`` by its recurrence
and asymptotic series) and weights it by how often the value occurs, exact to libm's precision.

>>> round(lgamma_sum(np.array([0.5, 0.5, 3.0])), 12) == round(2 * math.lgamma(0.5) + math.log(2), 12)
True
>>> round(digamma(1.0), 12)  # minus the Euler-Mascheroni constant
-0.577215664902
"""
from __future__ import annotations

import math

import numpy as np

# psi(x) = log x - 1/(2x) - sum_k B_2k / (2k x^2k) for large x: the first Bernoulli terms
_SERIES = (1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12)
# the series is used from here on (its error there is below 1e-15); smaller x is shifted up
_ASYMPTOTIC_FROM = 10.0


def digamma(x: float) -> float:
    """psi(x) = d/dx log Gamma(x) for x > 0.

    >>> round(digamma(0.5) - digamma(1.5), 12) == round(-2.0, 12)  # psi(x + 1) = psi(x) + 1/x
    True
    """
    if not x > 0:
        raise ValueError(f"digamma needs x > 0, got {x}")
    shift = 0.0
    while x < _ASYMPTOTIC_FROM:
        shift -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    series, power = 0.0, inv2
    for coefficient in _SERIES:
        series += coefficient * power
        power *= inv2
    return shift + math.log(x) - 0.5 / x - series


def _weighted(values: np.ndarray, function) -> float:
    distinct, counts = np.unique(np.asarray(values, np.float64).ravel(), return_counts=True)
    return float(sum(int(c) * function(float(v)) for v, c in zip(distinct, counts)))


def lgamma_sum(values: np.ndarray) -> float:
    """sum of lgamma over ``values`` (all > 0).

    >>> lgamma_sum(np.array([1.0, 2.0, 1.0]))
    0.0
    """
    return _weighted(values, math.lgamma)


def digamma_sum(values: np.ndarray) -> float:
    """sum of digamma over ``values`` (all > 0).

    >>> round(digamma_sum(np.array([1.0, 1.0])), 9)
    -1.15443133
    """
    return _weighted(values, digamma)


__all__ = ["digamma", "digamma_sum", "lgamma_sum"]
