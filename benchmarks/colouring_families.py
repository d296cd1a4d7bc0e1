"""Colour counts of sg.hessian/sg.jacobian(sparse=True) on families with a known optimum.

``python -m benchmarks.colouring_families`` builds each function with symgrad, finds its
sparsity pattern from the graph and colours it (star and distance-2 for Hessians, columns
and rows for Jacobians), and prints the counts next to the known optimum:

* banded, half-bandwidth b (a discretised 1-D PDE: a stencil residual of half-width beta
  has a Jacobian with b = beta, its energy ``sum(r**2)`` a Hessian with b = 2 beta): every
  row holds ``2 b + 1`` entries, so no direct method needs fewer colours, and the cyclic
  colouring has that many (the star optimum is the same for long bands: exhaustive search
  in tests/transforms/test_sparse.py);
* arrow-head (every variable coupled to one hub): a star colouring needs 2 (the hub, then
  all the others), a distance-2 colouring ``n`` (every column meets the hub's row);
* block-diagonal, blocks of ``k`` (a chain of small dense problems): ``k``.

Writes ``benchmarks/results/colouring_families.json``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

N = 1200


def families():
    """(name, kind, build() -> (f, x), optimum per method)."""
    import symgrad as sg

    def laplacian_energy(beta):
        def build():
            x = sg.var("x", shape=(N,))
            # stencil of width 2 beta + 1 (beta = 1: the second difference), squared
            r = sum((k + 1.0) * (x[k:N - 2 * beta + k] - x[beta:N - beta])
                    for k in range(2 * beta + 1) if k != beta)
            return sg.sum(r ** 2) + sg.sum(x ** 4), x
        return build

    def residual(beta):
        def build():
            x = sg.var("x", shape=(N,))
            u = sg.concatenate([sg.zeros(beta), x, sg.zeros(beta)])
            r = sum(sg.sin(u[k:N + k]) * (k + 1.0) for k in range(2 * beta + 1)) + x ** 3
            return r, x
        return build

    def arrow():
        x = sg.var("x", shape=(N,))
        return sg.sum(sg.exp(x[1:] * x[0])) + sg.sum(x ** 2), x

    def blocks(k):
        def build():
            x = sg.var("x", shape=(N,))
            return sg.sum(sg.logsumexp(sg.reshape(x, (N // k, k)), axis=-1) ** 2), x
        return build

    rows = []
    for beta in (1, 2, 3):
        opt = 4 * beta + 1
        rows.append((f"banded Hessian (PDE energy), b={2 * beta}", "hessian",
                     laplacian_energy(beta), {"star": opt, "distance2": opt}))
    for beta in (1, 2, 3):
        opt = 2 * beta + 1
        rows.append((f"banded Jacobian (PDE residual), b={beta}", "jacobian",
                     residual(beta), {"forward": opt, "reverse": opt}))
    rows.append(("arrow-head Hessian", "hessian", arrow, {"star": 2, "distance2": N}))
    for k in (2, 5, 8):
        rows.append((f"block-diagonal Hessian, blocks of {k}", "hessian", blocks(k),
                     {"star": k, "distance2": k}))
    return rows


def measure() -> list[dict]:
    import symgrad as sg
    from symgrad.transforms.sparse import hessian_plan, jacobian_plan

    out = []
    for name, kind, build, optimum in families():
        f, x = build()
        t0 = time.perf_counter()
        if kind == "hessian":
            g = sg.grad(f, x)
            plans = {m: hessian_plan(x, g, m) for m in optimum}
        else:
            plans = {m: jacobian_plan(f, x, m) for m in optimum}
        seconds = time.perf_counter() - t0
        nnz = next(iter(plans.values())).pattern.nnz
        row = {"family": name, "n": N, "nnz": nnz, "seconds": seconds}
        for method, plan in plans.items():
            row[method] = plan.colours
            row[f"{method}_optimum"] = optimum[method]
        out.append(row)
        counts = ", ".join(f"{m} {row[m]} (optimum {optimum[m]})" for m in optimum)
        print(f"{name:<45} nnz={nnz:<6} {counts}  [{seconds:.2f}s]", flush=True)
    return out


def main() -> list[dict]:
    rows = measure()
    path = Path(__file__).resolve().parent / "results" / "colouring_families.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
