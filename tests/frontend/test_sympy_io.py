"""sg.to_sympy and sg.from_sympy: every elementwise op of the registry translates to sympy
with the same values, ops named by a sympy class come back, the rest is refused with a
message (LaTeX: ``tests/printing/test_latex.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import symgrad as sg
from symgrad.ops import REGISTRY
from tests.support.registry_cases import registry_cases

ELEMENTWISE = [c for c in registry_cases([()])
               if c.values[0].op.elementwise and c.values[0].op.sympy is not None]


@pytest.mark.parametrize("case", ELEMENTWISE)
def test_to_sympy_has_the_values_of_evaluate(case):
    out, xs, inputs = case.build()
    expr = sg.to_sympy(out)
    symbols = [sympy.Symbol(x.name, real=True) for x in xs]
    fn = sympy.lambdify(symbols, expr, modules=["scipy", "numpy"])  # erfinv, besseli: SciPy
    got = np.asarray(fn(*[inputs[x.name] for x in xs]), dtype=float)
    np.testing.assert_allclose(got, sg.evaluate(out, inputs), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(n for n, op in REGISTRY.items()
                                        if op.elementwise and isinstance(op.sympy, str)))
def test_ops_named_by_a_sympy_class_come_back(name):
    op = REGISTRY[name]
    xs = [sg.var(f"a{k}") for k in range(op.arity)]
    f = sg.ir.expr.call(name, *xs)
    back = sg.from_sympy(sg.to_sympy(f))
    rng = np.random.default_rng(0)
    lo, hi = op.domain
    at = {x.name: rng.uniform(lo, hi) for x in xs}
    assert sg.evaluate(back, at) == pytest.approx(sg.evaluate(f, at), rel=1e-14)
    assert back.op == name or name in ("add", "multiply", "power")  # arithmetic: operators


def test_from_sympy_arithmetic_and_shapes():
    x, y = sympy.symbols("x y")
    e = (x - y) / (x * y) + sympy.sqrt(x) ** 3 - 2 * sympy.exp(-x) + x ** -2
    f = sg.from_sympy(e, shapes={"x": (3,)})
    assert f.shape == (3,)
    xv, yv = np.array([0.5, 1.0, 2.0]), -1.5
    want = (xv - yv) / (xv * yv) + np.sqrt(xv) ** 3 - 2 * np.exp(-xv) + xv ** -2.0
    np.testing.assert_allclose(sg.evaluate(f, {"x": xv, "y": yv}), want, rtol=1e-14)
    assert " - " in str(f) and "/" in str(f)
    assert str(sg.from_sympy(sympy.sqrt(x))) == "sqrt(x)"


def test_from_sympy_round_trip_of_a_gradient():
    a = sg.var("a")
    g = sg.grad(sg.cos(a) * 3.0 + a ** 2, a)
    s = sg.to_sympy(g)
    assert s == 2 * sympy.Symbol("a", real=True) - 3 * sympy.sin(sympy.Symbol("a", real=True))
    back = sg.from_sympy(s)
    assert sg.evaluate(back, {"a": 0.7}) == pytest.approx(1.4 - 3 * np.sin(0.7), rel=1e-15)


def test_constants_and_integers():
    x = sg.var("x")
    assert sg.to_sympy(x * sg.pi + 2.0) == sympy.pi * sympy.Symbol("x", real=True) + 2
    k = sg.var("k", dtype="int64")
    assert sg.to_sympy(k * 2).is_integer
    assert sg.evaluate(sg.from_sympy(sympy.pi), {}) == pytest.approx(np.pi, rel=1e-16)
    assert np.isnan(sg.evaluate(sg.from_sympy(sympy.nan), {}))


def test_what_does_not_translate_is_a_clear_error():
    A, v = sg.var("A", shape=(2, 2)), sg.var("v", shape=(2,))
    with pytest.raises(sg.SymgradError, match="'matmul' has no sympy form.*sg.latex"):
        sg.to_sympy(A @ v)
    with pytest.raises(sg.SymgradError, match="constant array"):
        sg.to_sympy(v * np.array([1.0, 2.0]))
    x = sympy.Symbol("x")
    with pytest.raises(sg.SymgradError, match="Piecewise has no symgrad op"):
        sg.from_sympy(sympy.Piecewise((x, x > 0), (0, True)))
    with pytest.raises(sg.SymgradError, match="not a real number"):
        sg.from_sympy(x + sympy.I)
    with pytest.raises(sg.SymgradError, match="needs a sympy expression"):
        sg.from_sympy("x + 1")


def test_a_user_op_with_a_callable_sympy_form_translates_one_way():
    x = sg.var("x")
    e = sg.to_sympy(sg.sigmoid(x))  # sigmoid's sympy field is a function
    assert e.subs(sympy.Symbol("x", real=True), 0) == sympy.Rational(1, 2)


def test_deep_graphs_translate_without_recursion():
    x = sg.var("x")
    f = x
    for _ in range(3_000):
        f = f * 1.0001 + 0.5
    e = sg.to_sympy(f)
    assert float(e.subs(sympy.Symbol("x", real=True), 0.0)) == pytest.approx(
        sg.evaluate(f, {"x": 0.0}), rel=1e-12)


