"""The trace's fast paths agree with the general builder: the same node, shape, dtype,
attributes and errors (operators and ufuncs on Exprs, Python numbers beside an Expr,
``x[ints]``, remembered shape rules, constants and imports remembered per graph)."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import ShapeError
from symgrad.ir.expr import Expr, build
from symgrad.ir.graph import Graph
from symgrad.ir.op import REGISTRY
from symgrad.ir.shapes import DTYPES


def _general(name: str, *operands) -> Expr:
    """``name(*operands)`` through build's general path (operands bound, graphs merged)."""
    return build(REGISTRY[name], operands, {})


def _record(e: Expr) -> tuple:
    n = e.graph.nodes[e.node]
    return n.op, n.shape, n.dtype, n.attrs


@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_and_ufuncs_build_the_node_the_general_path_builds(dtype):
    x = sg.var("x", shape=(3,), dtype=dtype)
    y = Expr(x.graph, x.graph.var("y", (2, 1), dtype))
    pairs = [(x + y, "add"), (x - y, "subtract"), (x * y, "multiply"), (x / y, "divide"),
             (np.add(x, y), "add"), (np.multiply(y, x), "multiply")]
    if dtype != "bool":
        pairs += [(np.sin(x), "sin"), (-x, "negative"), (np.cos(y), "cos")]
    for got, name in pairs:
        args = [Expr(x.graph, a) for a in got.graph.nodes[got.node].args]
        want = _general(name, *args)
        assert want.node == got.node
        n = got.graph.nodes[got.node]
        shape, dtype_rule = REGISTRY[name].infer(
            tuple(got.graph.nodes[a].shape for a in n.args),
            tuple(got.graph.nodes[a].dtype for a in n.args), {})
        assert (n.shape, n.dtype) == (tuple(shape), dtype_rule)
    x.graph.verify()


def _constant(e: Expr) -> tuple:
    """The constant operand of ``e``: its value's dtype, shape and bytes."""
    g = e.graph
    (c,) = [g.nodes[a] for a in g.nodes[e.node].args if g.nodes[a].is_const]
    v = c.attrs["value"]
    return v.dtype, v.shape, v.tobytes()


FAST = {  # (op, number first) -> the operator spelling, which takes the fast path
    ("multiply", False): lambda x, c: x * c, ("multiply", True): lambda x, c: c * x,
    ("subtract", False): lambda x, c: x - c, ("subtract", True): lambda x, c: c - x,
    ("power", False): lambda x, c: x ** c, ("add", True): lambda x, c: np.add(c, x),
}


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
@pytest.mark.parametrize("number", [2, 2.0, 0.0, -0.0, 0.5, True, 3, -7, float("inf")])
def test_a_python_number_beside_an_expr_is_the_general_paths_constant(dtype, number):
    x = sg.var("x", shape=(2,), dtype=dtype)
    for (name, number_first), spelled in FAST.items():
        got = spelled(x, number)
        fresh = sg.var("x", shape=(2,), dtype=dtype)  # no constant built there yet
        want = _general(name, *((number, fresh) if number_first else (fresh, number)))
        assert _record(got)[:3] == _record(want)[:3]
        assert _constant(got) == _constant(want)
    assert (x * number).node == (x * number).node  # the constant made once


def test_numbers_that_look_alike_stay_apart_and_nan_is_kept():
    x = sg.var("x")
    nodes = {(x * c).node for c in (0.0, -0.0, 0, False, 1, 1.0, True)}
    assert len(nodes) == 7
    assert np.isnan(sg.evaluate(x * float("nan"), {"x": 1.0}))
    assert (x + float("nan")).graph is x.graph


def test_a_number_that_does_not_fit_the_dtype_fails_every_time():
    x = sg.var("x", dtype="int32")
    for _ in range(2):
        with pytest.raises(ShapeError, match="does not fit"):
            x + 2**40


def test_bad_shapes_fail_every_time_with_the_same_error():
    a, b = sg.var("a", shape=(2,)), sg.var("b", shape=(3,))
    errors = []
    for _ in range(2):
        with pytest.raises(ShapeError) as info:
            a + b
        errors.append(str(info.value))
    assert errors[0] == errors[1] and "cannot be broadcast" in errors[0]


SHAPES = [(5,), (4, 3), (2, 3, 4), (3, 0), (0,), (1, 1, 1)]


