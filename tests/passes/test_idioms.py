"""Idioms: hand-written sigmoid, softplus, log-sum-exp, log-softmax and softmax are
differentiated by their own rule (cheap and stable), the forward values stay as written,
and the stability of a derivative does not depend on the order of simplify and grad."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from tests.support.finite_differences import central


def _new_ops(e: sg.Expr, before: int) -> list[str]:
    g = e.graph
    return [g.nodes[i].op for i in g.ancestors([e.node]) if i >= before
            and not g.nodes[i].is_const]


def _bits(a) -> bytes:
    return np.asarray(a).tobytes()


def test_tomassoli_sigmoid_derivative_is_s_times_one_minus_s_with_s_shared():
    x = sg.var("x")
    s = 1 / (1 + sg.exp(-x))
    before = len(s.graph)
    ds = sg.grad(s, x)
    assert _new_ops(ds, before) == ["subtract", "multiply"]  # s * (1 - s): two operations
    assert s.node in s.graph.nodes[ds.node].args  # reads the forward node s itself
    assert str(ds) == "1 / (1 + exp(-x)) * (1.0 - 1 / (1 + exp(-x)))"
    for v in (-1000.0, -30.0, -5.0, 0.0, 0.7, 5.0, 30.0, 1000.0):
        want = np.exp(-abs(v)) / (1 + np.exp(-abs(v))) ** 2
        # s * (1 - s) loses relative precision as 1 - s cancels (x > 0): absolute 1e-16
        assert sg.evaluate(ds, {"x": v}) == pytest.approx(want, rel=1e-12, abs=1e-16)
    # the simplifiers keep it: s shared, no larger
    for simple in (sg.simplify(ds), sg.simplify(ds, sympy=True)):
        assert len(simple.graph.ancestors([simple.node])) <= len(ds.graph.ancestors([ds.node]))
        assert sg.evaluate(simple, {"x": -1000.0}) == 0.0


def test_without_cleanup_b_is_the_mechanical_chain_rule():
    x = sg.var("x")
    s = 1 / (1 + sg.exp(-x))
    raw = sg.grad(s, x, cleanup=False)
    assert np.isnan(sg.evaluate(raw, {"x": -1000.0}))  # 0 * inf, as the chain rule says
    assert sg.evaluate(raw, {"x": 0.7}) == pytest.approx(sg.evaluate(sg.grad(s, x), {"x": 0.7}))


@pytest.mark.parametrize("a_value", [-1000.0, 1000.0, 0.3])
def test_softplus_gradient_is_stable_in_both_orders(a_value):
    a = sg.var("a")
    f = sg.log(1 + sg.exp(a))
    want = 1.0 / (1.0 + np.exp(-a_value)) if abs(a_value) < 700 else float(a_value > 0)
    orders = {
        "grad": sg.grad(f, a),
        "simplify(grad)": sg.simplify(sg.grad(f, a)),
        "simplify(grad, sympy)": sg.simplify(sg.grad(f, a), sympy=True),
        "grad(simplify)": sg.grad(sg.simplify(f), a),
        "grad(simplify(sympy))": sg.grad(sg.simplify(f, sympy=True), a),
    }
    for name, d in orders.items():
        assert sg.evaluate(d, {"a": a_value}) == pytest.approx(want, rel=1e-15), name
    assert sg.evaluate(sg.simplify(f), {"a": a_value}) == pytest.approx(
        float(np.logaddexp(0.0, a_value)), rel=1e-15)


def test_forward_values_stay_as_written():
    x = sg.var("x", shape=(4,))
    s = 1.0 / (1.0 + sg.exp(-x))
    at = {"x": np.array([-800.0, -1.5, 0.25, 40.0])}
    before = sg.evaluate(s, at)
    sg.grad(sg.sum(s), x)
    after = sg.evaluate(s, at)
    with np.errstate(over="ignore"):
        want = 1.0 / (1.0 + np.exp(-at["x"]))
    assert _bits(before) == _bits(after) == _bits(want)


def _lse_forms(v, axis):
    """(name, hand-written expression, the op it means)."""
    m = sg.max(v, axis=axis, keepdims=True)
    m0 = sg.max(v, axis=axis)
    e = sg.exp(v - m)
    lse = sg.logsumexp(v, axis=axis)
    lsm = sg.log_softmax(v, axis=axis)
    forms = [
        ("lse squeeze", sg.squeeze(m, axis) + sg.log(sg.sum(e, axis=axis)), lse),
        ("lse keepdims", sg.log(sg.sum(e, axis=axis, keepdims=True)) + m,
         sg.logsumexp(v, axis=axis, keepdims=True)),
        ("lse reshape", m0 + sg.log(sg.sum(sg.exp(v - sg.expand_dims(m0, axis)), axis=axis)),
         lse),
        ("log_softmax", v - m - sg.log(sg.sum(e, axis=axis, keepdims=True)), lsm),
        ("log_softmax nested", v - (m + sg.log(sg.sum(e, axis=axis, keepdims=True))), lsm),
        ("softmax", e / sg.sum(e, axis=axis, keepdims=True), sg.softmax(v, axis=axis)),
    ]
    return forms


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("k", range(6))
def test_log_sum_exp_family_spellings(axis, k):
    v = sg.var("v", (3, 4))
    name, hand, op = _lse_forms(v, axis)[k]
    w = sg.const(np.random.default_rng(k).normal(size=hand.shape))
    before = len(hand.graph)
    gh = sg.grad(sg.sum(hand * w), v)
    go = sg.grad(sg.sum(op * w), v)
    rng = np.random.default_rng(axis)
    for scale in (1.0, 800.0):  # at 800 exp overflows: the shift's chain rule is not needed
        at = {"v": scale * rng.normal(size=(3, 4))}
        got, want = sg.evaluate(gh, at), sg.evaluate(go, at)
        assert np.all(np.isfinite(got)), name
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15, err_msg=name)
        np.testing.assert_allclose(sg.evaluate(hand, at), sg.evaluate(op, at), rtol=1e-13)
    ops = _new_ops(gh, before)
    assert "equal" not in ops and "where" not in ops, (name, ops)  # no gradient of the max
    assert str(sg.simplify(hand)).startswith(op.op), name  # simplify writes the op


def test_one_dimensional_shift_by_a_scalar_maximum():
    """W5's spelling: ``s = h - max(h)``, ``logp = s - log(sum(exp(s)))``, ``-logp[y]``."""
    h = sg.var("h", (5,))
    y = sg.var("y", (), "int64")
    s = h - sg.max(h)
    loss = -(s - sg.log(sg.sum(sg.exp(s))))[y]
    before = len(h.graph)
    g = sg.grad(loss, h)
    at = {"h": np.array([1.0, -2.0, 700.0, 3.0, 0.5]), "y": 3}
    p = np.exp(at["h"] - at["h"].max())
    p /= p.sum()
    want = p - np.eye(5)[3]
    np.testing.assert_allclose(sg.evaluate(g, at), want, rtol=1e-14, atol=1e-300)
    assert "equal" not in _new_ops(g, before)


