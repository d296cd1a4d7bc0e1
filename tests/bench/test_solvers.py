"""Smoke version of benchmarks/solvers.py: its problems' gradients are right (no timing)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

import symgrad as sg  # noqa: E402
from benchmarks import solvers  # noqa: E402


def test_lotka_volterra_misfit_gradient_matches_finite_differences():
    p0 = np.array([1.1, 0.4, 0.1, 0.4])
    value, grad = sg.value_and_grad(lambda p: solvers.lv_misfit(p, "forward"))(p0)

    def plain(p):
        r = solvers.scipy.integrate.solve_ivp(
            solvers.lotka_volterra, (0.0, 10.0), np.array([10.0, 5.0]), t_eval=solvers.TIMES,
            args=tuple(p), rtol=1e-8, atol=1e-8)
        return np.sum((r.y - solvers.OBS) ** 2)

    fd = np.array([(plain(p0 + h) - plain(p0 - h)) / 2e-7 for h in 1e-7 * np.eye(4)])
    np.testing.assert_allclose(value, plain(p0), rtol=1e-6)
    np.testing.assert_allclose(grad, fd, rtol=1e-4)


def test_banded_jacobian_is_the_residuals():
    x, p = np.linspace(0.0, 1.0, 6), np.ones(6)
    eps = 1e-6
    fd = np.stack([(solvers.banded(x + eps * e, p) - solvers.banded(x - eps * e, p)) / (2 * eps)
                   for e in np.eye(6)], axis=1)
    np.testing.assert_allclose(solvers.banded_jac(x, p), fd, rtol=1e-6)
