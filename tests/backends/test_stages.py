"""The emitter's stages (symgrad.backends.stages): lowering runs the passes on the module's
graph and on every loop body it prints, once; printing runs none; a step's stage is the
body as emitted; a sparse request says which constants hold its pattern."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.loops import is_loop
from symgrad.backends.stages import lower, request
from symgrad.errors import SymgradError
from symgrad.ir.body import Body
from symgrad.passes import pipeline


def _scan_gradient(scale: float):
    """A fresh scan (its bodies never optimised before) with its gradient."""
    x, w = sg.var("x"), sg.var("w")
    xs = sg.var("xs", shape=(6,))
    c, ys = sg.scan(lambda c, xk: (sg.sin(c) * xk + w * scale, (c - c) + c * c), x, xs)
    loss = sg.sum(ys) + c
    return [loss, *sg.grad(loss, [x, xs, w])], [x, xs, w]


@pytest.mark.parametrize("backend", ["numpy", "array_api", "jax", "numba"])
@pytest.mark.parametrize("fast_math", [False, True])
def test_lowering_optimises_each_loop_body_once_and_printing_runs_no_pass(
        monkeypatch, backend, fast_math):
    outs, ins = _scan_gradient(1.0 + fast_math + 10 * len(backend))
    calls = []
    real = pipeline.run_stages
    with monkeypatch.context() as m:
        m.setattr(pipeline, "run_stages", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
        low = lower(request(outs, ins, backend=backend, fast_math=fast_math))
    bodies = {id(b.graph) for b in low.bodies}
    assert len(calls) == 1 + len(bodies) and {id(g) for g in calls[1:]} == bodies
    assert len(bodies) >= 2  # the forward step (with its residuals) and the backward one
    with monkeypatch.context() as m:
        m.setattr(pipeline, "run_stages", lambda *a, **k: pytest.fail("a pass ran"))
        source = low.source()
    assert "def _sg_loop1" in source
    assert source == sg.to_source(outs, ins, backend=backend, fast_math=fast_math)


def test_every_printed_step_is_the_optimised_body():
    outs, ins = _scan_gradient(3.0)
    low = lower(request(outs, ins, fast_math=True))
    for body, new in low.bodies.items():
        step = low.step(body)
        assert step.body is new and step.graph is new.graph
        assert [f.name for f in step.functions] == ["step"]
        assert step.functions[0].inputs == tuple(new.graph.nodes[v].name for v in new.inputs)
    # fast_math drops ``c - c`` from the step: fewer nodes than the body as traced
    traced = [n.attrs["body"] for n in outs[0].graph.nodes if is_loop(n)]
    assert min(len(b.graph) for b in low.bodies.values()) < max(len(b.graph) for b in traced)


def test_lowering_without_optimize_keeps_each_body():
    outs, ins = _scan_gradient(4.0)
    low = lower(request(outs, ins, optimize=False))
    assert low.bodies and all(new is body for body, new in low.bodies.items())


def test_a_step_holding_an_array_constant_cannot_be_emitted():
    v = sg.var("v", shape=(3,))
    e = v * np.arange(3.0)  # traced steps take such constants as operands instead
    low = lower(request(sg.sum(v), optimize=False))
    with pytest.raises(SymgradError, match="array constant"):
        low.step(Body(e.graph, [v.node], [e.node], 1))


def test_a_sparse_request_names_its_pattern_constants():
    x = sg.var("x", shape=(5,))
    h = sg.hessian(sg.sum(x[1:] * x[:-1] + sg.sin(x[1:])), x, sparse=True)
    req = request(h, name="hess")
    assert req.pattern == ("ROWS", "COLS", "SHAPE")
    assert request(sg.sum(x)).pattern is None
    fn = sg.compile(h, name="hess")
    x0 = np.linspace(-1.0, 1.0, 5)
    dense = np.zeros((5, 5))
    dense[fn.rows, fn.cols] = fn(x0)
    np.testing.assert_allclose(dense, sg.evaluate(sg.hessian(sg.sum(x[1:] * x[:-1] + sg.sin(
        x[1:])), x), {"x": x0}), rtol=1e-13, atol=1e-13)
    assert fn.shape == (5, 5)
