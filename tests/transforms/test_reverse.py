"""The reverse-mode transform: the notes' worked examples, the size of B, conventions.

References: Collins' notes (Example 4, Fig. 1.4), Goodfellow et al. (Fig. 6.10, Alg. 6.4),
Stratos (the layered DAG with 3^6 paths), and the conventions of DESIGN.md for kinks,
poles and masked branches.
"""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.graph import Graph
from tests.support.graphs import stack_depth
from tests.support.pictures import SHAPES, hand_gradients
from tests.support.pictures import network_loss as network

# B (the nodes one transform adds) is at most this many nodes per forward node + edge.
# Rules build O(1) nodes per operand; the largest (power) builds ~10 for 2 edges.
B_PER_NODE_AND_EDGE = 4


def b_size(f, wrt):
    """(nodes the transform added, |V|, |E|) of ``f``'s forward graph."""
    graph = f.graph
    forward = graph.ancestors([f.node])
    edges = sum(len(graph.nodes[i].args) for i in forward)
    before = len(graph)
    sg.grad(f, wrt)
    graph.verify()
    return len(graph) - before, len(forward), edges


# -- Collins Example 4 ----------------------------------------------------------------------


def test_collins_example_4_adjoints():
    u1, u2 = sg.var("u1"), sg.var("u2")
    u3 = u1 + u2
    u4 = u2 * u3
    p1, p2 = sg.grad(u4, [u1, u2])
    graph = u4.graph
    graph.verify()
    ids = [u4.node, u3.node, graph.variables["u2"], graph.variables["u1"]]
    assert sorted(graph.adjoint_of) == sorted(ids)  # one adjoint per forward node
    at = {"u1": 2.0, "u2": 3.0}
    adjoints = [sg.Expr(graph, graph.adjoint_of[i]) for i in ids]
    assert sg.evaluate(adjoints, at) == [1.0, 3.0, 8.0, 3.0]  # P4, P3, P2, P1
    assert sg.evaluate([p1, p2], at) == [3.0, 8.0]


# -- the network of Collins Fig. 1.4 / Goodfellow Alg. 6.3-6.4 --------------------------------


@pytest.mark.parametrize("y", [0, 1])
def test_network_gradients_match_hand_derivation(rng, y):
    f = network()
    names = ["W", "x", "b", "V", "g"]
    grads = sg.grad(f, names)
    assert isinstance(grads, tuple) and len(grads) == 5
    f.graph.verify()
    for _ in range(3):
        at = {k: rng.standard_normal(s) for k, s in SHAPES.items()}
        at["y"] = np.int64(y)
        got = sg.evaluate(list(grads), at)
        want = hand_gradients(at)
        for name, value in zip(names, got):
            assert value.shape == SHAPES[name]
            np.testing.assert_allclose(value, want[name], rtol=1e-12, atol=1e-14,
                                       err_msg=name)


def test_network_b_is_linear():
    added, v, e = b_size(network(), ["W", "x", "b", "V", "g"])
    print(f"\nnetwork: |V|={v} |E|={e} |B|={added}")
    assert added <= B_PER_NODE_AND_EDGE * (v + e)


# -- Goodfellow Fig. 6.10: z = f(f(f(w))) --------------------------------------------------


@pytest.mark.parametrize("f, df", [
    (sg.exp, np.exp),
    (sg.sin, np.cos),
    (sg.tanh, lambda t: 1 - np.tanh(t) ** 2),
])
def test_goodfellow_chain_one_adjoint_per_forward_node(f, df):
    w = sg.var("w")
    x = f(w)
    y = f(x)
    z = f(y)
    graph = z.graph
    before = len(graph)
    dz = sg.grad(z, w)
    graph.verify()
    forward = [w.node, x.node, y.node, z.node]
    assert sorted(graph.adjoint_of) == sorted(forward)
    assert len(set(graph.adjoint_of.values())) == 4  # one distinct adjoint per node
    assert graph.adjoint_of[w.node] == dz.node
    # B: the seed, then O(1) nodes per step (tanh' = 1 - z*z takes three with the product)
    assert len(graph) - before <= 1 + 3 * 3
    for i in forward:
        a = graph.nodes[graph.adjoint_of[i]]
        if a.role == "adjoint":  # (it may also be a shared forward node, e.g. 1 * z = z)
            consumers = {j for j in forward if i in graph.nodes[j].args}
            assert a.origin == i or a.origin in consumers
    for n in graph.nodes:
        if n.role == "adjoint":
            assert graph.nodes[n.origin].role == "forward" and n.origin in forward
    w0 = 0.3
    x0 = sg.evaluate(x, {"w": w0})
    y0 = sg.evaluate(y, {"w": w0})
    want = df(y0) * df(x0) * df(w0)  # chain rule, eq. 6.50-6.52
    assert sg.evaluate(dz, {"w": w0}) == pytest.approx(want, rel=1e-14)


