"""Budgets: every explosive path ends in a LimitError that says what was counted and how
to raise the limit, in bounded time, leaving the graph usable; sg.limits reads, sets and
overrides limits per block and per thread."""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.limits import DEFAULTS


def test_derivative_of_a_growing_expression_stops_at_the_node_budget():
    x = sg.var("x")
    f = sg.sin(x) * sg.exp(x)
    h = x
    for _ in range(4):
        h = sg.tanh(h) * h
    before = len(f.graph)
    with sg.limits(transform_nodes=20_000), pytest.raises(sg.LimitError) as info:
        sg.derivative(h, x, 50)  # Taylor mode: O(n^2) nodes per op, some 30,000 here
    msg = str(info.value)
    assert "derivative(n=50) built more than 20,000 nodes" in msg
    assert "sg.limits.transform_nodes = N" in msg and "with sg.limits(transform_nodes=N)" in msg
    assert len(f.graph) - before <= 20_000
    # the graph is still whole and usable, and the budget is gone
    f.graph.verify()
    d3 = sg.derivative(f, x, 3)
    at = 0.7  # (sin x e^x)''' = 2 e^x (cos x - sin x)
    assert sg.evaluate(d3, {"x": at}) == pytest.approx(
        2 * math.exp(at) * (math.cos(at) - math.sin(at)), rel=1e-13)


@pytest.mark.parametrize("call", ["grad", "hessian", "jacobian", "vjp", "hvp"])
def test_every_transform_has_the_budget(call):
    x = sg.var("x", shape=(3,))
    h = x
    for k in range(60):  # cos or tanh by the Thue-Morse sequence: the loop is not rolled
        op = sg.tanh if bin(k).count("1") % 2 else sg.cos
        h = sg.sin(h) * h + op(h) * (1.0 + k)
    f = sg.sum(h)
    run = {"grad": lambda: sg.grad(f, x), "hessian": lambda: sg.hessian(f, x),
           "jacobian": lambda: sg.jacobian(h, x), "vjp": lambda: sg.vjp(h, x, np.ones(3)),
           "hvp": lambda: sg.hvp(f, x, "v")}[call]
    with sg.limits(transform_nodes=50), pytest.raises(sg.LimitError, match=call):
        run()
    run()  # the default budget is ample


def test_derivative_that_stops_changing_is_not_rebuilt_a_million_times():
    x = sg.var("x")
    d = sg.derivative(sg.exp(x), x, 10**6)
    assert sg.evaluate(d, {"x": 0.5}) == pytest.approx(math.exp(0.5), rel=1e-15)
    z = sg.derivative(x ** 3, x, 10**6)
    assert sg.evaluate(z, {"x": 2.0}) == 0.0
    y = sg.var("y")
    for n in (10**18 + 1, 10**18 + 2, 2**70 + 3):  # sin, cos, -sin, -cos, sin, ...
        want = [math.sin, math.cos, lambda t: -math.sin(t), lambda t: -math.cos(t)][n % 4]
        got = sg.evaluate(sg.derivative(sg.sin(y), y, n), {"y": 0.3})
        assert got == pytest.approx(want(0.3), rel=1e-15)
    assert len(x.graph) < 200 and len(y.graph) < 200


def test_dense_hessian_and_jacobian_are_checked_before_allocation():
    x = sg.var("x", shape=(20_000,))  # a 4e8-element Hessian: 3.2 GB
    f, s, q = sg.sum(sg.sin(x)), sg.sin(x), sg.sum(x ** 2)
    before = len(f.graph)
    with pytest.raises(sg.LimitError, match=r"400,000,000 elements.*sg.vjp or sg.hvp"):
        sg.hessian(f, x)
    with pytest.raises(sg.LimitError, match="dense_elements"):
        sg.jacobian(s, x)
    with pytest.raises(sg.LimitError, match="dense_elements"):
        sg.derivative(q, x, 3)
    assert len(f.graph) == before  # nothing was built
    with sg.limits(dense_elements=10**9):
        assert sg.limits.dense_elements == 10**9
    y = sg.var("y", shape=(40,))
    H = sg.hessian(sg.sum(y ** 3), y)  # small: fine
    at = np.linspace(-1, 1, 40)
    np.testing.assert_allclose(sg.evaluate(H, {"y": at}), np.diag(6 * at), rtol=1e-15)


def test_a_block_override_is_per_thread():
    seen = {}

    def other():
        seen["other"] = sg.limits.transform_nodes

    with sg.limits(transform_nodes=5):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        seen["here"] = sg.limits.transform_nodes
    assert seen == {"other": DEFAULTS["transform_nodes"][0], "here": 5}
def test_limits_are_read_set_overridden_and_reset():
    assert sg.limits.transform_nodes == DEFAULTS["transform_nodes"][0]
    with sg.limits(transform_nodes=7, parse_chars=10):
        assert (sg.limits.transform_nodes, sg.limits.parse_chars) == (7, 10)
        with sg.limits(transform_nodes=3):
            assert (sg.limits.transform_nodes, sg.limits.parse_chars) == (3, 10)
        assert sg.limits.transform_nodes == 7
    assert sg.limits.transform_nodes == DEFAULTS["transform_nodes"][0]
    try:
        sg.limits.parse_depth = 5
        with pytest.raises(sg.ParseError, match="deeper than 5"):
            sg.parse("((((((x))))))")
    finally:
        sg.limits.reset()
    assert str(sg.parse("((((((x))))))")) == "x"
    with pytest.raises(sg.LimitError):
        sg.limits(transform_nodes=-1)
    with pytest.raises(sg.LimitError):
        sg.limits.no_such_limit = 3
    with pytest.raises(AttributeError):
        _ = sg.limits.no_such_limit
    names = [row[0] for row in sg.limits.table()]
    assert names == list(DEFAULTS) and "transform_nodes" in repr(sg.limits)


def test_the_docs_list_every_limit_with_its_default():
    from tests.support import docs

    section = docs.section("guide/limits", "Budgets")
    for name, (default, _) in DEFAULTS.items():
        row = re.search(rf"^\| `{name}` \| ([0-9,_]+) \|", section, re.M)
        assert row, name
        assert int(row.group(1).replace(",", "").replace("_", "")) == default, name
