"""Run the whole benchmark suite: ``python -m benchmarks.run [--rounds N] [--quick]``.

Every cell (workload, size, system) runs in a fresh process started with one thread per
library and fixed glibc malloc thresholds in its environment (``common.cell_env``). Cells
run in ``rounds`` rounds, the order of the systems rotated from round to round so that all
systems meet the machine in every state; the report takes the median over rounds. W4 climbs
its L ladder once per system, skipping a size whose predicted build time exceeds the cell's
time limit, and repeats the sizes up to 10^4 in the later rounds. A global deadline keeps
``make bench`` under 20 minutes on a 2-core machine: cells that would start after it are
skipped with a note.

Writes ``benchmarks/results/results.json`` (every row of every round) and ``results.md``.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import common, report

GRAD_CELLS = [
    ("w1_mlp", "N128_d784_m256_K10"),
    ("w2_gmm", "d2_K5_N1000"),
    ("w2_gmm", "d10_K25_N1000"),
    ("w3_rosenbrock", "n100"),
    ("w3_rosenbrock", "n1000"),
    ("w5_lstm", "T20_H32_I32"),
    ("w2_gmm_user", "d2_K5_N1000"),
    ("w2_gmm_user", "d10_K25_N1000"),
    ("w5_lstm_user", "T20_H32_I32"),
]
W4_LADDER = (10, 100, 1000, 10_000, 100_000)
W4_SYSTEMS = ("symgrad", "jax", "torch", "autograd")
CELL_TIMEOUT = 180.0
W4_TIMEOUT = 150.0
W4_REPEAT_MAX = 10_000
RESULTS = Path(__file__).resolve().parent / "results"


class Runner:
    def __init__(self, deadline: float, budget: float, log=print) -> None:
        self.start = time.perf_counter()
        self.deadline = deadline
        self.budget = budget
        self.cells: list[dict] = []
        self.log = log

    def left(self) -> float:
        return self.deadline - (time.perf_counter() - self.start)

    def cell(self, spec: dict, timeout: float = CELL_TIMEOUT, need: float = 5.0) -> dict:
        """Run one cell in a fresh process; a record with rows, or with an error note."""
        spec = {"budget": self.budget, **spec}
        label = " ".join(str(spec.get(k, "")) for k in ("workload", "config", "system"))
        if self.left() < need:
            rec = {"spec": spec, "skipped": "global deadline reached", "rows": []}
            self.cells.append(rec)
            return rec
        timeout = min(timeout, max(self.left(), 1.0))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.cell", json.dumps(spec)],
                env=common.cell_env(), capture_output=True, text=True, timeout=timeout,
                cwd=Path(__file__).resolve().parent.parent,
            )
            rec = _parse(proc)
        except subprocess.TimeoutExpired:
            rec = {"error": f"timed out after {timeout:.0f} s", "timeout": True}
        rec["spec"] = spec
        rec["cell_wall_s"] = time.perf_counter() - t0
        rec.setdefault("rows", [])
        self.cells.append(rec)
        self.log(f"[{time.perf_counter() - self.start:6.1f}s] {label:<48} "
                 f"{rec['cell_wall_s']:6.1f}s {rec.get('error', '')[:80]}")
        return rec


def _parse(proc: subprocess.CompletedProcess) -> dict:
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = "unknown signal"
        return {"error": f"process killed by signal {-proc.returncode} ({name}) {tail}".strip()}
    return {"error": f"exit {proc.returncode}: {tail}"}


def run_grad_cells(runner: Runner, rounds: int, systems: list[str], cells=GRAD_CELLS) -> None:
    for r in range(rounds):
        order = systems[r % len(systems):] + systems[: r % len(systems)]
        for workload, config in cells:
            for system in order:
                runner.cell({"workload": workload, "config": config, "system": system,
                             "round": r})


def run_backend_cells(runner: Runner, rounds: int, notes: dict) -> None:
    """symgrad's ``jax`` and ``array_api`` backends on W1, W2, W5 (``benchmarks/backends.py``)."""
    from . import backends

    for r in range(rounds):
        for name in backends.CONFIGS:
            for system in backends.SYSTEMS:
                if notes.get(system) is None and common.available(system) is None:
                    runner.cell({"workload": "backends", "config": name, "system": system,
                                 "round": r})


