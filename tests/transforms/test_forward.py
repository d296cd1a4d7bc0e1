"""Forward mode (jvp, jacfwd, linearize, hvp forward over reverse), mixed Hessians, and how
tangents are listed, drawn and emitted. Every op's forward rule is checked by the
registry-driven tests (test_registry.py); these check the transforms and tools around them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import DifferentiationError
from symgrad.testing import check_jvps, numeric_jacobian
from tests.support.finite_differences import directional


def test_jvp_equals_the_directional_derivative(rng):
    W, x = sg.var("W", shape=(3, 4)), sg.var("x", shape=(4,))
    f = sg.tanh(W @ x) * sg.sum(x ** 2)
    at = {"W": rng.standard_normal((3, 4)), "x": rng.standard_normal(4)}
    v = rng.standard_normal(4)
    got = sg.evaluate(sg.jvp(f, x, v), at)
    want = directional(lambda u: sg.evaluate(f, {**at, "x": u}), at["x"], v)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    both = sg.jvp(f, [W, x], [np.zeros((3, 4)), v])  # several variables move together
    np.testing.assert_allclose(sg.evaluate(both, at), got, rtol=1e-14)


def test_jvp_with_batched_tangents_is_one_pass_for_many_directions(rng):
    x = sg.var("x", shape=(3,))
    f = sg.exp(x) * sg.sum(x)
    at = {"x": rng.standard_normal(3)}
    V = rng.standard_normal((5, 3))
    batched = sg.evaluate(sg.jvp(f, x, V), at)
    assert batched.shape == (5, 3)
    for k in range(5):
        np.testing.assert_allclose(batched[k], sg.evaluate(sg.jvp(f, x, V[k]), at),
                                   rtol=1e-14)


def test_jvp_of_several_outputs_and_named_tangents():
    x, y = sg.var("x"), sg.var("y")
    out = sg.jvp([x * y, sg.sin(x)], [x, y], ["tx", "ty"])
    assert isinstance(out, tuple) and len(out) == 2
    got = sg.evaluate(list(out), {"x": 2.0, "y": 3.0, "tx": 1.0, "ty": 10.0})
    np.testing.assert_allclose(got, [3.0 + 2.0 * 10.0, np.cos(2.0)])


def test_jvp_of_an_unconnected_output_is_zeros():
    x, y = sg.var("x", shape=(2,)), sg.var("y", shape=(3,))
    t = sg.jvp(y * 2.0, x, np.ones((4, 2)))
    np.testing.assert_array_equal(sg.evaluate(t, {"y": np.ones(3)}), np.zeros((4, 3)))


def test_jvp_bad_tangents_are_errors():
    x, y = sg.var("x", shape=(2,)), sg.var("y", shape=(3,))
    with pytest.raises(DifferentiationError, match="must end with"):
        sg.jvp(x * 2.0, x, np.ones(3))
    with pytest.raises(DifferentiationError, match="batch"):
        sg.jvp(sg.sum(x) * sg.sum(y), [x, y], [np.ones((2, 2)), np.ones((3, 3))])
    with pytest.raises(DifferentiationError, match="2 variables but 1"):
        sg.jvp(sg.sum(x) * sg.sum(y), [x, y], [np.ones(2)])


def test_jvp_keeps_exact_zeros_of_unselected_where_branches():
    """sqrt(relu(x)) at x < 0: relu's tangent is an exact 0 and sqrt'(0) is inf; the masks
    keep 0 * inf out, as reverse mode does."""
    x = sg.var("x", shape=(3,))
    f = sg.sqrt(sg.relu(x))
    at = {"x": np.array([-1.0, 0.0, 4.0])}
    fwd = sg.evaluate(sg.jvp(f, x, np.ones(3)), at)
    rev = sg.evaluate(sg.vjp(f, x, np.ones(3)), at)
    np.testing.assert_array_equal(fwd, [0.0, 0.0, 0.25])
    np.testing.assert_array_equal(fwd, rev)


def test_jacfwd_of_several_variables_matches_finite_differences(rng):
    A, b = sg.var("A", shape=(2, 3)), sg.var("b", shape=(2,))
    x = sg.var("x")
    f = sg.concatenate([sg.tanh(A @ sg.ones(3) * x + b), b * x, sg.sum(A, axis=0)])
    at = {"A": rng.standard_normal((2, 3)), "b": rng.standard_normal(2), "x": 0.7}
    jac = sg.jacfwd(f, [A, b, x])
    assert [j.shape for j in jac] == [(7, 2, 3), (7, 2), (7,)]
    for j, v in zip(jac, (A, b, x)):
        np.testing.assert_allclose(sg.evaluate(j, at), numeric_jacobian(f, v, at),
                                   rtol=1e-7, atol=1e-9)


def test_jacobian_picks_the_mode_with_the_smaller_batch():
    x = sg.var("x", shape=(2,))
    tall, wide = sg.outer(x, sg.ones(5)), sg.sum(x) * sg.ones(1)
    graph = x.graph
    sg.jacobian(tall, x)
    assert type(graph.transforms[-1]).__name__ == "Tangents"  # 2 inputs < 10 outputs
    sg.jacobian(wide, x)
    assert type(graph.transforms[-1]).__name__ == "Backprop"
    sg.jacobian(tall, x, mode="reverse")
    assert type(graph.transforms[-1]).__name__ == "Backprop"
    with pytest.raises(DifferentiationError, match="mode"):
        sg.jacobian(tall, x, mode="sideways")


def test_hvp_is_forward_over_reverse_and_takes_a_batch(rng):
    x = sg.var("x", shape=(4,))
    f = sg.sum(sg.sin(x) ** 2 * x) + sg.prod(x)
    at = {"x": rng.standard_normal(4)}
    H = sg.evaluate(sg.hessian(f, x), at)
    V = rng.standard_normal((3, 4))
    hv = sg.hvp(f, x, V)
    np.testing.assert_allclose(sg.evaluate(hv, at), V @ H, rtol=1e-12, atol=1e-12)
    assert any(type(t).__name__ == "Tangents" for t in x.graph.transforms)
    x.graph.verify()


def test_mixed_hessian_gives_nested_blocks_as_jax():
    a, b = sg.var("a"), sg.var("b")
    H = sg.hessian(a * a * b, [a, b])  # a list of two scalars: nested blocks, no crash
    got = [[sg.evaluate(h, {"a": 3.0, "b": 2.0}) for h in row] for row in H]
    assert got == [[4.0, 6.0], [6.0, 0.0]]


def test_mixed_hessian_blocks_are_symmetric_and_match_finite_differences(rng):
    W, x, c = sg.var("W", shape=(2, 3)), sg.var("x", shape=(3,)), sg.var("c")
    f = sg.sum(sg.tanh(W @ x) * c) + c ** 3 * sg.sum(x * x)
    at = {"W": rng.standard_normal((2, 3)), "x": rng.standard_normal(3), "c": 0.4}
    wrt = [W, x, c]
    H = sg.hessian(f, wrt)
    for i, vi in enumerate(wrt):
        gi = sg.grad(f, vi)
        for j, vj in enumerate(wrt):
            block = np.asarray(sg.evaluate(H[i][j], at))
            assert block.shape == vi.shape + vj.shape
            other = np.asarray(sg.evaluate(H[j][i], at))
            axes = tuple(range(vj.ndim, vj.ndim + vi.ndim)) + tuple(range(vj.ndim))
            np.testing.assert_allclose(block, np.transpose(other, axes), rtol=1e-12,
                                       atol=1e-13)
            np.testing.assert_allclose(block, numeric_jacobian(gi, vj, at), rtol=1e-6,
                                       atol=1e-8)


def test_linearize_computes_the_forward_values_once(rng):
    x = sg.var("x", shape=(3,))
    f = sg.sin(x) * sg.exp(x) + sg.sum(x ** 3)
    at = {"x": rng.standard_normal(3)}
    value, lin = sg.linearize(f, x, at)
    np.testing.assert_allclose(value, sg.evaluate(f, at), rtol=1e-15)
    for _ in range(3):
        v = rng.standard_normal(3)
        np.testing.assert_allclose(lin(v), sg.evaluate(sg.jvp(f, x, v), at), rtol=1e-13)
    assert "np.sin" not in lin.source and "np.exp" not in lin.source  # tangent lines only
    with pytest.raises(sg.SymgradError, match="1 tangent"):
        lin(np.ones(3), np.ones(3))


def test_emitted_forward_mode_names_tangents_and_ties_them_to_forward_lines():
    x = sg.var("x")
    h = x
    for _ in range(3):
        h = sg.sin(h) * h + sg.cos(h)
    t = sg.jvp(h, x, 1.0)
    src = sg.to_source([h, t], name="chain")
    tangent_lines = [ln for ln in src.splitlines() if "# tangent of:" in ln]
    assert tangent_lines and all(re.search(r"# tangent of: (t\d+|value) = ", ln)
                                 for ln in tangent_lines)
    assert re.search(r"return value, value_dot\n", src)  # the value and its tangent
    fn = sg.compile([h, t], scalars="math")
    value, slope = fn(0.3)
    ref = sg.evaluate([h, sg.grad(h, x)], {"x": 0.3})
    np.testing.assert_allclose([value, slope], ref, rtol=1e-13)
    assert "math.sin" in fn.source


def test_listing_and_pictures_mark_tangents():
    x = sg.var("x", shape=(2,))
    f = sg.sum(sg.exp(x) * x)
    t = sg.jvp(f, x, "v")
    text = sg.listing([f, t])
    assert "# tangent of v" in text and "# jvp of v" in text
    scene_kinds = {b.kind for b in sg.printing.scene.build_scene([f, t]).boxes.values()}
    assert "tangent" in scene_kinds
    dot = sg.to_dot([f, t])
    assert "tangents" in dot and "#d6f0d9" in dot
    x.graph.verify()
    roles = {n.role for n in x.graph.nodes}
    assert roles == {"forward", "tangent"}


def test_simplify_keeps_tangent_roles():
    x = sg.var("x")
    t = sg.jvp(sg.sin(x) * x, x, "v")
    simple = sg.simplify(t)
    assert simple.graph.nodes[simple.node].role == "tangent"
    at = {"x": 0.5, "v": 2.0}
    np.testing.assert_allclose(sg.evaluate(simple, at), sg.evaluate(t, at), rtol=1e-15)
    simple.graph.verify()


def test_forward_mode_of_a_long_chain_needs_no_recursion():
    x = sg.var("x")
    h = x
    for _ in range(3000):
        h = sg.sin(h) * 0.5 + h * 0.5
    t = sg.jvp(h, x, 1.0)
    got = sg.evaluate(t, {"x": 0.2})
    assert np.isfinite(got)
    np.testing.assert_allclose(got, sg.evaluate(sg.grad(h, x), {"x": 0.2}), rtol=1e-12)


def test_forward_over_forward_gives_second_derivatives():
    x = sg.var("x")
    f = sg.exp(sg.sin(x)) * x
    second = sg.jvp(sg.jvp(f, x, 1.0), x, 1.0)
    np.testing.assert_allclose(sg.evaluate(second, {"x": 0.3}),
                               sg.evaluate(sg.derivative(f, x, 2), {"x": 0.3}), rtol=1e-13)
    check_jvps(f, x, {"x": 0.3}, order=3)
