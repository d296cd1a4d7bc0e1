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
