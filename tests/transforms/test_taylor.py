"""Taylor mode: derivative(f, x, n) of a scalar x, against SymPy's diff, closed forms and
repeated reverse mode; linear growth per order; the fallback for ops without a rule."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.ir.op import REGISTRY
from symgrad.transforms.taylor import Declined, rule_of, series_of

X = sp.Symbol("x", real=True)

# (symgrad builder, sympy builder, where its argument must lie: (lo, hi))
UNARY = {
    "exp": (sg.exp, sp.exp, None), "log": (sg.log, sp.log, (0.2, 3.0)),
    "log1p": (sg.log1p, lambda a: sp.log(1 + a), (-0.5, 3.0)),
    "expm1": (sg.expm1, lambda a: sp.exp(a) - 1, None),
    "sqrt": (sg.sqrt, sp.sqrt, (0.2, 3.0)), "sin": (sg.sin, sp.sin, None),
    "cos": (sg.cos, sp.cos, None), "tan": (sg.tan, sp.tan, (-1.2, 1.2)),
    "tanh": (sg.tanh, sp.tanh, None), "sinh": (sg.sinh, sp.sinh, None),
    "cosh": (sg.cosh, sp.cosh, None),
    "sigmoid": (sg.sigmoid, lambda a: 1 / (1 + sp.exp(-a)), None),
    "softplus": (sg.softplus, lambda a: sp.log(1 + sp.exp(a)), None),
    "square": (sg.square, lambda a: a ** 2, None), "negative": (lambda a: -a, lambda a: -a, None),
    "cube": (lambda a: a ** 3, lambda a: a ** 3, None),
    "arcsin": (sg.arcsin, sp.asin, (-0.9, 0.9)), "arccos": (sg.arccos, sp.acos, (-0.9, 0.9)),
    "arctan": (sg.arctan, sp.atan, None), "arcsinh": (sg.arcsinh, sp.asinh, None),
    "arctanh": (sg.arctanh, sp.atanh, (-0.9, 0.9)), "exp2": (sg.exp2, lambda a: 2 ** a, None),
    "log2": (sg.log2, lambda a: sp.log(a, 2), (0.2, 3.0)),
    "log10": (sg.log10, lambda a: sp.log(a, 10), (0.2, 3.0)),
    "reciprocal": (sg.reciprocal, lambda a: 1 / a, (0.5, 2.0)), "erf": (sg.erf, sp.erf, None),
    "deg2rad": (sg.deg2rad, lambda a: a * sp.pi / 180, None),
}


def _random_expr(rng, depth):
    """A random scalar expression of x as (symgrad, sympy, bounded): ``bounded`` says its
    values stay in [-1.5, 1.5] for x in [-1, 1] (so log/sqrt/tan can be applied to an
    affine shift of it)."""
    x = sg.var("x")
    if depth == 0:
        c = float(rng.integers(1, 4)) / 2
        return (x * c, X * sp.Rational(c).limit_denominator(4), True) if rng.random() < 0.5 \
            else (x, X, True)
    kind = rng.integers(3)
    if kind == 0:
        name = rng.choice(sorted(UNARY))
        fs, fy, dom = UNARY[name]
        a, b, bounded = _random_expr(rng, depth - 1)
        if dom is not None:  # squash into the domain: lo + (hi - lo) / (2 + a^2)
            lo, hi = dom
            a = lo + (hi - lo) / (2.0 + a * a)
            b = lo + sp.nsimplify(hi - lo) / (2 + b * b)
        return fs(a), fy(b), False
    (a, b, _), (c, d, _) = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    op = rng.integers(4)
    if op == 0:
        return a + c, b + d, False
    if op == 1:
        return a - c, b - d, False
    if op == 2:
        return a * c, b * d, False
    return a / (2.5 + sg.sin(c)), b / (sp.Rational(5, 2) + sp.sin(d)), False


def _sympy_derivatives(g, n, at):
    """``[g, g', ..., g^(n)]`` at ``at`` by SymPy (one diff per order, evaluated in double)."""
    out = []
    for _ in range(n + 1):
        out.append(float(sp.lambdify(X, g, "math")(at)))
        g = sp.diff(g, X)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_random_expressions_match_sympy_diff(seed):
    rng = np.random.default_rng(seed)
    f, fy, _ = _random_expr(rng, 3)
    x = sg.var("x")
    at = float(rng.uniform(-1, 1))
    fn = sp.lambdify(X, fy, "mpmath")
    with mpmath.workdps(50):  # high-precision finite differences of SymPy's expression
        wants = {n: float(mpmath.diff(fn, mpmath.mpf(at), n)) for n in (2, 4, 8)}
    for n in (2, 4, 8):
        got = float(sg.evaluate(sg.derivative(f, x, n), {"x": at}))
        assert got == pytest.approx(wants[n], rel=1e-8, abs=1e-8 * (1 + abs(wants[n]))), (n, fy)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_each_rule_against_sympy_to_order_8(name):
    fs, fy, dom = UNARY[name]
    x = sg.var("x")
    lo, hi = dom or (-1.5, 1.5)
    inner, inner_y = 0.3 * x * x + 0.5 * x, sp.Rational(3, 10) * X ** 2 + X / 2
    f, g = fs(inner + (lo + hi) / 2), fy(inner_y + sp.nsimplify((lo + hi) / 2))
    fn = sp.lambdify(X, g, "mpmath")
    for at in (-0.4, 0.35):
        got = [float(sg.evaluate(d, {"x": at})) for d in series_of(f, x, 8)]
        with mpmath.workdps(50):  # high-precision finite differences of SymPy's expression
            want = [float(mpmath.diff(fn, mpmath.mpf(at), k)) for k in range(9)]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_high_orders_have_the_closed_form_and_grow_linearly():
    x = sg.var("x")
    f = sg.sin(x) * sg.exp(x)
    sizes = []
    for n in (10, 20, 30, 50):
        before = len(f.graph)
        d = sg.derivative(f, x, n)
        sizes.append(len(f.graph) - before)
        # (sin x e^x)^(n) = 2^(n/2) e^x sin(x + n pi / 4)
        for at in (-0.6, 0.9):
            want = 2 ** (n / 2) * math.exp(at) * math.sin(at + n * math.pi / 4)
            assert sg.evaluate(d, {"x": at}) == pytest.approx(want, rel=1e-13, abs=1e-13)
    assert max(sizes) < 100  # repeated reverse mode: 1.85x more nodes per order (159,588 at 22)
    d30 = sg.derivative(f, x, 30)  # -2^15 e^x cos x, with its weight folded exactly
    assert str(d30) == "-32768.0 * (cos(x) * exp(x))"


def test_a_composition_is_quadratic_per_order_not_exponential():
    def size(n):
        x = sg.var("x")
        f = sg.tanh(sg.log(2.0 + x * x) * sg.sin(x))
        before = len(f.graph)
        d = sg.derivative(f, x, n)
        return len(f.graph) - before, d

    (small, _), (large, d) = size(8), size(16)
    assert large < 5 * small < 5_000  # O(n^2): about 4x for twice the order
    fn = sp.lambdify(X, sp.tanh(sp.log(2 + X * X) * sp.sin(X)), "mpmath")
    with mpmath.workdps(60):
        want = float(mpmath.diff(fn, mpmath.mpf(0.4), 16))
    assert float(sg.evaluate(d, {"x": 0.4})) == pytest.approx(want, rel=1e-9)


def test_taylor_and_repeated_reverse_mode_agree_through_arrays():
    x = sg.var("x")
    c = np.array([0.5, -1.0, 2.0])
    m = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0]])
    v = sg.exp(x * c) * sg.cos(x + c)
    f = sg.sum((m @ v) * (m @ sg.where(v > 0.0, v, 2.0 * v))) + sg.sum(sg.relu(sg.sin(x * c)))
    for n in (2, 4):
        taylor = sg.derivative(f, x, n)
        reverse = f
        for _ in range(n):
            reverse = sg.grad(reverse, x)
        for at in (-0.3, 0.45):
            assert float(sg.evaluate(taylor, {"x": at})) == pytest.approx(
                float(sg.evaluate(reverse, {"x": at})), rel=1e-11)


