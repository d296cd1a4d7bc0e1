"""Turn the cells of a run into ``results.md``: machine, tables per workload, and targets.

Numbers of repeated rounds are combined by their median. Times are per call.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
from collections import defaultdict

import numpy as np

PACKAGES = ("symgrad", "numpy", "jax", "jaxlib", "torch", "autograd", "sympy", "networkx")
GRAD_WORKLOADS = ("w1_mlp", "w2_gmm", "w2_gmm_user", "w3_rosenbrock", "w5_lstm", "w5_lstm_user")
SYSTEM_ORDER = ("numpy", "symgrad", "symgrad-eval", "jax", "torch", "autograd", "sympy")


def machine_info() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")),
                       cpu)
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        mem = float("nan")
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem, 1),
        "platform": platform.platform(), "python": platform.python_version(),
        "versions": versions,
    }


# --- combining rounds --------------------------------------------------------------------


def combined(cells: list[dict]) -> dict[tuple, dict]:
    """(workload, config, system, task, L, n) -> row with numeric fields median over rounds."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for cell in cells:
        spec = cell.get("spec", {})
        for row in cell.get("rows", []):
            key = (spec.get("workload"), spec.get("config"), row.get("system"),
                   row.get("task"), row.get("L"), row.get("n"))
            groups[key].append(row)
    out = {}
    for key, rows in groups.items():
        merged = dict(rows[0])
        for field in rows[0]:
            vals = [r.get(field) for r in rows]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                merged[field] = float(np.median(vals))
        merged["rounds"] = len(rows)
        out[key] = merged
    return out


def cell_notes(cells: list[dict]) -> list[str]:
    notes = []
    for cell in cells:
        spec = cell.get("spec", {})
        what = f"{spec.get('workload')} {spec.get('config')} {spec.get('system')}"
        if cell.get("error") or cell.get("skipped"):
            notes.append(f"{what}: {cell.get('error') or cell.get('skipped')}")
        for row in cell.get("rows", []):
            if row.get("error") or row.get("skipped"):
                notes.append(f"{what}: {row.get('error') or row.get('skipped')}")
    return sorted(set(notes))


# --- formatting ----------------------------------------------------------------------------


def t(sec) -> str:
    if sec is None or (isinstance(sec, float) and np.isnan(sec)):
        return "–"
    if sec < 1e-3:
        return f"{sec * 1e6:.1f} µs"
    if sec < 1.0:
        return f"{sec * 1e3:.2f} ms"
    return f"{sec:.2f} s"


def x(ratio) -> str:
    return "–" if ratio is None else f"{ratio:.2f}×"


def e(err) -> str:
    return "–" if err is None else f"{err:.1e}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def _systems(res: dict, workload: str, config: str, task: str) -> list[dict]:
    found = [r for k, r in res.items() if k[0] == workload and k[1] == config and k[3] == task]
    return sorted(found, key=lambda r: SYSTEM_ORDER.index(r["system"])
                  if r["system"] in SYSTEM_ORDER else 99)


def grad_tables(res: dict) -> list[str]:
    import importlib

    lines = []
    header = ["system", "forward", "value+grad", "grad/fwd", "build (compile)", "first call",
              "max rel. err", "vs NumPy (paired)"]
    for workload in GRAD_WORKLOADS:
        mod = importlib.import_module(f"benchmarks.{workload}")
        seen = sorted({k[1] for k in res if k[0] == workload} - set(mod.CONFIGS))
        for config in [*mod.CONFIGS, *seen]:
            rows = [r for r in _systems(res, workload, config, "grad") if "grad_s" in r]
            if not rows:
                continue
            lines.append(f"### {mod.TITLE} — {config}")
            lines.append("")
            lines += _table(header, [[
                r["system"], t(r["forward_s"]), t(r["grad_s"]), x(r["grad_over_fwd"]),
                t(r.get("build_s")), t(r.get("first_call_s")), e(r["err"]), x(r.get("vs_numpy")),
            ] for r in rows])
            if workload == "w3_rosenbrock":
                so = _systems(res, workload, config, "hvp") + _systems(res, workload, config,
                                                                       "hessian")
                lines += _table(
                    ["system", "task", "time", "build / first call", "max rel. err",
                     "vs NumPy (paired)"],
                    [[r["system"], r["task"], t(r["time_s"]), t(r.get("build_s")), e(r["err"]),
                      x(r.get("vs_numpy"))] for r in so],
                )
    return lines


