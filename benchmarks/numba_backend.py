"""The compiled targets (``backend="numba"``, ``backend="c"``) against their peers.

Per workload and spelling, as below.

``python -m benchmarks.numba_backend [--quick] [--budget S] [--out PATH] [ROW ...]``

Rows (:data:`ROWS`): W1 MLP N128 d784 m256, W2 GMM d10 K25 N1000 and d2 K5 N1000, W3
Rosenbrock n = 1000, W4 chain L = 10^4, W5 LSTM T20 H32, each in two spellings: ``ours``
(the spelling of this project's benchmarks: ``w1_mlp`` ...; W4 as ``sg.scan``) and
``public`` (as public code writes it: ``w1_mlp_public`` ..., W4 as a Python loop); plus
RK4 Lotka-Volterra (100 steps, scan and Python loop, no target) and, by name only, the
older ``w2_gmm_user`` / ``w5_lstm_user`` spellings.

Per row, in ONE process (one thread for every library: the process restarts itself with
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``NUMBA_NUM_THREADS``
= 1 and XLA's ``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`` set
before anything imports NumPy, Numba or JAX, float64 everywhere):

* **builds** (:mod:`.numba_peers` says what each includes): symgrad-numba cold (an empty
  symgrad/Numba disk cache in a fresh temporary folder; Numba already imported and its
  first compile done by a warm-up), then warm (again, from the cache it wrote); symgrad-C
  the same (the system C compiler runs on the cold build; a warm-up ran it once); symgrad's
  NumPy backend, JAX's cold ``jit`` (trace, compile, first call), PyTensor with its Numba
  linker (a fresh Numba cache folder), CasADi where it applies (W3, W4);
* **checks**: every system's gradient against the hand-written NumPy one (normwise relative
  error; above ``tol`` the system is marked wrong and not timed);
* **run time**: all systems sampled in turn in one loop (:func:`.common.interleaved`:
  calls batched to >= 2 ms per sample; every thread of the process on one CPU meanwhile,
  since XLA's CPU client spreads its dots over the cores whatever its flags say), min /
  median / max per system, and paired ratios (median, min, max of per-iteration ratios)
  of each compiled target (symgrad-numba, symgrad-C) to each other system, and
  each system's process CPU time over wall time on that CPU (below 1: the machine made it
  wait);
* **what stayed NumPy**: :func:`.numba_fallbacks.account` of the module (scans run as NumPy
  loops with the ops that pushed them there, and the driver's NumPy calls, with reasons);
* **targets**: run time <= 1.0x ``jax.jit(grad)`` and <= 1.0x hand NumPy on
  W1, W2 (both sizes) and W5; <= 0.8x hand NumPy on W3; <= 0.4x the hand ``math`` loop on
  W4; never above 1.0x the NumPy backend; cold build <= 1.0x JAX's on W1-W3, <= 0.5x on W5
  — each spelling and each compiled target judged on its own: met / not met / failed.

Writes ``benchmarks/results/numba_backend.json`` (``--quick``: ``numba_backend_quick.json``;
fields: ``benchmarks/results/README.md``), prints the tables (:mod:`.numba_tables`) and,
with ``--measured``, writes them as ``benchmarks/measured/numba_spellings.json`` for the
documentation (:mod:`.tables`). ``--quick``: smoke sizes, a short budget (a smoke test; its
figures mean nothing). A peer that is not installed is skipped with a note.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import common, numba_fallbacks, numba_peers, numba_tables

RESULTS = Path(__file__).resolve().parent / "results"
MEASURED = Path(__file__).resolve().parent / "measured" / "numba_spellings.json"
MEASURED_TITLE = ("The compiled targets (`backend=\"numba\"`, `backend=\"c\"`) against "
                  "their peers, in both spellings")
TARGET_W4_L, RK4_STEPS = 10_000, 100
QUICK_W4_L, QUICK_RK4_STEPS = 200, 20
SYSTEMS = ("numba", "c", "numpy", "hand", "jax", "pytensor", "casadi")
COMPILED = ("numba", "c")  # symgrad's compiled targets: each is judged by the goals
PEERS = ("hand", "jax", "pytensor", "casadi")  # the systems a compiled target is judged against
VERSIONS = ("symgrad", "numpy", "scipy", "numba", "llvmlite", "jax", "jaxlib", "pytensor",
            "casadi")


@dataclass(frozen=True)
class Row:
    """One measured row: a workload at one size in one spelling."""

    name: str
    label: str
    family: str  # the targets it is judged by: w1 w2_d10 w2_d2 w3 w4 w5 rk4
    spelling: str  # ours | public | user
    module: str  # benchmarks.<module> (grad rows) or "loop"
    config: str = ""
    default: bool = True


ROWS = [
    Row("w1_mlp", "W1 MLP N128 d784 m256", "w1", "ours", "w1_mlp", "N128_d784_m256_K10"),
    Row("w1_mlp_public", "W1 MLP N128 d784 m256", "w1", "public", "w1_mlp_public",
        "N128_d784_m256_K10"),
    Row("w2_gmm_d10", "W2 GMM d10 K25 N1000", "w2_d10", "ours", "w2_gmm", "d10_K25_N1000"),
    Row("w2_gmm_d10_public", "W2 GMM d10 K25 N1000", "w2_d10", "public", "w2_gmm_public",
        "d10_K25_N1000"),
    Row("w2_gmm_d2", "W2 GMM d2 K5 N1000", "w2_d2", "ours", "w2_gmm", "d2_K5_N1000"),
    Row("w2_gmm_d2_public", "W2 GMM d2 K5 N1000", "w2_d2", "public", "w2_gmm_public",
        "d2_K5_N1000"),
    Row("w3_rosenbrock", "W3 Rosenbrock n1000", "w3", "ours", "w3_rosenbrock", "n1000"),
    Row("w3_rosenbrock_public", "W3 Rosenbrock n1000", "w3", "public",
        "w3_rosenbrock_public", "n1000"),
    Row("w4_scan", "W4 chain L1e4 (sg.scan)", "w4", "ours", "loop"),
    Row("w4_python", "W4 chain L1e4 (Python loop)", "w4", "public", "loop"),
    Row("w5_lstm", "W5 LSTM T20 H32 I32", "w5", "ours", "w5_lstm", "T20_H32_I32"),
    Row("w5_lstm_public", "W5 LSTM T20 H32 V32 B16", "w5", "public", "w5_lstm_public",
        "T20_H32_V32_B16"),
    Row("rk4_scan", "RK4 LV 100 steps (sg.scan)", "rk4", "ours", "loop"),
    Row("rk4_python", "RK4 LV 100 steps (Python loop)", "rk4", "public", "loop"),
    Row("w2_gmm_user", "W2 GMM d10 K25 N1000", "w2_d10", "user", "w2_gmm_user",
        "d10_K25_N1000", default=False),
    Row("w5_lstm_user", "W5 LSTM T20 H32 I32", "w5", "user", "w5_lstm_user", "T20_H32_I32",
        default=False),
]
BY_NAME = {r.name: r for r in ROWS}

#: family -> [(system, limit)]: a compiled target's run time / that system's, paired median
RUN_TARGETS = {
    **dict.fromkeys(("w1", "w2_d10", "w2_d2", "w5"), [("jax", 1.0), ("hand", 1.0)]),
    "w3": [("hand", 0.8)], "w4": [("hand", 0.4)],
}
#: family -> limit of a compiled target's cold build / JAX's cold jit
BUILD_TARGETS = {"w1": 1.0, "w2_d10": 1.0, "w2_d2": 1.0, "w3": 1.0, "w5": 0.5}


# --- the loop rows' models ----------------------------------------------------------------------


def _w4_model(L: int, python: bool) -> tuple[list, list, tuple]:
    """W4's value and gradient at ``x = 0.5`` (outputs, inputs, arguments)."""
    import symgrad as sg

    from .w4_chain import X0, chain

    x = sg.var("x")
    if python:
        h = chain(sg, x, L)  # a Python loop: symgrad rolls it into one scan
    else:
        h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=L)
    return [h, sg.grad(h, x)], [x], (X0,)