def run_w4(runner: Runner, systems: list[str], ladder=W4_LADDER, rounds: int = 1) -> None:
    """Each system climbs the L ladder; stop at a failure or a predicted time-out.

    Round 0 climbs the whole ladder; later rounds repeat the sizes up to ``W4_REPEAT_MAX``
    that finished in round 0 (the build time is a single measurement per cell).
    """
    done: dict[str, list[int]] = {s: [] for s in systems}
    for r in range(rounds):
        order = systems[r % len(systems):] + systems[: r % len(systems)]
        for system in order:
            prev = None
            sizes = ladder if r == 0 else [L for L in done[system] if L <= W4_REPEAT_MAX]
            for L in sizes:
                spec = {"workload": "w4_chain", "config": f"L{L}", "system": system, "round": r}
                note = _w4_skip(prev, L) if prev is not None and r == 0 else None
                if note:
                    runner.cells.append({"spec": spec, "skipped": note, "rows": []})
                    continue
                rec = runner.cell(spec, timeout=W4_TIMEOUT, need=30.0)
                prev = (L, rec)
                if r == 0 and not rec.get("error") and not rec.get("skipped"):
                    done[system].append(L)


def _w4_skip(prev: tuple[int, dict], L: int) -> str | None:
    L0, rec = prev
    if rec.get("error") or rec.get("skipped"):
        return f"not run: L={L0} did not finish ({rec.get('error') or rec.get('skipped')})"
    row = next((r for r in rec["rows"] if r.get("task") == "chain"), None)
    if row is None:
        return f"not run: L={L0} gave no result"
    cost = row.get("build_s", 0.0) + 2 * row.get("eval_s", 0.0)
    predicted = cost * L / L0
    if predicted > W4_TIMEOUT:
        return (f"not run: predicted > {W4_TIMEOUT:.0f} s (build + 2 evaluations took "
                f"{cost:.1f} s at L={L0}; x{L // L0} at best)")
    return None


def run_sympy(runner: Runner, ladder=None) -> None:
    from .w4_chain import SYMPY_LADDER, SYMPY_LIMIT

    prev = None
    for L in ladder or SYMPY_LADDER:
        spec = {"workload": "w4_chain", "config": f"L{L}", "cfg": {"L": L}, "system": "sympy",
                "round": 0}
        if prev is not None:
            rows = prev.get("rows") or []
            spent = rows[0]["diff_s"] + rows[0]["count_ops_s"] if rows else None
            if spent is None:
                runner.cells.append({"spec": spec, "skipped": "not run: smaller L timed out",
                                     "rows": []})
                break
            if spent * 3.3 > SYMPY_LIMIT:
                runner.cells.append({"spec": spec, "rows": [], "skipped": (
                    f"not run: predicted {spent * 3.3:.0f} s > {SYMPY_LIMIT:.0f} s "
                    f"(x3.3 per step seen from L=10 on)")})
                break
        prev = runner.cell(spec, timeout=SYMPY_LIMIT + 15.0, need=20.0)
        if prev.get("timeout"):
            break


def run_dask(runner: Runner) -> None:
    """The Dask scale-out cell, when symgrad[dask] is installed (an optional extra)."""
    import importlib.util

    spec = {"workload": "dask_scale", "config": "N1e7", "system": "symgrad"}
    if importlib.util.find_spec("distributed") is None:
        runner.cells.append({"spec": spec, "rows": [],
                             "skipped": "dask[distributed] not installed: pip install "
                                        "'symgrad[dask]'"})
        return
    runner.cell(spec, timeout=600.0, need=120.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds of each cell (W4: L <= 1e4)")
    ap.add_argument("--budget", type=float, default=1.5, help="timing seconds per cell")
    ap.add_argument("--deadline", type=float, default=24 * 60.0, help="seconds for all cells")
    ap.add_argument("--quick", action="store_true", help="1 round, W4 up to 10^3, no sympy")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    runner = Runner(args.deadline, args.budget)
    systems = [s for s in common.SYSTEMS]
    notes = {s: common.available(s) for s in (*systems, "sympy")}
    for s, note in notes.items():
        if note:
            print(f"skipping {s}: {note}")
    live = [s for s in systems if not notes[s]]
    rounds = 1 if args.quick else args.rounds
    run_grad_cells(runner, rounds, live)
    run_backend_cells(runner, rounds, notes)
    runner.cell({"workload": "cold_start", "config": "import", "system": "symgrad"})
    runner.cell({"workload": "compile_scale", "config": "L25000", "system": "symgrad"},
                need=60.0)
    run_dask(runner)
    run_w4(runner, [s for s in W4_SYSTEMS if s in live],
           W4_LADDER[:3] if args.quick else W4_LADDER, rounds)
    if not args.quick and not notes["sympy"]:
        run_sympy(runner)
    meta = report.machine_info()
    meta.update({
        "rounds": rounds, "budget_s": args.budget, "wall_s": time.perf_counter() - runner.start,
        "skipped_systems": {s: n for s, n in notes.items() if n},
        "env": {**common.THREAD_ENV, **common.MALLOC_ENV},
    })
    args.out.mkdir(parents=True, exist_ok=True)
    data = {"meta": meta, "cells": runner.cells}
    (args.out / "results.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    md = report.render(data)
    (args.out / "results.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
