"""The graph: ordered operands, hash-consing, merging graphs, names, verify(), deep chains."""

from __future__ import annotations

import importlib.util
import sys
import time

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.graph import Graph, GraphError
from tests.support.graphs import stack_depth


def test_x_times_x_keeps_two_operands_and_one_edge():
    x = sg.var("x")
    f = x * x
    g = f.graph
    assert g.nodes[f.node].args == (x.node, x.node)
    assert g.to_networkx().number_of_edges() == 1
    assert g.to_networkx().nodes[f.node]["args"] == (x.node, x.node)
    assert g.nx is g.to_networkx()  # the design notes' name for the same view
    assert sg.evaluate(f, {"x": 3.0}) == 9.0
    assert sg.evaluate(sg.grad(f, x), {"x": 3.0}) == 6.0


def test_hash_consing_same_expression_same_node():
    x, y = sg.var("x"), sg.var("y")
    a = sg.sin(x * y) + 1.0
    n = len(a.graph)
    b = sg.sin(x * y) + 1.0
    assert b.graph is a.graph and b.node == a.node
    assert len(a.graph) == n  # nothing new was built
    assert sg.exp(x).node == sg.exp(x).node
    # attrs take part in the key: different constants are different nodes
    assert (x + 1.0).node != (x + 2.0).node


def test_hash_consing_tells_int_from_float_and_signed_zero():
    x = sg.var("x")
    plus, minus = x + 0.0, x + (-0.0)
    assert plus.node != minus.node
    assert np.signbit(sg.evaluate(minus, {"x": -0.0}))  # -0.0 + -0.0 = -0.0
    assert not np.signbit(sg.evaluate(plus, {"x": -0.0}))  # -0.0 + 0.0 = 0.0
    a, b = x * 3, x * 3.0
    assert a.node != b.node
    assert sg.evaluate(a, {"x": 1.5}) == sg.evaluate(b, {"x": 1.5}) == 4.5


def test_separately_created_variables_are_one_variable():
    x1, x2 = sg.var("x"), sg.var("x")
    assert x1.graph is not x2.graph
    f = x1 + x2
    assert f.graph.nodes[f.node].args[0] == f.graph.nodes[f.node].args[1]
    assert list(f.graph.variables) == ["x"]
    assert sg.evaluate(f, {"x": 2.5}) == 5.0
    # the same expression built from each copy is one node once the graphs meet
    d = sg.sin(x1) - sg.sin(x2)
    args = d.graph.nodes[d.node].args
    assert args[0] == args[1]
    assert sg.evaluate(d, {"x": 0.7}) == 0.0


def test_combining_exprs_from_separate_graphs():
    x, y = sg.var("x"), sg.var("y", shape=(3,))
    a = sg.exp(x) * 2.0          # graph of x
    b = sg.sum(y * y)            # graph of y
    f = a + b
    assert set(f.graph.variables) == {"x", "y"}
    f.graph.verify()
    got = sg.evaluate(f, {"x": 0.5, "y": [1.0, 2.0, 3.0]})
    assert got == pytest.approx(2 * np.exp(0.5) + 14.0, rel=1e-15)
    gx, gy = sg.grad(f, [x, y])
    np.testing.assert_allclose(sg.evaluate(gy, {"x": 0.5, "y": [1.0, 2.0, 3.0]}), [2, 4, 6])
    # the original graphs are still usable on their own
    assert sg.evaluate(a, {"x": 0.0}) == 2.0


def test_same_name_other_shape_or_dtype_is_a_conflict():
    x = sg.var("x")
    with pytest.raises(sg.NameConflictError, match="'x'"):
        x + sg.var("x", shape=(3,))
    with pytest.raises(sg.NameConflictError, match="int64"):
        x + sg.var("x", dtype="int64")
    g = Graph()
    g.var("w", (2,))
    with pytest.raises(sg.NameConflictError, match=r"\(2,\)"):
        g.var("w", (3,))
    assert g.var("w", (2,)) == g.variables["w"]  # same shape and dtype: the same node


@pytest.mark.parametrize("name", ["1x", "x y", "", "x-y", "class", "lambda", "__x", "np",
                                  "numpy", "x); import os; (", 3, None])
def test_invalid_names_are_rejected(name):
    with pytest.raises(sg.NameConflictError):
        sg.var(name)


@pytest.mark.parametrize("name", ["x", "_", "match", "W_1", "theta", "x2"])
def test_valid_names_accepted(name):
    assert sg.var(name).name == name


def _network():
    W, x, b = sg.var("W", (4, 3)), sg.var("x", (3,)), sg.var("b", (4,))
    V, g = sg.var("V", (2, 4)), sg.var("g", (2,))
    y = sg.var("y", dtype="int64")
    return -sg.log_softmax(V @ sg.tanh(W @ x + b) + g)[y]


def test_verify_passes_on_built_and_transformed_graphs():
    x = sg.var("x", (3,))
    f = sg.sum(sg.sin(x) * x) + sg.max(x)
    f.graph.verify()
    sg.grad(f, x)
    f.graph.verify()
    sg.hessian(f, x)
    f.graph.verify()
    net = _network()
    net.graph.verify()
    sg.grad(net, ["W", "b", "V", "g", "x"])
    net.graph.verify()


def _copy(expr):
    """An independent copy of ``expr``'s graph (same ids), safe to corrupt."""
    g = Graph()
    node = g.import_node(expr.graph, expr.node)
    assert [n.op for n in g.nodes] == [n.op for n in expr.graph.nodes[: len(g.nodes)]]
    return g, node


def _built():
    x, y = sg.var("x"), sg.var("y", (3,))
    return sg.exp(x) * y + x


