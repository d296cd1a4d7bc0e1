"""The sparse Hessian of a nearest-neighbour chain energy written three ways: vectorised
(``sum((x[1:] - x[:-1])**2 + x[:-1]**4 / 10)``), as ``sg.scan`` over the elements (the
carry holds the previous element and the running energy) and as ``sg.fori_loop`` indexing
``x[i]``.

For each: the time to find the Hessian's sparsity pattern (``sg.hessian_sparsity``), to
build the sparse Hessian (``sg.hessian(..., sparse=True)``: pattern, colouring, one batched
pass) and to evaluate it with ``sg.evaluate`` and with ``sg.compile`` (NumPy target;
median of ``repeats`` calls after the first), its entries and colours, and its largest
difference from the closed form (diagonal ``2 * neighbours + 1.2 x_i**2`` (no quartic term
for the last element), ``-2`` beside it). The target: the loops' pattern equal to the
vectorised one's, and the scan's sparse Hessian no slower than the vectorised one's.
``fori_loop`` finds each step's pattern with its index (up to 4,096 steps). Run
``python -m benchmarks.sparse_loops`` (sizes as arguments: ``python -m
benchmarks.sparse_loops 1000 10000``).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np


def energies(n: int) -> dict:
    """The energy of a chain of ``n`` elements, each way, of one variable ``x``."""
    import symgrad as sg

    x = sg.var("x", shape=(n,))

    def step(c, v):
        prev, acc = c
        return (v, acc + (v - prev) ** 2 + 0.1 * prev ** 4), None

    (_, scanned), _ = sg.scan(step, (x[0], 0.0), x[1:])
    looped = sg.fori_loop(0, n - 1, lambda i, acc: acc + (x[i + 1] - x[i]) ** 2
                          + 0.1 * x[i] ** 4, 0.0)
    vectorised = sg.sum((x[1:] - x[:-1]) ** 2 + 0.1 * x[:-1] ** 4)
    return {"x": x, "vectorised": vectorised, "scan": scanned, "fori_loop": looped}


def closed_form(v: np.ndarray):
    """The chain energy's Hessian at ``v``, a ``scipy.sparse`` matrix."""
    import scipy.sparse

    n = v.size
    diagonal = np.full(n, 4.0)
    diagonal[[0, -1]] = 2.0
    diagonal[:-1] += 1.2 * v[:-1] ** 2
    off = np.full(n - 1, -2.0)
    return scipy.sparse.diags_array([off, diagonal, off], offsets=[-1, 0, 1], format="csr")


def run(n: int, repeats: int = 5, ways: tuple[str, ...] = ("vectorised", "scan", "fori_loop")
        ) -> list[dict]:
    """One row per way of writing the energy (see the module docstring)."""
    import symgrad as sg

    made = energies(n)
    x = made["x"]
    v = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    rows = []
    for way in ways:
        e = made[way]
        t = time.perf_counter()
        pattern = sg.hessian_sparsity(e, x)
        t_pattern = time.perf_counter() - t
        t = time.perf_counter()
        H = sg.hessian(e, x, sparse=True)
        t_build = time.perf_counter() - t
        t = time.perf_counter()
        value = sg.evaluate(H, {"x": v})
        t_eval = time.perf_counter() - t
        fn = sg.compile(H, ["x"])
        fn(v)
        calls = []
        for k in range(repeats):
            at = v * (1.0 + 1e-3 * k)
            t = time.perf_counter()
            fn(at)
            calls.append(time.perf_counter() - t)
        err = float(abs(value - closed_form(v)).max())
        rows.append({"n": n, "way": way, "nnz": pattern.nnz, "colours": H.colours,
                     "pattern_s": t_pattern, "build_s": t_build, "evaluate_s": t_eval,
                     "compiled_call_s": float(np.median(calls)), "max_err": err,
                     "pattern": pattern})
    return rows


def main(sizes: list[int]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for n in sizes:
        rows = run(n, ways=("vectorised", "scan", "fori_loop") if n <= 4096
                   else ("vectorised", "scan"))
        base = rows[0]["pattern"]
        for r in rows:
            same = (r["pattern"] != base).nnz == 0
            print(f"n={n:,} {r['way']:>10}: {r['nnz']:,} entries ({'=' if same else '!='} "
                  f"vectorised), {r['colours']} colours; pattern {r['pattern_s']:.3f} s, "
                  f"sparse Hessian built {r['build_s']:.3f} s, evaluate {r['evaluate_s']:.3f} s, "
                  f"compiled call {r['compiled_call_s'] * 1e3:.2f} ms; max error vs closed "
                  f"form {r['max_err']:.1e}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10000])
