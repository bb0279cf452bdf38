"""Quasi-Newton training of ``f(w) + ρ1‖w‖₁``: L-BFGS with a Wolfe line search when ρ1 = 0, OWL-QN
(Andrew & Gao 2007, as in Wapiti) when ρ1 > 0; and SGD with the cumulative L1 penalty
(Tsuruoka et al. 2009) for mini-batches. Vectors are numpy or cupy arrays; only scalars cross
to the host. The L-BFGS direction takes two passes over memory an iteration (:class:`History`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.arrays import array_module, to_host
from gpu_text.backend import get_backend


def vector_op(name: str) -> Callable[..., Any]:
    """A fused vector pass of the CPU layer (``cpu_fallback/vectors.py``) for host arrays; device
    arrays use CuPy's expressions. It runs on as many threads as its vectors are worth
    (``cpu_fallback.crf.threads_for``): the passes are bound by memory, not arithmetic, and on a
    loaded machine waking a second thread costs more than a pass over millions of weights (a
    2.4M-weight dot: 1.8 ms on one thread, 24 ms median on two, measured on the shared 2-core
    machine); the results do not depend on the thread count.

    >>> float(vector_op("dot")(np.arange(3.0), np.ones(3)))
    3.0
    """
    cpu = get_backend("cpu")
    op, threads, threads_for = cpu.op("vectors", name), cpu.op("crf", "threads"), cpu.op("crf", "threads_for")

    def run(*vectors: Any) -> Any:
        with threads(threads_for(int(vectors[-1].size))):
            return op(*vectors)

    return run


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


def _two_loop(g: Any, history: list[tuple]) -> Any:
    """−H·g by the textbook L-BFGS two-loop recursion over (s, y, 1/yᵀs) pairs, oldest first: the
    definition :class:`History` computes in two passes (its tests compare the two).

    >>> s, y = np.array([1.0, 0.0]), np.array([2.0, 0.0])
    >>> _two_loop(np.array([4.0, 2.0]), [(s, y, 0.5)]).tolist()
    [-2.0, -1.0]
    """
    q = g.copy()
    alphas = []
    for s, y, rho, *_ in reversed(history):
        alphas.append(rho * _dot(s, q))
        q -= alphas[-1] * y
    if history:
        s, y = history[-1][:2]
        q *= _dot(s, y) / _dot(y, y)
    for (s, y, rho, *_), a in zip(history, reversed(alphas)):
        q += (a - rho * _dot(y, q)) * s
    return -q


def _step_from(x: Any, step: float, d: Any) -> tuple[Any, float, int]:
    """(``xn = x + step * d``, ``xn · xn``, non-zero weights of ``xn`` or -1): on the CPU one pass,
    no temporary. The norm is the objective's L2 term, the next iteration's stopping test's and the
    callback's divergence test; the count is the callback's active weights: none of them then needs
    a pass of its own. On the device the count is left to the callback (-1)."""
    if isinstance(x, np.ndarray):
        xn = np.empty_like(x)
        norm, nonzero = vector_op("combine_norm")(xn, 1.0, x, step, d)
        return xn, float(norm), int(nonzero)
    xn = x + step * d
    return xn, _dot(xn, xn), -1


def _cpu_pass(name: str, size: int, *args: Any) -> Any:
    """A fused pass of ``cpu_fallback/vectors.py`` over vectors of ``size`` weights, on the threads
    one such vector is worth (as :func:`vector_op`), whatever the number of rows it reads: counting
    every row's work woke a second thread from 3 pairs on, and on the loaded 2-core machine the
    iterations went from about 0.2 s to 0.8 s from that iteration on (benchmarks/crf.py, two runs)."""
    cpu = get_backend("cpu")
    with cpu.op("crf", "threads")(cpu.op("crf", "threads_for")(size)):
        return cpu.op("vectors", name)(*args)


class _FusedPasses:
    """The history's three passes as the CPU layer's fused Numba kernels (host arrays)."""

    @staticmethod
    def history_dots(S: Any, Y: Any, rows: np.ndarray, fresh: int, g: Any) -> np.ndarray:
        return _cpu_pass("history_dots", g.size, S, Y, rows, fresh, g)

    @staticmethod
    def combine_rows(out: Any, c: float, g: Any, cs: np.ndarray, cy: np.ndarray, S: Any, Y: Any,
                     rows: np.ndarray) -> float:
        return float(_cpu_pass("combine_rows", g.size, out, c, g, cs, cy, S, Y, rows))

    @staticmethod
    def store_pair(s: Any, y: Any, xn: Any, x: Any, gn: Any, g: Any) -> float:
        return float(_cpu_pass("store_pair", s.size, s, y, xn, x, gn, g))


class _ArrayPasses:
    """The same passes as array expressions of the vectors' own module: CuPy on the device (numpy
    runs it in the tests). Only the small results cross to the host."""

    @staticmethod
    def history_dots(S: Any, Y: Any, rows: np.ndarray, fresh: int, g: Any) -> np.ndarray:
        xp = array_module(g)
        k = rows.size
        out = np.zeros((5, max(k, 1)))  # [4, 0]: g·g, even with no pairs
        out[4, 0] = float(xp.dot(g, g))
        if k:
            index = xp.asarray(rows)
            Sr, Yr = S[index], Y[index]
            out[0], out[1] = to_host(Sr @ g), to_host(Yr @ g)
            if fresh >= 0:
                out[2], out[3] = to_host(Sr @ Y[fresh]), to_host(Yr @ Y[fresh])
        return out

    @staticmethod
    def combine_rows(out: Any, c: float, g: Any, cs: np.ndarray, cy: np.ndarray, S: Any, Y: Any,
                     rows: np.ndarray) -> float:
        xp = array_module(g)
        out[...] = c * g
        if rows.size:
            index = xp.asarray(rows)
            out += xp.asarray(cs) @ S[index] + xp.asarray(cy) @ Y[index]
        return float(xp.dot(out, g))

    @staticmethod
    def store_pair(s: Any, y: Any, xn: Any, x: Any, gn: Any, g: Any) -> float:
        xp = array_module(s)
        s[...] = xn - x
        y[...] = gn - g
        return float(xp.dot(s, y))


class History:
    """The last ``m`` (s, y) pairs of L-BFGS as rows of two ``m × n`` matrices, with the small Gram
    matrices of their dot products (``s_i·y_j``, ``y_i·y_j``) kept up to date, so that the direction
    ``−H·g`` of the two-loop recursion takes two passes over memory: one for every dot product of
    ``g`` with the rows (:meth:`dots`, which also takes the newest pair's Gram column), one to form
    the direction as one linear combination (:meth:`direction`). Between the passes the recursion
    runs on coefficients (m numbers), term for term the two-loop's. ``fused=None`` picks the CPU
    layer's Numba passes for numpy vectors and array expressions otherwise (``fused=False`` runs
    those on numpy).

    >>> h = History(2, np.zeros(2))
    >>> h.add(np.array([1.0, 0.0]), np.zeros(2), np.array([2.0, 0.0]), np.zeros(2))
    True
    >>> g = np.array([4.0, 2.0])
    >>> d, slope = h.direction(g, h.dots(g))
    >>> d.tolist(), slope
    ([-2.0, -1.0], -10.0)
    """

    def __init__(self, m: int, like: Any, fused: bool | None = None) -> None:
        if m < 1:
            raise ValueError(f"L-BFGS history must hold at least one pair, got {m}")
        xp = array_module(like)
        self.S = xp.empty((m, like.size), like.dtype)
        self.Y = xp.empty((m, like.size), like.dtype)
        self.order: list[int] = []  # the slots in use, oldest pair first
        self.sy = np.zeros((m, m))  # s_i·y_j by slot, needed where pair i is no newer than pair j
        self.yy = np.zeros((m, m))  # y_i·y_j by slot
        self.pending: list[int] = []  # kept slots whose Gram column is still to be taken
        fused = isinstance(like, np.ndarray) if fused is None else fused
        self.passes = _FusedPasses if fused else _ArrayPasses

    def __len__(self) -> int:
        return len(self.order)

    def clear(self) -> None:
        """Forget every pair (a restart from steepest descent)."""
        self.order.clear()
        self.pending.clear()

    def add(self, xn: Any, x: Any, gn: Any, g: Any) -> bool:
        """Store ``s = xn − x``, ``y = gn − g`` (one pass) as the newest pair if ``yᵀs > 0``, dropping
        the oldest first when the history is full (dropped even when the new pair is refused: its
        memory is what the new pair was written into). Returns whether the pair was kept."""
        m = self.S.shape[0]
        slot = self.order.pop(0) if len(self.order) >= m else min(set(range(m)) - set(self.order))
        if slot in self.pending:
            self.pending.remove(slot)
        sy = self.passes.store_pair(self.S[slot], self.Y[slot], xn, x, gn, g)
        if not sy > 0:  # NaN too: no curvature information
            return False
        self.order.append(slot)
        self.sy[slot, slot] = sy
        self.pending.append(slot)
        return True

    def _gram_column(self, slot: int, rows: np.ndarray, dots: np.ndarray) -> None:
        for j, r in enumerate(rows.tolist()):
            if r != slot:  # s·y of the pair itself is store_pair's, the one its acceptance tested
                self.sy[r, slot] = dots[2, j]
            self.yy[r, slot] = self.yy[slot, r] = dots[3, j]

    def dots(self, g: Any) -> np.ndarray:
        """One pass: ``S·g``, ``Y·g`` (oldest pair first), ``g·g`` in ``[4, 0]``, and the Gram column
        of the newest pair. Returns the ``(5, max(k, 1))`` array of ``cpu_fallback.vectors.history_dots``."""
        rows = np.array(self.order, np.int64)
        for slot in self.pending[:-1]:  # only when pairs were added without a direction between
            self._gram_column(slot, rows, self.passes.history_dots(self.S, self.Y, rows, slot, self.Y[slot]))
        fresh = self.pending[-1] if self.pending else -1
        dots = self.passes.history_dots(self.S, self.Y, rows, fresh, g)
        if fresh >= 0:
            self._gram_column(fresh, rows, dots)
        self.pending.clear()
        return dots

    def coefficients(self, dots: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """(c, cs, cy) with ``−H·g = c·g + Σ cs_i s_i + cy_i y_i``: the two-loop recursion on the
        coefficients of q in the basis (g, s_i, y_i), every dot product from ``dots`` and the Gram
        matrices."""
        rows = np.array(self.order, np.int64)
        k = rows.size
        if k == 0:
            return -1.0, np.zeros(0), np.zeros(0)
        a, b = dots[0], dots[1]
        sy, yy = self.sy[np.ix_(rows, rows)], self.yy[np.ix_(rows, rows)]
        rho = 1.0 / np.diag(sy)
        qy, alpha = np.zeros(k), np.zeros(k)  # first loop: q = g + Σ qy_j y_j
        for i in range(k - 1, -1, -1):
            alpha[i] = rho[i] * (a[i] + float(qy[i + 1:] @ sy[i, i + 1:]))  # rho_i s_i·q
            qy[i] = -alpha[i]
        gamma = sy[-1, -1] / yy[-1, -1]
        ry, rs = gamma * qy, np.zeros(k)  # second loop: r = gamma·g + Σ rs_j s_j + ry_j y_j
        for i in range(k):
            beta = rho[i] * (gamma * b[i] + float(ry @ yy[i]) + float(rs[:i] @ sy[:i, i]))  # rho_i y_i·r
            rs[i] = alpha[i] - beta
        return -gamma, -rs, -ry

    def direction(self, g: Any, dots: np.ndarray) -> tuple[Any, float]:
        """(d = −H·g, g·d) in one pass, from the pass of :meth:`dots` on the same ``g``."""
        c, cs, cy = self.coefficients(dots)
        d = array_module(g).empty_like(g)
        rows = np.array(self.order, np.int64)
        return d, self.passes.combine_rows(d, c, g, cs, cy, self.S, self.Y, rows)


@dataclass
class Step:
    """What the optimiser reports after each iteration."""

    iteration: int
    objective: float  # including the L1 term
    gradient_norm: float  # of the (pseudo-)gradient
    evaluations: int
    x_norm2: float = math.nan  # x · x of the accepted point where a pass took it (L-BFGS), else NaN
    active: int = -1  # its non-zero weights where a pass counted them (CPU L-BFGS, the device), else -1
    extra: tuple = ()  # device path: the figures of ``fun``'s third result, read with the iteration's scalars


def minimize(fun: Callable[..., tuple[float, Any]], x0: Any, *, rho1: float = 0.0, history: int = 5,
             max_iterations: int = 100, max_linesearch: int = 40, epsilon: float = 1e-5,
             callback: Callable[[Step, Any], bool] | None = None, pass_norm: bool = False,
             device: bool | None = None) -> Any:
    """Minimise ``fun(x)[0] + rho1·‖x‖₁`` (``fun`` returns the smooth value and its gradient).

    Stops after ``max_iterations``, when ‖pseudo-gradient‖ ≤ ``epsilon``·max(1, ‖x‖), when the line
    search fails, or when ``callback(step, x)`` returns true (the caller's stopping rules). The last
    ``history`` (s, y) pairs live in a :class:`History`; ``fun``'s vectors are not written to.
    With ``pass_norm`` ``fun`` is called as ``fun(x, xx)``, ``xx`` being ``x · x`` where the pass
    that formed ``x`` took it (L-BFGS's trial points) and None otherwise, so that an L2 term needs
    no pass of its own.

    Device vectors (``device=None``: whenever ``x0`` is not a numpy array; ``device=True`` runs
    that path on numpy) take :func:`gpu_text.crf.optimize_device.minimize_device`: one copy of
    the iteration's scalars to the host per evaluation, ``xx`` a device scalar, and ``fun`` may
    return ``(f, g, extra)`` with ``f`` a device scalar and ``extra`` figures for ``Step.extra``.

    >>> f = lambda x: (float(((x - 3) ** 2).sum()), 2 * (x - 3))
    >>> minimize(f, np.zeros(2)).round(6).tolist()
    [3.0, 3.0]
    >>> minimize(f, np.zeros(2), rho1=4.0).round(6).tolist()  # L1 pulls 3 to 3 - 4/2
    [1.0, 1.0]
    """
    evaluate = fun if pass_norm else (lambda v, _: fun(v))
    if (array_module(x0) is not np) if device is None else device:
        from gpu_text.crf.optimize_device import minimize_device  # imported when used

        return minimize_device(evaluate, x0, rho1=rho1, gram=History(history, np.zeros(1), fused=False),
                               max_iterations=max_iterations, max_linesearch=max_linesearch, epsilon=epsilon,
                               callback=callback, step_record=Step, pseudo_gradient=pseudo_gradient)
    x = x0.copy()
    f, g = evaluate(x, None)
    evaluations = 1
    l1 = lambda v: rho1 * float(array_module(v).abs(v).sum()) if rho1 > 0 else 0.0  # noqa: E731
    total = f + l1(x)
    pairs = History(history, x)
    xx = None  # x · x when a pass already took it
    active = -1  # x's non-zero weights when a pass counted them
    for iteration in range(1, max_iterations + 1):
        pg = pseudo_gradient(x, g, rho1) if rho1 > 0 else g
        dots = pairs.dots(pg)  # every dot product of the direction, and ‖pg‖², in one pass
        pg_norm = math.sqrt(dots[4, 0])
        if pg_norm <= epsilon * max(1.0, math.sqrt(_dot(x, x) if xx is None else xx)):
            break
        d, descent = pairs.direction(pg, dots)
        if rho1 > 0:
            d = array_module(d).where(d * pg < 0, d, 0.0)  # keep the directions that descend the pseudo-gradient
            descent = _dot(d, pg)
        if descent >= 0:  # not a descent direction: restart from steepest descent
            pairs.clear()
            d = -pg
            descent = _dot(d, pg)
        step = 1.0 / math.sqrt(_dot(d, d)) if iteration == 1 else 1.0
        found = None
        if rho1 > 0:
            orthant = array_module(x).where(x != 0, array_module(x).sign(x), array_module(x).sign(-pg))
            for _ in range(max_linesearch):
                xn = x + step * d
                xn = array_module(x).where(xn * orthant > 0, xn, 0.0)
                fn, gn = evaluate(xn, None)
                evaluations += 1
                tn = fn + l1(xn)
                if tn <= total + 1e-4 * _dot(pg, xn - x):
                    found = (xn, fn, gn, tn)
                    break
                step *= 0.5
        else:
            slope = descent  # g · d: pg is g without the L1 term
            low, high = 0.0, math.inf
            for _ in range(max_linesearch):
                xn, xnxn, counted = _step_from(x, step, d)
                fn, gn = evaluate(xn, xnxn)
                evaluations += 1
                if not math.isfinite(fn) or fn > f + 1e-4 * step * slope:  # an overflow is a step too far
                    high = step
                elif _dot(gn, d) < 0.9 * slope:
                    low = step
                else:
                    found = (xn, fn, gn, fn)
                    break
                step = 0.5 * (low + high) if high < math.inf else 2.0 * step
            xx, active = (xnxn, counted) if found is not None else (None, -1)
        if found is None:
            break
        xn, fn, gn, tn = found
        pairs.add(xn, x, gn, g)  # kept when yᵀs > 0; the oldest pair goes when the history is full
        x, f, g, total = xn, fn, gn, tn
        step_record = Step(iteration, total, pg_norm, evaluations, math.nan if xx is None else xx,
                           active if rho1 == 0 else -1)
        if callback is not None and callback(step_record, x):
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
