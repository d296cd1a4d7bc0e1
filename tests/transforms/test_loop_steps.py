"""The derivative bodies of a loop step: the backward step of :func:`vjp_step` and the
tangent step of :func:`jvp_step`, run on their own (``Body.run``), equal central differences
of one step of the forward body; the backward step reads the costly forward values as
residuals and computes cheap ones again; derived bodies are remembered by the step;
:func:`tangent_closure` follows tangents through carries; :func:`multi_vjp` sums the
adjoints of several seeded results in one pass."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.body import trace
from symgrad.transforms.loop_steps import (
    VjpPlan,
    jvp_step,
    multi_vjp,
    tangent_closure,
    vjp_step,
    zeros,
)
from tests.support.finite_differences import central

RNG = np.random.default_rng(20240601)
C0, X0, W0 = 0.4, RNG.uniform(-0.5, 0.5, 3), 0.7


def _body():
    """A step ``(c, x) -> (c tanh c + sum(exp(x) w), exp(c) x)``, capturing ``w``."""
    w = sg.var("w")
    return trace(lambda c, x: [c * sg.tanh(c) + sg.sum(sg.exp(x) * w), sg.exp(c) * x],
                 [((), "float64"), ((3,), "float64")])


def _step(body, c, x, w):
    return body.run([np.float64(c), np.asarray(x, float), np.float64(w)])


@pytest.mark.parametrize("captured_adjoint", [False, True])
def test_the_backward_step_is_one_steps_vector_jacobian_product(captured_adjoint):
    """Fed the carry's and the result's cotangents, the step's operands and the residuals
    the forward step stores, the backward step gives the adjoints of the carry, the slice
    and (summed onto the incoming one, in its carry) the captured value."""
    body, captured = _body()
    wrt_k = (0,) if captured_adjoint else ()
    vbody, vcaptured, plan = vjp_step(body, 1, 1, (), (("y", 0),), (0,), wrt_k, 4)
    assert isinstance(plan, VjpPlan) and plan.carried == wrt_k and vcaptured == []
    assert [str(e) for e in captured] == ["w"]
    forward = body.with_outputs(list(plan.residuals)).run(
        [np.float64(C0), X0, np.float64(W0)])
    residuals = forward[len(body.outputs):]
    cbar, ybar, kbar = 1.3, RNG.standard_normal(3), 0.25

    def loss(c, x, w):
        new_c, y = _step(body, c, x, w)
        return cbar * new_c + ybar @ y

    ins = [np.float64(cbar), *([np.float64(kbar)] if captured_adjoint else []),
           np.float64(C0), X0, ybar, *residuals, np.float64(W0)]
    got = vbody.run(ins)
    np.testing.assert_allclose(got[0], central(lambda v: loss(v[0], X0, W0), [C0]),
                               rtol=1e-7)
    np.testing.assert_allclose(got[-1], central(lambda v: loss(C0, v, W0), X0), rtol=1e-7)
    if captured_adjoint:
        dw = central(lambda v: loss(C0, X0, v[0]), [W0])
        np.testing.assert_allclose(got[1], kbar + dw, rtol=1e-7)


def test_the_backward_step_stores_costly_values_and_computes_cheap_ones_again():
    """``tanh`` and ``exp`` are residuals of the forward step; a step of products and
    sums stores none (its values cost a flop each)."""
    body, _ = _body()
    _, _, plan = vjp_step(body, 1, 1, (), (("y", 0),), (0,), (), 4)
    assert sorted(body.graph.nodes[r].op for r in plan.residuals) == ["exp", "exp", "tanh"]
    cheap, _ = trace(lambda c, x: [c * c + sg.sum(x), c * x],
                     [((), "float64"), ((3,), "float64")])
    _, _, plan = vjp_step(cheap, 1, 1, (), (("y", 0),), (0,), (), 4)
    assert plan.residuals == ()


def test_derived_steps_are_remembered_by_the_step_body():
    body, _ = _body()
    first = vjp_step(body, 1, 1, (), (("y", 0),), (0,), (), 4)
    assert vjp_step(body, 1, 1, (), (("y", 0),), (0,), (), 4) is first
    assert vjp_step(body, 1, 1, (), (("y", 0),), (), (), 4) is not first
    tangent = jvp_step(body, 1, 1, (), (0, 1))
    assert jvp_step(body, 1, 1, (), (0, 1)) is tangent


@pytest.mark.parametrize("batch", [(), (2,)])
def test_the_tangent_step_is_one_steps_directional_derivative(batch):
    """Carries ``(c, cdot)``, slices ``(x, xdot)``, captured ``(w, wdot)``: the results
    are the step's values and their tangents along the given directions (one per batch
    row)."""
    body, _ = _body()
    jbody, captured, tc, ty = jvp_step(body, 1, 1, batch, (0, 1, 2))
    assert (tc, ty, captured) == ([0], [0], [])
    rows = int(np.prod(batch))
    dc, dx, dw = (RNG.standard_normal(rows), RNG.standard_normal((rows, 3)),
                  RNG.standard_normal(rows))
    got = jbody.run([np.float64(C0), dc.reshape(batch), X0, dx.reshape(batch + (3,)),
                     np.float64(W0), dw.reshape(batch)])
    new_c, new_c_dot, y, y_dot = got
    want_c, want_y = _step(body, C0, X0, W0)
    np.testing.assert_allclose(new_c, want_c, rtol=1e-15)
    np.testing.assert_allclose(y, want_y, rtol=1e-15)
    for r in range(rows):
        def along(t, r=r):
            return _step(body, C0 + t * dc[r], X0 + t * dx[r], W0 + t * dw[r])

        h = 1e-6
        plus, minus = along(h), along(-h)
        np.testing.assert_allclose(np.reshape(new_c_dot, (rows,))[r],
                                   (plus[0] - minus[0]) / (2 * h), rtol=1e-7)
        np.testing.assert_allclose(np.reshape(y_dot, (rows, 3))[r],
                                   (plus[1] - minus[1]) / (2 * h), rtol=1e-7)


def test_tangent_closure_follows_tangents_through_carries():
    """A tangent on the slice reaches the carry it feeds, and through it the carry that
    reads that one; an integer carry never has one; nothing given, nothing reached."""
    body, _ = trace(lambda a, b, n, x: [a + x, b * a, n + 1, sg.sum(b)],
                    [((), "float64"), ((), "float64"), ((), "int64"), ((), "float64")])
    assert tangent_closure(body, 3, {3}) == {0, 1, 3}
    assert tangent_closure(body, 3, {1}) == {1}
    assert tangent_closure(body, 3, set()) == set()


def test_multi_vjp_sums_the_adjoints_of_several_seeded_results():
    """One reverse pass from two seeded results: each operand's adjoint is the sum of
    both results' contributions; an operand no seeded result reads gets none."""
    a, b = sg.var("a", (3,)), sg.var("b", (3,))
    y1, y2 = sg.sin(a) * b, a ** 2
    graph = y2.graph
    ga, gb = (graph.expr(graph.variables[n]) for n in ("a", "b"))
    s1, s2 = RNG.standard_normal(3), RNG.standard_normal(3)
    got = multi_vjp([(y1, sg.const(s1)), (y2, sg.const(s2))], [ga, gb])
    a0, b0 = RNG.standard_normal(3), RNG.standard_normal(3)
    da, db = sg.evaluate(got, {"a": a0, "b": b0})
    np.testing.assert_allclose(da, s1 * b0 * np.cos(a0) + 2 * s2 * a0, rtol=1e-14)
    np.testing.assert_allclose(db, s1 * np.sin(a0), rtol=1e-14)
    assert multi_vjp([], [ga, gb]) == [None, None]
    only_a = multi_vjp([(y2, sg.const(s2))], [ga, gb])  # b does not reach y2
    assert only_a[1] is None
    np.testing.assert_allclose(sg.evaluate(only_a[0], {"a": a0}), 2 * s2 * a0, rtol=1e-14)


def test_zeros_is_a_broadcast_zero_of_the_shape_and_dtype():
    z = zeros((2, 3), "float32")
    assert (z.shape, z.dtype) == ((2, 3), "float32")
    value = np.asarray(sg.evaluate(z, {}))
    assert value.dtype == np.float32 and not value.any() and value.shape == (2, 3)
