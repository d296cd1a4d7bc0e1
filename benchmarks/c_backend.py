"""``backend="c"``'s cold builds and run times against Numba, the NumPy backend and JAX.

Per workload and spelling, as below.

``python -m benchmarks.c_backend [--quick] [--budget S] [--builds N] [--measured [PATH]]
[ROW ...]``

Rows: the gradient rows of :mod:`.numba_backend` (W1 MLP, W2 GMM at both sizes, W3
Rosenbrock, W5 LSTM, each in the ``ours`` and ``public`` spellings). Per row, in ONE
process (restarted with one thread for BLAS, Numba and XLA, float64):

* **builds** (:func:`.numba_peers.symgrad_grad`: trace, gradient, compile, first call):
  symgrad-C cold (an empty symgrad cache in a fresh folder: the C compiler runs), then
  warm (the library found in that cache), symgrad-numba cold (a fresh cache; Numba already
  imported and its first compile done by a warm-up), the NumPy backend, JAX's cold
  ``jit`` (trace, compile, first call; JAX's backend started by the warm-up); then
  ``--builds`` rounds (default 5) of a cold C build and a cold JAX jit in turn
  (:func:`paired_builds`): the table's cold builds are their medians, and its C / JAX
  figure the median of the per-round ratios (one build each is at the mercy of the
  machine's other work);
* **checks**: each gradient against the hand-written NumPy one (normwise relative error;
  above 1e-8 the system is marked wrong and not timed);
* **run time**: all systems sampled in turn (:func:`.common.interleaved`), the median per
  system and the paired median ratio of symgrad-C to each other system;
* **targets**: cold build <= 1.0x JAX's on W1-W3 and <= 0.5x on W5; run time <= 1.0x the
  NumPy backend.

Writes ``benchmarks/results/c_backend.json`` and, with ``--measured``, the table as
``benchmarks/measured/c_backend.json`` for the documentation (:mod:`.tables`). ``--quick``:
smoke sizes and a short budget (a smoke test; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import common, numba_peers, numba_tables
from .numba_backend import BUILD_TARGETS, ROWS

RESULTS = Path(__file__).resolve().parent / "results" / "c_backend.json"
MEASURED = Path(__file__).resolve().parent / "measured" / "c_backend.json"
SYSTEMS = ("c", "numba", "numpy", "jax")
GRAD_ROWS = [r for r in ROWS if r.module != "loop" and r.default]
BY_NAME = {r.name: r for r in GRAD_ROWS}
TOL = 1e-8


def _systems(mod: Any, wcfg: dict, params: tuple, data: tuple) -> dict:
    args = (*params, *data)
    c_cache = tempfile.mkdtemp(prefix="sg-c-bench-")
    return {
        "c": lambda: numba_peers.symgrad_grad(mod, wcfg, args, "c", c_cache),
        "c_warm": lambda: numba_peers.symgrad_grad(mod, wcfg, args, "c", c_cache),
        "numba": lambda: numba_peers.symgrad_grad(mod, wcfg, args, "numba",
                                                  tempfile.mkdtemp(prefix="sg-c-bench-")),
        "numpy": lambda: numba_peers.symgrad_grad(mod, wcfg, args, "numpy",
                                                  tempfile.mkdtemp(prefix="sg-c-bench-")),
        "jax": lambda: numba_peers.jax_grad(mod, wcfg, params, data),
    }


def paired_builds(mod: Any, wcfg: dict, params: tuple, data: tuple, rounds: int
                  ) -> dict:
    """``rounds`` more cold builds of symgrad-C (each in a fresh cache folder) and of
    JAX's jit, in turn: their seconds and the median of the per-round ratios."""
    args = (*params, *data)
    c, jax = [], []
    for _ in range(rounds):
        folder = tempfile.mkdtemp(prefix="sg-c-bench-")
        c.append(numba_peers.symgrad_grad(mod, wcfg, args, "c", folder).build_s)
        jax.append(numba_peers.jax_grad(mod, wcfg, params, data).build_s)
    return {"c": c, "jax": jax,
            "ratio": common.paired_ratio(np.array(c), np.array(jax))}