def test_exact_at_zero_where_a_recurrence_would_divide_by_zero():
    x = sg.var("x")
    f = x ** 2 * sg.exp(x) + x ** 3
    got = [float(sg.evaluate(sg.derivative(f, x, n), {"x": 0.0})) for n in (2, 3, 4)]
    assert got == [2.0, 12.0, 12.0]  # d^n (x^2 e^x) at 0 = n (n - 1); (x^3)''' = 6


def test_ops_without_a_rule_fall_back_to_reverse_mode_and_leave_no_nodes():
    x = sg.var("x")
    f = (x + 2.0) ** 0.5 * sg.exp(x)  # a fractional power declines part-way
    with pytest.raises(Declined):
        series_of(f, x, 3)
    before = len(f.graph)
    d = sg.derivative(f, x, 3)
    built = len(f.graph) - before
    g = sg.grad(sg.grad(sg.grad(f, x), x), x)
    assert len(f.graph) - before == built  # the same nodes: nothing of the declined try
    at = 0.3
    fy = sp.sqrt(X + 2) * sp.exp(X)
    assert float(sg.evaluate(d, {"x": at})) == pytest.approx(
        _sympy_derivatives(fy, 3, at)[3], rel=1e-12)
    assert d.node == g.node
    h = sg.cbrt(x) * sg.sin(x)  # cbrt: no rule at all
    assert rule_of(REGISTRY["cbrt"]) is None
    assert float(sg.evaluate(sg.derivative(h, x, 3), {"x": 0.7})) == pytest.approx(
        _sympy_derivatives(sp.cbrt(X) * sp.sin(X), 3, 0.7)[3], rel=1e-12)