def test_misaligned_shift_is_not_an_idiom():
    """max over axis 1 of a square matrix, subtracted without keepdims: it broadcasts along
    the wrong axis, so the expression is not a log-sum-exp; the chain rule is used."""
    v = sg.var("v", (3, 3))
    m = sg.max(v, axis=1)
    f = sg.sum(sg.log(sg.sum(sg.exp(v - m), axis=1)) + m)
    g = sg.grad(f, v)
    at = {"v": np.random.default_rng(0).normal(size=(3, 3))}

    def num(a):
        mm = a.max(axis=1)
        return np.sum(np.log(np.exp(a - mm).sum(axis=1)) + mm)

    fd = central(num, at["v"], 1e-6)
    np.testing.assert_allclose(sg.evaluate(g, at), fd, rtol=1e-6, atol=1e-8)
    assert "logsumexp(v," not in str(sg.simplify(f))


def test_idioms_under_batched_cotangents_and_second_order():
    v = sg.var("v", (4,))
    m = sg.max(v)
    hand = m + sg.log(sg.sum(sg.exp(v - m)))
    J = sg.jacobian(1 / (1 + sg.exp(-v)), v)
    at = {"v": np.array([0.5, -1.0, 2.0, 0.0])}
    s = 1 / (1 + np.exp(-at["v"]))
    np.testing.assert_allclose(sg.evaluate(J, at), np.diag(s * (1 - s)), rtol=1e-14)
    H, Hop = sg.hessian(hand, v), sg.hessian(sg.logsumexp(v), v)
    np.testing.assert_allclose(sg.evaluate(H, at), sg.evaluate(Hop, at), rtol=1e-12, atol=1e-15)
    sg.check_grads(hand, v, at=at, order=2)


def test_shift_through_new_axes_and_not_through_reordering():
    v = sg.var("v", (3, 4))
    m = sg.max(v, axis=1)
    ok = m + sg.log(sg.sum(sg.exp(v - m[:, None]), axis=1))
    before = len(v.graph)
    g = sg.grad(sg.sum(ok), v)
    assert "equal" not in _new_ops(g, before)
    # a reversed shift is constant along the reduced axis but is not the max added back
    bad = m + sg.log(sg.sum(sg.exp(v - m[::-1][:, None]), axis=1))
    gb = sg.grad(sg.sum(bad), v)
    at = {"v": np.random.default_rng(2).normal(size=(3, 4))}
    a = at["v"]

    def num(x):
        mm = x.max(axis=1)
        return np.sum(mm + np.log(np.exp(x - mm[::-1][:, None]).sum(axis=1)))

    fd = np.zeros_like(a)
    for i in np.ndindex(*a.shape):
        d = np.zeros_like(a)
        d[i] = 1e-6
        fd[i] = (num(a + d) - num(a - d)) / 2e-6
    np.testing.assert_allclose(sg.evaluate(gb, at), fd, rtol=1e-6, atol=1e-8)