def measure_row(row: Any, budget: float, quick: bool, log=print, builds: int = 1) -> dict:
    """Builds, checks and paired run times of one row (and ``builds`` paired rounds of
    cold builds: C's and JAX's, in turn)."""
    mod = importlib.import_module(f"benchmarks.{row.module}")
    wcfg = mod.SMOKE_CONFIG if quick else mod.CONFIGS[row.config]
    params, data = mod.inputs(wcfg)
    ref = list(mod.numpy_grad(params, data, wcfg)[1])
    rec: dict = {"row": row.name, "label": row.label, "family": row.family,
                 "spelling": row.spelling, "systems": {}}
    built = {}
    for name, make in _systems(mod, wcfg, params, data).items():
        try:
            system = make()
            err = max(common.rel_err(g, r) for g, r in zip(system.result(), ref))
        except Exception as exc:  # a missing peer, a failure: recorded, not timed
            rec["systems"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            continue
        entry = {"build_s": system.build_s, "err": err}
        if name == "c":
            fn = system.extra["fn"]
            entry["compiled"] = len(fn.kernels)
            entry["numpy_calls"] = dict(fn.numpy_ops)
        rec["systems"][name] = entry
        if err <= TOL and name != "c_warm":
            built[name] = system
        log(f"  {name}: build {system.build_s:.2f} s, err {err:.1e}")
    if "c" in built and "jax" in built and builds > 0:
        rec["builds"] = paired_builds(mod, wcfg, params, data, builds)
        b = rec["builds"]
        log(f"  cold builds: C {[round(t * 1e3, 1) for t in b['c']]} ms, JAX "
            f"{[round(t * 1e3, 1) for t in b['jax']]} ms: C / JAX {b['ratio']:.2f}x")
    if "c" in built:
        names = list(built)
        samples = common.interleaved([built[n].call for n in names], budget=budget)
        times = dict(zip(names, samples))
        for n in names:
            rec["systems"][n]["median_s"] = common.median(times[n])
        rec["ratios"] = {n: common.paired_ratio(times["c"], times[n]) for n in names
                         if n != "c"}
    return rec


def _row_cells(rec: dict) -> list:
    s, ratios = rec["systems"], rec.get("ratios", {})

    rounds = rec.get("builds", {})

    def build(name: str) -> str:
        if name in rounds:  # the median of the paired cold builds
            return f"{float(np.median(rounds[name])):.3f} s"
        return f"{s[name]['build_s']:.3f} s" if "build_s" in s.get(name, {}) else "—"

    def ratio(name: str) -> str:
        return f"{ratios[name]:.2f}x" if name in ratios else "—"

    jax_build = s.get("jax", {}).get("build_s")
    limit = BUILD_TARGETS.get(rec["family"])
    over = rounds["ratio"] if rounds else \
        (s["c"]["build_s"] / jax_build) if jax_build and "build_s" in s.get("c", {}) else None
    build_goal = "—" if over is None or limit is None else \
        f"{over:.2f}x ({'met' if over <= limit else 'not met'}: <= {limit}x)"
    run_goal = "—" if "numpy" not in ratios else \
        f"{'met' if ratios['numpy'] <= 1.0 else 'not met'}"
    kept = s.get("c", {}).get("numpy_calls", {})
    return [rec["label"], rec["spelling"], build("c"), build("c_warm"), build("numba"),
            build("jax"), build_goal, ratio("numpy"), ratio("numba"), ratio("jax"),
            run_goal, f"{s.get('c', {}).get('compiled', 0)} / "
            f"{kept.get('scan', 0)} scans left"]


COLUMNS = ["workload", "spelling", "C cold build", "C warm build", "numba cold build",
           "JAX cold jit", "C cold / JAX cold (goal)", "run: C / NumPy backend",
           "run: C / numba", "run: C / jax.jit", "run <= NumPy backend",
           "C functions / NumPy loops"]


def measured(results: dict) -> dict:
    """The documentation's results file (:mod:`.tables`) of a run."""
    m = results["machine"]
    return {
        "title": "`backend=\"c\"`: cold builds and run times against Numba, NumPy and JAX",
        "command": results["command"], "date": results["date"],
        "machine": numba_tables.machine_line(m.get("cpu", "a CPU"), m.get("cores", "?"),
                                             *results["loadavg"]),
        "method": "One process, one thread per library, every thread of the process on one "
                  "CPU while timed. Builds: trace, gradient, compile and "
                  "first call, each with an empty symgrad cache (the C compiler runs; Numba "
                  "compiles), then C again from its cache (warm); JAX's cold jit in the same "
                  "process after a warm-up started its backend. C's and JAX's cold builds: "
                  "the medians of paired rounds (one of each in turn), and the median of the "
                  "per-round ratios. Run times: every system "
                  "sampled in turn (paired), the median of per-iteration ratios. Gradients "
                  "checked against hand NumPy (normwise relative error <= 1e-8).",
        "tables": [{"caption": "symgrad-C against its peers, both spellings",
                    "columns": COLUMNS, "rows": [_row_cells(r) for r in results["rows"]]}],
    }


def warm_up(log=print) -> None:
    """First-use work: symgrad, Numba's first compile, the C compiler, JAX's backend."""
    mod = importlib.import_module("benchmarks.w3_rosenbrock")
    for name, make in _systems(mod, mod.SMOKE_CONFIG, *mod.inputs(mod.SMOKE_CONFIG)).items():
        try:
            make()
        except Exception as exc:
            log(f"warm-up of {name} failed: {type(exc).__name__}: {exc}")


def run(names: list[str], budget: float, quick: bool, log=print, builds: int = 5) -> dict:
    from . import report

    meta = report.machine_info()
    load0 = os.getloadavg()[0]
    warm_up(log)
    rows = []
    for name in names:
        log(name)
        rows.append(measure_row(BY_NAME[name], budget, quick, log, builds))
    return {"benchmark": "c_backend", "quick": quick, "budget_s": budget,
            "command": "python -m benchmarks.c_backend " + " ".join(sys.argv[1:]),
            "date": meta["date"], "machine": meta, "loadavg": [load0, os.getloadavg()[0]],
            "rows": rows}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m benchmarks.c_backend",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="*", help=f"rows (default: all of {sorted(BY_NAME)})")
    ap.add_argument("--quick", action="store_true", help="smoke sizes, a short budget")
    ap.add_argument("--budget", type=float, default=None, help="timing seconds per row")
    ap.add_argument("--builds", type=int, default=None,
                    help="paired cold builds of C and JAX per row (default 5; --quick 1)")
    ap.add_argument("--measured", type=Path, nargs="?", const=MEASURED, default=None,
                    help="also write the table for the docs")
    args = ap.parse_args(argv)
    unknown = [r for r in args.rows if r not in BY_NAME]
    if unknown:
        ap.error(f"unknown rows {unknown}; choose from {sorted(BY_NAME)}")
    if os.environ.get("SG_C_BENCH_CHILD") != "1":
        env = {**common.cell_env(), **common.THREAD_ENV, "NUMBA_NUM_THREADS": "1",
               "SG_C_BENCH_CHILD": "1"}
        env.pop("NUMBA_CACHE_DIR", None)
        os.execve(sys.executable, [sys.executable, "-m", "benchmarks.c_backend", *argv], env)
    budget = args.budget if args.budget is not None else (0.05 if args.quick else 3.0)
    t0 = time.perf_counter()
    builds = args.builds if args.builds is not None else (1 if args.quick else 5)
    results = run(args.rows or list(BY_NAME), budget, args.quick, builds=builds)
    results["wall_s"] = time.perf_counter() - t0
    out = RESULTS.with_name("c_backend_quick.json") if args.quick else RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    table = measured(results)
    from . import tables

    print(tables.markdown(table))
    print(f"\nwrote {out}")
    if args.measured is not None:
        args.measured.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.measured}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
