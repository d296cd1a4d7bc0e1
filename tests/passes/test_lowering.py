"""Lowering inside B: the gradient of a buffer used in tiles is one ``concatenate`` or
``stack`` instead of a scatter; a matrix used at every step of an unrolled loop gets one
product of stacked operands instead of a sum of outer products; scalar factors are
collected; every lowered gradient equals the gradient as the rules write it (``cleanup=
False``) to rounding, and the forward graph is never touched."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.passes import lowering as L

R = np.random.default_rng(31)


def _ops(e: sg.Expr, start: int = 0) -> list[str]:
    g = e.graph
    return [g.nodes[i].op for i in g.ancestors([e.node]) if i >= start]


def _both(f, wrt, at):
    """The lowered gradient, the gradient as the rules write it, and their values."""
    lowered = sg.grad(f, wrt)
    plain = sg.grad(f, wrt, cleanup=False)
    return lowered, plain, sg.evaluate(lowered, at), sg.evaluate(plain, at)


def test_a_buffer_used_in_slices_gets_a_concatenated_gradient():
    z = sg.var("z", shape=(9,))
    f = sg.sum(sg.sin(z[:3]) * sg.cos(z[3:6]) + z[6:] ** 2)
    at = {"z": R.standard_normal(9)}
    before = len(z.graph)
    lowered, plain, got, want = _both(f, z, at)
    assert "concatenate" in _ops(lowered, before) and "index_add" not in _ops(lowered, before)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_a_buffer_used_position_by_position_gets_a_stacked_gradient():
    xs = sg.var("xs", shape=(4, 3))
    f = sg.sum(xs[0] * xs[1] + sg.exp(xs[2]) + sg.sin(xs[3]))
    at = {"xs": R.standard_normal((4, 3))}
    before = len(xs.graph)
    lowered, plain, got, want = _both(f, xs, at)
    assert "stack" in _ops(lowered, before) and "index_add" not in _ops(lowered, before)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_a_matrix_used_at_every_step_gets_one_product_of_stacked_operands():
    W = sg.var("W", shape=(3, 3))
    h = sg.var("h0", shape=(3,))
    xs = [sg.var(f"x{t}", shape=(3,)) for t in range(6)]
    for x in xs:  # an unrolled recurrence written step by step, each step different
        h = sg.tanh(W @ h + x) * (1.0 + 0.0 * sg.sum(x))
    f = sg.sum(h ** 2)
    at = {"W": R.standard_normal((3, 3)) * 0.5, "h0": R.standard_normal(3),
          **{f"x{t}": R.standard_normal(3) for t in range(6)}}
    before = len(W.graph)
    lowered, plain, got, want = _both(f, W, at)
    assert _ops(plain, before).count("outer") == 6
    assert _ops(lowered, before).count("outer") == 0 and "stack" in _ops(lowered, before)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_scalar_factors_are_collected_and_equal_the_rules_to_rounding():
    x = sg.var("x", shape=(4,))
    f = sg.sum(((x * 3.0) * 2.0) ** 2) + sg.sum((x - x * 0.5) - x * 0.5)
    at = {"x": R.standard_normal(4)}
    lowered, plain, got, want = _both(f, x, at)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(got, 72 * at["x"], rtol=1e-14)
    assert len(_ops(lowered)) < len(_ops(plain))


def test_the_forward_graph_is_never_touched():
    z = sg.var("z", shape=(6,))
    f = sg.sum(sg.sin(z[:3]) * z[3:])
    forward = list(z.graph.nodes[: len(z.graph)])
    sg.grad(f, z)
    assert [n.op for n in z.graph.nodes[: len(forward)]] == [n.op for n in forward]


def test_a_sum_becomes_a_product_where_the_measured_costs_say_so():
    """The nearest grid point of the table in log scale answers for a shape; a margin of 0
    always prefers the product, an impossible one never does."""
    for kind in ("sum_rows", "sum_cols"):
        assert L.cheaper_as_product(kind, 1, 900, 3) == L.cheaper_as_product(kind, 1, 1024, 2)
        assert L.cheaper_as_product(kind, 50, 7, 40) == L.cheaper_as_product(kind, 64, 8, 32)
        assert L.cheaper_as_product(kind, 8, 32, 32, margin=0.0)
        assert not L.cheaper_as_product(kind, 8, 32, 32, margin=1e9)
    with pytest.raises(KeyError):
        L.cheaper_as_product("diagonal", 1, 4, 4)
