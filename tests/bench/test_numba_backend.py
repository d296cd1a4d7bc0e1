"""Smoke version of ``python -m benchmarks.numba_backend``: two rows at smoke sizes with a
tiny budget, no timing assertions. Every system's gradient is checked by the harness
itself; the row records builds, run times and ratios, judges the compiled target's goals, accounts
for what stayed NumPy, serialises to JSON and renders as tables. The targets' verdicts and
the NumPy account are checked on rows built by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

import symgrad as sg  # noqa: E402
from benchmarks import numba_backend as nb  # noqa: E402
from benchmarks import numba_fallbacks, numba_tables  # noqa: E402

pytest.importorskip("numba")


def test_quick_run_of_two_rows_records_checks_and_renders(x64, tmp_path):
    systems = ("numba", "c", "numpy", "hand", "jax", "casadi")
    res = nb.run(["w3_rosenbrock_public", "w4_python"], budget=0.01, quick=True,
                 log=lambda *a: None, systems=systems)
    json.dumps(res)  # plain data
    assert res["quick"] and res["machine"]["cores"] >= 1 and res["versions"]["numpy"]
    for row in res["rows"]:
        s = row["systems"]
        for name in ("numba", "numpy", "hand"):
            assert "error" not in s[name], (row["row"], name, s[name])
            assert s[name]["median_s"] > 0 and s[name]["min_s"] <= s[name]["max_s"]
        assert "pytensor" not in s  # not asked for
        assert s["numba"]["err"] < 1e-12 and s["numba"]["warm_build_s"] > 0
        assert s["numba"]["build_s"] > 0 and "native compile" in s["numba"]["build_seconds"]
        assert row["ratios"]["numpy"]["median"] > 0
        assert row["ratios"]["fastest_peer"]["peer"] in nb.PEERS
        assert "error" not in s["c"] and s["c"]["err"] < 1e-12 and s["c"]["warm_build_s"] > 0
        assert row["ratios_c"]["numpy"]["median"] > 0 and "numba" in row["ratios_c"]
        statuses = {t["status"] for t in row["targets"]}
        assert statuses <= {"met", "not met"} and row["targets"]
        assert {t["system"] for t in row["targets"]} == {"numba", "c"}
        assert row["numba"]["kernels"] >= 1
    w4 = res["rows"][1]
    assert w4["config"] == {"L": nb.QUICK_W4_L} and w4["numba"]["compiled_scans"] >= 1
    text = "\n".join(numba_tables.render(res))
    for part in ("W3 Rosenbrock n1000 | public", "W4 chain L1e4 (Python loop) | public",
                 "## The compiled targets' goals", "What stayed NumPy", "CasADi",
                 "symgrad-C's time over each system's", "Targets, symgrad-C:",
                 "Goals met by at least one compiled target"):
        assert part in text
    from benchmarks import tables  # the documentation's form of the same tables

    path = tmp_path / "numba_spellings.json"
    path.write_text(json.dumps(numba_tables.measured(res, nb.MEASURED_TITLE)))
    doc = tables.markdown(tables.load(path))
    assert "| W4 chain L1e4 (Python loop) | public |" in doc and "worst first" in doc


def _row(**ratios):
    systems = {"numba": {"build_s": 3.0}, "jax": {"build_s": 4.0}}
    return {"row": "r", "family": "w5", "systems": systems,
            "ratios": {k: {"median": v, "min": v, "max": v} for k, v in ratios.items()}}


def test_targets_are_judged_met_not_met_or_failed():
    got = {t["target"]: t for t in nb.targets(_row(jax=0.9, hand=1.2, numpy=1.0))}
    assert {t["system"] for t in got.values()} == {"numba"}  # no C cell: no C goals
    assert got["run time / jax.jit(grad)"]["status"] == "met"
    assert got["run time / hand NumPy"]["status"] == "not met"
    assert got["run time / symgrad NumPy backend"]["status"] == "met"
    build = got["cold build / JAX cold jit"]  # W5: at most half of JAX's
    assert build["measured"] == pytest.approx(0.75) and build["status"] == "not met"
    failed = _row(numpy=0.5)
    failed["systems"]["jax"] = {"error": "ImportError: no"}
    got = {t["target"]: t for t in nb.targets(failed)}
    assert got["run time / jax.jit(grad)"]["status"] == "failed"
    assert "ImportError" in got["cold build / JAX cold jit"]["why"]


def test_each_compiled_target_is_judged_on_its_own_ratios_and_build():
    """The C target's goals read its own paired ratios and cold build; the summary counts
    a goal met where either compiled target meets it."""
    row = _row(jax=1.3, hand=0.9, numpy=1.2)
    row["systems"]["c"] = {"build_s": 1.0}
    row["ratios_c"] = {k: {"median": v, "min": v, "max": v}
                       for k, v in {"jax": 0.8, "hand": 1.1, "numpy": 0.9}.items()}
    row["targets"] = nb.targets(row)
    got = {(t["system"], t["target"]): t["status"] for t in row["targets"]}
    assert got[("numba", "run time / jax.jit(grad)")] == "not met"
    assert got[("c", "run time / jax.jit(grad)")] == "met"
    assert got[("c", "run time / hand NumPy")] == "not met"
    assert got[("c", "cold build / JAX cold jit")] == "met"  # 1.0 s / 4.0 s <= 0.5
    assert got[("numba", "cold build / JAX cold jit")] == "not met"  # 3.0 s / 4.0 s
    lines = numba_tables.goal_summary([{**row, "row": "r"}])
    assert "Goals met by at least one compiled target: 4 of 4" in lines
    assert "Targets, symgrad-C: 3 met, 1 not met" in lines


def test_account_splits_numpy_calls_between_scans_and_driver(monkeypatch):
    """A scan whose step holds an op without a loop form is reported with that op and a
    reason, and its NumPy calls are not counted again as the driver's."""
    from symgrad.backends.targets.numba import loops, table

    real = table.loop_form

    def no_cos(n, nodes):  # pretend cos had no form inside a compiled loop
        return None if n.op == "cos" else real(n, nodes)

    monkeypatch.setattr(table, "loop_form", no_cos)
    monkeypatch.setattr(loops, "loop_form", no_cos)
    x = sg.var("x", shape=(5,))
    h, _ = sg.scan(lambda c, _: (sg.cos(c) * c + 1.0, None), x, length=6)
    out = [sg.sum(h) * sg.sum(x)]
    acc = numba_fallbacks.account(out)
    (scan,) = acc["scans"]
    assert scan["length"] == 6 and [m["op"] for m in scan["missing"]] == ["cos"]
    assert scan["missing"][0]["reason"] == "no form inside a compiled loop"
    assert acc["numpy_ops"]["scan"] == 1 and "scan" not in acc["driver"]
    assert "cos" not in acc["driver"]
    counted = sum(v["count"] for v in acc["driver"].values()) + 1 + len(scan["missing"])
    assert counted == sum(acc["numpy_ops"].values())
    lines = numba_tables.fallbacks([{"label": "toy", "spelling": "ours", "row": "toy",
                                     "systems": {"numba": {}}, "numba": acc}])
    assert any("scan of 6 steps runs as a NumPy loop: `cos`" in ln for ln in lines)


