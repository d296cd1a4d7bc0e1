"""Solvers and integrators: symgrad's emitted value and gradient through SciPy's own solve,
against that solve alone.

* **root**: a 1,000-unknown banded nonlinear system (a discretised ``-u'' + u^3 = p``),
  ``loss = w . x*(p)``; symgrad's value and gradient (``scipy.optimize.root`` traced as
  written, ``method="hybr"``: SciPy's solve with the exact Jacobian symgrad gives it, then
  one dense solve with the transposed Jacobian) against ``scipy.optimize.root`` of the same
  residual alone, as a user calls it (MINPACK differences the Jacobian), and against the
  same call given a hand-written banded Jacobian. Target: at most 1.5x the first.
* **lotka_volterra**: the misfit of ``solve_ivp`` (RK45, 101 output times, rtol = atol =
  1e-8) to observations, value and gradient with respect to the four rates (forward
  sensitivities, and the adjoint forced), against one ``solve_ivp`` of the same problem.
  Target: at most 4x.

Every call gets slightly different parameters (the same sequence for both sides), so no
solve is reused from the memo that lets the nodes of one call share a solve. One thread,
paired medians of interleaved samples in one process. Gradients are checked against
central finite differences first (the root's against the implicit closed form: finite
differences of a 1e-8-tolerance solve are noise). Run ``python -m benchmarks.solvers``
(``--lv``: Lotka-Volterra only).

Measured 2026-11-28 on the shared 2-core machine (load 9-15 from other jobs, so +-20%):

| problem | symgrad value+grad | SciPy alone | ratio | target |
|---|---|---|---|---|
| Lotka-Volterra, RK45, forward sensitivities | 37.9 ms | 15.0 ms | 2.81x | <= 4x |
| Lotka-Volterra, RK45, adjoint (forced) | 345.6 ms | 15.0 ms | 22.3x | |
| banded root, n = 1000, hybr | 3.244 s | 3.241 s | 1.02x | <= 1.5x |
| banded root, SciPy given a hand-written Jacobian | 3.244 s | 3.218 s | 1.00x | |

Where the time goes: the root's is MINPACK's dense QR of the 1000 x 1000 Jacobian, in
both; the gradient adds one batched forward-mode Jacobian and one LU solve (tens of ms).
Lotka-Volterra's value solve costs about what the user's solve costs (the emitted
right-hand side returns a list of scalars, as the user's does); the gradient is one more
solve of the 10-state augmented system taking the same steps, its right-hand side one
pass over scalars per direction. The adjoint pays two ``solve_ivp`` calls per output
interval (101 here): the checkpointed re-solve and the backward sweep.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import scipy.integrate
import scipy.optimize

from . import common

N = 1000
TIMES = np.linspace(0.0, 10.0, 101)
OBS = np.stack([10.0 + 3.0 * np.sin(TIMES), 5.0 + 2.0 * np.cos(TIMES)])


# -- the root problem -------------------------------------------------------------------------

def banded(x, p):
    """The residual, NumPy code (traces as it is)."""
    n = x.shape[0]
    h2 = (1.0 / (n + 1)) ** 2
    left = np.concatenate([np.zeros(1), x[:-1]])
    right = np.concatenate([x[1:], np.zeros(1)])
    return (2 * x - left - right) / h2 + x ** 3 - p


def banded_jac(x, p):
    n = x.shape[0]
    h2 = (1.0 / (n + 1)) ** 2
    return ((2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)) / h2 + np.diag(3 * x ** 2))


WEIGHTS = np.linspace(1.0, 2.0, N)


def root_loss(p):
    """The loss, as a user writes it: SciPy's own ``root`` (traced as symgrad's)."""
    sol = scipy.optimize.root(banded, np.zeros(N), args=(p,), method="hybr")
    return np.sum(sol.x * WEIGHTS)


def root_measure(budget: float) -> dict:
    import symgrad as sg

    p0 = 50.0 * np.sin(np.linspace(0.0, 3.0, N)) + 10.0
    vg = sg.value_and_grad(root_loss)
    value, grad = vg(p0)
    # the implicit closed form (finite differences of a 1e-8-tolerance solve are noise)
    x = scipy.optimize.root(banded, np.zeros(N), args=(p0,), method="hybr",
                            jac=banded_jac).x
    ref = np.linalg.solve(banded_jac(x, p0).T, WEIGHTS)
    err = float(np.max(np.abs(grad - ref) / np.abs(ref)))
    steps = _steps(p0)
    t_sym, t_scipy, t_jac = common.interleaved([
        lambda: vg(next(steps[0])),
        lambda: scipy.optimize.root(banded, np.zeros(N), args=(next(steps[1]),),
                                    method="hybr"),
        lambda: scipy.optimize.root(banded, np.zeros(N), args=(next(steps[2]),),
                                    method="hybr", jac=banded_jac)],
        budget=budget, min_samples=5, warmup=1)
    return {"fd_rel_err": err, "value": value, "symgrad_s": common.median(t_sym),
            "scipy_s": common.median(t_scipy), "scipy_jac_s": common.median(t_jac),
            "ratio": common.paired_ratio(t_sym, t_scipy),
            "ratio_jac": common.paired_ratio(t_sym, t_jac)}


def _steps(p0: np.ndarray, sides: int = 3) -> list:
    """One iterator per side, each giving ``p0 * (1 + 1e-9 k)`` for k = 1, 2, ..."""
    return [(p0 * (1.0 + 1e-9 * k) for k in itertools.count(1)) for _ in range(sides)]


# -- Lotka-Volterra -------------------------------------------------------------------------------

def lotka_volterra(t, y, a, b, c, d):
    return [a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]]


def lv_misfit(p, sensitivity=None):
    from symgrad.scipy.integrate import solve_ivp

    sol = solve_ivp(lotka_volterra, (0.0, 10.0), np.array([10.0, 5.0]), t_eval=TIMES,
                    args=tuple(p), rtol=1e-8, atol=1e-8, sensitivity=sensitivity)
    return np.sum((sol.y - OBS) ** 2)


def lv_measure(budget: float) -> dict:
    import symgrad as sg

    p0 = np.array([1.1, 0.4, 0.1, 0.4])
    forward = sg.value_and_grad(lambda p: lv_misfit(p, "forward"))
    adjoint = sg.value_and_grad(lambda p: lv_misfit(p, "adjoint"))

    def plain(p):
        r = scipy.integrate.solve_ivp(lotka_volterra, (0.0, 10.0), np.array([10.0, 5.0]),
                                      t_eval=TIMES, args=tuple(p), rtol=1e-8, atol=1e-8)
        return np.sum((r.y - OBS) ** 2)

    _, g = forward(p0)
    _, g_adj = adjoint(p0)
    fd = np.array([(plain(p0 + h) - plain(p0 - h)) / 2e-7 for h in 1e-7 * np.eye(4)])
    err = float(np.max(np.abs(g - fd) / np.abs(fd)))
    steps = _steps(p0)
    t_fwd, t_adj, t_solve = common.interleaved(
        [lambda: forward(next(steps[0])), lambda: adjoint(next(steps[1])),
         lambda: plain(next(steps[2]))], budget=budget, min_samples=7)
    return {"fd_rel_err": err, "adjoint_vs_forward": float(np.max(np.abs(g_adj - g) / abs(g))),
            "forward_ms": 1e3 * common.median(t_fwd), "adjoint_ms": 1e3 * common.median(t_adj),
            "solve_ms": 1e3 * common.median(t_solve),
            "ratio": common.paired_ratio(t_fwd, t_solve),
            "ratio_adjoint": common.paired_ratio(t_adj, t_solve)}


def main() -> None:
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":  # one thread, set before NumPy loads
        sys.exit(subprocess.call([sys.executable, "-m", "benchmarks.solvers", *sys.argv[1:]],
                                 env=common.cell_env()))
    lv = lv_measure(budget=10.0)
    print("| problem | symgrad value+grad | SciPy alone | ratio | target | grad vs FD |")
    print("|---|---|---|---|---|---|")
    print(f"| Lotka-Volterra, RK45, forward sensitivities | {lv['forward_ms']:.1f} ms | "
          f"{lv['solve_ms']:.1f} ms | {lv['ratio']:.2f}x | <= 4x | {lv['fd_rel_err']:.1e} |")
    print(f"| Lotka-Volterra, RK45, adjoint | {lv['adjoint_ms']:.1f} ms | "
          f"{lv['solve_ms']:.1f} ms | {lv['ratio_adjoint']:.2f}x | | "
          f"{lv['adjoint_vs_forward']:.1e} (vs forward) |")
    if "--lv" in sys.argv:
        return
    root = root_measure(budget=30.0)
    print(f"| banded root, n = {N}, hybr | {root['symgrad_s']:.3f} s | "
          f"{root['scipy_s']:.3f} s | {root['ratio']:.2f}x | <= 1.5x | "
          f"{root['fd_rel_err']:.1e} (closed form) |")
    print(f"| banded root, SciPy given a hand-written Jacobian | {root['symgrad_s']:.3f} s | "
          f"{root['scipy_jac_s']:.3f} s | {root['ratio_jac']:.2f}x | | |")


if __name__ == "__main__":
    common.with_thread_env("benchmarks.solvers")
    main()
