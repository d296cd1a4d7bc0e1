"""Where a cold build of ``backend="numba"`` goes, in one process and with workers.

``python -m benchmarks.numba_build [--measured [PATH]] [ROW ...]`` (rows of
:mod:`.numba_backend` with a gradient: ``w5_lstm_public`` ``w1_mlp_public`` ...; default
W5 and W1 in both spellings).

Each row is built twice, each time in a fresh process (one thread for BLAS, Numba and
XLA; Numba imported and its first compile done; an empty symgrad/Numba disk cache):
with ``SYMGRAD_NUMBA_WORKERS=1`` (one process, as before workers) and ``=2`` (the parent
and one worker process, whatever the load: :mod:`symgrad.backends.targets.numba.workers`).
Per build: the wall time of trace, gradient and compile and first call; the CPU seconds
of the process and of its workers; of the process's CPU, symgrad's part (tracing,
passes, printing), Numba's typing and lowering, and LLVM's optimisation and code
generation (timed around llvmlite's calls in Numba's code library); how many functions
the module compiles. On a machine other work keeps busy, wall times are inflated and a
worker competes with that work: the CPU columns say what an idle machine would gain.

Writes ``benchmarks/results/numba_build.json``; ``--measured`` also writes
``benchmarks/measured/numba_build.json`` for the documentation (:mod:`.tables`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import common, numba_backend

RESULTS = Path(__file__).resolve().parent / "results" / "numba_build.json"
MEASURED = Path(__file__).resolve().parent / "measured" / "numba_build.json"
DEFAULT = ["w5_lstm_public", "w5_lstm", "w1_mlp_public", "w1_mlp"]
MODES = {"one process": "1", "two processes": "2"}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def child(name: str) -> dict:
    """One cold build of row ``name`` in this process: its figures."""
    import numba
    import numpy as np
    from numba.core import codegen

    import symgrad as sg
    from symgrad.backends.targets.numba import source

    os.environ["SYMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="sg-numba-build-")
    x = sg.var("x", shape=(8,))  # Numba's first compile, not counted
    sg.compile(sg.sum(sg.sin(x) * x), inputs=[x], backend="numba").raw(np.ones(8))
    os.environ["SYMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="sg-numba-build-")
    cpu: dict[str, float] = dict.fromkeys(("numba", "llvm_opt", "llvm_codegen"), 0.0)
    seen = {"functions": 0}

    def timed(fn, key):
        def wrapper(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                cpu[key] += time.process_time() - t0
        return wrapper

    lib = codegen.CPUCodeLibrary
    lib._optimize_functions = timed(lib._optimize_functions, "llvm_opt")
    lib._optimize_final_module = timed(lib._optimize_final_module, "llvm_opt")
    lib._finalize_final_module = timed(lib._finalize_final_module, "llvm_codegen")
    load = source.load

    def counted(text, tag):
        seen["functions"] += text.count("@_jit(")
        return load(text, tag)

    source.load = timed(counted, "numba")
    row = numba_backend.BY_NAME[name]
    mod = importlib.import_module(f"benchmarks.{row.module}")
    wcfg = mod.CONFIGS[row.config]
    params, data = mod.inputs(wcfg)
    kids, c0, t0 = _children_cpu(), time.process_time(), time.perf_counter()
    f, p, d = mod.symgrad_loss(wcfg)
    fn = sg.compile(sg.grad(f, list(p)), inputs=[*p, *d], backend="numba")
    fn.raw(*params, *data)
    wall, total = time.perf_counter() - t0, time.process_time() - c0
    llvm = cpu["llvm_opt"] + cpu["llvm_codegen"]
    return {"row": name, "wall_s": wall, "cpu_s": total, "workers_cpu_s": _children_cpu() - kids,
            "symgrad_cpu_s": total - cpu["numba"], "numba_typing_lowering_cpu_s":
            cpu["numba"] - llvm, "llvm_opt_cpu_s": cpu["llvm_opt"],
            "llvm_codegen_cpu_s": cpu["llvm_codegen"], "functions": seen["functions"],
            "numba": numba.__version__, "loadavg": os.getloadavg()[0]}


def measure(name: str, mode: str) -> dict:
    """Row ``name`` built cold in a fresh process in ``mode`` (:data:`MODES`)."""
    env = {**common.cell_env(), "NUMBA_NUM_THREADS": "1"}
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("SYMGRAD_NUMBA_WORKERS", None)
    if MODES[mode] is not None:
        env["SYMGRAD_NUMBA_WORKERS"] = MODES[mode]
    out = subprocess.run([sys.executable, "-m", "benchmarks.numba_build", "--child", name],
                         env=env, capture_output=True, text=True, check=True)
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    rec["mode"] = mode
    return rec


def table(recs: list[dict]) -> dict:
    cols = ["workload", "spelling", "build", "wall", "CPU: process", "CPU: workers",
            "of it symgrad", "Numba typing + lowering", "LLVM optimisation",
            "LLVM code generation", "functions"]
    rows = []
    for r in recs:
        row = numba_backend.BY_NAME[r["row"]]
        rows.append([row.label, row.spelling, r["mode"], f"{r['wall_s']:.2f} s",
                     f"{r['cpu_s']:.2f} s", f"{r['workers_cpu_s']:.2f} s",
                     f"{r['symgrad_cpu_s']:.2f} s", f"{r['numba_typing_lowering_cpu_s']:.2f} s",
                     f"{r['llvm_opt_cpu_s']:.2f} s", f"{r['llvm_codegen_cpu_s']:.2f} s",
                     str(r["functions"])])
    return {"caption": "Cold builds of symgrad-numba: wall time and where the CPU goes",
            "columns": cols, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.numba_build",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="*", help=f"rows (default: {' '.join(DEFAULT)})")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--measured", type=Path, nargs="?", const=MEASURED, default=None,
                    help="also write the table as a benchmarks/measured/ file for the docs")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    names = args.rows or DEFAULT
    unknown = [n for n in names if n not in numba_backend.BY_NAME
               or numba_backend.BY_NAME[n].module == "loop"]
    if unknown:
        ap.error(f"unknown rows {unknown}")
    start, load0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]
    recs = []
    for name in names:
        for mode in MODES:
            recs.append(measure(name, mode))
            r = recs[-1]
            print(f"{name} [{mode}]: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s "
                  f"+ workers {r['workers_cpu_s']:.2f} s (load {r['loadavg']:.1f})")
    load1 = os.getloadavg()[0]
    command = "python -m benchmarks.numba_build " + " ".join(argv or sys.argv[1:])
    results = {"benchmark": "numba_build", "date": start, "command": command.strip(),
               "loadavg": [load0, load1], "cores": os.cpu_count(), "records": recs}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    t = table(recs)
    print("| " + " | ".join(t["columns"]) + " |")
    for row in t["rows"]:
        print("| " + " | ".join(row) + " |")
    if args.measured is not None:
        doc = {"title": "Cold builds of `backend=\"numba\"`: where the time goes, one process "
                        "and workers", "command": command.strip(), "date": start,
               "machine": f"{os.cpu_count()} cores shared with other work (load average "
                          f"{load0:.1f} at the start, {load1:.1f} at the end): wall times are "
                          "inflated; the CPU seconds are the figures to read",
               "method": __doc__.split("\n\n")[2].replace("\n", " "), "tables": [t],
               "notes": []}
        args.measured.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.measured}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