def test_account_names_a_call_of_several_results_by_its_op_and_results():
    """A call with several results and no compiled form (eig) in a step is one entry: its
    op, its results' shapes and the table's reason (its projections are no entries)."""
    from symgrad.backends.targets.numba.table import NOT_COMPILED

    a = sg.var("a", shape=(3, 3))

    def step(c, _):
        w, _v = sg.eig(c)
        return c * sg.sum(sg.real(w)) * 0.1, None

    h, _ = sg.scan(step, a, length=3)
    (scan,) = numba_fallbacks.account([sg.sum(h)])["scans"]
    (entry,) = scan["missing"]
    assert entry["op"] == "eig" and entry["reason"] == NOT_COMPILED["eig"], entry
    assert entry["detail"] == "((3, 3)) -> (3,), (3, 3)", entry


def test_command_line_rows_and_options():
    args = nb.parse(["--quick", "w5_lstm_public", "--systems", "numba,hand"])
    assert args.rows == ["w5_lstm_public"] and args.systems == ("numba", "hand")
    assert nb.parse(["--systems", "c,jax"]).systems == ("c", "jax")
    with pytest.raises(SystemExit):
        nb.parse(["--systems", "jax,hand"])  # no compiled target to judge
    assert args.budget == 0.05 and args.out.name == "numba_backend_quick.json"
    args = nb.parse(["1.5", "w1_mlp"])  # the older form: BUDGET ROW ...
    assert args.budget == 1.5 and args.rows == ["w1_mlp"] and not args.quick
    assert nb.parse([]).rows == [r.name for r in nb.ROWS if r.default]
    with pytest.raises(SystemExit):
        nb.parse(["no_such_row"])


def test_the_machine_line_says_busy_only_when_other_work_took_half_a_core():
    quiet = numba_tables.machine_line("a CPU", 2, 0.4, 1.2)  # the run's own process: 1
    busy = numba_tables.machine_line("a CPU", 2, 0.4, 1.6)
    assert "quiet" in quiet and "inflated" not in quiet and "0.4" in quiet
    assert "inflated" in busy and "1.6 at the end" in busy
