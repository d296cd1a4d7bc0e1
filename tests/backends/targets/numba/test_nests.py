"""Array forms inside compiled code (``backends/targets/numba/nests``): a long ``arange``
or ``linspace`` is a loop computing NumPy's own formula, not a literal of its elements
(which Numba types slowly), and gives NumPy's values to the bit in every dtype."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

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


def test_long_aranges_and_linspaces_are_loops_with_numpys_values_to_the_bit():
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


def test_a_short_arange_stays_a_literal():
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
