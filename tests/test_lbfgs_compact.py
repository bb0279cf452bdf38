"""The L-BFGS history in two passes (``gpu_text.crf.optimize.History``) against the textbook two-loop
recursion, on the CPU's fused Numba passes and on the array expressions the GPU runs (here on numpy);
the passes of ``cpu_fallback/vectors.py`` against numpy; determinism whatever the thread count."""
from __future__ import annotations

import numba
import numpy as np
import pytest

from cpu_fallback import vectors
from gpu_text.crf import optimize
from gpu_text.crf.optimize import History, minimize

N = 10_001  # not a multiple of the block count


def textbook(g, pairs):
    """−H·g written out with plain numpy, oldest pair first."""
    q, alphas = g.copy(), []
    for s, y in reversed(pairs):
        alphas.append(float(s @ q) / float(s @ y))
        q = q - alphas[-1] * y
    s, y = pairs[-1]
    q = q * float(s @ y) / float(y @ y)
    for (s, y), a in zip(pairs, reversed(alphas)):
        q = q + (a - float(y @ q) / float(s @ y)) * s
    return -q


def random_pairs(rng, count, n=N):
    return [(s, s + 0.3 * rng.normal(size=n)) for s in (rng.normal(size=n) for _ in range(count))]


def history_of(pairs, m, fused, directions=True, g=None):
    """A History fed ``pairs`` through :meth:`History.add` (s = s - 0, y = y - 0), taking a
    direction between additions when ``directions`` (as ``minimize`` does)."""
    zeros = np.zeros(pairs[0][0].size)
    history = History(m, zeros, fused=fused)
    for s, y in pairs:
        assert history.add(s, zeros, y, zeros)
        if directions:
            history.direction(g, history.dots(g))
    return history


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("count, m, directions", [(1, 5, True), (2, 5, True), (5, 5, True), (9, 5, True),
                                                  (9, 5, False), (4, 1, True), (7, 3, False)])
