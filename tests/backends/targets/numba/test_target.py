"""compile(..., backend="numba") says when Numba compiles little: a scan left a NumPy loop,
or fewer than half the ops in compiled loops, with the reasons sg.stats gives; once per
reason, and nothing where the loops hold most of the work."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.numba.target import numba_review

pytest.importorskip("numba")


def test_a_scan_left_to_numpy_warns_with_the_reason():
    from symgrad.scipy.special import erf

    c = sg.var("c")
    out, _ = sg.scan(lambda c, _: (c + erf(c) * 0.1, c), c, None, length=5)
    with pytest.warns(sg.SymgradWarning, match=r"1 scan stays a NumPy loop.*erf.*sg\.stats"):
        fn = sg.compile(out, backend="numba")
    assert fn.numpy_ops["scan"] == 1
    want = 0.5
    for _ in range(5):
        from scipy.special import erf as scipy_erf
        want = want + scipy_erf(want) * 0.1
    assert fn(0.5) == pytest.approx(want, rel=1e-15)


def test_few_compiled_ops_warn_once_and_a_fused_function_does_not():
    W, x = sg.var("W", (5, 5)), sg.var("x", (5,))
    message = numba_review([], {"matmul": 1})
    assert message is not None and "only 0 of 1 ops" in message and "BLAS" in message
    with pytest.warns(sg.SymgradWarning, match="only 0 of 1 ops run in compiled loops"):
        sg.compile(W @ x * 1.0, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sg.compile(W @ x * 1.0, backend="numba")  # the same reason: said once
        fn = sg.compile(sg.sum(sg.exp(x) * x + 1.0), backend="numba")
    assert fn(np.zeros(5)) == 5.0