# -- Stratos: the layered DAG with 3^6 = 729 paths and 51 arcs --------------------------------

WEIGHTS = np.random.default_rng(7).uniform(-1.0, 1.0, size=(16, 3, 3))
SCALES = np.array([0.5, 1.0, 1.5])


def layered(depth: int):
    """Node 1 (x), ``depth`` layers of 3 nodes each fed by all 3 nodes of the layer before
    (9 arcs), and a sink fed by the last layer: 3^depth paths, 3 + 9 (depth-1) + 3 arcs."""
    x = sg.var("x")
    layer = [sg.sin(c * x) for c in SCALES]
    for k in range(1, depth):
        w = WEIGHTS[k]
        layer = [sg.tanh(layer[0] * w[j, 0] + layer[1] * w[j, 1] + layer[2] * w[j, 2])
                 for j in range(3)]
    return x, layer[0] + layer[1] + layer[2]


def path_sum(depth: int, x0: float) -> float:
    """d sink / d x as the explicit sum over all 3^depth paths of products of local
    derivatives (Stratos eq. 17), in NumPy."""
    values = [np.sin(SCALES * x0)]
    local = [SCALES * np.cos(SCALES * x0)]            # x -> layer 1
    for k in range(1, depth):
        n = np.tanh(WEIGHTS[k] @ values[-1])
        values.append(n)
        local.append((1 - n * n)[:, None] * WEIGHTS[k])  # [j, i]: layer k-1 i -> layer k j
    total = 0.0
    for path in itertools.product(range(3), repeat=depth):
        prod = local[0][path[0]]
        for k in range(1, depth):
            prod *= local[k][path[k], path[k - 1]]
        total += prod                                   # last layer -> sink: 1
    return total


def test_stratos_layered_dag_729_paths():
    x, sink = layered(6)
    assert 3 + 9 * 5 + 3 == 51 and 3**6 == 729
    dx = sg.grad(sink, x)
    sink.graph.verify()
    for x0 in (0.3, -1.1):
        assert sg.evaluate(dx, {"x": x0}) == pytest.approx(path_sum(6, x0), rel=1e-12)


def test_stratos_b_grows_linearly_with_arcs_not_paths():
    sizes = []
    for depth in range(2, 9):
        x, sink = layered(depth)
        added, v, e = b_size(sink, x)
        assert added <= B_PER_NODE_AND_EDGE * (v + e)
        sizes.append(added)
    steps = np.diff(sizes)
    print(f"\nlayered DAG, depth 2..8: |B| = {sizes} (paths 9 .. 6561)")
    # each extra layer adds 9 arcs and the same number of adjoint nodes
    assert len(set(steps.tolist())) == 1, steps


# -- conventions ---------------------------------------------------------------------------


def test_where_masked_sqrt_branch_gets_exact_zero():
    x = sg.var("x", (3,))
    f = sg.sum(sg.where(x > 0, sg.sqrt(x), 0.0))
    got = sg.evaluate(sg.grad(f, x), {"x": [-1.0, 0.0, 4.0]})
    np.testing.assert_array_equal(got, [0.0, 0.0, 0.25])


def test_where_masked_reciprocal_branch_gets_exact_zero():
    x = sg.var("x", (3,))
    f = sg.sum(sg.where(x != 0, 1.0 / x, 0.0))
    got = sg.evaluate(sg.grad(f, x), {"x": [-1.0, 0.0, 4.0]})
    np.testing.assert_array_equal(got, [-1.0, 0.0, -1.0 / 16.0])


def test_where_masked_nan_branch_scalar():
    x = sg.var("x")
    f = sg.where(x > 0, sg.log(x) * x, 0.0)
    assert sg.evaluate(sg.grad(f, x), {"x": 0.0}) == 0.0
    assert sg.evaluate(sg.grad(f, x), {"x": -2.0}) == 0.0
    assert sg.evaluate(sg.grad(f, x), {"x": 1.0}) == 1.0


