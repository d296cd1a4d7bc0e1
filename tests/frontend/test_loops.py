"""``sg.scan(..., checkpoint="binomial", snapshots=s)``: the same values and gradients as
the plain scan (forward and reversed, with scanned inputs), memory bounded by the
snapshots, and per-step results refused with the way to write them."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import symgrad as sg
from symgrad.frontend.loops import LoopError


def _step(p):
    def f(c, x):
        return 0.99 * c + 0.01 * sg.sin(p[0] * c) * x + p[1] * 1e-3, None

    return f


@pytest.mark.parametrize("reverse", [False, True])
def test_binomial_checkpointing_gives_the_plain_scans_values_and_gradients(reverse):
    p, xs = sg.var("p", shape=(2,)), sg.var("xs", shape=(300,))
    plain, _ = sg.scan(_step(p), p[1], xs, reverse=reverse)
    binom, none = sg.scan(_step(p), p[1], xs, reverse=reverse, checkpoint="binomial",
                          snapshots=3)
    assert none is None
    inputs = {"p": np.array([1.3, 0.7]), "xs": np.linspace(-1.0, 1.0, 300)}
    assert sg.evaluate(plain, inputs) == sg.evaluate(binom, inputs)
    want = sg.evaluate(list(sg.grad(plain, [p, xs])), inputs)
    for got in (sg.evaluate(list(sg.grad(binom, [p, xs])), inputs),
                sg.compile(list(sg.grad(binom, [p, xs])))(**inputs)):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-16)


def test_binomial_checkpointing_keeps_the_memory_of_its_snapshots():
    """5,000 steps of a 4,000-float carry: every carry stored would be 160 MB."""
    v, a = sg.var("v", shape=(4000,)), sg.var("a")
    c, _ = sg.scan(lambda c, _: (c * a + 1e-4, None), v, length=5000, checkpoint="binomial",
                   snapshots=6)
    fn = sg.compile(sg.grad(sg.sum(c), a))
    vv = np.linspace(0.0, 1.0, 4000)
    tracemalloc.start()
    try:
        g = fn(v=vv, a=1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert float(g) == pytest.approx(sum(np.sum(vv) + 4000 * 1e-4 * t for t in range(5000)),
                                     rel=1e-9)
    assert peak < 16 * vv.nbytes, peak


def test_binomial_checkpointing_refuses_per_step_results_and_unknown_kinds():
    x = sg.var("x")
    with pytest.raises(LoopError, match="y=None"):
        sg.scan(lambda c, _: (c * x, c), x, length=4, checkpoint="binomial")
    with pytest.raises(LoopError, match="'binomial'"):
        sg.scan(lambda c, _: (c * x, None), x, length=4, checkpoint="treeverse")


def test_binomial_checkpointing_adds_each_steps_row_of_the_scanned_cotangent():
    """The reverse step gives the cotangent of the one row of ``xs`` a step reads (added
    in place by the sweep, linear in the steps), batched too: the Jacobian in ``xs`` is the
    plain scan's."""
    p, xs = sg.var("p", shape=(2,)), sg.var("xs", shape=(300,))
    binom, _ = sg.scan(_step(p), p[1], xs, checkpoint="binomial", snapshots=3)
    plain, _ = sg.scan(_step(p), p[1], xs)
    g = sg.grad(binom, xs)
    (sweep,) = [n for n in g.graph.nodes if n.op == "while_vjp" and n.id in
                g.graph.ancestors([g.node])]
    vjp = sweep.attrs["vjp_fun"]
    assert sweep.attrs["rows"] == (1,) and vjp.avals(vjp.outputs)[1:] == [
        ((), "float64"), ((), "int64")]
    inputs = {"p": np.array([1.3, 0.7]), "xs": np.linspace(-1.0, 1.0, 300)}
    pair = sg.stack([binom, binom * binom])
    want = sg.evaluate(sg.jacobian(sg.stack([plain, plain * plain]), xs, mode="reverse"),
                       inputs)
    for got in (sg.evaluate(sg.jacobian(pair, xs, mode="reverse"), inputs),
                sg.compile(sg.jacobian(pair, xs, mode="reverse"))(**inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16)