def _rk4_data(steps: int) -> tuple[np.ndarray, float]:
    from . import loops

    dt = 10.0 / steps
    return np.array(loops._trajectory((1.0, 0.5, 0.12, 0.45), steps, dt)), dt


def _rk4_model(steps: int, python: bool) -> tuple[list, list, tuple]:
    """RK4 Lotka-Volterra's misfit and its gradient w.r.t. the 4 parameters."""
    import symgrad as sg

    from . import loops

    data, dt = _rk4_data(steps)
    p = [sg.var(n) for n in ("a", "b", "c", "d")]
    obs = sg.var("obs", shape=(steps, 2))
    if python:
        loss = loops.python_loop_loss(steps, dt)(p, obs)
    else:
        def step(s, o):
            x, y = loops.rk4_step(s[0], s[1], p, dt)
            return (x, y), (x - o[0]) ** 2 + (y - o[1]) ** 2

        _, misfit = sg.scan(step, loops.S0, (obs[:, 0], obs[:, 1]))
        loss = sg.sum(misfit)
    return [loss, *sg.grad(loss, p)], [*p, obs], (*loops.P0, data)


# --- one row ------------------------------------------------------------------------------------


@dataclass
class Plan:
    """What a row measures: its makers (system -> build function; a compiled target's
    builds into its own cache folder, so calling it again is its warm build), the reference
    arrays, the tolerance and the size it runs at."""

    makers: dict[str, Callable[[], numba_peers.System]]
    reference: list
    tol: float
    config: dict