def test_verify_catches_operand_after_user():
    g, node = _copy(_built())
    g.verify()
    g.nodes[2].args = (node,)
    with pytest.raises(GraphError, match="precede"):
        g.verify()


def test_verify_catches_wrong_arity():
    g, node = _copy(_built())
    n = g.nodes[node]
    n.args = n.args[:1]
    with pytest.raises(GraphError, match="operand"):
        g.verify()


def test_verify_catches_wrong_shape():
    g, node = _copy(_built())
    g.nodes[node].shape = (4,)
    with pytest.raises(GraphError, match=r"\(4,\)"):
        g.verify()


def test_verify_catches_wrong_dtype():
    g, node = _copy(_built())
    g.nodes[node].dtype = "int64"
    with pytest.raises(GraphError, match="int64"):
        g.verify()


@pytest.mark.parametrize("role, origin", [("adjoint", None), ("forward", 0), ("bogus", None)])
def test_verify_catches_inconsistent_role(role, origin):
    g, node = _copy(_built())
    g.nodes[node].role, g.nodes[node].origin = role, origin
    with pytest.raises(GraphError, match="role"):
        g.verify()


def test_verify_catches_origin_after_node():
    g, node = _copy(_built())
    g.nodes[1].role, g.nodes[1].origin = "adjoint", node
    with pytest.raises(GraphError, match="origin"):
        g.verify()


def test_verify_catches_unknown_op():
    g, node = _copy(_built())
    g.nodes[node].op = "no_such_op"
    with pytest.raises(GraphError, match="unknown op"):
        g.verify()


def test_verify_catches_networkx_mismatch():
    g, node = _copy(_built())
    u, v = next(iter(g.nx.edges))
    g.nx.remove_edge(u, v)
    with pytest.raises(GraphError, match="networkx"):
        g.verify()


def test_verify_catches_dangling_adjoint_table():
    g, node = _copy(_built())
    g.adjoint_of[0] = 10_000
    with pytest.raises(GraphError, match="adjoint_of"):
        g.verify()


def test_100k_node_chain_builds_and_evaluates_without_recursion():
    n = 100_000
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(stack_depth() + 120)  # any recursive walk would fail at once
    try:
        t0 = time.perf_counter()
        x = sg.var("x")
        h = x
        for i in range(n):
            h = sg.sin(h) if i % 2 else h * 0.999 + 0.001
        t1 = time.perf_counter()
        value = sg.evaluate(h, {"x": 0.5})
        t2 = time.perf_counter()
        h.graph.verify()
        text = None
        if importlib.util.find_spec("symgrad.printing") is not None:
            text = str(h.graph)
        t3 = time.perf_counter()
    finally:
        sys.setrecursionlimit(limit)
    ref = 0.5
    for i in range(n):
        ref = np.sin(ref) if i % 2 else ref * 0.999 + 0.001
    assert value == pytest.approx(ref, rel=1e-12)
    assert len(h.graph) >= n
    if text is not None:
        assert len(text.splitlines()) >= n
    print(f"\n100k chain: {len(h.graph)} nodes, build {t1 - t0:.2f}s, "
          f"evaluate {t2 - t1:.2f}s, verify+print {t3 - t2:.2f}s")


def test_expr_dtype_is_numpys():
    """``Expr.dtype`` is a ``numpy.dtype``: it equals NumPy's scalar types and dtypes, and
    its name, as an array's does (it was the string 'float64', unequal to np.float64)."""
    x, i = sg.var("x", (2,)), sg.var("i", (), "int32")
    for e, typ, name, kind in ((x, np.float64, "float64", "f"), (i, np.int32, "int32", "i"),
                               (x > 0, np.bool_, "bool", "b"), (x * i, np.float64, "float64",
                                                                "f")):
        assert isinstance(e.dtype, np.dtype)
        assert e.dtype == typ and e.dtype == np.dtype(typ) and e.dtype == name
        assert typ == e.dtype and name == e.dtype
        assert str(e.dtype) == name and e.dtype.name == name and e.dtype.kind == kind
        assert np.zeros(2, e.dtype).dtype == e.dtype
    assert x.dtype != np.float32 and x.dtype != "int64"
    assert np.issubdtype(x.dtype, np.floating) and not np.issubdtype(i.dtype, np.floating)
    assert repr(x) == "<Expr x : float64[2]>" and f"{x.dtype}" == "float64"
    assert sg.var("y", (), x.dtype).dtype == x.dtype  # a dtype goes back in where one is taken
    assert sg.astype(x, i.dtype).dtype == np.int32 and sg.zeros(2, dtype=i.dtype).dtype == "int32"


def test_expr_properties_and_errors():
    W = sg.var("W", (4, 3))
    assert (W.shape, W.dtype, W.ndim, W.size, len(W)) == ((4, 3), "float64", 2, 12, 4)
    assert W.T.shape == (3, 4)
    with pytest.raises(sg.SymgradError, match="where"):
        bool(sg.var("x") > 0)
    rows = list(W)  # the rows, as NumPy iterates (the shape is known while tracing)
    assert len(rows) == 4 and rows[2].shape == (3,) and str(rows[2]) == "W[2]"
    with pytest.raises(TypeError, match="0-d"):
        iter(sg.var("x"))
    with pytest.raises(sg.SymgradError):
        sg.var("x") + "a string"


def test_verify_catches_a_dtype_no_node_may_have():
    """A variable's dtype is not inferred again: verify checks it against NODE_DTYPES."""
    g, _ = _copy(_built())
    var = next(n for n in g.nodes if n.is_var)
    var.dtype = "float16"
    with pytest.raises(GraphError, match="float16"):
        g.verify()