def scale_tables(res: dict) -> list[str]:
    lines = []
    for k, r in sorted(res.items(), key=lambda kv: str(kv[0])):
        if k[0] == "compile_scale" and k[3] == "compile":
            lines += _table(
                ["L", "forward nodes", "nodes with B", "emitted lines", "compile (wall)",
                 "compile (CPU)", "peak RSS", "growth"],
                [[f"{int(r['L']):,}", f"{int(r['forward_nodes']):,}", f"{int(r['nodes']):,}",
                  f"{int(r['lines']):,}", t(r["compile_s"]), t(r["compile_cpu_s"]),
                  f"{r['peak_mb']:.0f} MB", f"{r['growth_mb']:.0f} MB"]])
        if k[0] == "dask_scale" and k[3] == "dask":
            from .dask_scale import table

            lines += [table([r]), ""]
        if k[0] == "cold_start":
            lines += _table(["import numpy", "import symgrad.api (first use)",
                             "difference (paired median)", "symgrad --version − python",
                             "heavy modules imported"],
                            [[f"{r['numpy_ms']:.1f} ms", f"{r['symgrad_ms']:.1f} ms",
                              f"{r['extra_ms']:.1f} ms",
                              f"{r.get('cli_version_extra_ms', float('nan')):.1f} ms",
                              r["heavy_modules"] or "none"]])
    return lines


def w4_tables(res: dict) -> list[str]:
    rows = [r for k, r in res.items() if k[0] == "w4_chain" and k[3] == "chain"]
    if not rows:
        return []
    lines = ["### W4 deep scalar chain — build and evaluation vs L", ""]
    lines.append("Build: symgrad expression + grad + source + compile; JAX trace + jit first "
                 "call; PyTorch/autograd one forward + backward. Evaluation: value and "
                 "derivative, vs the hand-written `math` loop (paired). Error at L = 5.")
    lines.append("")
    main = sorted((r for r in rows if r["system"] not in ("sympy", "symgrad-eval")),
                  key=lambda r: (SYSTEM_ORDER.index(r["system"]), r["L"]))
    evals = {r["L"]: r for r in rows if r["system"] == "symgrad-eval"}
    lines += _table(
        ["system", "L", "build", "build / step", "evaluate", "hand loop", "vs hand",
         "sg.evaluate", "graph nodes", "err (L=5)"],
        [[r["system"], f"{int(r['L']):,}", t(r["build_s"]), t(r["build_s"] / r["L"]),
          t(r["eval_s"]), t(r["hand_s"]), x(r["vs_hand"]),
          t(evals[r["L"]]["eval_s"]) if r["system"] == "symgrad" and r["L"] in evals else "",
          f"{int(r['nodes']):,}" if "nodes" in r else "", e(r["err_L5"])] for r in main],
    )
    sgb = sorted((r for r in rows if r["system"] == "symgrad"), key=lambda r: r["L"])
    if sgb:
        lines.append("symgrad build broken down (expression, reverse pass, source + compile):")
        lines.append("")
        lines += _table(
            ["L", "expression", "grad", "to_source + compile", "total", "nodes"],
            [[f"{int(r['L']):,}", t(r["expr_s"]), t(r["grad_s"]), t(r["compile_s"]),
              t(r["build_s"]), f"{int(r['nodes']):,}"] for r in sgb],
        )
    sy = sorted((r for r in rows if r["system"] == "sympy"), key=lambda r: r["L"])
    if sy:
        lines.append("sympy.diff of the same chain (symgrad's derivative graph for comparison "
                     "is linear in L: about 10 nodes per step):")
        lines.append("")
        lines += _table(
            ["L", "build expr", "diff", "count_ops time", "count_ops(diff)"],
            [[str(int(r["L"])), t(r["expr_s"]), t(r["diff_s"]), t(r["count_ops_s"]),
              f"{int(r['count_ops']):,}"] for r in sy],
        )
    dn = sorted((r for k, r in res.items() if k[0] == "w4_chain" and k[3] == "derivative_n"),
                key=lambda r: (r["L"], r["n"]))
    if dn:
        lines.append("`sg.derivative(f, x, n)` of the chain: nodes of the n-th derivative "
                     "graph and time to build it:")
        lines.append("")
        lines += _table(["L", "n", "nodes", "build"],
                        [[str(int(r["L"])), str(int(r["n"])), f"{int(r['nodes']):,}",
                          t(r["build_s"])] for r in dn])
    return lines


