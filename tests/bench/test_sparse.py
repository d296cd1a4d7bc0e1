"""Smoke version of benchmarks/sparse.py: the Poisson inverse problem at a small size runs,
and its value and gradient equal the adjoint written by hand with SciPy (no timing
assertions)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import sparse  # noqa: E402


def test_the_poisson_benchmark_runs_and_its_gradient_is_the_adjoints():
    result = sparse.run(12, repeats=2)
    assert result["unknowns"] == 144 and result["nnz"] == 144 * 5 - 4 * 12
    assert result["rel_err_vs_hand_adjoint"] < 1e-10
    assert result["value_grad_s"] > 0 and result["spsolve_s"] > 0
