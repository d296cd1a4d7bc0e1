"""The gradient checker (``symgrad.testing``): it passes correct rules to third order, and
catches a wrong rule (off by 0.1%) at the order where it is used, naming the variable; it
reports non-finite values, refuses bad arguments and non-float64 variables; its element-wise
Jacobian equals the symbolic one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import symgrad as sg
from symgrad.ops import REGISTRY, F
from symgrad.testing import GradientCheckError, check_grads, numeric_jacobian


def test_check_grads_passes_on_correct_rules(rng):
    x, W = sg.var("x", (3,)), sg.var("W", (2, 3))
    f = sg.tanh(W @ x) * 2.0
    check_grads(f, [x, W], {"x": rng.standard_normal(3), "W": rng.standard_normal((2, 3))},
                order=3)
    check_grads(sg.sum(sg.exp(x)), "x", {"x": [1.0, 2.0, 3.0]})


def _patched(monkeypatch, name, rule):
    monkeypatch.setitem(REGISTRY, name, dataclasses.replace(REGISTRY[name], backprop=rule))


def test_check_grads_catches_a_wrong_first_derivative(monkeypatch):
    _patched(monkeypatch, "sin", lambda n, g: (g * F.cos(n.args[0]) * 1.001,))
    x = sg.var("x", (3,))
    with pytest.raises(GradientCheckError, match=r"order 1.*'x'.*symbolic.*numeric"):
        check_grads(sg.sin(x) * x, x, {"x": [0.5, 1.0, 2.0]}, order=1)
    with pytest.raises(AssertionError):  # usable with plain pytest idioms
        check_grads(sg.sin(x) * x, x, {"x": [0.5, 1.0, 2.0]}, order=1)


def test_check_grads_catches_a_wrong_second_derivative_only_at_order_2(monkeypatch):
    # cos' rule is only used when sin's derivative (cos) is differentiated again
    _patched(monkeypatch, "cos", lambda n, g: (g * F.sin(n.args[0]),))  # sign error
    x = sg.var("x", (2,))
    at = {"x": [0.4, 1.3]}
    check_grads(sg.sin(x), x, at, order=1)
    with pytest.raises(GradientCheckError, match="order 2"):
        check_grads(sg.sin(x), x, at, order=2)


def test_check_grads_names_the_wrong_variable(monkeypatch):
    _patched(monkeypatch, "multiply", lambda n, g: (g * n.args[1], g * n.args[0] * 0.5))
    x, y = sg.var("x"), sg.var("y")
    with pytest.raises(GradientCheckError, match="'y'"):
        check_grads(x * y, [x, y], {"x": 1.5, "y": -0.5}, order=1)


def test_check_grads_reports_non_finite_values():
    x = sg.var("x")
    with pytest.raises(GradientCheckError, match="not finite"):
        check_grads(sg.log(x), x, {"x": -1.0}, order=1)


def test_check_grads_rejects_bad_arguments():
    x = sg.var("x")
    with pytest.raises(ValueError):
        check_grads(x * x, x, {"x": 1.0}, order=0)
    with pytest.raises(sg.DifferentiationError):
        check_grads(x * x, "nope", {"x": 1.0})
    with pytest.raises(sg.InputError):
        check_grads(x * sg.var("y"), x, {"x": 1.0})


def test_numeric_jacobian_matches_jacobian(rng):
    x = sg.var("x", (3,))
    f = sg.sin(x) * sg.sum(x * x)
    at = {"x": rng.standard_normal(3)}
    np.testing.assert_allclose(numeric_jacobian(f, x, at), sg.evaluate(sg.jacobian(f, x), at),
                               rtol=1e-8, atol=1e-9)


def test_check_grads_needs_float64_variables_and_values():
    x = sg.var("x", dtype="float32")
    with pytest.raises(sg.SymgradError, match="float64"):
        check_grads(x * x, x, {"x": 1.0})
    z = sg.var("z")
    with pytest.raises(sg.InputError, match="'z'"):
        check_grads(sg.var("w") * 2.0, [z], {"w": 1.0})


def test_check_jvps_passes_forward_mode_and_catches_a_wrong_tangent_rule(monkeypatch, rng):
    """The tangent along a random direction against the central difference of f along it."""
    from symgrad.testing import check_jvps

    x, W = sg.var("x", (3,)), sg.var("W", (2, 3))
    at = {"x": rng.standard_normal(3), "W": rng.standard_normal((2, 3))}
    check_jvps(sg.tanh(W @ x) * sg.sin(x[:2]), [x, W], at, order=2)
    wrong = dataclasses.replace(REGISTRY["sin"],
                                forward=lambda n, ts: ts[0] * F.cos(n.args[0]) * 1.001)
    monkeypatch.setitem(REGISTRY, "sin", wrong)
    with pytest.raises(GradientCheckError, match="order 1: the tangent .*finite differences"):
        check_jvps(sg.sin(x) * x, x, {"x": [0.5, 1.0, 2.0]}, order=1)
