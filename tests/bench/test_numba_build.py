"""Smoke version of ``python -m benchmarks.numba_build``: one small row built cold in a
fresh process, in one process and in two; no timing assertions. The figures add up (the
parts of the process's CPU are within it) and render as a table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import numba_build  # noqa: E402

pytest.importorskip("numba")


def test_a_cold_build_splits_its_cpu_and_renders():
    recs = [numba_build.measure("w3_rosenbrock_public", mode) for mode in numba_build.MODES]
    for r in recs:
        parts = [r[k] for k in ("symgrad_cpu_s", "numba_typing_lowering_cpu_s",
                                "llvm_opt_cpu_s", "llvm_codegen_cpu_s")]
        assert min(parts) >= 0.0 and sum(parts) == pytest.approx(r["cpu_s"], abs=1e-6)
        assert r["llvm_opt_cpu_s"] > 0.0 and r["functions"] >= 1
    assert recs[0]["workers_cpu_s"] == 0.0  # one process: no worker
    table = numba_build.table(recs)
    assert [row[2] for row in table["rows"]] == list(numba_build.MODES)
    assert all(len(row) == len(table["columns"]) for row in table["rows"])
