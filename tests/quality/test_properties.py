"""Property tests on random well-typed expressions, and tests of the gradient checker itself."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given

import symgrad as sg
from symgrad.ops import REGISTRY, F
from symgrad.testing import (
    GradientCheckError,
    check_grads,
    numeric_jacobian,
    random_expressions,
    smooth_ops,
)

B_PER_NODE_AND_EDGE = 4  # as in test_reverse.py


def _near_kink(case, eps=1e-4) -> bool:
    """Whether the symbolic gradient is not smooth within ``eps`` of the point (a kink of
    abs, max, where...): such points are for exact-value tests, not finite differences.

    Along a random direction, a smooth gradient moves ten times less over a step ten times
    shorter (a jump does not), and moves by opposite amounts over opposite steps (a kink
    does not). False alarms only discard an example."""
    grads = list(sg.grad(sg.sum(case.expr), case.wrt))
    rng = np.random.default_rng(1)
    at = case.inputs
    for name in case.wrt:
        v = rng.standard_normal(at[name].shape)
        steps = (0.0, eps, eps / 10, -eps, -eps / 10)
        values = [[np.asarray(a) for a in sg.evaluate(grads, {**at, name: at[name] + t * v})]
                  for t in steps]
        for g0, g1, g2, g3, g4 in zip(*values):
            d1, d2, d3, d4 = g1 - g0, g2 - g0, g3 - g0, g4 - g0
            if not np.all(np.isfinite(d1 + d2 + d3 + d4)):
                return True
            size = max(np.max(np.abs(d1)), np.max(np.abs(d3))) + 1e-12
            if (np.max(np.abs(d2 - d1 / 10)) > 0.2 * size
                    or np.max(np.abs(d4 - d3 / 10)) > 0.2 * size
                    or np.max(np.abs(d1 + d3)) > 0.05 * size):
                return True
    return False


@given(random_expressions())
def test_random_expressions_gradients_match_finite_differences(case):
    value = np.asarray(sg.evaluate(case.expr, case.inputs))
    assume(np.all(np.isfinite(value)) and case.wrt)
    try:
        check_grads(case.expr, case.wrt, case.inputs, order=1)
    except GradientCheckError:
        if _near_kink(case):
            assume(False)
        raise
    case.expr.graph.verify()


@given(random_expressions(max_steps=4))
def test_random_expressions_second_order(case):
    value = np.asarray(sg.evaluate(case.expr, case.inputs))
    assume(np.all(np.isfinite(value)) and case.wrt)
    assume(not _near_kink(case))
    check_grads(case.expr, case.wrt, case.inputs, order=2)


@given(random_expressions())
def test_random_expressions_b_is_linear(case):
    assume(case.wrt)
    f = case.expr if case.expr.shape == () else sg.sum(case.expr)
    graph = f.graph
    forward = graph.ancestors([f.node])
    edges = sum(len(graph.nodes[i].args) for i in forward)
    before = len(graph)
    sg.grad(f, case.wrt)
    graph.verify()
    assert len(graph) - before <= B_PER_NODE_AND_EDGE * (len(forward) + edges)


@given(random_expressions())
def test_random_expressions_evaluate_deterministically(case):
    assume(case.wrt)
    f = case.expr if case.expr.shape == () else sg.sum(case.expr)
    grads = list(sg.grad(f, case.wrt))
    a = sg.evaluate([f, *grads], case.inputs)
    b = sg.evaluate([f, *grads], case.inputs)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)  # bitwise, NaN-aware
    # a second, independent build of the same derivative gives the same bits
    c = sg.evaluate(list(sg.grad(f, case.wrt)), case.inputs)
    for u, v in zip(a[1:], c):
        np.testing.assert_array_equal(u, v)


def test_random_expression_strategy_covers_the_registry():
    names = {op.name for op in smooth_ops()}
    assert {"add", "multiply", "exp", "sin", "tanh", "power"} <= names
    assert not {"less", "sign", "const", "var"} & names


# -- the checker itself --------------------------------------------------------------------


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
