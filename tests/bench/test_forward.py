"""Smoke tests of the forward-mode and sparsity benchmarks: each measured
function is checked against its reference on a small size, and the colouring families
reach their known optimum (the benchmarks themselves run with ``python -m benchmarks.*``)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from benchmarks import colouring_families, w3_rosenbrock, w3_sparse, w4_chain, w4_forward  # noqa: E402


def test_w3_sparse_functions_match_the_hand_written_ones():
    n = 9
    fns = w3_sparse._symgrad(n)
    (x,), _ = w3_rosenbrock.inputs({"n": n})
    v = w3_rosenbrock.direction({"n": n})
    dense = w3_rosenbrock.numpy_hessian(x)
    np.testing.assert_allclose(fns["dense"](x), dense, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(fns["sparse"](x), dense[fns["rows"], fns["cols"]], rtol=1e-13)
    np.testing.assert_allclose(fns["hvp"](x, v), w3_rosenbrock.numpy_hvp(x, v), rtol=1e-13)
    assert fns["colours"] == 3


def test_w4_forward_mode_matches_the_hand_loop():
    fn = w4_forward.build(w4_chain.CHECK_L)["fn"]
    np.testing.assert_allclose(fn(w4_chain.X0), w4_chain.hand_loop(w4_chain.X0, w4_chain.CHECK_L),
                               rtol=1e-12)


def test_colouring_families_reach_their_optimum(monkeypatch):
    monkeypatch.setattr(colouring_families, "N", 120)
    for row in colouring_families.measure():
        methods = [k for k in row if f"{k}_optimum" in row]
        for m in methods:
            assert row[m] == row[f"{m}_optimum"], row