# --- targets -------------------------------------------------------------------------------


def _get(res, workload, config, system, task="grad", L=None):
    return res.get((workload, config, system, task, L, None))


GRAD_CELLS = [("w1_mlp", "N128_d784_m256_K10"), ("w2_gmm", "d2_K5_N1000"),
              ("w2_gmm", "d10_K25_N1000"), ("w2_gmm_user", "d2_K5_N1000"),
              ("w2_gmm_user", "d10_K25_N1000"), ("w5_lstm", "T20_H32_I32"),
              ("w5_lstm_user", "T20_H32_I32")]


def targets(res: dict) -> list[list[str]]:
    """Rows: target, workload, measured, limit, pass/fail (the targets of the optimizing
    middle end's issue)."""
    out = []

    def add(name, where, value, limit, ok, shown=None):
        if value is None:
            out.append([name, where, "not measured", limit, "–"])
        else:
            out.append([name, where, shown or x(value), limit, "PASS" if ok else "FAIL"])

    w3 = [("w3_rosenbrock", c) for c in ("n100", "n1000")]
    for w, c in GRAD_CELLS + w3:
        sg = _get(res, w, c, "symgrad")
        v = sg.get("vs_numpy") if sg else None
        add("emitted gradient / hand-written NumPy", f"{w} {c}", v, "≤ 1.00×",
            v is not None and v <= 1.0)
    for w, c in w3:
        r = _get(res, w, c, "symgrad", "hvp")
        v = r.get("vs_numpy") if r else None
        add("emitted HVP / hand-written HVP", f"{w} {c}", v, "≤ 1.00×", v is not None and v <= 1.0)
    for w, c in GRAD_CELLS:
        sg = _get(res, w, c, "symgrad")
        v = sg.get("grad_over_fwd") if sg else None
        add("gradient / forward (symgrad emitted)", f"{w} {c}", v, "≤ 2.00",
            v is not None and v <= 2.0)
    for w, c in GRAD_CELLS:
        sg, jx = _get(res, w, c, "symgrad"), _get(res, w, c, "jax")
        v = sg["build_s"] / jx["build_s"] if sg and jx and "build_s" in sg else None
        shown = f"{x(v)} ({t(sg['build_s'])} vs {t(jx['build_s'])})" if v is not None else None
        add("build / JAX trace+jit", f"{w} {c}", v, "≤ 0.10×", v is not None and v <= 0.10, shown)
    evals = [r for k, r in res.items()
             if k[0] == "w4_chain" and k[2] == "symgrad" and k[3] == "chain"]
    if evals:
        worst = max(evals, key=lambda r: r["vs_hand"])
        add("W4 emitted gradient / hand `math` loop (worst L)", f"w4_chain L={int(worst['L']):,}",
            worst["vs_hand"], "≤ 1.20×", worst["vs_hand"] <= 1.2)
    r4 = _w4(res, 10_000)
    v = r4["build_s"] if r4 else None
    add("W4 build at L = 10^4 (all passes on)", "w4_chain", v, "≤ 3 s",
        v is not None and v <= 3.0, t(v) if v is not None else None)
    lo, hi = (_w4(res, L) for L in (1000, 100_000))
    v = (hi["build_s"] / hi["L"]) / (lo["build_s"] / lo["L"]) if lo and hi else None
    add("W4 linear build: per-step time L=10^5 / L=10^3", "w4_chain", v, "≤ 2×",
        v is not None and v <= 2.0)
    ci = _get(res, "compile_scale", "L25000", "symgrad", "compile", 25_000)
    v = ci["compile_s"] if ci else None
    add("compile 10^5 forward nodes + gradient: time", "compile_scale L=25,000", v, "≤ 10 s",
        v is not None and v <= 10.0,
        f"{t(v)} (CPU {t(ci['compile_cpu_s'])})" if ci else None)
    v = ci["peak_mb"] if ci else None
    add("compile 10^5 forward nodes + gradient: peak memory", "compile_scale L=25,000", v,
        "≤ 500 MB", v is not None and v <= 500, f"{v:.0f} MB" if ci else None)
    cs = _get(res, "cold_start", "import", "symgrad", "import")
    v = cs["extra_ms"] if cs else None
    add("first use (import symgrad.api) − import numpy", "cold start", v, "≤ 50 ms",
        v is not None and v <= 50,
        f"{v:.1f} ms (numpy {cs['numpy_ms']:.0f} ms; heavy: {cs['heavy_modules'] or 'none'})"
        if cs else None)
    v = cs.get("cli_version_extra_ms") if cs else None
    add("symgrad --version − bare python", "cold start", v, "≤ 50 ms",
        v is not None and v <= 50, f"{v:.1f} ms" if v is not None else None)
    return out