def _grad_plan(row: Row, quick: bool) -> Plan:
    mod = importlib.import_module(f"benchmarks.{row.module}")
    wcfg = mod.SMOKE_CONFIG if quick else mod.CONFIGS[row.config]
    params, data = mod.inputs(wcfg)
    args = (*params, *data)
    ref = list(mod.numpy_grad(params, data, wcfg)[1])

    def compiled(backend: str) -> Callable[[], numba_peers.System]:
        cache = tempfile.mkdtemp(prefix=f"sg-{backend}-bench-")
        return lambda: numba_peers.symgrad_grad(mod, wcfg, args, backend, cache)

    makers = {
        **{b: compiled(b) for b in COMPILED},
        "numpy": lambda: numba_peers.symgrad_grad(mod, wcfg, args, "numpy",
                                                  tempfile.mkdtemp()),
        "hand": lambda: numba_peers.System(lambda: mod.numpy_grad(params, data, wcfg),
                                           lambda: list(mod.numpy_grad(params, data,
                                                                       wcfg)[1]), 0.0),
        "jax": lambda: numba_peers.jax_grad(mod, wcfg, params, data),
        "pytensor": lambda: numba_peers.pytensor_grad(mod, wcfg, args),
    }
    if row.family == "w3":
        makers["casadi"] = lambda: numba_peers.casadi_rosenbrock(wcfg["n"], params[0])
    return Plan(makers, ref, 1e-8, dict(wcfg))


def _loop_plan(row: Row, quick: bool) -> Plan:
    python = row.spelling == "public"
    if row.family == "w4":
        from .w4_chain import X0, hand_loop

        L = QUICK_W4_L if quick else TARGET_W4_L
        model = lambda: _w4_model(L, python)  # noqa: E731
        ref = [np.asarray(v) for v in hand_loop(X0, L)]
        extra = {"jax": lambda: numba_peers.jax_w4(L),
                 "pytensor": lambda: numba_peers.pytensor_w4(L),
                 "casadi": lambda: numba_peers.casadi_w4(L)}
        hand = numba_peers.System(lambda: hand_loop(X0, L), lambda: _floats(hand_loop(X0, L)),
                                  0.0)
        config, tol = {"L": L}, 1e-10
    else:
        from . import loops

        steps = QUICK_RK4_STEPS if quick else RK4_STEPS
        model = lambda: _rk4_model(steps, python)  # noqa: E731
        data, dt = _rk4_data(steps)
        p = loops.P0
        ref = [np.asarray(loops.forward_floats(p, data, dt)), *loops._fd_grad(p, data, dt)]
        args = (*p, data)
        extra = {"jax": lambda: numba_peers.jax_rk4(steps, args)}
        hand = numba_peers.System(lambda: loops.forward_floats(p, data, dt),
                                  lambda: ref, 0.0)  # the forward alone: no gradient
        config, tol = {"steps": steps}, 1e-5  # the reference gradient is a finite difference

    def compiled(backend: str) -> Callable[[], numba_peers.System]:
        cache = tempfile.mkdtemp(prefix=f"sg-{backend}-bench-")
        return lambda: numba_peers.symgrad_loop(model, backend, cache)

    makers = {**{b: compiled(b) for b in COMPILED},
              "numpy": lambda: numba_peers.symgrad_loop(model, "numpy", tempfile.mkdtemp()),
              "hand": lambda: hand, **extra}
    return Plan(makers, ref, tol, config)


