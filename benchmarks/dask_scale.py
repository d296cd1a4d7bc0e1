"""Scale-out on Dask: value + gradient of a logistic loss over N x d rows stored in chunks.

The data (``N`` rows of ``d`` standard-normal features and 0/1 labels drawn from a logistic
model) is generated lazily by ``dask.array`` from a seed and written chunk by chunk to a
temporary ``.npy`` stack (``da.to_npy_stack``): it is never whole in one process. For each
chunk length, three ways of computing the value and the gradient at the same parameters
are timed (median of ``repeat`` runs, interleaved):

* ``dask``: :func:`symgrad.dask.value_and_grad` on a ``LocalCluster`` of 2 worker
  processes with 1 thread each (the chunks read by the workers);
* ``loop``: one process loading the same chunk files one after the other and calling the
  same emitted chunk function (``fn.raw`` of ``sg.compile``), summing;
* ``numpy``: the same loop with a hand-written NumPy logistic-loss gradient.

Throughput is rows per second of wall time; the CPU seconds of one evaluation (the
workers' and this process's, which runs the scheduler) show the cost of distributing it
apart from what else the machine runs, and "2 processes get" is the speed-up of the chunk
function run on both workers at once over one alone (2.0 on two free cores; a shared
virtual machine gives less). Memory per worker: ``ru_maxrss`` of each
worker process (its peak resident set since it started; a fresh cluster per chunk length)
and its RSS when idle before the runs, from ``client.run``; with the chunk length
multiplied by 4, the peak should grow with the chunk, not with ``N``.

Run alone (one BLAS thread per process, as the harness does):
``python -m benchmarks.dask_scale [--rows 10000000] [--chunks 250000,1000000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .common import MALLOC_ENV

TITLE = "Scale-out on Dask: logistic value + gradient over N x d rows"
CONFIGS = {"N1e7": {"rows": 10_000_000, "d": 10, "chunks": [250_000, 1_000_000],
                    "repeat": 5}}
SEED = 2026


def write_data(path: Path, rows: int, d: int, chunk: int) -> tuple:
    """Generate the data lazily from ``SEED`` and store it as two ``.npy`` stacks; return
    the lazily loaded ``(X, y)`` dask arrays."""
    import dask
    import dask.array as da

    path.mkdir(parents=True, exist_ok=True)
    rng = da.random.default_rng(SEED)
    X = rng.standard_normal((rows, d), chunks=(chunk, d))
    w_true = np.linspace(-1.0, 1.0, d)
    p = 1.0 / (1.0 + da.exp(-(X @ w_true)))
    y = (rng.random(rows, chunks=chunk) < p).astype(np.float64)
    with dask.config.set(scheduler="threads", num_workers=2):
        da.to_npy_stack(path / "X", X)
        da.to_npy_stack(path / "y", y)
    # read each chunk into memory (the loops use np.load too), not through a memory map
    return (da.from_npy_stack(path / "X", mmap_mode=None),
            da.from_npy_stack(path / "y", mmap_mode=None))


def logistic(rows: int, d: int):
    """The loss on the full data shape: ``sum(log(1 + exp(z)) - y z)``, ``z = X w + b``."""
    import symgrad as sg

    X, y = sg.var("X", (rows, d)), sg.var("y", (rows,))
    w, b = sg.var("w", (d,)), sg.var("b")
    z = X @ w + b
    return sg.sum(sg.logaddexp(0.0, z) - y * z), X, y, w, b


def hand(w: np.ndarray, b: float, X: np.ndarray, y: np.ndarray) -> tuple:
    """The hand-written NumPy value and gradient of one chunk."""
    z = X @ w + b
    r = 1.0 / (1.0 + np.exp(-z)) - y
    return np.sum(np.logaddexp(0.0, z) - y * z), X.T @ r, np.sum(r)


def _chunk_files(path: Path, name: str) -> list[Path]:
    return sorted((path / name).glob("*.npy"), key=lambda p: int(p.stem))


def _loop(fn, files_x, files_y, w, b) -> tuple:
    total = None
    for fx, fy in zip(files_x, files_y):
        out = fn(w, b, np.load(fx), np.load(fy))
        total = list(out) if total is None else [t + o for t, o in zip(total, out)]
    return total


def _worker_memory(client) -> dict:
    def probe():
        import resource

        import psutil

        me = psutil.Process()
        return {"rss_mb": me.memory_info().rss / 2**20, "cpu_s": sum(me.cpu_times()[:2]),
                "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}

    return client.run(probe)


def _time_kernel(kernel, params, X, y, repeat=5) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        kernel(X, y, params=params)
    return (time.perf_counter() - t0) / repeat


def _parallel_efficiency(client, fg, params, files_x, files_y) -> float:
    """One chunk's kernel timed on one worker alone, then on both workers at once: the
    speed-up two processes really get on this machine (2.0 on two free cores)."""
    X, y = np.load(files_x[0]), np.load(files_y[0])
    first = sorted(client.scheduler_info()["workers"])[:1]
    alone = client.run(_time_kernel, fg._grad, params, X, y, workers=first)
    both = client.run(_time_kernel, fg._grad, params, X, y)
    return 2.0 * min(alone.values()) / max(both.values())


def measure_chunk(path: Path, rows: int, d: int, chunk: int, repeat: int) -> dict:
    import dask
    import distributed

    import symgrad as sg

    X, y = write_data(path, rows, d, chunk)
    loss, Xv, yv, w, b = logistic(rows, d)
    fg = sg.dask.value_and_grad(loss, [w, b], {Xv: X, yv: y})
    wv, bv = np.linspace(0.5, -0.5, d), 0.1
    chunk_fn = fg.chunk_function()  # the function the workers run (length-polymorphic)
    files_x, files_y = _chunk_files(path, "X"), _chunk_files(path, "y")
    times: dict[str, list[float]] = {"dask": [], "loop": [], "numpy": []}
    cpu = {"client": 0.0, "workers": 0.0, "loop": 0.0}
    results = {}
    # the workers get the glibc malloc thresholds of every benchmark process (common.py);
    # Dask's default trim threshold (64 KiB) returns each chunk's arrays to the OS
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ"), **MALLOC_ENV}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        client.run(lambda: __import__("symgrad.dask"))
        idle = _worker_memory(client)
        fg(wv, bv)  # warm-up: the sum check, compiling on the workers
        for _ in range(repeat):
            before, c0, t0 = _worker_memory(client), time.process_time(), time.perf_counter()
            results["dask"] = fg(wv, bv)
            times["dask"].append(time.perf_counter() - t0)
            cpu["client"] += time.process_time() - c0
            after = _worker_memory(client)
            cpu["workers"] += sum(after[k]["cpu_s"] - before[k]["cpu_s"] for k in after)
            c0, t0 = time.process_time(), time.perf_counter()
            results["loop"] = _loop(chunk_fn, files_x, files_y, wv, bv)
            times["loop"].append(time.perf_counter() - t0)
            cpu["loop"] += time.process_time() - c0
            t0 = time.perf_counter()
            results["numpy"] = _loop(hand, files_x, files_y, wv, bv)
            times["numpy"].append(time.perf_counter() - t0)
        peak = _worker_memory(client)
        parallel = _parallel_efficiency(client, fg, [wv, np.asarray(bv)], files_x, files_y)
    value, (gw, gb) = results["dask"]
    ref = results["numpy"]
    err = max(abs(value - ref[0]) / abs(ref[0]),
              float(np.max(np.abs(gw - ref[1])) / np.max(np.abs(ref[1]))),
              abs(float(gb) - ref[2]) / abs(ref[2]))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "system": "symgrad", "task": "dask", "rows": rows, "d": d, "chunk": chunk, "n": chunk,
        "chunks": len(fg.chunks), "polymorphic": fg.polymorphic,
        "chunk_mb": chunk * (d + 1) * 8 / 2**20, "data_mb": rows * (d + 1) * 8 / 2**20,
        "dask_s": med["dask"], "loop_s": med["loop"], "numpy_s": med["numpy"],
        "dask_rows_s": rows / med["dask"], "loop_rows_s": rows / med["loop"],
        "numpy_rows_s": rows / med["numpy"], "speedup_vs_loop": med["loop"] / med["dask"],
        "speedup_vs_numpy": med["numpy"] / med["dask"], "rel_err": err,
        "dask_cpu_s": (cpu["client"] + cpu["workers"]) / repeat,
        "client_cpu_s": cpu["client"] / repeat, "loop_cpu_s": cpu["loop"] / repeat,
        "load_avg": os.getloadavg()[0], "two_process_speedup": parallel,
        "worker_idle_rss_mb": max(v["rss_mb"] for v in idle.values()),
        "worker_peak_rss_mb": max(v["maxrss_mb"] for v in peak.values()),
        "samples": repeat,
    }


def measure(cfg: dict, system: str, budget: float) -> list[dict]:
    rows = []
    for chunk in cfg["chunks"]:
        with tempfile.TemporaryDirectory(prefix="symgrad-dask-") as tmp:
            rows.append(measure_chunk(Path(tmp), cfg["rows"], cfg["d"], chunk,
                                      cfg.get("repeat", 3)))
    return rows


def table(rows: list[dict]) -> str:
    head = ("| N x d | chunk (rows, MB) | Dask 2 workers | loop, same chunk fn | loop, hand NumPy "
            "| vs loop | CPU s: Dask (all processes) / loop | 2 processes get | "
            "worker RSS idle -> peak |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        lines.append(
            f"| {r['rows']:.0e} x {int(r['d'])} | {int(r['chunk']):,} ({r['chunk_mb']:.0f} MB) | "
            f"{r['dask_rows_s'] / 1e6:.1f} M rows/s | {r['loop_rows_s'] / 1e6:.1f} M rows/s | "
            f"{r['numpy_rows_s'] / 1e6:.1f} M rows/s | {r['speedup_vs_loop']:.2f}x | "
            f"{r['dask_cpu_s']:.2f} / {r['loop_cpu_s']:.2f} | "
            f"{r['two_process_speedup']:.2f}x | "
            f"{r['worker_idle_rss_mb']:.0f} -> {r['worker_peak_rss_mb']:.0f} MB |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("OMP_NUM_THREADS") != "1":  # one thread per process, as in every cell
        from .common import cell_env

        os.execve(sys.executable, [sys.executable, "-m", "benchmarks.dask_scale", *argv],
                  cell_env())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=CONFIGS["N1e7"]["rows"])
    ap.add_argument("--d", type=int, default=CONFIGS["N1e7"]["d"])
    ap.add_argument("--chunks", default=",".join(map(str, CONFIGS["N1e7"]["chunks"])))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    cfg = {"rows": args.rows, "d": args.d, "repeat": args.repeat,
           "chunks": [int(c) for c in args.chunks.split(",")]}
    rows = measure(cfg, "symgrad", 0.0)
    print(json.dumps(rows, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
