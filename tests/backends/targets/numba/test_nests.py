"""Loop nests inside compiled code: a reduction that keeps the last axis adds each row of
its operand into a row of the result (the operand read in its own order), with NumPy's
values and the NumPy backend's gradients."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.numba.nests import FORMS, Site

CASES = [("sum", 0, False), ("sum", (0, 1), True), ("mean", 0, True), ("prod", (0, 1), False),
         ("mean", 1, False)]


@pytest.mark.parametrize("op, axis, keep", CASES)
def test_a_reduction_keeping_the_last_axis_is_written_by_rows(op, axis, keep):
    """The innermost loop runs over the operand's last axis and adds into the result's."""
    x = sg.var("x", shape=(4, 3, 5))
    e = getattr(sg, op)(x, axis=axis, keepdims=keep)
    nodes = e.graph.nodes
    names = iter(f"_k{j}" for j in range(99))
    lines = FORMS[op](Site(nodes[e.node], nodes, ["x"], "r", lambda p: next(names)))
    assert lines[0].startswith("r = np.zeros(" if op != "prod" else "r = np.ones(")
    update = next(ln.strip() for ln in lines if "+=" in ln or "*=" in ln)
    assert update.endswith("x[_k0, _k1, _k2]"), lines


@pytest.mark.parametrize("op, axis, keep", CASES)
def test_reductions_by_rows_equal_numpys_and_the_numpy_backends_gradients(op, axis, keep, rng):
    """In a kernel (fused with the elementwise ops before it) and in the gradient: the same
    values as NumPy's reduction and the NumPy backend's derivative, to 1e-12."""
    x, w = sg.var("x", shape=(40, 6, 7)), sg.var("w", shape=(6, 7))
    r = getattr(sg, op)(sg.tanh(x) * w + 0.5 * x + 1.0, axis=axis, keepdims=keep)
    loss = sg.sum(r * r)
    outs = [r, *sg.grad(loss, [x, w])]
    xv, wv = rng.standard_normal((40, 6, 7)) * 0.3, rng.standard_normal((6, 7))
    got = sg.compile(outs, [x, w], backend="numba")(xv, wv)
    want = sg.compile(outs, [x, w], backend="numpy")(xv, wv)
    ref = getattr(np, op)(np.tanh(xv) * wv + 0.5 * xv + 1.0, axis=axis, keepdims=keep)
    np.testing.assert_allclose(got[0], ref, rtol=1e-12, atol=1e-12)
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12)
    assert "sum" not in sg.stats(outs, backend="numba").numpy_ops
