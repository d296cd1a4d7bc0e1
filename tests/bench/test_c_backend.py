"""Smoke version of ``python -m benchmarks.c_backend``: one row at smoke sizes with a tiny
budget, no timing assertions. Every system's gradient is checked by the harness; the row
records builds (cold and warm), run times and ratios, and renders as the documentation's
table."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import c_backend  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler (cc, gcc) on PATH")


def test_one_row_records_builds_checks_and_renders(x64, tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    rec = c_backend.measure_row(c_backend.BY_NAME["w3_rosenbrock"], 0.01, quick=True,
                                log=lambda *a: None)
    json.dumps(rec)  # plain data
    c = rec["systems"]["c"]
    assert c["err"] < 1e-12 and c["build_s"] > 0 and c["compiled"] >= 1
    assert rec["systems"]["c_warm"]["build_s"] > 0 and c["median_s"] > 0
    assert rec["ratios"]["numpy"] > 0
    builds = rec["builds"]  # a paired round of cold builds: C's and JAX's
    assert len(builds["c"]) == len(builds["jax"]) == 1 and builds["ratio"] > 0
    results = {"command": "python -m benchmarks.c_backend --quick", "date": "today",
               "machine": {"cpu": "a CPU", "cores": 1}, "loadavg": [0.0, 0.0],
               "rows": [rec]}
    table = c_backend.measured(results)
    from benchmarks import tables

    path = tmp_path / "c_backend.json"
    path.write_text(json.dumps(table))
    doc = tables.markdown(tables.load(path))
    assert "| W3 Rosenbrock n1000 | ours |" in doc and "C cold build" in doc
