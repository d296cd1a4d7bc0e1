"""The exact normal form: each rewrite gives the ops it promises (``x + x`` is ``2 * x``,
``-1 * x`` is ``-x``, a constant's sign folded, broadcasts fused into their consumer,
reshape chains merged, commutative operands in one order so ``100 * t`` and ``t * 100`` are
one node) and values equal to the original bit for bit, signed zeros, infinities and NaN
included (run after constant folding, as the pipeline runs it)."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.passes.exact import CONSTANT_FOLDING
from symgrad.passes.normal_form import CANONICAL_ORDER, NORMAL_FORM
from symgrad.passes.rebuild import rebuilt

SPECIAL = np.array([-0.0, 0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-310, 3e300])


def _passed(f: sg.Expr, passes=(CONSTANT_FOLDING, NORMAL_FORM)) -> sg.Expr:
    graph, (i,) = rebuilt(f.graph, [f.node], list(passes))
    return sg.Expr(graph, i)


def _ops(e: sg.Expr) -> list[str]:
    g = e.graph
    return sorted(g.nodes[i].op for i in g.ancestors([e.node]) if not g.nodes[i].is_var)


def _bitwise_equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes() \
        or (a.shape == b.shape and np.array_equal(np.isnan(a), np.isnan(b))
            and np.array_equal(np.where(np.isnan(a), 0, a).view(np.int64),
                               np.where(np.isnan(b), 0, b).view(np.int64)))


x = sg.var("x", shape=(9,))
y = sg.var("y", shape=(9,))
r = sg.var("r", shape=(1, 9))

CASES = {
    "twice": (x + x, ["const", "multiply"]),
    "minus_one_times": (-1.0 * x, ["negative"]),
    "times_minus_one": (x * -1.0, ["negative"]),
    "negated_product": (-(x * 3.0), ["const", "multiply"]),  # -3.0 folded
    "plus_negative_zero": (x + (-0.0), []),
    "broadcast_fused": (sg.broadcast_to(x, (2, 9)) * sg.broadcast_to(r, (2, 9)),
                        ["broadcast_to", "multiply"]),
    "reshape_chain": (sg.reshape(sg.reshape(x, (3, 3)), (9, 1)), ["reshape"]),
    "transpose_undone": (sg.matrix_transpose(sg.transpose(sg.reshape(x, (3, 3)), (1, 0))),
                         ["reshape"]),
    "leading_unit_constant": (x * sg.const(np.array([100.0])), ["const", "multiply"]),
}


@pytest.mark.parametrize("name", CASES)
def test_each_rewrite_gives_its_ops_and_the_same_bits(name):
    f, want_ops = CASES[name]
    g = _passed(f)
    assert _ops(g) == sorted(want_ops), _ops(g)
    rng = np.random.default_rng(len(name))
    for xv in (SPECIAL, rng.permutation(SPECIAL)):
        at = {"x": xv, "y": SPECIAL[::-1], "r": rng.permutation(SPECIAL)[None]}
        before = sg.evaluate(f, at, unknown="ignore")
        after = sg.evaluate(g, at, unknown="ignore")
        assert _bitwise_equal(before, after), (before, after)


def test_x_plus_zero_is_kept_because_it_changes_negative_zero():
    g = _passed(x + 0.0)
    assert "add" in _ops(g)
    assert not np.signbit(sg.evaluate(g, {"x": SPECIAL})[0])  # -0.0 + 0.0 is +0.0


def test_commutative_operands_come_in_one_order_and_hash_cons():
    t = sg.sin(x)
    f = sg.stack([100.0 * t, t * 100.0, y * t, t * y, sg.equal(2.0, x), sg.equal(x, 2.0)])
    g = _passed(f, (CONSTANT_FOLDING, NORMAL_FORM, CANONICAL_ORDER))
    nodes = g.graph.nodes
    rows = nodes[g.node].args
    assert rows[0] == rows[1] and rows[2] == rows[3] and rows[4] == rows[5]
    a, b = nodes[rows[0]].args
    assert nodes[a].op == "sin" and nodes[b].is_const  # computed first, constants last
    at = {"x": SPECIAL, "y": SPECIAL[::-1]}
    assert _bitwise_equal(sg.evaluate(f, at), sg.evaluate(g, at))


def test_the_pass_keeps_bool_and_integer_operands_as_they_are():
    b = sg.var("b", shape=(3,), dtype="bool")
    i = sg.var("i", shape=(3,), dtype="int64")
    assert "add" in _ops(_passed(b + b))  # True + True is True, 2 * True is 2
    got = sg.evaluate(_passed(i + i), {"i": [1, -2, 2**62 - 1]})
    np.testing.assert_array_equal(got, np.array([1, -2, 2**62 - 1]) * 2)


@pytest.mark.parametrize("zero", [complex(-0.0, -0.0), complex(-0.0, 0.0), complex(0.0, -0.0)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_adding_a_complex_zero_keeps_numpys_value_and_dtype(zero, dtype):
    """``x + z`` for a complex zero constant ``z``: the value and dtype NumPy gives (the
    rule for ``x + (-0.0)`` reads both parts of a complex constant's sign)."""
    x = sg.var("x", dtype=dtype)
    f = sg.compile(x + sg.const(np.array(zero)))
    for v in (1.5, -0.0):
        value = np.array(v, dtype=dtype)
        got, want = np.asarray(f(value)), value + np.array(zero)
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
