"""Two-sided p-values of correlation coefficients, as scipy reports them beside Pearson's r and
Spearman's rho (gensim's ``evaluate_word_pairs`` passes them on), without depending on scipy.

Under the null hypothesis ``t = r * sqrt(df / (1 - r**2))`` follows Student's t with ``df = n - 2``
degrees of freedom, and its two-sided tail is the regularised incomplete beta function
``I_x(df / 2, 1 / 2)`` at ``x = df / (df + t**2) = 1 - r**2``, evaluated here by its continued
fraction (modified Lentz), which converges fast for ``x < (a + 1) / (a + b + 2)`` and, through the
symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)``, everywhere else.

>>> round(correlation_pvalue(0.5, 20), 6)
0.02477
"""
from __future__ import annotations

import math

TINY = 1e-300
EPSILON = 1e-15


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (without its prefactor)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > TINY else TINY)
    value = d
    for m in range(1, 10_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > TINY else TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > TINY else TINY
            value *= c * d
        if abs(c * d - 1.0) < EPSILON:
            break
    return value


def regularized_beta(x: float, a: float, b: float) -> float:
    """``I_x(a, b)``, the regularised incomplete beta function, for ``0 <= x <= 1`` and ``a, b > 0``.

    >>> regularized_beta(0.5, 2.0, 2.0), regularized_beta(0.0, 3.0, 1.0), regularized_beta(1.0, 3.0, 1.0)
    (0.5, 0.0, 1.0)
    """
    if not 0.0 <= x <= 1.0 or a <= 0 or b <= 0:
        raise ValueError(f"regularized_beta needs 0 <= x <= 1 and a, b > 0, got x={x}, a={a}, b={b}")
    if x in (0.0, 1.0):
        return x
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def correlation_pvalue(r: float, n: int) -> float:
    """Two-sided p-value of a correlation ``r`` over ``n`` pairs (scipy's for ``pearsonr`` and
    ``spearmanr``); NaN when ``n < 3`` or ``r`` is NaN.

    >>> correlation_pvalue(1.0, 10), correlation_pvalue(0.0, 10), correlation_pvalue(0.3, 2)
    (0.0, 1.0, nan)
    """
    if n < 3 or math.isnan(r):
        return math.nan
    r = max(-1.0, min(1.0, float(r)))
    return regularized_beta(1.0 - r * r, (n - 2) / 2.0, 0.5)


__all__ = ["correlation_pvalue", "regularized_beta"]
