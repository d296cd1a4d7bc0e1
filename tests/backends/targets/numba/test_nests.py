"""Array forms and loop nests inside compiled code (``backends/targets/numba/nests``): a
long ``arange`` or ``linspace`` is a loop computing NumPy's own formula, not a literal of its
elements (which Numba types slowly), and gives NumPy's values to the bit in every dtype; a
reduction that keeps the last axis adds each row of its operand into a row of the result
(the operand read in its own order), with NumPy's values and the NumPy backend's
gradients."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.numba.nests import FORMS, Site

pytest.importorskip("numba")

LONG = [
    ("arange", {"start": 0, "stop": 2000}),
    ("arange", {"start": 0.5, "stop": 200.0, "step": 0.3}),
    ("arange", {"start": 3, "stop": -200, "step": -1, "dtype": "float64"}),
    ("arange", {"start": 0.1, "stop": 10.0, "step": 0.1, "dtype": "float32"}),
    ("arange", {"start": -0.0, "stop": 100.0, "step": 1.0}),
    ("arange", {"start": 1, "stop": 1000, "step": 7, "dtype": "int32"}),
    ("arange", {"start": 1e10, "stop": 1e10 + 370.0, "step": 0.37}),
    ("linspace", {"start": 0.0, "stop": 1.0, "num": 1000}),
    ("linspace", {"start": -3, "stop": 2, "num": 400, "endpoint": False}),
    ("linspace", {"start": -3, "stop": 7, "num": 100, "dtype": "int64"}),
    ("linspace", {"start": 0.1, "stop": 0.7, "num": 333, "dtype": "float32"}),
    ("linspace", {"start": 5.0, "stop": 5.0, "num": 100}),
]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))


@pytest.fixture
def kernels_always(monkeypatch):
    """Every run of lines that compiles is a kernel: a graph of constants alone is NumPy's
    calls by the cost model (a kernel reading nothing never pays for its compile)."""
    from symgrad.backends.targets.numba import fusion

    monkeypatch.setattr(fusion, "pays", lambda nodes, seg: True)


def test_constants_alone_are_numpys_calls_not_a_kernel():
    fn = sg.compile([sg.arange(3000) * 2.0, sg.linspace(0.0, 1.0, 500) + 1.0], [],
                    backend="numba")
    assert "@_jit(" not in fn.source and fn.numpy_ops
    why = sg.stats([sg.arange(3000) * 2.0], backend="numba").numpy_why
    assert "reading nothing" in why["arange"] and "no compile" in why["multiply"]
    for got, want in zip(fn(), (np.arange(3000) * 2.0, np.linspace(0.0, 1.0, 500) + 1.0)):
        np.testing.assert_array_equal(got, want)


def test_long_aranges_and_linspaces_are_loops_with_numpys_values_to_the_bit(kernels_always):
    outs = [getattr(sg, op)(**attrs) * 2 for op, attrs in LONG]  # each in a kernel
    fn = sg.compile(outs, [], backend="numba")
    assert not fn.numpy_ops, fn.numpy_ops
    for (op, attrs), got, want in zip(LONG, fn(), sg.compile(outs, [])()):
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (op, attrs)
        assert want.tobytes() == (getattr(np, op)(**attrs) * 2).tobytes()
    src = sg.to_source(outs, [], backend="numba")
    kernels = src[:src.index("\ndef f(")]
    assert "np.array([" not in kernels
    assert kernels.count("for ") >= len(LONG)


def test_a_short_arange_stays_a_literal(kernels_always):
    src = sg.to_source(sg.arange(5) * 1 + 0, [], backend="numba")
    assert "np.array([0, 1, 2, 3, 4], dtype=np.int64)" in src


def test_a_complex_mean_is_numpys_to_the_bit_and_nan_over_an_empty_axis():
    """NumPy's complex mean multiplies the sum by the count's reciprocal (its complex
    division); over an empty axis it is NaN, not a ZeroDivisionError (Numba's own "/").
    Rows of 3 values: NumPy sums fewer than 4 complex values in order (more, pairwise)."""
    z, e = sg.var("z", (40, 3), "complex128"), sg.var("e", (3, 0), "complex128")
    outs = [sg.mean(z * 2, axis=1) * 2, sg.mean(e * 2, axis=1) * 2]
    rng = np.random.default_rng(5)
    env = {"z": rng.standard_normal((40, 3)) + 1j * rng.standard_normal((40, 3)),
           "e": np.zeros((3, 0), complex)}
    fn = sg.compile(outs, ["z", "e"], backend="numba")
    assert not fn.numpy_ops, fn.numpy_ops
    with np.errstate(all="ignore"):
        got, want = fn(**env), sg.compile(outs, ["z", "e"])(**env)
    assert got[0].tobytes() == want[0].tobytes()
    assert np.isnan(got[1].real).all() and np.isnan(got[1].imag).all()


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


def test_one_op_with_views_is_numpys_call_not_a_kernel():
    """A kernel of one op and views does NumPy's one pass at the cost of a compile."""
    x = sg.var("x", (40,))
    f = sg.reshape(sg.sin(x), (4, 10)).T
    fn = sg.compile(f, backend="numba")
    assert "@_jit(" not in fn.source
    assert "one op" in sg.stats(f, backend="numba").numpy_why["sin"]
    a = np.linspace(-3, 3, 40)
    np.testing.assert_array_equal(fn(a), np.sin(a).reshape(4, 10).T)
