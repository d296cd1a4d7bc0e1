"""W3 with forward mode and sparsity: the extended Rosenbrock Hessian and HVP.

``python -m benchmarks.w3_sparse [--quick]`` prints one row per size and writes
``benchmarks/results/w3_sparse.json``. Measured in one process, one thread, paired and
interleaved (``common.interleaved``), the emitted functions called without input checks:

* dense Hessian: ``sg.hessian(f, x)`` (which takes the sparse path by itself and fills the
  dense array) against the hand-written dense Hessian of ``w3_rosenbrock``;
* sparse Hessian, non-zeros only: ``sg.hessian(f, x, sparse=True)`` against CasADi's sparse
  Hessian (``casadi.hessian`` of an SX graph, evaluated by its virtual machine) when casadi
  is installed, and against the hand-written dense Hessian where that fits in memory;
* HVP: ``sg.hvp`` (forward over reverse) against the hand-written ``numpy_hvp``.

Every result is checked against the hand-written one before it is timed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from . import common, w3_rosenbrock

SIZES = (100, 1000, 10_000, 100_000)
DENSE_MAX = 4000  # the hand-written dense Hessian is built up to this n (128 MB at 4000)


def _symgrad(n: int) -> dict:
    import symgrad as sg

    from .gradcell import sg_compile

    out = {}
    t0 = time.perf_counter()
    f, (x,), _ = w3_rosenbrock.symgrad_loss({"n": n})
    H = sg.hessian(f, x, sparse=True)
    out["sparse"] = sg_compile(H, [x])
    out["sparse_build_s"] = time.perf_counter() - t0
    out["colours"], out["nnz"], out["rows"], out["cols"] = H.colours, H.nnz, H.rows, H.cols
    if n <= DENSE_MAX:
        t0 = time.perf_counter()
        f, (x,), _ = w3_rosenbrock.symgrad_loss({"n": n})
        out["dense"] = sg_compile(sg.hessian(f, x), [x])
        out["dense_build_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    f, (x,), _ = w3_rosenbrock.symgrad_loss({"n": n})
    v = sg.var("v", (n,))
    out["hvp"] = sg_compile(sg.hvp(f, x, v), [x, v])
    out["hvp_build_s"] = time.perf_counter() - t0
    return out


def _casadi(n: int):
    """CasADi's sparse Hessian of the same function: (evaluate -> non-zeros, build time)."""
    try:
        import casadi as ca
    except ImportError:
        return None
    t0 = time.perf_counter()
    x = ca.SX.sym("x", n)
    a, b = x[:-1], x[1:]
    f = ca.sum1(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2)
    hess, _ = ca.hessian(f, x)
    fn = ca.Function("h", [x], [hess])
    build = time.perf_counter() - t0
    sp = fn.sparsity_out(0)
    rows, cols = np.array(sp.row()), np.array(sp.get_col())
    return (lambda z: fn(z).nonzeros()), build, rows, cols, fn


def measure(n: int, budget: float) -> dict:
    (x,), _ = w3_rosenbrock.inputs({"n": n})
    v = w3_rosenbrock.direction({"n": n})
    sg_fns = _symgrad(n)
    row: dict = {"n": n, "colours": sg_fns["colours"], "nnz": sg_fns["nnz"]}
    diag, off = w3_rosenbrock._hess_bands(x)  # noqa: SLF001 - the reference bands
    rows, cols = sg_fns["rows"], sg_fns["cols"]
    ref_data = np.where(rows == cols, diag[rows],
                        off[np.minimum(np.minimum(rows, cols), off.size - 1)])
    data = sg_fns["sparse"](x)
    row["sparse_err"] = common.rel_err(data, ref_data)
    row["hvp_err"] = common.rel_err(sg_fns["hvp"](x, v), w3_rosenbrock.numpy_hvp(x, v))
    fns = {"sg_sparse": lambda: sg_fns["sparse"](x),
           "sg_hvp": lambda: sg_fns["hvp"](x, v),
           "hand_hvp": lambda: w3_rosenbrock.numpy_hvp(x, v)}
    if n <= DENSE_MAX:
        row["dense_err"] = common.rel_err(sg_fns["dense"](x), w3_rosenbrock.numpy_hessian(x))
        fns["sg_dense"] = lambda: sg_fns["dense"](x)
        fns["hand_dense"] = lambda: w3_rosenbrock.numpy_hessian(x)
    cas = _casadi(n)
    if cas is not None:
        cas_fn, row["casadi_build_s"], crows, ccols, _ = cas
        got = cas_fn(x)
        order = np.lexsort((ccols, crows))  # CasADi stores columns first: compare by entry
        mine = dict(zip(zip(rows.tolist(), cols.tolist()), data.tolist()))
        theirs = [mine.get((r, c), 0.0) for r, c in zip(crows[order], ccols[order])]
        row["casadi_err"] = common.rel_err(np.asarray(got)[order], np.asarray(theirs))
        row["casadi_nnz"] = int(len(crows))
        fns["casadi_sparse"] = lambda: cas_fn(x)
    names = list(fns)
    times = dict(zip(names, common.interleaved([fns[k] for k in names], budget)))
    row.update({f"{k}_s": common.median(t) for k, t in times.items()})
    if "hand_dense" in times:
        row["dense_vs_hand"] = common.paired_ratio(times["sg_dense"], times["hand_dense"])
        row["sparse_vs_hand_dense"] = common.paired_ratio(times["sg_sparse"],
                                                          times["hand_dense"])
    if "casadi_sparse" in times:
        row["sparse_vs_casadi"] = common.paired_ratio(times["sg_sparse"], times["casadi_sparse"])
    row["hvp_vs_hand"] = common.paired_ratio(times["sg_hvp"], times["hand_hvp"])
    for k in ("sparse_build_s", "dense_build_s", "hvp_build_s"):
        if k in sg_fns:
            row[k] = sg_fns[k]
    return row


def _fmt(row: dict) -> str:
    parts = [f"n={row['n']:>6}", f"colours={row['colours']}"]
    for key, label in (("dense_vs_hand", "dense/hand"), ("sparse_vs_casadi", "sparse/casadi"),
                       ("sparse_vs_hand_dense", "sparse/hand-dense"), ("hvp_vs_hand", "hvp/hand")):
        if key in row:
            parts.append(f"{label}={row[key]:.2f}x")
    parts.append(f"sparse={row['sg_sparse_s'] * 1e6:.1f}us")
    if "casadi_sparse_s" in row:
        parts.append(f"casadi={row['casadi_sparse_s'] * 1e6:.1f}us")
    return "  ".join(parts)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100 and 1000, short budget")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds per size")
    args = parser.parse_args(argv)
    sizes = SIZES[:2] if args.quick else SIZES
    rows = []
    for n in sizes:
        row = measure(n, 0.3 if args.quick else args.budget)
        rows.append(row)
        print(_fmt(row), flush=True)
    per = [r["sg_sparse_s"] / r["n"] for r in rows]
    print(f"sparse Hessian, time per variable n={sizes[-1]} / n={sizes[1]}: "
          f"{per[-1] / per[1]:.2f}x")
    out = Path(__file__).resolve().parent / "results" / "w3_sparse.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1, default=float))
    return rows


if __name__ == "__main__":
    common.with_thread_env("benchmarks.w3_sparse")
    main()
