"""The loop passes (issue 21 items 2 and 3): chains over consecutive slices become one
reduction; runs of identical steps become one scan."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der

import symgrad as sg
import symgrad.numpy as snp
from symgrad.passes.reductions import reduce_chains

RNG = np.random.default_rng(21)


def _ops(e: sg.Expr) -> list[str]:
    nodes = e.graph.nodes
    return [nodes[i].op for i in e.graph.ancestors([e.node])]


def _fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[k] += h
        down.flat[k] -= h
        g.flat[k] = (f(up) - f(down)) / (2 * h)
    return g


# -- reductions ---------------------------------------------------------------------------

def test_builtin_sum_of_a_vector_is_one_sum():
    x = sg.var("x", shape=(20,))
    (s,) = reduce_chains([sum(x)])
    assert _ops(s).count("add") == 1 and "sum" in _ops(s)
    v = RNG.normal(size=20)
    assert sg.evaluate(s, {"x": v}) == pytest.approx(float(np.sum(v)), rel=1e-14)


def test_generator_sum_of_squares_lifts_the_term():
    x = sg.var("x", shape=(30,))
    (s,) = reduce_chains([sum(x[i] ** 2 for i in range(30))])
    assert "index" not in _ops(s)  # no element left: x ** 2 summed
    v = RNG.normal(size=30)
    assert sg.evaluate(s, {"x": v}) == pytest.approx(float(v @ v), rel=1e-14)


def test_rows_with_a_shared_vector_and_a_stride():
    A, w = sg.var("A", shape=(24, 3)), sg.var("w", shape=(3,))
    total = 0.0
    for i in range(0, 24, 2):  # every other row
        total = total + sg.sin(A[i]) * w
    (s,) = reduce_chains([total])
    assert _ops(s).count("add") == 1
    a, wv = RNG.normal(size=(24, 3)), RNG.normal(size=3)
    np.testing.assert_allclose(sg.evaluate(s, {"A": a, "w": wv}),
                               np.sin(a[::2]).sum(axis=0) * wv, rtol=1e-13)


def test_products_backwards_and_max_min_chains_exactly():
    A = sg.var("A", shape=(12, 2))
    p, m, lo = 1.0, A[0, 0], A[0, 1]
    for i in range(11, -1, -1):
        p = p * A[i, 1]
    for i in range(1, 12):
        m = sg.maximum(m, 2.0 * A[i, 0])
        lo = sg.minimum(lo, A[i, 1])
    out = reduce_chains([p, m, lo])
    assert "prod" in _ops(out[0]) and "max" in _ops(out[1]) and "min" in _ops(out[2])
    a = RNG.normal(size=(12, 2))
    want = sg.evaluate([p, m, lo], {"A": a})
    got = sg.evaluate(out, {"A": a})
    assert got[0] == pytest.approx(want[0], rel=1e-14)
    assert got[1:] == want[1:]  # max and min: exactly


def test_broken_runs_keep_the_other_terms_in_order():
    x, y = sg.var("x", shape=(40,)), sg.var("y")
    order = [*range(10), 20, *range(10, 20), 39]  # a jump breaks the run
    total = y
    for i in order:
        total = total + sg.exp(x[i])
    (s,) = reduce_chains([total])
    assert _ops(s).count("sum") == 2
    v = RNG.normal(size=40)
    assert sg.evaluate(s, {"x": v, "y": 0.5}) == pytest.approx(
        0.5 + float(np.exp(v[order]).sum()), rel=1e-14)


def test_short_or_mixed_chains_are_left_alone():
    x = sg.var("x", shape=(6,))
    short = sum(x)  # below MIN_RUN
    mixed = sum(sg.sin(x[i]) if i % 2 else sg.cos(x[i]) for i in range(6)) + 0 * x[0]
    outs = reduce_chains([short, mixed])
    assert [o.node for o in outs] == [short.node, mixed.node]


def test_rosen_with_the_builtin_sum_differentiates_as_one_sum():
    def f(x):
        return sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)

    g = sg.grad(f)
    x0 = RNG.uniform(-1, 1, 300)
    np.testing.assert_allclose(g(x0), rosen_der(x0), rtol=1e-12, atol=1e-12)
    assert len(g.source.splitlines()) < 60  # not one line per element
    assert float(sg.jit(f)(x0)) == pytest.approx(rosen(x0), rel=1e-12)


def test_accumulated_loop_through_symgrad_numpy_matches_finite_differences():
    def f(x):
        total = 0.0
        for i in range(len(x)):
            total += snp.log1p(x[i] ** 2) * snp.exp(-x[i])
        return total

    g = sg.grad(f)
    x0 = RNG.uniform(-1, 1, 25)
    exact = g(x0)
    fd = _fd(lambda v: float(np.sum(np.log1p(v ** 2) * np.exp(-v))), x0)
    np.testing.assert_allclose(exact, fd, rtol=1e-7, atol=1e-9)
    assert "index_add" not in " ".join(_ops(sg.grad(f(sg.var("v", shape=(25,))), "v")))


def test_jvp_and_hessian_see_the_reduction():
    x = sg.var("x", shape=(10,))
    f = sum(x[i] ** 3 for i in range(10))
    v = RNG.normal(size=10)
    assert sg.evaluate(sg.jvp(f, x, np.ones(10)), {"x": v}) == pytest.approx(
        float(np.sum(3 * v ** 2)), rel=1e-13)
    np.testing.assert_allclose(sg.evaluate(sg.hessian(f, x), {"x": v}), np.diag(6 * v),
                               rtol=1e-13)
