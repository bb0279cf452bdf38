"""L-BFGS / OWL-QN of :func:`gpu_text.crf.optimize.minimize` for device arrays: every vector stays
on the device and each evaluation of the objective is followed by ONE copy of a small array of
scalars to the host -- the objective, the line search's slopes, ``x·x``, the non-zero weights,
the caller's own figures (``fun``'s third result, e.g. training's error count) and every dot
product the next direction needs, taken speculatively for the trial point before knowing whether
the line search accepts it. An iteration whose first trial is accepted therefore reads the device
once; nothing is uploaded (the direction's coefficients go to the device as kernel scalars).

The arithmetic is the CPU path's except for where rounding enters: the dot products are the
array module's (CuPy's reductions), the newest pair's Gram column is taken against the trial
point rather than after storing the pair, and the descent test reads ``g·d`` after the trial
evaluation (a direction that does not descend, which needs the L-BFGS history to have lost
positive definiteness, costs one wasted evaluation and restarts from steepest descent, as on
the CPU).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gpu_text.arrays import array_module, to_host


class DeviceHistory:
    """The last ``m`` (s, y) pairs as rows of two device matrices and their Gram matrices on the
    host, in ``gram``: a :class:`gpu_text.crf.optimize.History` on host arrays whose order, Gram
    matrices and coefficient recursion it reuses (handed in: that module imports this one), fed
    from the dot products a trial point's readback carries.

    >>> from gpu_text.crf.optimize import History
    >>> h = DeviceHistory(np.zeros(2), History(2, np.zeros(1), fused=False))
    >>> h.accept(np.array([1.0, 0.0]), np.array([2.0, 0.0]), {"sy": 2.0, "yy": 4.0, "S_y": np.zeros(2),
    ...          "Y_y": np.zeros(2)})
    True
    >>> d = h.direction(np.array([4.0, 2.0]), np.array([4.0, 0.0]), np.array([8.0, 0.0]))  # S·g, Y·g by slot
    >>> d.tolist()
    [-2.0, -1.0]
    """

    def __init__(self, like: Any, gram: Any) -> None:
        m = gram.S.shape[0]
        xp = array_module(like)
        self.xp = xp
        # s rows then y rows in one matrix: one matrix-vector product takes every row's dot product
        # with a vector, and one forms the direction; zeros, not empty: unused slots are multiplied too
        self.SY = xp.zeros((2 * m, like.size), like.dtype)
        self.S, self.Y = self.SY[:m], self.SY[m:]
        self.gram = gram  # order, sy, yy and coefficients() only

    @property
    def order(self) -> list[int]:
        return self.gram.order

    def clear(self) -> None:
        """Forget every pair (a restart from steepest descent)."""
        self.gram.clear()

    def accept(self, s: Any, y: Any, dots: dict) -> bool:
        """Store (s, y) as the newest pair if ``s·y > 0`` (``dots``: ``sy``, ``yy`` and ``S_y``,
        ``Y_y``, the products of every slot's rows with y), dropping the oldest first when full
        (dropped even when the new pair is refused, as the CPU's). Returns whether it was kept."""
        gram, m = self.gram, self.S.shape[0]
        slot = gram.order.pop(0) if len(gram.order) >= m else min(set(range(m)) - set(gram.order))
        if not dots["sy"] > 0:  # NaN too: no curvature information
            return False
        self.S[slot] = s
        self.Y[slot] = y
        for r in gram.order:
            gram.sy[r, slot] = dots["S_y"][r]
            gram.yy[r, slot] = gram.yy[slot, r] = dots["Y_y"][r]
        gram.sy[slot, slot], gram.yy[slot, slot] = dots["sy"], dots["yy"]
        gram.order.append(slot)
        return True

    def direction(self, g: Any, S_g: np.ndarray, Y_g: np.ndarray) -> Any:
        """d = −H·g from the products of every slot's rows with g (host arrays by slot): the
        coefficient recursion on the host, the coefficients set one by one on the device (kernel
        scalars, not an upload), then one matrix-vector product over the rows and ``+ c·g``."""
        rows, m = self.gram.order, self.S.shape[0]
        if not rows:
            return -g
        dots = np.zeros((5, len(rows)))
        dots[0], dots[1] = S_g[rows], Y_g[rows]
        c, cs, cy = self.gram.coefficients(dots)
        coefficients = self.xp.zeros(2 * m)
        for r, a, b in zip(rows, cs.tolist(), cy.tolist()):
            coefficients[r], coefficients[m + r] = a, b
        d = coefficients @ self.SY
        d += c * g
        return d


class _Trial:
    """One evaluation at a trial point and what its single readback told the host."""

    def __init__(self, xn: Any, gn: Any, pgn: Any, values: dict, extra: tuple) -> None:
        self.xn, self.gn, self.pgn, self.values, self.extra = xn, gn, pgn, values, extra


def _evaluate(fun: Callable, xn: Any, x: Any | None, g: Any | None, d: Any | None, pg: Any | None,
              history: DeviceHistory, rho1: float, pseudo_gradient: Callable) -> _Trial:
    """``fun`` at ``xn`` and the one readback of every scalar the host may need next."""
    xp = array_module(xn)
    norm2 = xp.dot(xn, xn)
    result = fun(xn, norm2)
    fn, gn = result[0], result[1]
    extra = result[2] if len(result) > 2 and result[2] is not None else xp.zeros(0)
    pgn = pseudo_gradient(xn, gn, rho1) if rho1 > 0 else gn
    zero = xp.zeros(())
    scalars = [xp.asarray(fn, dtype=xp.float64) if not isinstance(fn, float) else fn + zero, norm2,
               (xn != 0).sum().astype(xp.float64), xp.dot(pgn, pgn),
               rho1 * xp.abs(xn).sum() if rho1 > 0 else zero]
    vectors = [xp.stack(scalars), history.SY @ pgn]
    if x is not None:
        s, y = xn - x, gn - g
        pair = [xp.dot(gn, d), xp.dot(pg, d), xp.dot(pg, s) if rho1 > 0 else zero, xp.dot(s, y), xp.dot(y, y),
                xp.dot(s, pgn), xp.dot(y, pgn)]
        vectors += [xp.stack(pair), history.SY @ y]
    else:
        s = y = None
    host = to_host(xp.concatenate(vectors + [xp.asarray(extra, dtype=xp.float64).reshape(-1)]))  # the one sync
    m = history.S.shape[0]
    values = {"f": float(host[0]), "xx": float(host[1]), "active": int(host[2]), "gg": float(host[3]),
              "l1": float(host[4]), "S_g": host[5:5 + m], "Y_g": host[5 + m:5 + 2 * m], "s": s, "y": y}
    at = 5 + 2 * m
    if x is not None:
        gd, descent, pg_step, sy, yy, s_g, y_g = host[at:at + 7].tolist()
        values.update(gd=gd, descent=descent, pg_step=pg_step, sy=sy, yy=yy, s_g=s_g, y_g=y_g,
                      S_y=host[at + 7:at + 7 + m], Y_y=host[at + 7 + m:at + 7 + 2 * m])
        at += 7 + 2 * m
    return _Trial(xn, gn, pgn, values, tuple(host[at:].tolist()))


def minimize_device(fun: Callable[..., tuple], x0: Any, *, rho1: float, gram: Any, max_iterations: int,
                    max_linesearch: int, epsilon: float, callback: Callable | None, step_record: type,
                    pseudo_gradient: Callable) -> Any:
    """:func:`gpu_text.crf.optimize.minimize` on device vectors (see the module docstring), which
    hands in its ``History`` (``gram``, see :class:`DeviceHistory`), ``Step`` and
    ``pseudo_gradient``: ``fun(x, xx)`` gets ``xx = x·x`` as a device scalar and returns
    ``(f, g)`` or ``(f, g, extra)`` with ``f`` a device scalar (or float) and ``extra`` a device
    vector of figures the callback receives as ``Step.extra``.

    >>> from gpu_text.crf.optimize import History, Step, pseudo_gradient
    >>> f = lambda x, xx: (((x - 3) ** 2).sum(), 2 * (x - 3))
    >>> minimize_device(f, np.zeros(2), rho1=0.0, gram=History(5, np.zeros(1), fused=False), max_iterations=100,
    ...                 max_linesearch=40, epsilon=1e-5, callback=None, step_record=Step,
    ...                 pseudo_gradient=pseudo_gradient).round(6).tolist()
    [3.0, 3.0]
    """
    xp = array_module(x0)
    pairs = DeviceHistory(x0, gram)
    trial = _evaluate(fun, x0.copy(), None, None, None, None, pairs, rho1, pseudo_gradient)
    evaluations = 1
    x, g, pg, v = trial.xn, trial.gn, trial.pgn, trial.values
    f, total, xx = v["f"], v["f"] + v["l1"], v["xx"]
    S_g, Y_g, gg = v["S_g"], v["Y_g"], v["gg"]
    for iteration in range(1, max_iterations + 1):
        pg_norm = math.sqrt(gg)
        if pg_norm <= epsilon * max(1.0, math.sqrt(xx)):
            break
        found = None
        for restart in (False, True):
            d = pairs.direction(pg, S_g, Y_g) if not restart else -pg
            if rho1 > 0:
                d = xp.where(d * pg < 0, d, 0.0)  # keep the directions that descend the pseudo-gradient
            # iteration 1 (or a restart of it) is steepest descent: d·d = pg·pg, known
            step = 1.0 / pg_norm if iteration == 1 else 1.0
            orthant = xp.where(x != 0, xp.sign(x), xp.sign(-pg)) if rho1 > 0 else None
            low, high = 0.0, math.inf
            descent = None
            for _ in range(max_linesearch):
                xn = x + step * d
                if rho1 > 0:
                    xn = xp.where(xn * orthant > 0, xn, 0.0)
                trial = _evaluate(fun, xn, x, g, d, pg, pairs, rho1, pseudo_gradient)
                evaluations += 1
                v = trial.values
                descent = v["descent"]
                if not descent < 0:  # not a descent direction (the L-BFGS one only): restart
                    break
                fn, tn = v["f"], v["f"] + v["l1"]
                if rho1 > 0:
                    if tn <= total + 1e-4 * v["pg_step"]:
                        found = trial
                        break
                    step *= 0.5
                    continue
                if not math.isfinite(fn) or fn > f + 1e-4 * step * descent:
                    high = step
                elif v["gd"] < 0.9 * descent:
                    low = step
                else:
                    found = trial
                    break
                step = 0.5 * (low + high) if high < math.inf else 2.0 * step
            if found is not None or descent is None or descent < 0 or restart:
                break
            pairs.clear()
        if found is None:
            break
        v = found.values
        kept = pairs.accept(v["s"], v["y"], v)
        x, g, pg = found.xn, found.gn, found.pgn
        f, total, xx, gg = v["f"], v["f"] + v["l1"], v["xx"], v["gg"]
        S_g, Y_g = v["S_g"].copy(), v["Y_g"].copy()
        if kept:  # the new pair's products with the new gradient
            S_g[pairs.order[-1]], Y_g[pairs.order[-1]] = v["s_g"], v["y_g"]
        record = step_record(iteration, total, pg_norm, evaluations, xx, v["active"], found.extra)
        if callback is not None and callback(record, x):
            break
    return x
