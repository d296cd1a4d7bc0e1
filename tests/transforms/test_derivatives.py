"""Higher-order derivatives: derivative(n) against sympy, Hessians against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import symgrad as sg
from symgrad.testing import check_grads

# (symgrad builder, sympy builder, points): the same function written for each library.
TABLE = [
    ("sin*exp", lambda x: sg.sin(x) * sg.exp(x), lambda x: sympy.sin(x) * sympy.exp(x),
     (-0.7, 0.3, 1.5)),
    ("log(1+x^2)", lambda x: sg.log(1.0 + x * x), lambda x: sympy.log(1 + x**2),
     (-1.2, 0.0, 0.8)),
    ("tanh^2+x^3", lambda x: sg.tanh(x) ** 2 + x**3, lambda x: sympy.tanh(x) ** 2 + x**3,
     (-0.5, 0.4, 1.1)),
    ("sqrt*cos", lambda x: sg.sqrt(x) * sg.cos(x), lambda x: sympy.sqrt(x) * sympy.cos(x),
     (0.3, 1.0, 2.5)),
    ("x^x", lambda x: x**x, lambda x: x**x, (0.4, 1.0, 1.7)),
    ("gaussian", lambda x: sg.exp(-(x * x) / 2.0), lambda x: sympy.exp(-(x**2) / 2),
     (-1.0, 0.2, 2.0)),
    ("sigmoid", lambda x: sg.sigmoid(x), lambda x: 1 / (1 + sympy.exp(-x)), (-2.0, 0.0, 1.3)),
    ("softplus", lambda x: sg.softplus(x), lambda x: sympy.log(1 + sympy.exp(x)),
     (-1.5, 0.1, 2.2)),
    ("log1p*expm1", lambda x: sg.log1p(x) * sg.expm1(x),
     lambda x: sympy.log(1 + x) * (sympy.exp(x) - 1), (-0.4, 0.5, 1.9)),
    ("rational", lambda x: (x * x + 1.0) / (x + 3.0), lambda x: (x**2 + 1) / (x + 3),
     (-1.0, 0.0, 2.0)),
    ("sin(cos)*x", lambda x: sg.sin(sg.cos(x)) * x, lambda x: sympy.sin(sympy.cos(x)) * x,
     (-2.0, 0.6, 1.4)),
    ("poly", lambda x: x**5 - 3.0 * x**2 + 1.0, lambda x: x**5 - 3 * x**2 + 1,
     (-1.1, 0.0, 0.9)),
]


@pytest.mark.parametrize("name, build, ref, points", TABLE, ids=[t[0] for t in TABLE])
def test_derivative_n_matches_sympy(name, build, ref, points):
    x = sg.var("x")
    s = sympy.Symbol("x", real=True)
    f = build(x)
    for n in range(1, 5):
        dn = sg.derivative(f, x, n)
        assert dn.shape == ()
        want = sympy.diff(ref(s), s, n)
        for p in points:
            got = sg.evaluate(dn, {"x": p})
            expected = float(want.subs(s, p).evalf(30))
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-9), (n, p)
    f.graph.verify()


def test_derivative_zero_is_the_function_and_bad_orders_raise():
    x = sg.var("x")
    f = sg.sin(x)
    assert sg.derivative(f, x, 0).node == f.node
    for bad in (-1, 1.5, True):
        with pytest.raises(sg.DifferentiationError):
            sg.derivative(f, x, bad)


def test_derivative_of_vector_wrt_gives_tensor():
    x = sg.var("x", (2,))
    f = x[0] ** 3.0 * x[1]
    d3 = sg.derivative(f, x, 3)
    assert d3.shape == (2, 2, 2)
    got = sg.evaluate(d3, {"x": [1.5, -2.0]})
    want = np.zeros((2, 2, 2))
    want[0, 0, 0] = 6.0 * -2.0           # d3/dx0^3
    for idx in [(0, 0, 1), (0, 1, 0), (1, 0, 0)]:
        want[idx] = 6.0 * 1.5            # d3/dx0^2 dx1
    np.testing.assert_allclose(got, want, rtol=1e-14)


def rosenbrock(x, n):
    return sg.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(p):
    """Closed form (e.g. Nocedal & Wright): tridiagonal."""
    n = len(p)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200.0 * p[i] ** 2 - 400.0 * p[i + 1] + 2.0
        H[i + 1, i + 1] += 200.0
        H[i, i + 1] = H[i + 1, i] = -400.0 * p[i]
    return H


def test_rosenbrock_hessian_closed_form(rng):
    n = 5
    x = sg.var("x", (n,))
    f = rosenbrock(x, n)
    H = sg.hessian(f, x)
    f.graph.verify()
    assert H.shape == (n, n)
    for p in [np.ones(n), rng.uniform(-2, 2, n), np.arange(n) * 0.3 - 0.5]:
        got = sg.evaluate(H, {"x": p})
        np.testing.assert_allclose(got, rosenbrock_hessian(p), rtol=1e-13, atol=1e-11)
        value = sg.evaluate(f, {"x": p})
        assert value == pytest.approx(np.sum(100 * (p[1:] - p[:-1] ** 2) ** 2
                                             + (1 - p[:-1]) ** 2), rel=1e-14)
    try:
        from scipy.optimize import rosen_hess
    except ImportError:  # pragma: no cover - scipy is a test dependency
        return
    p = rng.uniform(-1, 1, n)
    np.testing.assert_allclose(sg.evaluate(H, {"x": p}), rosen_hess(p), rtol=1e-13,
                               atol=1e-11)


def _functions():
    def mlp(x):
        W = np.array([[0.3, -1.2, 0.5, 0.1], [1.1, 0.4, -0.7, 0.9], [-0.2, 0.8, 0.6, -1.0]])
        return sg.sum(sg.tanh(W @ x + np.array([0.1, -0.2, 0.3])))

    return {
        "mlp": mlp,
        "logsumexp": lambda x: sg.logsumexp(x * 1.5),
        "mixed": lambda x: sg.sum(sg.exp(x) * sg.sin(x[::-1])) + sg.sum(x) ** 2,
        "norm": lambda x: sg.sqrt(sg.sum(x * x) + 1.0),
    }


@pytest.mark.parametrize("name", list(_functions()))
def test_hessian_is_symmetric_and_hvp_agrees(name, rng):
    x = sg.var("x", (4,))
    f = _functions()[name](x)
    H = sg.hessian(f, x)
    hv = sg.hvp(f, x, "v")
    f.graph.verify()
    for _ in range(3):
        p, v = rng.standard_normal(4), rng.standard_normal(4)
        h, got = sg.evaluate([H, hv], {"x": p, "v": v})
        assert np.max(np.abs(h - h.T)) <= 1e-12 * max(1.0, np.max(np.abs(h)))
        np.testing.assert_allclose(got, h @ v, rtol=1e-12, atol=1e-12)
    check_grads(f, x, {"x": rng.standard_normal(4)}, order=3)


def test_mlp_hessian_closed_form(rng):
    W, b = rng.standard_normal((3, 4)), rng.standard_normal(3)
    x = sg.var("x", (4,))
    H = sg.hessian(sg.sum(sg.tanh(W @ x + b)), x)
    p = rng.standard_normal(4)
    t = np.tanh(W @ p + b)
    np.testing.assert_allclose(sg.evaluate(H, {"x": p}), W.T @ np.diag(-2 * t * (1 - t * t)) @ W,
                               rtol=1e-12, atol=1e-13)


def test_logsumexp_hessian_closed_form(rng):
    logits = sg.var("l", (4,))
    H = sg.hessian(sg.logsumexp(logits), logits)
    for shift in (0.0, 1000.0):
        p = rng.standard_normal(4) + shift
        q = np.exp(p - p.max())
        q /= q.sum()
        got = sg.evaluate(H, {"l": p})
        np.testing.assert_allclose(got, np.diag(q) - np.outer(q, q), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(got.sum(axis=1), 0.0, atol=1e-14)


def test_gaussian_hessian_at_its_center(rng):
    x = sg.var("x", (3,))
    y = rng.standard_normal(3)
    H = sg.hessian(sg.exp(-sg.sum((x - y) ** 2)), x)
    np.testing.assert_allclose(sg.evaluate(H, {"x": y}), -2.0 * np.eye(3), rtol=1e-15)


def test_hvp_shape_mismatch_is_an_error():
    x = sg.var("x", (3,))
    with pytest.raises(sg.DifferentiationError, match=r"\(2,\)"):
        sg.hvp(sg.sum(x * x), x, sg.var("v", (2,)))


def test_node_count_of_repeated_derivatives():
    counts = []
    for n in range(1, 5):
        x = sg.var("x")
        h = x
        for _ in range(100):
            h = sg.sin(h) * 0.9 + h * 0.1
        before = len(h.graph)
        d = sg.derivative(h, x, n)
        counts.append(len(h.graph) - before)
        assert np.isfinite(sg.evaluate(d, {"x": 0.4}))
    print(f"\nnodes added by derivative(chain of 100 steps, n), n = 1..4: {counts}")
    assert counts == sorted(counts)
