"""Smoke version of ``benchmarks/backends.py``: tiny sizes, gradients checked, no timing
assertions. Each backend cell (``jax``, ``array_api``) runs on W1, W2, W5 at their smoke
sizes; symgrad's gradient through the backend must match the hand-written NumPy one (and
JAX's own ``jax.grad``), and the report table renders. Skipped when a library is absent.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import backends, common, report  # noqa: E402


@pytest.mark.parametrize("system", backends.SYSTEMS)
@pytest.mark.parametrize("name", sorted(backends.CONFIGS))
def test_backend_cell_at_smoke_size(name, system):
    note = common.available(system)
    if note:
        pytest.skip(note)
    workload = backends.CONFIGS[name]["workload"]
    mod = importlib.import_module(f"benchmarks.{workload}")
    (row,) = backends.measure({"workload": workload, "cfg": mod.SMOKE_CONFIG}, system, 0.01)
    assert row["err"] < 1e-12, row
    assert row["grad_s"] > 0 and row["build_s"] > 0
    if system == "jax":
        assert row["jax_err"] < 1e-12 and row["jax_build_s"] > 0 and row["grad_vs_jax"] > 0
    else:
        assert row["vs_numpy_backend"] > 0
    res = {("backends", name, row["system"], "grad", None, None): row}
    text = "\n".join(report.backend_tables(res))
    assert name in text and "x |" in text