def test_double_where_is_exact():
    x = sg.var("x", (3,))
    safe = sg.where(x > 0, x, 1.0)
    f = sg.sum(sg.where(x > 0, sg.sqrt(safe), 0.0))
    got = sg.evaluate([f, sg.grad(f, x)], {"x": [-1.0, 0.0, 4.0]})
    assert got[0] == 2.0
    np.testing.assert_array_equal(got[1], [0.0, 0.0, 0.25])


def test_abs_has_zero_derivative_at_zero():
    x = sg.var("x", (3,))
    got = sg.evaluate(sg.grad(sg.sum(abs(x)), x), {"x": [-2.0, 0.0, 3.0]})
    np.testing.assert_array_equal(got, [-1.0, 0.0, 1.0])


def test_relu_has_zero_derivative_at_zero():
    x = sg.var("x", (3,))
    got = sg.evaluate(sg.grad(sg.sum(sg.relu(x)), x), {"x": [-2.0, 0.0, 3.0]})
    np.testing.assert_array_equal(got, [0.0, 0.0, 1.0])


def test_maximum_and_minimum_ties_split_equally():
    a, b = sg.var("a", (3,)), sg.var("b", (3,))
    at = {"a": [2.0, 1.0, 5.0], "b": [2.0, 3.0, 4.0]}
    for fn in (sg.maximum, sg.minimum):
        ga, gb = sg.evaluate(list(sg.grad(sg.sum(fn(a, b)), [a, b])), at)
        assert ga[0] == gb[0] == 0.5
        np.testing.assert_array_equal(ga + gb, [1.0, 1.0, 1.0])
    s = sg.var("s")
    assert sg.evaluate(sg.grad(sg.maximum(s, s), s), {"s": 1.0}) == 1.0


def test_max_reduction_ties_split_equally():
    x = sg.var("x", (3,))
    got = sg.evaluate(sg.grad(sg.max(x), x), {"x": [1.0, 1.0, 0.0]})
    np.testing.assert_array_equal(got, [0.5, 0.5, 0.0])
    m = sg.var("m", (2, 3))
    got = sg.evaluate(sg.grad(sg.sum(sg.max(m, axis=1)), m),
                      {"m": [[3.0, 3.0, 3.0], [0.0, 2.0, 1.0]]})
    np.testing.assert_allclose(got, [[1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0]], rtol=1e-15)


def test_power_conventions_at_zero():
    x, y = sg.var("x"), sg.var("y")
    for zero_exponent in (0.0, 0):
        f = x ** zero_exponent
        assert sg.evaluate([f, sg.grad(f, x)], {"x": 0.0}) == [1.0, 0.0]
    # d/dy x**y at x = 0 is 0 (the limit), not log(0) * 0 = nan
    assert sg.evaluate(sg.grad(x**y, y), {"x": 0.0, "y": 1.0}) == 0.0
    assert sg.evaluate(sg.grad(x**y, y), {"x": 0.0, "y": 2.5}) == 0.0
    assert sg.evaluate(sg.grad(x**2.0, x), {"x": 0.0}) == 0.0
    assert sg.evaluate(sg.derivative(x**3.0, x, 2), {"x": 0.0}) == 0.0


def test_power_second_derivative_in_exponent_at_zero_base():
    # d2/dy2 x**y = x**y log(x)**2 -> 0 as x -> 0; the first derivative's where() must
    # shield its masked-out branch (log 0 = -inf) when differentiated again
    x, y = sg.var("x"), sg.var("y")
    assert sg.evaluate(sg.grad(sg.grad(x**y, y), y), {"x": 0.0, "y": 3.0}) == 0.0


