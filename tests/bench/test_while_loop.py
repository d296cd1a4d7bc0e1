"""Smoke version of benchmarks/while_loop.py: a short loop's gradient checked against
central differences, and its reverse sweep's forward steps against Revolve's optimum (no
timing assertions)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import while_loop  # noqa: E402


def test_the_while_loop_benchmark_runs_and_its_sweep_is_near_revolves_optimum():
    row = while_loop.measure(steps=400, snapshots=5, budget=0.05)
    assert row["fd_err"] < 1e-6
    assert row["revolve_t"] == 5 and row["revolve_optimum_steps"] == 5 * 400 - 330
    assert row["revolve_optimum_steps"] < 400 + row["schedule_steps"] <= 1.15 * row[
        "revolve_optimum_steps"]
    assert 0 < row["peak_carries"] < 5 + 1 + 8