def _floats(out: Any) -> list:
    return [np.asarray(v, dtype=np.float64) for v in out]


def _available(system: str) -> str | None:
    """None if ``system`` can be measured here, else the note saying why not."""
    if system == "c":
        from symgrad.backends.targets.c.build import compiler
        from symgrad.base.errors import BackendError

        try:
            compiler()
        except BackendError as exc:
            return str(exc)
        return None
    module = {"jax": "jax", "pytensor": "pytensor", "casadi": "casadi"}.get(system)
    if module is None:
        return None
    try:
        importlib.import_module(module)
    except ImportError as exc:
        return f"{module} not installed ({exc}); pip install 'symgrad[bench]'"
    return None


def _error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def measure_row(row: Row, budget: float, quick: bool = False, log=print,
                systems: tuple[str, ...] = SYSTEMS) -> dict:
    """One row of the results (see the module docstring and ``results/README.md``), with
    the ``systems`` named (a system a row does not have is left out)."""
    plan = _grad_plan(row, quick) if row.module != "loop" else _loop_plan(row, quick)
    plan.makers = {k: v for k, v in plan.makers.items() if k in systems}
    rec: dict[str, Any] = {"row": row.name, "label": row.label, "family": row.family,
                           "spelling": row.spelling, "module": row.module,
                           "config": plan.config, "systems": {}}
    built: dict[str, numba_peers.System] = {}
    for name, make in plan.makers.items():
        note = _available(name)
        if note:
            rec["systems"][name] = {"skipped": note}
            continue
        entry: dict[str, Any] = {}
        try:
            system = make()
            entry["build_s"] = system.build_s
            entry["err"] = common.rel_err(system.result(), plan.reference)
        except Exception as exc:  # a failed system is a cell of the table, not the end
            entry["error"] = _error(exc)
            rec["systems"][name] = entry
            log(f"  {row.name}: {name} failed: {entry['error']}")
            continue
        if not entry["err"] <= plan.tol:
            entry["error"] = f"wrong gradient: relative error {entry['err']:.1e}"
        else:
            built[name] = system
        rec["systems"][name] = entry
        if name in COMPILED:
            _compiled_details(rec, name, entry, system, make)
    _time(rec, built, budget, quick)
    rec["targets"] = targets(rec)
    return rec


def _compiled_details(rec: dict, name: str, entry: dict, system: numba_peers.System,
                      again: Callable[[], numba_peers.System]) -> None:
    """A compiled target's warm build (``again``: the build from the cache the cold one
    wrote) and the split of its build; for Numba, what stayed NumPy (the C target's plan
    is Numba's)."""
    fn = system.extra["fn"]
    entry["build_seconds"] = {k: float(v) for k, v in fn.build_seconds.items()}
    try:
        entry["warm_build_s"] = again().build_s
    except Exception as exc:
        entry["warm_build_error"] = _error(exc)
    if name != "numba":
        return
    try:
        rec["numba"] = numba_fallbacks.account(system.extra["outputs"])
    except Exception as exc:
        rec["numba"] = {"error": _error(exc)}


def _time(rec: dict, built: dict, budget: float, quick: bool) -> None:
    names = list(built)
    if not names:
        return
    times = common.interleaved([built[n].call for n in names], budget,
                               min_samples=3 if quick else 7)
    samples = dict(zip(names, times))
    for n, t in samples.items():
        rec["systems"][n].update({"median_s": float(np.median(t)), "min_s": float(t.min()),
                                  "max_s": float(t.max()), "samples": int(t.size),
                                  "cpu_over_wall": _cpu_over_wall(built[n].call, budget)})
    for target in COMPILED:
        key = "ratios" if target == "numba" else f"ratios_{target}"
        rec[key] = _paired(rec, samples, target)


