"""Kernels: a cheap elementwise result read by one later kernel only is computed again
there, not stored and read back, with the NumPy backend's values."""

from __future__ import annotations

import numpy as np

import symgrad as sg


def _model():
    x, m = sg.var("x", shape=(400, 30)), sg.var("m", shape=(30,))
    s, W = sg.var("s", shape=(30,)), sg.var("W", shape=(30, 30))
    a = (x - m) * 2.0
    b = a * s  # read by the kernel after the product only
    c = a @ W  # BLAS-bound: NumPy's call between two kernels
    r = sg.sum(sg.sum((c + b) ** 2, axis=1))
    return [r, *sg.grad(r, [x, m, s, W])], [x, m, s, W]


def _params(src: str, kernel: str) -> str:
    return src.split(f"def {kernel}(")[1].split(")")[0]


def test_a_cheap_result_read_by_one_later_kernel_is_computed_again_there(rng):
    """The first kernel returns ``(x - m) * 2`` (the product reads it) and not its product
    with ``s``: the kernel after the product computes that from it and ``s``."""
    outs, ins = _model()
    src = sg.to_source(outs, ins, backend="numba")
    driver = src.split("\ndef f(")[1]
    first = next(ln.strip() for ln in driver.splitlines() if "_f_kernel(" in ln)
    assert first.startswith("t2 = _f_kernel("), first  # one result: (x - m) * 2
    assert "s" not in _params(src, "_f_kernel").split(", ")
    assert "s" in _params(src, "_f_kernel_1").split(", ")
    xs = [rng.standard_normal(v.shape) for v in ins]
    got = sg.compile(outs, ins, backend="numba")(*xs)
    want = sg.compile(outs, ins, backend="numpy")(*xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_a_kernel_computing_a_result_again_is_called_where_its_own_lines_begin(rng):
    """A view left as NumPy's line after the kernel that made its operand (a big transpose
    a BLAS product reads) stays after that kernel's call where a later kernel computes one
    of its results again: the function runs, with the NumPy backend's values."""
    x, m = sg.var("x", shape=(200, 30)), sg.var("m", shape=(30,))
    s, W, Y = sg.var("s", shape=(30,)), sg.var("W", shape=(30, 30)), sg.var("Y", shape=(200, 40))
    a = (x - m) * 2.0
    c = sg.transpose(a) @ Y
    r = sg.sum((a @ W + a * s) ** 2) + sg.sum(c * c)
    outs, ins = [r, *sg.grad(r, [x, m, s, W, Y])], [x, m, s, W, Y]
    src = sg.to_source(outs, ins, backend="numba")
    assert "s" in _params(src, "_f_kernel_1").split(", "), src
    xs = [rng.standard_normal(v.shape) for v in ins]
    got = sg.compile(outs, ins, backend="numba")(*xs)
    want = sg.compile(outs, ins, backend="numpy")(*xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
