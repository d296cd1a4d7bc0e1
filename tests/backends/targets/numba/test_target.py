"""compile(..., backend="numba") says when Numba compiles little for want of compiled forms:
a scan left a NumPy loop, or fewer than half the ops in compiled code (NumPy calls the cost
model chose do not count), with the reasons sg.stats gives; once per reason."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.numba.target import numba_review

pytest.importorskip("numba")


def test_a_scan_left_to_numpy_warns_with_the_reason():
    c = sg.var("c", dtype="float32")  # float32 floor division: NumPy's call
    out, _ = sg.scan(lambda c, _: (c + (c // np.float32(3)) * np.float32(0.1), c), c, None,
                     length=5)
    with pytest.warns(sg.SymgradWarning,
                      match=r"1 scan stays a NumPy loop.*floor_divide.*sg\.stats"):
        fn = sg.compile(out, backend="numba")
    assert fn.numpy_ops["scan"] == 1
    want = np.float32(5)
    for _ in range(5):
        want = want + (want // np.float32(3)) * np.float32(0.1)
    assert fn(np.float32(5)) == want


def test_few_compiled_ops_warn_once_and_a_fused_function_does_not():
    x = sg.var("x", (5,))
    message = numba_review([], {"partition": 1})
    assert message is not None and "only 0 of 1 ops" in message and "introselect" in message
    f = sg.partition(x, 2) * 1.0  # no compiled form; a kernel of one multiply does not pay
    with pytest.warns(sg.SymgradWarning, match="only 0 of 1 ops run in compiled code"):
        sg.compile(f, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sg.compile(f, backend="numba")  # the same reason: said once
        fn = sg.compile(sg.sum(sg.exp(x) * x + 1.0), backend="numba")
    assert fn(np.zeros(5)) == 5.0


def test_numpy_calls_the_cost_model_chose_do_not_warn():
    """A BLAS-bound product left to NumPy is a choice, not a missing form: no warning."""
    W, x = sg.var("W", (256, 256)), sg.var("x", (256,))
    assert numba_review([], {"matmul": 1}, {"matmul": "BLAS-bound (65,536 multiply-adds)"}) \
        is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn = sg.compile(W @ x, backend="numba")
    assert fn.numpy_ops == {"matmul": 1} and "BLAS" in fn.numpy_why["matmul"]