@pytest.mark.parametrize("shape", SHAPES)
def test_int_keys_build_the_node_the_general_key_path_builds(shape):
    x = sg.var("x", shape=shape)
    keys = []
    for k in range(-max(shape) - 1, max(shape) + 2):
        keys += [k, (k,), (k, 0), (0, k), (k, -1, 1), ()]
    for key in keys:
        slow = tuple(np.int64(k) for k in key) if type(key) is tuple else np.int64(key)
        try:
            want = x[slow]  # NumPy ints: the general path
        except ShapeError as e:
            with pytest.raises(ShapeError) as info:
                x[key]
            assert str(info.value) == str(e)
            continue
        got = x[key]
        assert got.node == want.node and _record(got) == _record(want)
        assert got.shape == np.empty(shape)[key].shape
    x.graph.verify()


def test_int_keys_in_a_loop_read_the_right_rows():
    obs = sg.var("obs", shape=(6, 2))
    data = np.arange(12.0).reshape(6, 2)
    total = sum(obs[k, 0] * obs[-k - 1, 1] for k in range(6))
    assert sg.evaluate(total, {"obs": data}) == sum(data[k, 0] * data[-k - 1, 1]
                                                    for k in range(6))


def test_a_rewriter_is_offered_remembered_constants_and_rules():
    x = sg.var("x")
    x * 2.0  # remembered
    seen = []

    def rewriter(op, args, attrs, shape, dtype):
        seen.append(op.name)
        return None

    with x.graph.rewriting(rewriter):
        x * 2.0
    assert "const" in seen and "multiply" in seen


def test_a_failed_budget_forgets_its_constants():
    x = sg.var("x")
    g = x.graph
    with pytest.raises(RuntimeError), g.budget(100, lambda: RuntimeError("over")):
        x * 3.5
        raise RuntimeError("fails after building")
    assert len(g) == 1  # the constant and the product were removed, and forgotten
    e = x * 3.5
    assert g.nodes[g.nodes[e.node].args[1]].attrs["value"] == 3.5
    g.verify()
    assert sg.evaluate(e, {"x": 2.0}) == 7.0


def test_budgets_still_stop_a_trace():
    from symgrad.errors import LimitError

    x = sg.var("x")
    g = x.graph
    with pytest.raises(LimitError), g.budget(10, lambda: LimitError("node budget")):
        h = x
        for k in range(20):
            h = np.sin(h) * (k + 0.5)
    assert len(g) == 1  # rolled back


def test_imports_from_several_graphs_in_turn():
    x = sg.var("x")
    others = [sg.var(f"o{k}", shape=(4,)) for k in range(3)]
    h = x
    for step in range(4):
        for o in others:
            h = h + o[step]
    values = {"x": 1.0, **{f"o{k}": np.arange(4.0) * (k + 1) for k in range(3)}}
    assert sg.evaluate(h, values) == 1.0 + sum(np.arange(4.0).sum() * (k + 1)
                                               for k in range(3))
    h.graph.verify()


def test_remembered_rules_are_shared_across_graphs_but_not_their_nodes():
    a = Graph()
    b = Graph()
    xa, xb = a.var("x", (3,)), b.var("x", (3,))
    na = a.add(REGISTRY["sin"], (xa,), {})
    nb = b.add(REGISTRY["sin"], (xb,), {})
    assert a.nodes[na].shape == b.nodes[nb].shape == (3,)
    assert a.nodes[na] is not b.nodes[nb]


def test_the_array_namespace_is_the_one_symgrad_numpy_installed(monkeypatch):
    """The IR imports nothing above it: ``symgrad.numpy`` installs itself as the namespace
    of Exprs; without it the question gets a clear error, not an import from below."""
    import symgrad.numpy as snp
    from symgrad.ir import expr

    x = sg.var("x", shape=(2,))
    assert x.__array_namespace__() is snp is expr.NAMESPACE["numpy"]
    monkeypatch.delitem(expr.NAMESPACE, "numpy")
    with pytest.raises(sg.UnsupportedError, match="import symgrad.numpy"):
        x.__array_namespace__()


def test_a_constant_updated_at_a_traced_position():
    """``c.at[i].set(v)`` / ``.add(v)`` on a constant built apart from the graph of a traced
    index ``i`` (an argmax) updates the position ``i`` has at run time."""
    x = sg.var("x", shape=(4,))
    scaled = x
    for _ in range(20):  # x's graph: many more nodes than the constant's
        scaled = scaled * 1.5
    i = sg.argmax(scaled)
    c = sg.const(np.zeros(4))
    v = np.array([1.0, 5.0, 2.0, 0.0])
    np.testing.assert_array_equal(sg.evaluate(c.at[i].set(x[0] * 2), {"x": v}), [0, 2, 0, 0])
    np.testing.assert_array_equal(sg.evaluate(c.at[i].add(x[2]), {"x": v}), [0, 2, 0, 0])
    g = sg.grad(sg.sum(c.at[i].set(x[0] * 2) * np.arange(1.0, 5.0)), x)
    np.testing.assert_array_equal(sg.evaluate(g, {"x": v}), [4, 0, 0, 0])
