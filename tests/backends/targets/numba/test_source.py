"""Fused loop nests: a region that ends in a sum over its trailing axes adds into one
scalar per result element, stored once, with the NumPy backend's values."""

from __future__ import annotations

import numpy as np

import symgrad as sg


def test_a_sum_over_trailing_axes_accumulates_a_scalar_per_result_element(rng):
    """``sum((a + b) ** 2, axis=2)`` fused with its operand: the innermost loop adds into
    a local, stored after it; the values and gradients equal the NumPy backend's."""
    a, b = sg.var("a", shape=(30, 4, 6)), sg.var("b", shape=(30, 4, 6))
    c = a + b
    r = sg.sum(c * c, axis=2)
    outs = [r, c, *sg.grad(sg.sum(sg.tanh(r)), [a, b])]
    src = sg.to_source(outs, [a, b], backend="numba")
    acc = next(ln for ln in src.splitlines() if ln.strip().endswith("acc = np.float64(0)"))
    name = acc.split("=")[0].strip()
    assert any(ln.strip().endswith(f"] = {name}") for ln in src.splitlines()), src
    av, bv = rng.standard_normal((30, 4, 6)), rng.standard_normal((30, 4, 6))
    got = sg.compile(outs, [a, b], backend="numba")(av, bv)
    want = sg.compile(outs, [a, b], backend="numpy")(av, bv)
    np.testing.assert_allclose(got[0], np.sum((av + bv) ** 2, axis=2), rtol=1e-13)
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12)


def test_sums_of_one_loop_shape_share_one_nest_and_read_their_operands_once(rng):
    """``sum(d * a, axis=0)`` and ``sum(d * w + b, axis=0)``: one loop nest accumulates
    both (``d`` read once per element), with the NumPy backend's values and gradients."""
    d, a, b = (sg.var(n, shape=(400, 6, 5)) for n in "dab")
    w = sg.var("w", shape=(6, 5))
    s1, s2 = sg.sum(d * a, axis=0), sg.sum(d * w + b, axis=0)
    outs = [s1, s2, *sg.grad(sg.sum(s1 * s2), [d, a, b, w])]
    ins = [d, a, b, w]
    src = sg.to_source([s1, s2], ins, backend="numba")
    kernel = src.split("def _f_kernel(")[1].split("\ndef f(")[0]
    assert kernel.count("for ") == 3 and kernel.count("] += ") == 2, kernel
    xs = [rng.standard_normal(v.shape) for v in ins]
    got = sg.compile(outs, ins, backend="numba")(*xs)
    want = sg.compile(outs, ins, backend="numpy")(*xs)
    np.testing.assert_allclose(got[0], np.sum(xs[0] * xs[1], axis=0), rtol=1e-12)
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12)
