"""A loop body: tracing keeps what the results depend on and turns captured values into
explicit inputs (scalar constants copied in); bodies of the same step compare and hash
equal whatever the Python function, different steps do not; a body runs as NumPy computes
it, inlines into another graph with the same values, remembers what is derived from it once,
and two scans of one step are one node."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.body import Body, hoisted, scan_call, trace
from symgrad.ir.graph import Graph
from symgrad.ir.op import REGISTRY

SCALAR = [((), "float64")]
VEC = [((3,), "float64"), ((3,), "float64")]


def test_captured_values_become_inputs_and_scalar_constants_are_copied_in():
    w = sg.var("w", shape=(3,))
    A = sg.const(np.arange(9.0).reshape(3, 3))
    body, captured = trace(lambda c, x: [sg.tanh(A @ c) * w + 2.0 * x], VEC)
    assert body.n_in == 2 and len(body.inputs) == 4
    assert [str(e) for e in captured][1] == "w" and captured[0].shape == (3, 3)
    assert body.avals() == [((3,), "float64")] * 2 + [((3, 3), "float64"), ((3,), "float64")]
    assert repr(body) == f"<loop body: 2 inputs + 2 captured -> 1 outputs, {len(body.graph)} " \
                         "nodes>"
    rng = np.random.default_rng(2)
    c, x, wv = rng.standard_normal((3, 3))
    Av = np.arange(9.0).reshape(3, 3)
    (got,) = body.run([c, x, Av, wv])
    np.testing.assert_allclose(got, np.tanh(Av @ c) * wv + 2.0 * x, rtol=1e-15)


def test_what_the_results_do_not_depend_on_stays_outside():
    w = sg.var("w")
    unused = sg.exp(w)  # built before tracing: not part of the step
    body, captured = trace(lambda c: [c * sg.sin(w)], SCALAR)
    assert [str(e) for e in captured] == ["sin(w)"]  # computed once, outside the loop
    ops = [n.op for n in body.graph.nodes if not n.is_var]
    assert ops == ["multiply"] and "exp" not in ops and unused.op == "exp"


def test_equal_steps_give_equal_bodies_and_one_scan_node():
    first, _ = trace(lambda c: [sg.sin(c) * c + 1.0], SCALAR)
    second, _ = trace(lambda q: [sg.sin(q) * q + 1.0], SCALAR)
    other, _ = trace(lambda c: [sg.cos(c) * c + 1.0], SCALAR)
    assert first == second and hash(first) == hash(second) and first is not second
    assert first != other and first != trace(lambda c: [sg.sin(c) * c + 2.0], SCALAR)[0]
    x = sg.var("x", shape=(5,))
    a, _ = sg.scan(lambda c, v: (sg.sin(c) * v, None), 1.0, x)
    b, _ = sg.scan(lambda d, u: (sg.sin(d) * u, None), 1.0, x)
    assert a.node == b.node


def test_inline_builds_the_same_values_in_another_graph():
    body, captured = trace(lambda c, x: [c * x + sg.sin(x), sg.sum(c)], VEC)
    u, v = sg.var("u", shape=(3,)), sg.var("v", shape=(3,))
    outs = body.inline([u, v])
    at = {"u": np.array([1.0, 2.0, 3.0]), "v": np.array([0.5, -1.0, 2.0])}
    got = sg.evaluate(outs, at)
    want = body.run([at["u"], at["v"]])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert not captured


def test_memo_builds_once_and_with_outputs_adds_results():
    body, _ = trace(lambda c: [sg.exp(c) * 2.0], SCALAR)
    calls = []
    assert body.memo("k", lambda: calls.append(1) or "made") == "made"
    assert body.memo("k", lambda: calls.append(1) or "again") == "made" and calls == [1]
    exp_node = next(n.id for n in body.graph.nodes if n.op == "exp")
    more = body.with_outputs([exp_node])
    assert more is body.with_outputs([exp_node]) and body.with_outputs([]) is body
    assert more != body and len(more.outputs) == 2
    np.testing.assert_allclose(more.run([np.asarray(0.5)]), [2 * np.exp(0.5), np.exp(0.5)])


def test_a_body_input_of_an_unsupported_dtype_is_refused():
    with pytest.raises(sg.ShapeError, match="loop body input"):
        trace(lambda c: [c], [((), "float16")])


def test_a_scan_of_a_body_holding_an_array_constant_takes_it_as_an_operand():
    """A body built with an array constant in it (as a transform may build one) is
    scanned with the array as a loop-invariant operand: the compiled loop and the
    interpreter agree, and so do derivatives through it."""
    scale = np.array([0.5, 2.0])
    g = Graph()
    c = g.var("c0", (2,))
    step = g.add(REGISTRY["multiply"], (c, g.const(scale)), {})
    body = Body(g, [c], [g.add(REGISTRY["sin"], (step,), {})], 1)
    new, arrays = hoisted(body)
    assert len(new.inputs) == 2 and len(arrays) == 1
    np.testing.assert_array_equal(arrays[0], scale)
    x = sg.var("x", shape=(2,))
    (final,) = scan_call(x.graph, body, 1, 0, 3, False, [x])[:1]
    at = np.array([0.3, -0.7])
    want = at
    for _ in range(3):
        want = np.sin(want * scale)
    np.testing.assert_allclose(sg.evaluate(final, {"x": at}), want, rtol=1e-15)
    np.testing.assert_allclose(sg.compile(final, inputs=[x])(at), want, rtol=1e-15)
    grad = sg.grad(sg.sum(final), x)
    np.testing.assert_allclose(sg.compile(grad, inputs=[x])(at), sg.evaluate(grad, {"x": at}),
                               rtol=1e-14)
    sg.check_grads(sg.sum(final), x, {"x": at}, order=2)