def _paired(rec: dict, samples: dict[str, np.ndarray], target: str) -> dict[str, dict]:
    """``target``'s paired ratios to every other system timed, and to the fastest peer."""
    ratios: dict[str, dict] = {}
    if target not in samples:
        return ratios
    for n, t in samples.items():
        if n != target:
            r = samples[target] / t
            ratios[n] = {"median": float(np.median(r)), "min": float(r.min()),
                         "max": float(r.max())}
    peers = [n for n in PEERS if n in samples]
    if peers:
        fastest = min(peers, key=lambda n: rec["systems"][n]["median_s"])
        ratios["fastest_peer"] = {**ratios[fastest], "peer": fastest}
    return ratios


def _cpu_over_wall(call: Callable[[], Any], budget: float) -> float:
    """Process CPU time over wall time of repeated calls (at least 0.05 s of them), on one
    CPU as the timings were (:func:`.common.one_core`): below 1 the machine made it wait."""
    with common.one_core():
        wall0, cpu0, count = time.perf_counter(), time.process_time(), 0
        while count < 1 or time.perf_counter() - wall0 < max(0.05, budget / 20):
            call()
            count += 1
        return (time.process_time() - cpu0) / (time.perf_counter() - wall0)


def targets(rec: dict) -> list[dict]:
    """The goals for one row, per compiled target measured in it (``system``: ``numba`` or
    ``c``): measured, limit, met / not met / failed."""
    return [t for target in COMPILED if target in rec["systems"]
            for t in _goals(rec, target)]


def _goals(rec: dict, target: str) -> list[dict]:
    out = []
    systems = rec["systems"]
    ratios = rec.get("ratios" if target == "numba" else f"ratios_{target}", {})
    checks = [(f"run time / {numba_tables.SYSTEM_NAMES[s]}", s, lim)
              for s, lim in RUN_TARGETS.get(rec["family"], [])]
    checks.append(("run time / symgrad NumPy backend", "numpy", 1.0))
    for label, other, limit in checks:
        measured = ratios.get(other, {}).get("median")
        out.append(_verdict(target, label, limit, measured, systems, other))
    limit = BUILD_TARGETS.get(rec["family"])
    if limit is not None:
        mine, jx = systems.get(target, {}), systems.get("jax", {})
        measured = (mine["build_s"] / jx["build_s"]
                    if "build_s" in mine and "build_s" in jx and "error" not in mine
                    and "error" not in jx else None)
        out.append(_verdict(target, "cold build / JAX cold jit", limit, measured, systems,
                            "jax"))
    return out


def _verdict(target: str, label: str, limit: float, measured: float | None, systems: dict,
             other: str) -> dict:
    if measured is not None:
        return {"system": target, "target": label, "limit": limit, "measured": measured,
                "status": "met" if measured <= limit else "not met"}
    why = "; ".join(f"{s}: {systems[s].get('error') or systems[s].get('skipped')}"
                    for s in (target, other) if s in systems
                    and (systems[s].get("error") or systems[s].get("skipped")))
    return {"system": target, "target": label, "limit": limit, "measured": None,
            "status": "failed", "why": why or "not measured"}


# --- the run ------------------------------------------------------------------------------------


def warm_up(log=print, systems: tuple[str, ...] = SYSTEMS) -> dict:
    """First-use work of every system, so that no row's build pays it: Numba's first
    compile (symgrad, a kernel and a scan, in a throwaway cache), the C target's first
    build (SciPy's BLAS bound, the C compiler run once), JAX's backend, PyTensor's Numba
    linker, CasADi. Returns the seconds each took."""
    out = {}
    tiny = Row("warm_up", "", "w4", "ours", "loop")
    plan = _loop_plan(tiny, quick=True)
    for name, make in plan.makers.items():
        if _available(name) or name not in systems:
            continue
        t0 = time.perf_counter()
        try:
            make()
        except Exception as exc:
            log(f"warm-up of {name} failed: {_error(exc)}")
        out[name] = time.perf_counter() - t0
    return out


