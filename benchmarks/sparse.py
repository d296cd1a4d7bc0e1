"""The 2-D Poisson inverse problem: value and gradient of a misfit with respect to the
conductivity, against one ``scipy.sparse.linalg.spsolve`` of the same system.

On an ``n x n`` grid of unknowns (u = 0 outside), ``A(s) = D^T diag(P s) D / h^2`` with
``D`` the edge-node incidence matrix and ``P`` the averaging of node conductivities ``s``
onto the edges; ``u = A(s)^-1 f`` and the misfit is ``|u - u_obs|^2 / 2``. The misfit is
written once as NumPy/SciPy code (``sparse`` and ``spsolve`` are symgrad's), traced by
``sg.value_and_grad``; ``D`` and ``P`` are SciPy matrices it reads from its closure.

Value and gradient are checked against the adjoint written by hand with SciPy
(``l = A^-T (u - u_obs)``, gradient ``-P^T ((D l) * (D u)) / h^2``). The targets: value +
gradient <= 3x one ``spsolve`` of the system (its assembly excluded),
memory O(nnz). Each timed call gets a new conductivity (the factorisation is kept only for
equal values, so no call finds the previous one), ``spsolve`` is timed on its own matrix,
medians over ``repeats`` interleaved rounds, one thread. Memory is ``tracemalloc``'s peak
of one call (NumPy's and SciPy's Python-side arrays; SuperLU's own factors are allocated
in C and not traced: they are the same for both). Run ``python -m benchmarks.sparse`` (the
sizes as arguments: ``python -m benchmarks.sparse 100 316``).
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc

import numpy as np


def poisson(n: int):
    """``(D, P, h)``: the edge-node incidence of an ``n x n`` grid (edges to the boundary
    have one end) and the averaging of node values onto the edges."""
    import scipy.sparse

    h = 1.0 / (n + 1)
    idx = np.arange(n * n).reshape(n, n)
    ends = []
    for a, b in ((np.pad(idx, ((0, 0), (1, 0)), constant_values=-1),
                  np.pad(idx, ((0, 0), (0, 1)), constant_values=-1)),
                 (np.pad(idx, ((1, 0), (0, 0)), constant_values=-1),
                  np.pad(idx, ((0, 1), (0, 0)), constant_values=-1))):
        ends.append(np.stack([a.ravel(), b.ravel()], 1))
    ends = np.concatenate(ends)
    e = np.repeat(np.arange(len(ends)), 2)
    nodes, sign = ends.ravel(), np.tile([1.0, -1.0], len(ends))
    inside = nodes >= 0
    shape = (len(ends), n * n)
    D = scipy.sparse.csr_array((sign[inside], (e[inside], nodes[inside])), shape=shape)
    count = np.bincount(e[inside], minlength=len(ends))
    P = scipy.sparse.csr_array((1.0 / count[e[inside]], (e[inside], nodes[inside])), shape=shape)
    return D, P, h


def problem(n: int):
    """The misfit (symgrad's), the same in plain SciPy, the system at the true conductivity
    and a starting conductivity."""
    import scipy.sparse
    import scipy.sparse.linalg

    from symgrad.scipy import sparse
    from symgrad.scipy.sparse.linalg import spsolve

    D, P, h = poisson(n)
    f = np.ones(n * n)
    k = np.arange(n * n)
    true = 1.0 + 0.5 * np.sin(0.1 * k)

    def matrix(s):
        return ((D.T @ scipy.sparse.diags(P @ s) @ D) / h**2).tocsc()

    observed = scipy.sparse.linalg.spsolve(matrix(true), f)

    def misfit(s):
        A = D.T @ sparse.diags(P @ s) @ D / h**2
        u = spsolve(A, f)
        return 0.5 * np.sum((u - observed) ** 2)

    def adjoint(s):
        """The gradient by hand: ``l = A^-T (u - u_obs)``, then ``-P^T ((D l) (D u)) / h^2``."""
        A = matrix(s)
        u = scipy.sparse.linalg.spsolve(A, f)
        lam = scipy.sparse.linalg.spsolve(A.T.tocsc(), u - observed)
        return 0.5 * np.sum((u - observed) ** 2), -(P.T @ ((D @ lam) * (D @ u))) / h**2

    return misfit, adjoint, matrix, f, np.ones(n * n) + 0.1 * np.cos(0.3 * k)


def run(n: int, repeats: int = 7) -> dict:
    """Time value+gradient against one ``spsolve``; check value and gradient against the
    adjoint written by hand with SciPy."""
    import scipy.sparse.linalg

    import symgrad as sg

    misfit, adjoint, matrix, f, s0 = problem(n)
    t = time.perf_counter()
    vg = sg.value_and_grad(misfit)
    value, grad = vg(s0)
    build = time.perf_counter() - t
    want_value, want_grad = adjoint(s0)
    rel = max(abs(value - want_value) / abs(want_value),
              float(np.abs(grad - want_grad).max() / np.abs(want_grad).max()))
    ratios, ours, theirs = [], [], []
    A0 = matrix(s0)
    for k in range(repeats):
        s = s0 * (1.0 + 1e-3 * (k + 1))  # new values: no factorisation to reuse
        t = time.perf_counter()
        vg(s)
        mid = time.perf_counter()
        scipy.sparse.linalg.spsolve(A0, f)
        end = time.perf_counter()
        ours.append(mid - t)
        theirs.append(end - mid)
        ratios.append((mid - t) / (end - mid))
    tracemalloc.start()
    vg(s0 * 0.99)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    nnz = A0.nnz
    return {"n": n, "unknowns": n * n, "nnz": nnz, "build_s": build,
            "value_grad_s": float(np.median(ours)), "spsolve_s": float(np.median(theirs)),
            "ratio": float(np.median(ratios)), "ratio_max": float(np.max(ratios)),
            "peak_MB": peak / 2**20, "peak_bytes_per_nnz": peak / nnz,
            "rel_err_vs_hand_adjoint": float(rel), "value": float(value)}


def main(sizes: list[int]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for n in sizes:
        r = run(n)
        print(f"n={r['n']}x{r['n']} ({r['unknowns']:,} unknowns, nnz {r['nnz']:,}): "
              f"value+grad {r['value_grad_s'] * 1e3:.1f} ms, spsolve "
              f"{r['spsolve_s'] * 1e3:.1f} ms, ratio {r['ratio']:.2f}x (max "
              f"{r['ratio_max']:.2f}x), target <= 3x: "
              f"{'met' if r['ratio'] <= 3 else 'NOT met'}; peak {r['peak_MB']:.0f} MB "
              f"({r['peak_bytes_per_nnz']:.0f} B per nonzero); build {r['build_s']:.2f} s; "
              f"value and gradient vs the hand-written adjoint {r['rel_err_vs_hand_adjoint']:.1e}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 316])
