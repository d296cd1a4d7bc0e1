"""The Numba table's scalar forms give NumPy's values, or leave the op to NumPy's call:
integer remainders, floor divisions, fmod and powers at INT64_MIN and -1, 0 and negative
exponents, and float floor division and fmod at infinities and signed zeros. Checked in a
subprocess (a trap in compiled code kills the process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

PROGRAM = r'''
import json, warnings, numpy as np, symgrad as sg
warnings.simplefilter("ignore")
n = 64
I64 = np.iinfo(np.int64).min
CASES = {
    "int64": ([-7, 7, -7, 2, 5, 0, 7, I64, I64, -1], [2, -2, -2, -3, 0, 0, -1, -1, 2, -3]),
    "int32": ([-7, 7, -7, 2, 5, 0, 7, -2**31, -2**31, -1], [2, -2, -2, -3, 0, 0, -1, -1, 2, -3]),
    "float64": ([1.0, -0.0, 5.0, -0.0, 3.0, 0.0, -1.0, -1.0, np.inf, 7.5],
                [-np.inf, np.inf, -np.inf, 2.0, 0.0, -3.0, np.inf, -np.inf, 2.0, -0.5]),
}
CASES["float32"] = CASES["float64"]
out = {}
for dtype, (a, b) in CASES.items():
    a = np.resize(np.array(a, dtype=dtype), n)
    b = np.resize(np.array(b, dtype=dtype), n)
    for op in ("remainder", "fmod", "floor_divide", "power"):
        x, y = sg.var("x", (n,), dtype), sg.var("y", (n,), dtype)
        e = getattr(sg, op)(x * 1 + 0, y * 1 + 0) * 1 + 0  # one fused region
        res = {}
        for backend in ("numpy", "numba"):
            with np.errstate(all="ignore"):
                try:
                    v = sg.compile(e, inputs=[x, y], backend=backend)(a, b)
                    res[backend] = [repr(float(t)) for t in np.asarray(v, dtype=np.float64)]
                except Exception as ex:
                    res[backend] = type(ex).__name__
        out[f"{op} {dtype}"] = res
print(json.dumps(out))
'''


def test_integer_and_float_division_family_matches_numpy(tmp_path):
    env = {**os.environ, "SYMGRAD_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # no SIGFPE
    results = json.loads(done.stdout.splitlines()[-1])
    wrong = {case: r for case, r in results.items() if r["numba"] != r["numpy"]}
    assert not wrong, wrong
    assert results["power int64"]["numpy"] == "ValueError"  # negative integer powers


def test_exact_forms_are_fused_only_for_their_result_dtypes():
    import symgrad as sg
    from symgrad.backends.targets.numba.table import NOT_FUSED, NUMBA, Exact, loop_form

    assert isinstance(NUMBA["mod"], Exact) and "floor_divide" not in NOT_FUSED
    x, k = sg.var("x"), sg.var("k", dtype="int64")
    y = sg.var("y", dtype="float32")
    for e, fused in ((sg.remainder(x, 3.0), True), (sg.remainder(k, 3), False),
                     (k ** 2, False), (x ** 2, True), (x // 3.0, True), (k // 3, False),
                     (y // np.float32(3), False)):
        n = e.graph.nodes[e.node]
        assert (loop_form(n, e.graph.nodes) is not None) == fused, e


def _same(got, want):
    """Equal values, NaN where NaN, real and imaginary parts apart."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    for part in (np.real, np.imag):
        np.testing.assert_array_equal(part(got), part(want))


def test_division_by_zero_gives_numpys_inf_and_nan_in_a_kernel(tmp_path, monkeypatch):
    """x / 0 and 0 / 0 give NumPy's infinities and NaNs in a fused kernel, complex
    quotients too (Numba's own complex division raises ZeroDivisionError there), and every
    quotient equals NumPy's to the bit, integer true division included."""
    import symgrad as sg

    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    num = [0, 1 + 1j, 1, -2j, 3, 0, np.inf, np.nan, -1.5 + 0.25j, 7]
    den = [0, 0, 0, 0, 1j, 2, 0, 0, 0.5 - 3j, -0.0]
    outs, inputs, env = [], [], {}
    for dtype in ("complex128", "complex64", "float64", "float32", "int64"):
        x, y = sg.var(f"x_{dtype}", (len(num),), dtype), sg.var(f"y_{dtype}", (len(num),), dtype)
        outs.append((x * 1 + 0) / (y * 1 + 0) * 1 + 0)  # one fused region
        inputs += [x, y]
        kind = np.dtype(dtype).kind
        part = (lambda v: v) if kind == "c" else np.real
        with np.errstate(all="ignore"):
            a = part(np.array(num))
            b = part(np.array(den))
            if kind == "i":
                a, b = np.nan_to_num(a, posinf=5, nan=0), b
            env[x.name], env[y.name] = a.astype(dtype), b.astype(dtype)
    fn = sg.compile(outs, inputs, backend="numba")
    assert not fn.numpy_ops, fn.numpy_ops  # every division compiled
    with np.errstate(all="ignore"):
        want = sg.compile(outs, inputs)(**env)
        got = fn(**env)
    for g, w in zip(got, want):
        _same(g, w)
    assert np.isnan(got[0][0]) and np.isinf(got[0][1]) and np.isinf(got[2][1])


def test_complex_division_by_zero_in_a_compiled_scan_step(tmp_path, monkeypatch):
    """A scan step dividing complex values by zero gives NumPy's NaN and infinities in its
    compiled loop function (no ZeroDivisionError), equal to the NumPy backend's."""
    import symgrad as sg

    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    x, t = sg.var("x"), sg.var("t", (5,))

    def step(c, s):
        z = (c + 1j * s) / (s * 1j)
        return c + sg.real(z) * 0.5, (sg.real(z), sg.imag(z), 1.0 / s)

    c, ys = sg.scan(step, x, t)
    outs = [c, *ys]
    fn = sg.compile(outs, [x, t], backend="numba")
    assert not fn.numpy_ops, fn.numpy_ops  # the loop compiled
    for env in ({"x": 0.0, "t": np.array([0.0, 1.0, 0.0, 2.0, -0.5])},
                {"x": 1.0, "t": np.array([1.0, 0.0, 2.0, -0.0, 3.0])}):
        with np.errstate(all="ignore"):
            want = sg.compile(outs, [x, t])(**env)
            got = fn(**env)
        for g, w in zip(got, want):
            _same(g, w)
    assert np.isinf(got[1][1]) and np.isinf(got[3][3]) and np.isnan(got[0])
