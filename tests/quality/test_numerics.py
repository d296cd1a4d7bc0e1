"""sigmoid at +-inf and in its tails in every backend, the sign of zero in the scalar math
backend, and the bound on the ULP differences between the math and NumPy backends that the
limits page (docs/guide/limits.md) documents."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.numpy.math_table import MATH
from symgrad.ops import lookup

INF = math.inf
TAILS = [-745.0, -700.0, -100.0, -40.0, -37.5, -30.0, -5.0, -1e-300, 0.0, 1e-300, 5.0, 30.0,
         37.5, 40.0, 100.0, 700.0, 745.0]
mpmath.mp.dps = 50


def _three_ways(exprs, inputs, x):
    """Values of ``exprs`` by evaluate, compiled NumPy source and scalars="math" source."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own exp overflow warning
        return [np.array(sg.evaluate(exprs, {inputs: x}), dtype=float),
                np.array(sg.compile(exprs)(x), dtype=float),
                np.array(sg.compile(exprs, scalars="math")(x), dtype=float)]


def _ulps(got: float, want: mpmath.mpf) -> float:
    want = float(want)
    if got == want:
        return 0.0
    return abs(got - want) / np.spacing(max(abs(want), np.finfo(float).tiny))


def test_sigmoid_and_its_derivatives_at_infinity_in_every_backend():
    x = sg.var("x")
    s = sg.sigmoid(x)
    d1 = sg.grad(s, x)
    d2 = sg.derivative(s, x, 2)
    for value, want in ((INF, [1.0, 0.0, 0.0]), (-INF, [0.0, 0.0, 0.0])):
        for way in _three_ways([s, d1, d2], "x", value):
            np.testing.assert_array_equal(way, want)
    for way in _three_ways([s, d1], "x", math.nan):
        assert np.isnan(way).all()


@pytest.mark.parametrize("x0", TAILS)
def test_sigmoid_and_its_gradient_are_exact_in_the_tails(x0):
    x = sg.var("x")
    s = sg.sigmoid(x)
    exact_s = 1 / (1 + mpmath.exp(-x0))
    exact_d = mpmath.exp(-x0) / (1 + mpmath.exp(-x0)) ** 2
    got = _three_ways([s, sg.grad(s, x)], "x", x0)
    for value, derivative in got:
        if abs(float(exact_s)) >= np.finfo(float).tiny:  # below: flushed to 0 (as documented)
            assert _ulps(value, exact_s) <= 3, (x0, value, float(exact_s))
        else:
            assert value <= 2 * float(exact_s) + 5e-324
        if abs(float(exact_d)) >= np.finfo(float).tiny:
            assert _ulps(derivative, exact_d) <= 4, (x0, derivative, float(exact_d))
        else:
            assert derivative <= 2 * float(exact_d) + 5e-324


def test_the_old_gradient_form_lost_the_tail():
    """s (1 - s) is 0 at x = 40 in float64; the rule's s(x) s(-x) is not."""
    s40 = 1.0 / (1.0 + math.exp(-40.0))
    assert s40 * (1.0 - s40) == 0.0
    x = sg.var("x")
    assert sg.evaluate(sg.grad(sg.sigmoid(x), x), {"x": 40.0}) > 4e-18


@pytest.mark.parametrize("name", ["relu", "sign", "abs"])
def test_math_and_numpy_backends_agree_on_the_sign_of_zero(name):
    x = sg.var("x")
    f = getattr(sg, name)(x)
    for zero in (-0.0, 0.0):
        values = [float(v[0]) for v in _three_ways([f], "x", zero)]
        want = float(getattr(np, {"relu": "abs"}.get(name, name))(zero)) if name != "relu" \
            else float(np.maximum(zero, 0.0))
        assert [math.copysign(1.0, v) for v in values] == [math.copysign(1.0, want)] * 3, \
            (name, zero, values)
        assert values == [want] * 3


def _unary_math_ops():
    names = []
    for name, template in MATH.items():
        op = lookup(name)
        if template is None or op.arity != 1 or not op.public or not op.elementwise:
            continue
        names.append(name)
    return names


@pytest.mark.parametrize("name", _unary_math_ops())
def test_math_and_numpy_backends_differ_by_at_most_two_ulp(name):
    """The documented bound: NumPy's vectorised functions and the C library's math module
    round differently by one unit in the last place, two for sigmoid and arccosh."""
    x = sg.var("x")
    f = getattr(sg, name)(x)
    if f.dtype != "float64":
        pytest.skip("not a float function")
    lo, hi = lookup(name).domain or (-2.0, 2.0)
    points = np.concatenate([np.linspace(lo, hi, 101), np.linspace(-30, 30, 121)])
    fn, fm = sg.compile(f), sg.compile(f, scalars="math")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for v in points:
            a, b = float(fn(v)), fm(v)
            if a == b or (math.isnan(a) and math.isnan(b)):
                continue
            assert math.isfinite(a) and math.isfinite(b), (name, v, a, b)
            assert abs(a - b) <= 2 * np.spacing(abs(a)), (name, v, a, b)
