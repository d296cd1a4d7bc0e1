"""Rewrite rules as data: ``Rule.match`` on built nodes (captures of nodes and attributes,
a name used twice meaning one node, constants by value, ``OneOf`` in order, ``...`` for any
operands, ``children=`` and ``{"@": ...}``), and the driver that offers every node as it is
built, rewriting bottom-up, declining an answer of another shape or dtype, and bounding how
deep rules that build rewritten nodes may nest."""

from __future__ import annotations

import numpy as np

import symgrad as sg
from symgrad.passes.pattern import Const, OneOf, Pass, Rule, rewriter


def _match(rule: Rule, e: sg.Expr):
    return rule.match(e.graph, e.node)


def test_captures_bind_nodes_and_attributes_and_a_repeated_name_is_one_node():
    x, y = sg.var("x", shape=(3,)), sg.var("y", shape=(3,))
    same = Rule(("add", "a", "a"), lambda a: a)
    assert _match(same, x + x) == {"a": x.node}
    assert _match(same, x + y) is None
    nested = Rule(("multiply", ("sin", "u"), "v"), lambda u, v: u)
    f = sg.sin(x) * y
    assert _match(nested, f) == {"u": f.graph.variables["x"], "v": f.graph.variables["y"]}
    assert _match(nested, sg.cos(x) * y) is None
    attrs = Rule(("sum", "x", {"axis": "ax", "keepdims": True}), lambda x, ax: x)
    m = sg.var("m", shape=(2, 3))
    assert _match(attrs, sg.sum(m, axis=1, keepdims=True)) == {"x": m.node, "ax": (-1,)}
    assert _match(attrs, sg.sum(m, axis=1)) is None  # keepdims must equal True
    me = Rule(("exp", "x", {"@": "n"}), lambda x, n: n)
    e = sg.exp(x)
    assert _match(me, e) == {"x": x.node, "n": e.node}


def test_constants_match_by_value_through_broadcasts():
    x = sg.var("x", shape=(3,))
    one = Rule(("multiply", "x", 1.0), lambda x: x)
    assert _match(one, x * 1.0) == {"x": x.node}
    assert _match(one, x * sg.const(np.ones(3))) == {"x": x.node}
    assert _match(one, x * sg.const(np.array([1.0, 1.0, 2.0]))) is None
    zero = Rule(("add", "x", Const("z", 0.0)), lambda x, z: x)
    assert set(_match(zero, x + 0.0)) == {"x", "z"}
    assert _match(zero, x + 0.5) is None
    anyc = Rule(("add", "x", Const("c")), lambda x, c: x)
    assert _match(anyc, x + 2.5) is not None and _match(anyc, x + x) is None


def test_one_of_takes_the_first_alternative_and_any_operands_match_dots():
    x = sg.var("x", shape=(3,))
    rule = Rule(("negative", OneOf(("sin", "a"), ("cos", "b"))), lambda **k: None)
    assert _match(rule, -sg.sin(x)) == {"a": x.node}
    assert _match(rule, -sg.cos(x)) == {"b": x.node}
    assert _match(rule, -sg.tan(x)) is None
    dots = Rule(("stack", ...), lambda n: None)
    assert dots.root == "stack" and dots.arity is None
    only_consts = Rule(("add", "a", "b"), lambda a, b: None, children=("const",))
    assert not only_consts.applies(("sin", "const")) and only_consts.applies(("const", "const"))


def test_the_driver_rewrites_nodes_as_they_are_built_bottom_up():
    calls = []

    def square_of_exp(x):
        calls.append(x.node)
        return sg.exp(x * 2.0)

    p = Pass("test", "exp(x) * exp(x) -> exp(2 x)",
             rules=(Rule(("multiply", ("exp", "x"), ("exp", "x")), square_of_exp),
                    Rule(("multiply", "x", 2.0), lambda x: x + x)))
    x = sg.var("x", shape=(3,))
    g = x.graph
    with g.rewriting(rewriter(g, [p])):
        f = sg.exp(x) * sg.exp(x)
    ops = [g.nodes[i].op for i in g.ancestors([f.node])]
    assert ops[-2:] == ["add", "exp"]  # the rule's own x * 2.0 became x + x
    assert calls == [x.node]
    v = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(sg.evaluate(f, {"x": v}), np.exp(v) ** 2, rtol=1e-15)


def test_an_answer_of_another_shape_or_dtype_is_declined():
    p = Pass("test", "a wrong rule", rules=(Rule(("sin", "x"), lambda x: sg.sum(x)),
                                            Rule(("cos", "x"), lambda x: x > 0)))
    x = sg.var("x", shape=(3,))
    with x.graph.rewriting(rewriter(x.graph, [p])):
        s, c = sg.sin(x), sg.cos(x)
    assert (s.op, c.op) == ("sin", "cos")  # the answers had shape () and dtype bool


def test_rules_that_rebuild_their_own_root_stop_at_the_nesting_bound():
    """``sin(x) -> sin(x) * 1`` offers its own sin again: the driver stops at MAX_DEPTH
    nested answers instead of recursing without end."""
    from symgrad.passes.pattern import MAX_DEPTH

    p = Pass("test", "sin(x) -> sin(x) * 1", rules=(Rule(("sin", "x"),
                                                         lambda x: sg.sin(x) * 1.0),))
    x = sg.var("x", shape=(2,))
    with x.graph.rewriting(rewriter(x.graph, [p])):
        f = sg.sin(x)
    ops = [x.graph.nodes[i].op for i in x.graph.ancestors([f.node])]
    assert ops.count("sin") == 1 and ops.count("multiply") == MAX_DEPTH
    v = np.array([1.0, 2.0])
    np.testing.assert_array_equal(sg.evaluate(f, {"x": v}), np.sin(v))