def test_two_pass_direction_equals_the_two_loop_recursion(fused, count, m, directions):
    rng = np.random.default_rng(100 * count + m)
    g = rng.normal(size=N)
    pairs = random_pairs(rng, count)
    history = history_of(pairs, m, fused, directions, rng.normal(size=N))
    assert len(history) == min(count, m)
    kept = pairs[-m:]
    d, slope = history.direction(g, history.dots(g))
    want = optimize._two_loop(g, [(s, y, 1.0 / float(s @ y)) for s, y in kept])
    np.testing.assert_allclose(want, textbook(g, kept), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(slope, float(want @ g), rtol=1e-12)


def test_refused_pair_drops_the_oldest_and_slots_are_reused():
    rng = np.random.default_rng(7)
    g, zeros = rng.normal(size=N), np.zeros(N)
    pairs = random_pairs(rng, 4)
    history = history_of(pairs[:3], 3, True, g=g)
    s, y = pairs[3]
    assert not history.add(s, zeros, -s, zeros)  # yᵀs < 0: refused, and the oldest pair is gone
    assert len(history) == 2
    assert not history.add(s, zeros, np.full(N, np.nan), zeros)  # NaN curvature: refused; not full, none dropped
    assert len(history) == 2
    assert history.add(s, zeros, y, zeros)  # into the freed first slot: the rows are no longer in age order
    assert history.order == [1, 2, 0]
    kept = pairs[1:]
    d, _ = history.direction(g, history.dots(g))
    np.testing.assert_allclose(d, textbook(g, kept), rtol=1e-10, atol=1e-12)
    history.clear()
    d, slope = history.direction(g, history.dots(g))
    np.testing.assert_array_equal(d, -g)
    assert slope == -vectors.dot(g, g)
    with pytest.raises(ValueError, match="at least one pair"):
        History(0, g)


def test_history_dots_and_combine_rows_match_numpy():
    rng = np.random.default_rng(3)
    S, Y, g = rng.normal(size=(4, N)), rng.normal(size=(4, N)), rng.normal(size=N)
    rows = np.array([2, 0, 3])
    got = vectors.history_dots(S, Y, rows, 3, g)
    want = np.stack([S[rows] @ g, Y[rows] @ g, S[rows] @ Y[3], Y[rows] @ Y[3]])
    np.testing.assert_allclose(got[:4], want, rtol=1e-12)
    assert got[4, 0] == vectors.dot(g, g)  # the same blocks and order as the plain dot
    assert not got[4, 1:].any()
    assert not vectors.history_dots(S, Y, rows, -1, g)[2:4].any()
    assert vectors.history_dots(S, Y, rows[:0], -1, g)[4, 0] == vectors.dot(g, g)
    cs, cy = rng.normal(size=3), rng.normal(size=3)
    out = np.empty(N)
    gd = vectors.combine_rows(out, -0.5, g, cs, cy, S, Y, rows)
    np.testing.assert_allclose(out, -0.5 * g + cs @ S[rows] + cy @ Y[rows], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(gd, out @ g, rtol=1e-12)
    xn = np.empty(N)
    S[0, ::7] = -0.25 * Y[0, ::7]  # some weights exactly zero
    norm, nonzero = vectors.combine_norm(xn, 1.0, S[0], 0.25, Y[0])
    np.testing.assert_array_equal(xn, S[0] + 0.25 * Y[0])
    assert norm == vectors.dot(xn, xn)  # what the stopping test would have computed
    assert nonzero == np.count_nonzero(xn) == N - len(range(0, N, 7))
    xn[3] = np.nan
    assert np.isnan(vectors.combine_norm(np.empty(N), 1.0, xn, 0.0, Y[0])[0])  # what training's divergence test reads
    s, y = np.empty(N), np.empty(N)
    sy = vectors.store_pair(s, y, S[0], S[1], Y[0], Y[1])
    np.testing.assert_array_equal(s, S[0] - S[1])
    np.testing.assert_array_equal(y, Y[0] - Y[1])
    np.testing.assert_allclose(sy, s @ y, rtol=1e-12)


def test_passes_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(5)
    S, Y, g = rng.normal(size=(3, N)), rng.normal(size=(3, N)), rng.normal(size=N)
    rows, cs, cy = np.array([1, 2, 0]), rng.normal(size=3), rng.normal(size=3)
    results = []
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            out, xn = np.empty(N), np.empty(N)
            results.append((vectors.history_dots(S, Y, rows, 2, g), vectors.combine_rows(out, 0.3, g, cs, cy, S, Y, rows),
                            out, vectors.combine_norm(xn, 1.0, g, 0.5, S[0])))
        finally:
            numba.set_num_threads(previous)
    assert len(results) == 2 or numba.config.NUMBA_NUM_THREADS == 1
    for dots, gd, out, norm in results[1:]:
        np.testing.assert_array_equal(dots, results[0][0])
        assert gd == results[0][1] and norm == results[0][3]
        np.testing.assert_array_equal(out, results[0][2])


def quadratic(seed, n=40):
    """½xᵀAx − bᵀx with A symmetric positive definite (condition number about 100), and its minimiser."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    a = (q * np.geomspace(1.0, 100.0, n)) @ q.T
    b = rng.normal(size=n)
    return (lambda x: (float(0.5 * x @ a @ x - b @ x), a @ x - b)), np.linalg.solve(a, b)


@pytest.mark.parametrize("rho1", [0.0, 0.5])
def test_minimize_agrees_between_the_fused_and_array_passes(rho1, monkeypatch):
    """L-BFGS and OWL-QN on a quadratic: the CPU's fused passes and the GPU path's array
    expressions (on numpy) reach the same minimum, bit-identical run to run; L-BFGS the exact one."""
    fun, solution = quadratic(11)
    x0 = np.zeros(solution.size)
    fused = minimize(fun, x0, rho1=rho1, max_iterations=500, epsilon=1e-12)
    np.testing.assert_array_equal(fused, minimize(fun, x0, rho1=rho1, max_iterations=500, epsilon=1e-12))
    plain = History.__init__

    def array_passes(self, m, like, fused=None):
        plain(self, m, like, fused=False)

    monkeypatch.setattr(History, "__init__", array_passes)
    expressions = minimize(fun, x0, rho1=rho1, max_iterations=500, epsilon=1e-12)
    np.testing.assert_allclose(fused, expressions, rtol=1e-6, atol=1e-7)  # OWL-QN stops about there
    if rho1 == 0:
        np.testing.assert_allclose(fused, solution, rtol=1e-6, atol=1e-7)
    else:
        assert (fused == 0).any()  # the L1 term zeroes some weights exactly


def test_minimize_hands_the_trial_norm_to_fun_and_the_callback():
    """L-BFGS forms each trial point in a pass that also takes x·x and counts the non-zero weights:
    ``pass_norm`` hands the norm to ``fun`` (the L2 term's), the callback's Step carries both (the
    divergence test and the active weights); OWL-QN has no such pass and says so (NaN, -1)."""
    fun, solution = quadratic(3)
    for rho1 in (0.0, 0.5):
        seen, steps = [], []

        def f(x, xx):
            seen.append((x.copy(), xx))
            return fun(x)

        minimize(f, np.zeros(solution.size), rho1=rho1, max_iterations=6, pass_norm=True,
                 callback=lambda step, x: steps.append((step, x.copy())) and False)
        assert seen[0][1] is None and len(steps) == 6
        if rho1 == 0:
            assert all(xx == vectors.dot(x, x) for x, xx in seen[1:])
            assert all(s.x_norm2 == vectors.dot(x, x) and s.active == np.count_nonzero(x) for s, x in steps)
        else:
            assert all(xx is None for _, xx in seen)
            assert all(np.isnan(s.x_norm2) and s.active == -1 for s, _ in steps)
    plain = minimize(fun, np.zeros(solution.size), max_iterations=6)  # without pass_norm: fun(x), same path
    np.testing.assert_array_equal(plain, minimize(lambda x, _: fun(x), np.zeros(solution.size), max_iterations=6,
                                                  pass_norm=True))


@pytest.mark.parametrize("rho1", [0.0, 0.5])
def test_device_path_follows_the_cpu_path(rho1):
    """The device path (``device=True``, run here on numpy): the same iterations, evaluations,
    objectives and minimum as the CPU's fused passes, to rounding; ``fun`` gets x·x as an array,
    may return its value unread and figures for the callback (``Step.extra``), and each Step
    carries x·x and the active weights of the accepted point."""
    fun, solution = quadratic(5)
    x0 = np.zeros(solution.size)
    cpu_steps, device_steps, norms = [], [], []

    def device_fun(x, xx):
        norms.append((float(xx), float(x @ x)))
        value, gradient = fun(x)
        return np.asarray(value), gradient, np.array([7.0, float(x[0])])

    cpu = minimize(fun, x0, rho1=rho1, max_iterations=500, epsilon=1e-12,
                   callback=lambda step, x: cpu_steps.append(step) and False)
    device = minimize(device_fun, x0, rho1=rho1, max_iterations=500, epsilon=1e-12, pass_norm=True, device=True,
                      callback=lambda step, x: device_steps.append((step, x.copy())) and False)
    np.testing.assert_allclose(device, cpu, rtol=1e-6, atol=1e-7)  # OWL-QN stops about there
    n = min(len(cpu_steps), len(device_steps), 60)  # before rounding differences may change a decision
    assert n >= 40
    assert [s.evaluations for s, _ in device_steps[:n]] == [s.evaluations for s in cpu_steps[:n]]
    device_steps, cpu_steps = device_steps[:n], cpu_steps[:n]
    np.testing.assert_allclose([s.objective for s, _ in device_steps], [s.objective for s in cpu_steps], rtol=1e-10)
    assert all(a == b for a, b in norms)
    for step, x in device_steps:
        assert step.x_norm2 == float(x @ x) and step.active == np.count_nonzero(x)
        assert step.extra == (7.0, float(x[0]))
    if rho1 == 0:
        np.testing.assert_allclose(device, solution, rtol=1e-6, atol=1e-7)
    else:
        assert (device == 0).any()


def test_device_history_direction_equals_the_two_loop_recursion():
    """DeviceHistory fed the dot products a readback carries: the textbook direction, with a
    refused pair dropping the oldest as on the CPU."""
    from gpu_text.crf.optimize_device import DeviceHistory

    rng = np.random.default_rng(9)
    g = rng.normal(size=N)
    pairs = random_pairs(rng, 6)
    history = DeviceHistory(g, History(3, np.zeros(1), fused=False))

    def add(s, y):
        return history.accept(s, y, {"sy": float(s @ y), "yy": float(y @ y), "S_y": history.S @ y,
                                     "Y_y": history.Y @ y})

    for s, y in pairs[:4]:
        assert add(s, y)
    d = history.direction(g, history.S @ g, history.Y @ g)
    np.testing.assert_allclose(d, textbook(g, pairs[1:4]), rtol=1e-10, atol=1e-12)
    assert not add(pairs[4][0], -pairs[4][0])  # refused: the oldest kept pair goes too
    assert len(history.order) == 2
    d = history.direction(g, history.S @ g, history.Y @ g)
    np.testing.assert_allclose(d, textbook(g, pairs[2:4]), rtol=1e-10, atol=1e-12)
    history.clear()
    np.testing.assert_array_equal(history.direction(g, history.S @ g, history.Y @ g), -g)