@pytest.mark.parametrize("at", [1000.0, -1000.0])
def test_stable_functions_have_finite_gradients_at_1000(at):
    v = sg.var("v", (3,))
    vals = np.array([at, 0.0, -at / 2])
    for f in (sg.logsumexp(v), sg.log_softmax(v)[0], sg.sum(sg.softplus(v)),
              sg.sum(sg.sigmoid(v)), sg.sum(sg.softmax(v) * np.array([1.0, 2.0, 3.0])),
              sg.sum(sg.tanh(v))):
        value, grad = sg.evaluate([f, sg.grad(f, v)], {"v": vals})
        assert np.isfinite(value) and np.all(np.isfinite(grad)), (str(f), value, grad)
    # closed forms
    p = np.exp(vals - vals.max())
    p /= p.sum()
    np.testing.assert_allclose(sg.evaluate(sg.grad(sg.logsumexp(v), v), {"v": vals}), p,
                               rtol=1e-12, atol=1e-300)
    with np.errstate(over="ignore"):
        sig = 1.0 / (1.0 + np.exp(-vals))  # exp overflows to inf: sigmoid(-1000) = 0
    np.testing.assert_allclose(sg.evaluate(sg.grad(sg.sum(sg.softplus(v)), v), {"v": vals}),
                               sig, rtol=1e-12)


def test_logsumexp_closed_form_values():
    logits = sg.var("l", (2,))
    lse = sg.logsumexp(logits)
    assert sg.evaluate(lse, {"l": [1000.0, 0.0]}) == 1000.0
    np.testing.assert_array_equal(sg.evaluate(sg.grad(lse, logits), {"l": [1000.0, 0.0]}),
                                  [1.0, 0.0])
    got = sg.evaluate(sg.grad(lse, logits), {"l": [-1000.0, -1000.0]})
    np.testing.assert_allclose(got, [0.5, 0.5], rtol=1e-12)


def test_duplicate_indices_accumulate():
    x = sg.var("x", (3,))
    f = sg.sum(x[np.array([0, 0, 2])])
    np.testing.assert_array_equal(sg.evaluate(sg.grad(f, x), {"x": [1.0, 2.0, 3.0]}),
                                  [2.0, 0.0, 1.0])
    idx = sg.var("idx", (4,), dtype="int64")
    f = sg.sum(x[idx] * np.array([1.0, 10.0, 100.0, 1000.0]))
    got = sg.evaluate(sg.grad(f, x), {"x": [1.0, 2.0, 3.0], "idx": [2, 0, 2, 2]})
    np.testing.assert_array_equal(got, [10.0, 0.0, 1101.0])


def test_pick_by_integer_variable_gives_one_hot():
    logits = sg.var("l", (3,))
    y = sg.var("y", dtype="int64")
    got = sg.evaluate(sg.grad(logits[y], logits), {"l": [0.1, 0.2, 0.3], "y": 2})
    np.testing.assert_array_equal(got, [0.0, 0.0, 1.0])


def test_fan_out_accumulates():
    x, y = sg.var("x"), sg.var("y")
    s = sg.sin(x)
    at = {"x": 0.7, "y": -1.3}
    assert sg.evaluate(sg.grad(s + s, x), at) == pytest.approx(2 * math.cos(0.7), rel=1e-15)
    gx, gy = sg.evaluate(list(sg.grad(x * y * x, [x, y])), at)
    assert gx == pytest.approx(2 * 0.7 * -1.3, rel=1e-15) and gy == pytest.approx(0.49)


def test_broadcast_adjoints_are_summed_back():
    a, b = sg.var("a", (3, 1)), sg.var("b", (1, 4))
    ga, gb = sg.evaluate(list(sg.grad(sg.sum(a + b), [a, b])),
                         {"a": np.ones((3, 1)), "b": np.ones((1, 4))})
    np.testing.assert_array_equal(ga, 4 * np.ones((3, 1)))
    np.testing.assert_array_equal(gb, 3 * np.ones((1, 4)))
    s = sg.var("s")
    m = sg.var("m", (2, 3))
    assert sg.evaluate(sg.grad(sg.sum(m * s), s), {"s": 2.0, "m": np.ones((2, 3))}) == 6.0


# -- errors and API ------------------------------------------------------------------------


def test_grad_of_non_scalar_points_to_jacobian_and_vjp():
    x = sg.var("x", (3,))
    with pytest.raises(sg.DifferentiationError, match="jacobian") as err:
        sg.grad(x * 2.0, x)
    assert "vjp" in str(err.value) and "(3,)" in str(err.value)


def test_integer_wrt_raises():
    x = sg.var("x", (3,))
    y = sg.var("y", dtype="int64")
    with pytest.raises(sg.DifferentiationError, match="'y'.*int64"):
        sg.grad(x[y], y)
    with pytest.raises(sg.DifferentiationError, match="'y'"):
        sg.grad(x[y], "y")


