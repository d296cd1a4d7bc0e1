"""Smoke version of benchmarks/sparse_loops.py: the chain energy written vectorised, with
``scan`` and with ``fori_loop`` has one Hessian pattern, and each sparse Hessian is the
closed form (no timing assertions)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import sparse_loops  # noqa: E402


def test_the_loop_sparsity_benchmark_runs_and_its_hessians_are_the_closed_form():
    rows = sparse_loops.run(30, repeats=1)
    assert [r["way"] for r in rows] == ["vectorised", "scan", "fori_loop"]
    band = np.abs(np.subtract.outer(np.arange(30), np.arange(30))) <= 1
    for r in rows:
        np.testing.assert_array_equal(r["pattern"].toarray(), band)
        assert r["nnz"] == 88 and r["colours"] == 3
        assert r["max_err"] < 1e-12
