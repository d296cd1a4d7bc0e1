"""The derivatives of ``sg.while_loop`` (``symgrad.transforms.while_loop``): reverse and
forward mode against central finite differences, the same gradient for any number of
snapshots, an ODE integrated to a parameter-dependent end time, reverse mode over forward
mode, and the second derivative of the reverse sweep refused with a clear error."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import symgrad as sg
from tests.support.finite_differences import central


def _loop(snapshots: int = 32):
    w = sg.var("w", shape=(3, 3))
    x0 = sg.var("x0", shape=(3,))

    def step(c):
        k, x = c
        return k + 1, 1.05 * x + 0.1 * sg.sin(w @ x) + 0.02

    k, x = sg.while_loop(lambda c: sg.sum(c[1] * c[1]) < 3.0, step, (0, x0),
                         snapshots=snapshots)
    return w, x0, k, sg.sum(sg.cos(x) * x)


RNG = np.random.default_rng(7)
WV, XV = RNG.normal(size=(3, 3)), RNG.uniform(0.1, 0.2, 3)


def test_reverse_and_forward_mode_match_finite_differences():
    w, x0, k, loss = _loop()
    inputs = {"w": WV, "x0": XV}
    assert int(sg.evaluate(k, inputs)) > 10
    gw, gx = sg.evaluate(list(sg.grad(loss, [w, x0])), inputs)
    fdw = central(lambda v: float(sg.evaluate(loss, {"w": v, "x0": XV})), WV)
    fdx = central(lambda v: float(sg.evaluate(loss, {"w": WV, "x0": v})), XV)
    np.testing.assert_allclose(gw, fdw, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx, fdx, rtol=1e-6, atol=1e-8)
    tangent = sg.jvp(loss, x0, np.array([1.0, -2.0, 0.5]))
    assert float(sg.evaluate(tangent, inputs)) == pytest.approx(
        float(gx @ np.array([1.0, -2.0, 0.5])), rel=1e-11)
    jac_f = sg.evaluate(sg.jacfwd(loss, x0), inputs)
    np.testing.assert_allclose(jac_f, gx, rtol=1e-11)


@pytest.mark.parametrize("snapshots", [1, 2, 5])
def test_the_gradient_is_the_same_for_any_number_of_snapshots(snapshots):
    """The carries recomputed from fewer snapshots are the same values: the gradient is the
    same bit for bit, on the interpreter and the NumPy target."""
    w, x0, _, loss = _loop(snapshots)
    w2, x2, _, loss2 = _loop(1000)
    inputs = {"w": WV, "x0": XV}
    few = sg.compile(list(sg.grad(loss, [w, x0])))(**inputs)
    many = sg.compile(list(sg.grad(loss2, [w2, x2])))(**inputs)
    for a, b in zip(few, many):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(sg.evaluate(list(sg.grad(loss, [w, x0])), inputs), few):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_an_ode_integrated_to_a_parameter_dependent_end_time():
    """Explicit Euler for ``y' = -k y`` with step 1e-3 until ``t >= T``: the trip count
    depends on ``T``; the gradient in ``k`` and ``y0`` is the discrete one (finite
    differences) and near the exact ``-T y(T)`` and ``exp(-k T)``."""
    k, y0, big_t = sg.var("k"), sg.var("y0"), sg.var("T")
    dt = 1e-3
    _, y = sg.while_loop(lambda c: c[0] < big_t, lambda c: (c[0] + dt, c[1] - dt * k * c[1]),
                         (0.0, y0), snapshots=4)
    gk, gy = sg.compile(list(sg.grad(y, [k, y0])), backend="numpy")(k=0.7, y0=2.0, T=1.5)
    value = lambda kk, yy: float(sg.evaluate(y, {"k": kk, "y0": yy, "T": 1.5}))  # noqa: E731
    assert float(gk) == pytest.approx((value(0.7 + 1e-6, 2.0) - value(0.7 - 1e-6, 2.0)) / 2e-6,
                                      rel=1e-7)
    assert float(gy) == pytest.approx(value(0.7, 1.0), rel=1e-12)  # linear in y0
    assert float(gk) == pytest.approx(-1.5 * 2.0 * np.exp(-0.7 * 1.5), rel=2e-3)


def test_reverse_mode_over_forward_mode_and_the_refused_second_reverse_sweep():
    x = sg.var("x")
    y = sg.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)  # x**3 near x = 3
    second = sg.grad(sg.jvp(y, x, 1.0), x)
    assert float(sg.evaluate(second, {"x": 3.0})) == pytest.approx(18.0, rel=1e-14)
    with pytest.raises(sg.DifferentiationError, match="second derivative"):
        sg.hessian(y, x)


def test_a_long_loop_gradient_holds_only_its_snapshots():
    """10^4 steps of a 2,000-float carry through the emitted NumPy code: every carry stored
    would be 160 MB; with 8 snapshots the peak traced memory is the stored carries and the
    few a step and its reverse step hold at once (under 14.5 carries)."""
    v = sg.var("v", shape=(2000,))
    a = sg.var("a")
    _, x = sg.while_loop(lambda c: c[0] < 10 ** 4, lambda c: (c[0] + 1, c[1] * a + 1e-4),
                         (0, v), snapshots=8)
    fn = sg.compile(sg.grad(sg.sum(x), a), backend="numpy")
    vv = np.linspace(0.0, 1.0, 2000)
    tracemalloc.start()
    try:
        g = fn(v=vv, a=1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    n = 10 ** 4  # d/da sum(x_n) at a = 1: sum_t x_t over the steps
    want = sum(np.sum(vv) + 2000 * 1e-4 * t for t in range(n))
    assert float(g) == pytest.approx(want, rel=1e-9)
    assert peak < (8 + 6.5) * vv.nbytes, peak


def test_newton_run_to_a_tolerance_has_the_implicit_gradient():
    """Newton's iteration for ``x^3 + p x = q`` (elementwise) until the residual is below
    1e-13: the gradient of ``sum(w x)`` is the implicit function's, ``dx/dq = 1 / (3 x^2 +
    p)`` and ``dx/dp = -x / (3 x^2 + p)``."""
    p, q = sg.var("p", shape=(4,)), sg.var("q", shape=(4,))
    w = np.array([1.0, -2.0, 0.5, 3.0])

    def newton(x):
        return x - (x ** 3 + p * x - q) / (3 * x ** 2 + p)

    x = sg.while_loop(lambda x: sg.max(sg.abs(x ** 3 + p * x - q)) > 1e-13, newton, q,
                      snapshots=3)
    loss = sg.sum(w * x)
    pv, qv = np.array([1.0, 2.0, 0.5, 3.0]), np.array([2.0, -1.0, 4.0, 0.3])
    xv, gp, gq = sg.compile([x, *sg.grad(loss, [p, q])])(p=pv, q=qv)
    np.testing.assert_allclose(xv ** 3 + pv * xv, qv, rtol=1e-12)
    d = 3 * xv ** 2 + pv
    np.testing.assert_allclose(gq, w / d, rtol=1e-9)
    np.testing.assert_allclose(gp, -w * xv / d, rtol=1e-9)


@pytest.mark.parametrize("bound", [1.0, 4.0, 10.0, 1e20])
@pytest.mark.parametrize("snapshots", [1, 3, 32])
def test_trip_counts_zero_one_two_and_many_have_the_closed_form_gradient(bound, snapshots):
    """``c <- c x`` from ``c0`` while ``c < bound``: ``k`` steps give ``c0 x^k``, whose
    derivatives are ``k c0 x^(k-1)`` and ``x^k`` (k = 0, 1, 2 and 42 at x = 3, c0 = 1.5)."""
    x, c0 = sg.var("x"), sg.var("c0")
    y = sg.while_loop(lambda c: c < bound, lambda c: c * x, c0, snapshots=snapshots)
    k = {1.0: 0, 4.0: 1, 10.0: 2, 1e20: 42}[bound]
    want = [1.5 * 3.0 ** k, k * 1.5 * 3.0 ** (k - 1), 3.0 ** k]
    outs = [y, *sg.grad(y, [x, c0])]
    for got in (sg.compile(outs)(x=3.0, c0=1.5), sg.evaluate(outs, {"x": 3.0, "c0": 1.5})):
        np.testing.assert_allclose([float(v) for v in got], want, rtol=1e-13)


def test_the_value_and_its_gradient_run_the_loop_once_which_records_its_tape(monkeypatch):
    """The forward loop of the value is the one the reverse sweep reads (one run, recording
    its snapshots); the value alone records nothing."""
    from symgrad.ops import while_loop as ops

    x = sg.var("x")
    y = sg.while_loop(lambda c: c < 100.0, lambda c: c * x + 0.5, 1.0, snapshots=4)
    runs: list[int] = []
    real = ops._sg_while

    def counted(*args):
        runs.append(args[6] if len(args) > 6 else 0)
        return real(*args)

    monkeypatch.setattr(ops, "_sg_while", counted)
    value, g = sg.evaluate([y, sg.grad(y, x)], {"x": 1.5})
    assert runs == [4]
    assert float(sg.evaluate(y, {"x": 1.5})) == float(value) and runs == [4, 0]
    both = sg.to_source([y, sg.grad(y, x)], [x])
    body = both[both.index("def f("):]
    assert body.count("_sg_while(") == 1 and "_sg_while_vjp(" in body
    alone = sg.to_source(y, [x])
    assert alone[alone.index("def f("):].count("_sg_while(") == 1
    h = 1e-6
    fd = (float(sg.evaluate(y, {"x": 1.5 + h})) - float(sg.evaluate(y, {"x": 1.5 - h}))) / 2e-6
    assert float(g) == pytest.approx(fd, rel=1e-7)


def test_two_gradients_through_one_loop_are_each_right():
    """Two losses of one loop's result, each differentiated: the second reverse sweep finds
    the tape read and runs from the first carry (the same numbers)."""
    w, x0, _, loss = _loop(3)
    inputs = {"w": WV, "x0": XV}
    other = sg.sum(sg.sin(w @ x0)) * 0 + loss * loss
    both = sg.compile([*sg.grad(loss, [w, x0]), *sg.grad(other, [w, x0])])(**inputs)
    one = sg.compile(list(sg.grad(loss, [w, x0])))(**inputs)
    value = float(sg.evaluate(loss, inputs))
    np.testing.assert_array_equal(both[0], one[0])
    np.testing.assert_array_equal(both[1], one[1])
    np.testing.assert_allclose(both[3], 2 * value * one[1], rtol=1e-13)


@pytest.mark.parametrize("twice", [False, True])
def test_a_loop_reading_rows_of_a_captured_array_has_its_gradient(twice):
    """``s += xs[i] * s`` while ``i < 6``: the gradient in ``xs`` against central
    differences, whether the step reads one row (added per step as a row) or two (the
    whole array's cotangent per step)."""
    xs, s0 = sg.var("xs", shape=(8, 2)), sg.var("s0", shape=(2,))

    def step(c):
        i, s = c
        row = xs[i] + (0.5 * xs[i + 1] if twice else 0.0)
        return i + 1, s + sg.sin(row * s)

    _, s = sg.while_loop(lambda c: c[0] < 6, step, (0, s0), snapshots=2)
    loss = sg.sum(s * s)
    sweep = [n for n in sg.grad(loss, xs).graph.nodes if n.op == "while_vjp"]
    assert [n.attrs["rows"] for n in sweep] == [() if twice else (1,)]
    xv, sv = RNG.uniform(-1.0, 1.0, (8, 2)), np.array([0.3, -0.4])
    gx = sg.compile(sg.grad(loss, xs))(xs=xv, s0=sv)
    fd = central(lambda v: float(sg.evaluate(loss, {"xs": v, "s0": sv})), xv)
    np.testing.assert_allclose(gx, fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(gx[6 + int(twice):], 0.0)
