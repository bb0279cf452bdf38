"""Quasi-Newton training of ``f(w) + ρ1‖w‖₁``: L-BFGS with a Wolfe line search when ρ1 = 0, OWL-QN
(Andrew & Gao 2007, as in Wapiti) when ρ1 > 0; and SGD with the cumulative L1 penalty
(Tsuruoka et al. 2009) for mini-batches. Vectors are numpy or cupy arrays; only scalars cross
to the host.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.arrays import array_module
from gpu_text.backend import get_backend


def vector_op(name: str) -> Callable[..., Any]:
    """A fused vector pass of the CPU layer (``cpu_fallback/vectors.py``) for host arrays; device
    arrays use CuPy's expressions.

    >>> float(vector_op("dot")(np.arange(3.0), np.ones(3)))
    3.0
    """
    return get_backend("cpu").op("vectors", name)



def _dot(a: Any, b: Any) -> float:
    if isinstance(a, np.ndarray):
        return float(vector_op("dot")(a, b))
    return float(array_module(a).dot(a, b))


def pseudo_gradient(x: Any, g: Any, rho1: float) -> Any:
    """OWL-QN's pseudo-gradient of ``f + ρ1‖x‖₁``: the gradient of the L1 term where x ≠ 0, else
    the one-sided derivative that descends, or 0 when neither does.

    >>> pseudo_gradient(np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.5, -2.0, 2.0, 0.5]), 1.0).tolist()
    [1.5, -1.0, 1.0, 0.0]
    """
    xp = array_module(x)
    right, left = g + rho1, g - rho1
    at_zero = xp.where(right < 0, right, xp.where(left > 0, left, 0.0))
    return xp.where(x > 0, right, xp.where(x < 0, left, at_zero))


def _two_loop(g: Any, history: list[tuple[Any, Any, float]]) -> Any:
    """−H·g by the L-BFGS two-loop recursion over (s, y, 1/yᵀs) pairs, oldest first."""
    if isinstance(g, np.ndarray) and history:
        return _two_loop_fused(g, history)
    q = g.copy()
    alphas = []
    for s, y, rho in reversed(history):
        a = rho * _dot(s, q)
        alphas.append(a)
        q -= a * y
    if history:
        s, y, _ = history[-1]
        q *= _dot(s, y) / _dot(y, y)
    for (s, y, rho), a in zip(history, reversed(alphas)):
        q += (a - rho * _dot(y, q)) * s
    return -q


def _step_from(x: Any, step: float, d: Any) -> Any:
    """``x + step * d`` (one pass, no temporary, on the CPU)."""
    if isinstance(x, np.ndarray):
        return vector_op("combine")(np.empty_like(x), 1.0, x, step, d)
    return x + step * d


def _difference(a: Any, b: Any, out: Any = None) -> Any:
    """``a - b``, into ``out`` when given (CPU)."""
    if isinstance(a, np.ndarray):
        return vector_op("combine")(np.empty_like(a) if out is None else out, 1.0, a, -1.0, b)
    return a - b


def _two_loop_fused(g: np.ndarray, history: list[tuple[Any, Any, float]]) -> np.ndarray:
    """:func:`_two_loop` with each update of q fused with the next dot product (same arithmetic, one
    pass over memory per pair and loop instead of three, no temporaries)."""
    q = g.copy()
    k = len(history)
    alphas = [0.0] * k
    s, y, rho = history[-1]
    alphas[-1] = rho * vector_op("dot")(s, q)
    for i in range(k - 2, -1, -1):  # q -= alpha[i + 1] y[i + 1], then s[i] · q
        alphas[i] = history[i][2] * vector_op("update_dot")(q, 1.0, -alphas[i + 1], history[i + 1][1], history[i][0])
    s, y, _ = history[-1]
    gamma = vector_op("dot")(s, y) / vector_op("dot")(y, y)
    # q = gamma (q - alpha[0] y[0]), then y[0] · q
    yq = vector_op("update_dot")(q, gamma, -alphas[0], history[0][1], history[0][1])
    for i in range(k):  # q += (alpha[i] - rho[i] y[i] · q) s[i], then y[i + 1] · q
        s, _, rho = history[i]
        nxt = history[i + 1][1] if i + 1 < k else s
        yq = vector_op("update_dot")(q, 1.0, alphas[i] - rho * yq, s, nxt)
    return vector_op("combine")(q, -1.0, q, 0.0, q)


@dataclass
class Step:
    """What the optimiser reports after each iteration."""

    iteration: int
    objective: float  # including the L1 term
    gradient_norm: float  # of the (pseudo-)gradient
    evaluations: int


def minimize(fun: Callable[[Any], tuple[float, Any]], x0: Any, *, rho1: float = 0.0, history: int = 5,
             max_iterations: int = 100, max_linesearch: int = 40, epsilon: float = 1e-5,
             callback: Callable[[Step, Any], bool] | None = None) -> Any:
    """Minimise ``fun(x)[0] + rho1·‖x‖₁`` (``fun`` returns the smooth value and its gradient).

    Stops after ``max_iterations``, when ‖pseudo-gradient‖ ≤ ``epsilon``·max(1, ‖x‖), when the line
    search fails, or when ``callback(step, x)`` returns true (the caller's stopping rules).

    >>> f = lambda x: (float(((x - 3) ** 2).sum()), 2 * (x - 3))
    >>> minimize(f, np.zeros(2)).round(6).tolist()
    [3.0, 3.0]
    >>> minimize(f, np.zeros(2), rho1=4.0).round(6).tolist()  # L1 pulls 3 to 3 - 4/2
    [1.0, 1.0]
    """
    x = x0.copy()
    f, g = fun(x)
    evaluations = 1
    l1 = lambda v: rho1 * float(array_module(v).abs(v).sum()) if rho1 > 0 else 0.0  # noqa: E731
    total = f + l1(x)
    pairs: list[tuple[Any, Any, float]] = []
    for iteration in range(1, max_iterations + 1):
        pg = pseudo_gradient(x, g, rho1) if rho1 > 0 else g
        pg_norm = math.sqrt(_dot(pg, pg))
        if pg_norm <= epsilon * max(1.0, math.sqrt(_dot(x, x))):
            break
        d = _two_loop(pg, pairs)
        if rho1 > 0:
            d = array_module(d).where(d * pg < 0, d, 0.0)  # keep the directions that descend the pseudo-gradient
        if _dot(d, pg) >= 0:  # not a descent direction: restart from steepest descent
            pairs.clear()
            d = -pg
        step = 1.0 / math.sqrt(_dot(d, d)) if iteration == 1 else 1.0
        found = None
        if rho1 > 0:
            orthant = array_module(x).where(x != 0, array_module(x).sign(x), array_module(x).sign(-pg))
            for _ in range(max_linesearch):
                xn = x + step * d
                xn = array_module(x).where(xn * orthant > 0, xn, 0.0)
                fn, gn = fun(xn)
                evaluations += 1
                tn = fn + l1(xn)
                if tn <= total + 1e-4 * _dot(pg, xn - x):
                    found = (xn, fn, gn, tn)
                    break
                step *= 0.5
        else:
            slope = _dot(g, d)
            low, high = 0.0, math.inf
            for _ in range(max_linesearch):
                xn = _step_from(x, step, d)
                fn, gn = fun(xn)
                evaluations += 1
                if not math.isfinite(fn) or fn > f + 1e-4 * step * slope:  # an overflow is a step too far
                    high = step
                elif _dot(gn, d) < 0.9 * slope:
                    low = step
                else:
                    found = (xn, fn, gn, fn)
                    break
                step = 0.5 * (low + high) if high < math.inf else 2.0 * step
        if found is None:
            break
        xn, fn, gn, tn = found
        # the oldest pair, dropped now when the history is full, lends its memory to the new one
        oldest = pairs.pop(0) if len(pairs) >= history else (None, None, 0.0)
        s, y = _difference(xn, x, oldest[0]), _difference(gn, g, oldest[1])
        sy = _dot(s, y)
        if sy > 0:
            pairs.append((s, y, 1.0 / sy))
        x, f, g, total = xn, fn, gn, tn
        if callback is not None and callback(Step(iteration, total, pg_norm, evaluations), x):
            break
    return x


def sgd_l1(batch_gradient: Callable[[int, Any], Any], n_batches: int, x0: Any, *, rho1: float, epochs: int,
           learning_rate: float = 0.1, decay: float = 0.85, seed: int = 0,
           callback: Callable[[Step, Any], bool] | None = None) -> Any:
    """Mini-batch SGD with the cumulative L1 penalty (Tsuruoka et al. 2009). ``batch_gradient(b, x)``
    is the smooth gradient of batch ``b`` (already scaled to its share of the data);
    ``learning_rate`` decays as ``learning_rate · decay^(epoch)``; batch order is shuffled per
    epoch with ``seed``.

    >>> grads = [lambda x: (x - 1) / 2, lambda x: (x - 1) / 2]
    >>> sgd_l1(lambda b, x: grads[b](x), 2, np.zeros(1), rho1=0.0, epochs=60, learning_rate=0.5, decay=1.0).round(3).tolist()
    [1.0]
    """
    xp = array_module(x0)
    x = x0.copy()
    applied = xp.zeros_like(x)  # q: the L1 penalty each weight has received so far
    budget = 0.0  # u: the L1 penalty every weight could have received
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        eta = learning_rate * decay ** epoch
        for b in rng.permutation(n_batches).tolist():
            x -= eta * batch_gradient(b, x)
            if rho1 > 0:
                budget += eta * rho1 / n_batches
                before = x.copy()
                x = xp.where(x > 0, xp.maximum(0.0, x - (budget + applied)),
                             xp.where(x < 0, xp.minimum(0.0, x + (budget - applied)), x))
                applied += x - before
        if callback is not None and callback(Step(epoch + 1, math.nan, math.nan, (epoch + 1) * n_batches), x):
            break
    return x