def _w4(res, L):
    for k, r in res.items():
        if k[0] == "w4_chain" and k[2] == "symgrad" and k[3] == "chain" and r["L"] == L:
            return r
    return None


def render(data: dict) -> str:
    meta, cells = data["meta"], data["cells"]
    res = combined(cells)
    probes = [c["probe_s"] for c in cells if "probe_s" in c]
    v = meta["versions"]
    lines = [
        "# symgrad benchmark results",
        "",
        f"- **Date**: {meta['date']}; total wall time {meta['wall_s'] / 60:.1f} min",
        f"- **Machine**: {meta['cpu']}, {meta['cores']} cores, {meta['memory_gib']} GiB; "
        f"{meta['platform']}; Python {meta['python']}",
        "- **Versions**: " + ", ".join(f"{k} {val}" for k, val in v.items() if val),
        "- **Settings**: float64 everywhere (JAX x64); one thread per library "
        "(OMP/MKL/OPENBLAS_NUM_THREADS=1, `torch.set_num_threads(1)`, XLA "
        "`--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`); warm-up calls "
        "before timing; medians of repeated samples; every cell in a fresh process; "
        f"{meta['rounds']} rounds with the order of the systems rotated, median over rounds "
        "(W4: L ≤ 10^4 repeated, L = 10^5 once; sympy once). Timing budget per cell "
        f"{meta.get('budget_s', '?')} s.",
        "- **malloc**: every cell process is started with `MALLOC_MMAP_THRESHOLD_=33554432 "
        "MALLOC_TRIM_THRESHOLD_=268435456` in its environment (set before Python starts), for "
        "all systems alike: without it glibc returns large NumPy temporaries to the OS and "
        "re-faults them, which made NumPy-based gradients up to 3× slower at random.",
        f"- **Speed probe** (256×256 float64 matmul, each cell): median {t(_med(probes))}, "
        f"min {t(min(probes, default=None))}, max {t(max(probes, default=None))}; "
        f"first cell {t(probes[0] if probes else None)}, last {t(probes[-1] if probes else None)}"
        ".",
        "- **Error**: max over the gradient's arrays of max|got − ref| / max|ref|, ref = "
        "the hand-written NumPy gradient. \"vs NumPy (paired)\": median over iterations of "
        "the per-iteration time ratio, both measured interleaved in one process. "
        "\"first call\" is the first value+grad call of an eager library (no compile step).",
        "",
    ]
    if meta.get("skipped_systems"):
        lines += [f"- Skipped: {s}: {n}" for s, n in meta["skipped_systems"].items()] + [""]
    lines += ["## Targets", ""]
    lines += _table(["target", "where", "measured", "limit", "result"], targets(res))
    lines += ["## Gradient workloads", ""] + grad_tables(res)
    lines += ["## Compiling large graphs, cold start", ""] + scale_tables(res)
    lines += ["## W4", ""] + w4_tables(res)
    lines += backend_tables(res)
    notes = cell_notes(cells)
    if notes:
        lines += ["## Notes (skipped or failed cells)", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def backend_tables(res: dict) -> list[str]:
    """The rows of the ``backends`` cells (``benchmarks/backends.py``), if any ran."""
    from . import backends

    rows = [{"workload": k[1], **r} for k, r in sorted(res.items(), key=str)
            if k[0] == "backends" and ("grad_vs_jax" in r or "vs_numpy_backend" in r)]
    if not rows:
        return []
    return ["## Backends (`backend=\"jax\"`, `\"array_api\"`)", "", *backends.table(rows), ""]


def _med(values):
    return float(np.median(values)) if values else None