def test_piecewise_linear_ops_carry_every_order_through_their_selection():
    x = sg.var("x")
    f = sg.maximum(sg.sin(x), sg.cos(x)) * sg.fmin(x * x, 0.5 * x) + sg.astype(
        sg.deg2rad(x) ** 3, "float64")
    for at, (s, m) in ((0.2, (sp.cos(X), X * X)), (1.2, (sp.sin(X), X / 2))):
        want = _sympy_derivatives(s * m + (X * sp.pi / 180) ** 3, 4, at)
        got = [float(sg.evaluate(d, {"x": at})) for d in series_of(f, x, 4)]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_float32_stays_float32_and_vector_wrt_is_unchanged():
    x = sg.var("x", dtype="float32")
    d = sg.derivative(sg.sin(x) * sg.exp(x), x, 6)
    got = sg.evaluate(d, {"x": np.float32(0.5)})
    assert d.dtype == "float32" and got.dtype == np.float32
    assert float(got) == pytest.approx(-8 * math.exp(0.5) * math.cos(0.5), rel=1e-5)
    y = sg.var("y", shape=(2,))
    h = sg.derivative(sg.sum(y ** 3), y, 2)  # a tensor: repeated reverse mode, as before
    np.testing.assert_allclose(sg.evaluate(h, {"y": [1.0, 2.0]}), np.diag([6.0, 12.0]))


def test_constant_f_and_order_zero_and_one():
    x, y = sg.var("x"), sg.var("y")
    assert float(sg.evaluate(sg.derivative(sg.sin(y), x, 3), {"x": 1.0, "y": 2.0})) == 0.0
    f = sg.sin(x)
    assert sg.derivative(f, x, 0).node == f.node
    assert sg.derivative(f, x, 1).node == sg.grad(f, x).node


def test_the_rule_driver_answers_a_repeated_proposal_once_and_forgets_after_a_rollback():
    """Repeated reverse mode proposes many nodes again (hash-consing finds them): the
    driver answers each proposal once; a rollback's freed ids may name other nodes later,
    so it forgets its answers then."""
    from symgrad.passes.pattern import Pass, Rule, rewriter

    x = sg.var("x")
    graph = x.graph
    calls = []
    count = Pass("count", "counts", rules=(Rule(("sin", "x"), lambda x: calls.append(1)),))
    with graph.rewriting(rewriter(graph, [count])):
        first = sg.sin(x)
        assert sg.sin(x).node == first.node and len(calls) == 1
        with pytest.raises(RuntimeError), graph.budget(100, RuntimeError):
            sg.cos(x) * 2.0
            raise RuntimeError("a failed transform")
        assert sg.sin(x).node == first.node and len(calls) == 2


def test_a_non_scalar_f_is_refused_at_every_order_and_zero_is_a_constant():
    x = sg.var("x")
    for n in (1, 2, 5):
        with pytest.raises(sg.DifferentiationError, match="scalar output"):
            sg.derivative(sg.sin(x * np.arange(3.0)), x, n)
    zero = sg.derivative(x * x, x, 3)
    assert str(zero) == "0.0" and zero.dtype == "float64"