def test_wrt_must_be_a_variable_of_the_expression_or_a_var():
    x = sg.var("x")
    with pytest.raises(sg.DifferentiationError, match="'nope'"):
        sg.grad(sg.sin(x), "nope")
    with pytest.raises(sg.DifferentiationError, match="variable"):
        sg.grad(sg.sin(x), x * 2.0)
    with pytest.raises(sg.DifferentiationError):
        sg.grad(sg.sin(x), 3)


def test_unconnected_wrt_gets_zeros_of_its_shape():
    x, z = sg.var("x"), sg.var("z", (2, 3))
    f = sg.sin(x)
    gz = sg.grad(f, z)
    assert gz.shape == (2, 3)
    np.testing.assert_array_equal(sg.evaluate(gz, {"x": 1.0}), np.zeros((2, 3)))
    gx, gz = sg.grad(f, [x, z])
    assert sg.evaluate(gx, {"x": 0.0}) == 1.0


def test_wrt_by_name_and_list_gives_tuple():
    x, y = sg.var("x"), sg.var("y", (2,))
    f = sg.sum(y * x)
    by_name = sg.grad(f, "x")
    assert isinstance(by_name, sg.Expr)
    assert sg.evaluate(by_name, {"x": 2.0, "y": [1.0, 2.0]}) == 3.0
    both = sg.grad(f, ["x", y])
    assert isinstance(both, tuple) and len(both) == 2
    one = sg.grad(f, [x])
    assert isinstance(one, tuple) and len(one) == 1
    np.testing.assert_array_equal(sg.evaluate(both[1], {"x": 2.0, "y": [1.0, 2.0]}), [2, 2])


def test_gradient_shape_and_dtype_follow_the_variable():
    for shape in [(), (3,), (2, 3)]:
        x = sg.var("x", shape)
        g = sg.grad(sg.sum(sg.exp(x)), x)
        assert g.shape == shape and g.dtype == "float64"


def test_gradient_is_re_entrant(rng):
    f = network()
    at = {k: rng.standard_normal(s) for k, s in SHAPES.items()}
    at["y"] = np.int64(1)
    a = sg.evaluate(list(sg.grad(f, ["W", "V"])), at)
    b = sg.evaluate(list(sg.grad(f, ["W", "V"])), at)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_20k_step_chain_differentiates_without_recursion():
    steps = 20_000
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(stack_depth() + 120)
    try:
        x = sg.var("x")
        h = x
        for _ in range(steps):
            h = sg.sin(h) * h + sg.cos(h)
        dx = sg.grad(h, x)
        value, grad = sg.evaluate([h, dx], {"x": 0.3})
    finally:
        sys.setrecursionlimit(limit)
    v, d = 0.3, 1.0
    for _ in range(steps):
        v, d = math.sin(v) * v + math.cos(v), d * v * math.cos(v)
    assert value == pytest.approx(v, rel=1e-9)
    assert grad == pytest.approx(d, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("build", [
    lambda x: sg.sum(sg.exp(x) * sg.sin(x) / (1.0 + x * x)),
    lambda x: sg.logsumexp(x * 2.0) + sg.max(x) - sg.mean(sg.tanh(x)),
    lambda x: sg.sum(sg.where(x > 0, x ** 3.0, -x) + sg.maximum(x, 0.1)),
    lambda x: sg.sum(sg.reshape(x, (2, 2)) @ sg.reshape(x, (2, 2)).T),
])
def test_b_size_is_linear_in_forward_graph(build):
    x = sg.var("x", (4,))
    added, v, e = b_size(build(x), x)
    print(f"\n|V|={v} |E|={e} |B|={added} ratio={added / (v + e):.2f}")
    assert added <= B_PER_NODE_AND_EDGE * (v + e)


def test_b_size_of_a_deep_chain_is_linear():
    sizes = []
    for n in (100, 200, 400):
        x = sg.var("x")
        h = x
        for _ in range(n):
            h = sg.tanh(h) * 0.5 + h
        added, v, e = b_size(h, x)
        assert added <= B_PER_NODE_AND_EDGE * (v + e)
        sizes.append(added)
    assert sizes[2] - sizes[1] == 2 * (sizes[1] - sizes[0])  # exactly linear in n


def test_transform_works_on_a_graph_built_directly():
    g = Graph()
    x = sg.Expr(g, g.var("x"))
    f = x * x * x
    assert sg.evaluate(sg.grad(f, x), {"x": 2.0}) == 12.0