def run(names: list[str], budget: float, quick: bool = False, log=print,
        systems: tuple[str, ...] = SYSTEMS) -> dict:
    """Measure ``names`` (rows of :data:`ROWS`) in this process with ``systems``; the
    results dict."""
    from . import report

    start = time.perf_counter()
    meta = report.machine_info()
    meta.update({"loadavg_start": list(os.getloadavg()), "probe_start_s": common.speed_probe()})
    notes = {s: n for s in ("jax", "pytensor", "casadi") if (n := _available(s))}
    warm = warm_up(log, systems)
    rows = []
    for name in names:
        log(f"[{time.perf_counter() - start:7.1f} s] {name}")
        rows.append(measure_row(BY_NAME[name], budget, quick, log, systems))
        log(numba_tables.one_line(rows[-1]))
        gc.collect()
    meta.update({"loadavg_end": list(os.getloadavg()), "probe_end_s": common.speed_probe()})
    return {
        "benchmark": "numba_backend", "schema": 2, "quick": quick, "budget_s": budget,
        "systems": list(systems),
        "command": "python -m benchmarks.numba_backend " + " ".join(sys.argv[1:]),
        "date": meta["date"], "machine": meta, "versions": _versions(),
        "env": {k: os.environ.get(k) for k in _thread_env()}, "skipped_peers": notes,
        "warm_up_s": warm, "wall_s": time.perf_counter() - start, "rows": rows,
    }


def _versions() -> dict:
    import importlib.metadata as md

    out = {}
    for pkg in VERSIONS:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def _thread_env() -> dict[str, str]:
    return {**common.THREAD_ENV, "NUMBA_NUM_THREADS": "1"}


def _restart_with_one_thread(argv: list[str]) -> None:
    """Start this module again with one thread for BLAS, Numba and XLA (they read their
    variables when they load, so the process must start with them), PyTensor's compile
    folder fresh and no ``NUMBA_CACHE_DIR`` (so symgrad's cold builds find no cache)."""
    env = {**common.cell_env(), **_thread_env(), "SG_NUMBA_BENCH_CHILD": "1"}
    env.pop("NUMBA_CACHE_DIR", None)
    folder = tempfile.mkdtemp(prefix="pytensor-bench-")
    env["PYTENSOR_FLAGS"] = f"base_compiledir={folder}"
    os.execve(sys.executable, [sys.executable, "-m", "benchmarks.numba_backend", *argv], env)


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.numba_backend",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="*", help=f"rows (default: all but {_not_default()})")
    ap.add_argument("--quick", action="store_true", help="smoke sizes, a short budget")
    ap.add_argument("--budget", type=float, default=None,
                    help="timing seconds per row (default 4.0; --quick 0.05)")
    ap.add_argument("--out", type=Path, default=None, help="the results JSON file")
    ap.add_argument("--measured", type=Path, nargs="?", const=MEASURED, default=None,
                    help="also write the tables as a benchmarks/measured/ file for the docs "
                         f"(default path: {MEASURED.relative_to(RESULTS.parent.parent)})")
    ap.add_argument("--systems", default=",".join(SYSTEMS),
                    help=f"comma-separated, of {','.join(SYSTEMS)} (default: all)")
    args = ap.parse_args(argv)
    if args.rows and _is_number(args.rows[0]):  # the older form: BUDGET [ROW ...]
        args.budget = float(args.rows.pop(0))
    unknown = [r for r in args.rows if r not in BY_NAME]
    if unknown:
        ap.error(f"unknown rows {unknown}; choose from {sorted(BY_NAME)}")
    args.rows = args.rows or [r.name for r in ROWS if r.default]
    args.systems = tuple(s for s in args.systems.split(",") if s)
    if not set(COMPILED) & set(args.systems) or set(args.systems) - set(SYSTEMS):
        ap.error(f"--systems: numba or c, and any of {', '.join(SYSTEMS)}")
    args.budget = args.budget if args.budget is not None else (0.05 if args.quick else 4.0)
    name = "numba_backend_quick.json" if args.quick else "numba_backend.json"
    args.out = args.out or RESULTS / name
    return args


def _not_default() -> str:
    return ", ".join(r.name for r in ROWS if not r.default)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if os.environ.get("SG_NUMBA_BENCH_CHILD") != "1":
        _restart_with_one_thread(argv)
    results = run(args.rows, args.budget, args.quick, systems=args.systems)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print("\n".join(numba_tables.render(results)))
    print(f"\nwrote {args.out}")
    if args.measured is not None:
        table = numba_tables.measured(results, MEASURED_TITLE)
        args.measured.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.measured}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
