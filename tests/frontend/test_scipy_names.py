"""SciPy's own calls traced as written: functions that import from SciPy, given to
``sg.grad`` and the other function transforms, against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import scipy
import scipy.integrate
import scipy.linalg
import scipy.optimize
import scipy.sparse
import scipy.sparse.linalg as spla
import scipy.special
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.sparse.linalg import spsolve
from scipy.stats import norm

import symgrad as sg
from symgrad.errors import UnsupportedError
from tests.support.finite_differences import central


def _relative(x) -> np.ndarray:
    """Central differences' steps: 1e-6 times each value, at least 1e-6."""
    return 1e-6 * np.maximum(1.0, np.abs(np.asarray(x, dtype=float)))


def black_scholes(v):
    """A call's price; ``norm`` is ``from scipy.stats import norm``."""
    s, k, t, r, sigma = v[0], v[1], v[2], v[3], v[4]
    d1 = (np.log(s / k) + (r + 0.5 * sigma ** 2) * t) / (sigma * np.sqrt(t))
    d2 = d1 - sigma * np.sqrt(t)
    return s * norm.cdf(d1) - k * np.exp(-r * t) * norm.cdf(d2)


def test_black_scholes_with_scipy_stats_norm():
    v = np.array([100.0, 95.0, 0.5, 0.03, 0.25])
    g = sg.grad(black_scholes)(v)
    np.testing.assert_allclose(g, central(black_scholes, v, _relative(v)), rtol=1e-6)
    s, k, t, r, sigma = v
    d1 = (np.log(s / k) + (r + 0.5 * sigma ** 2) * t) / (sigma * np.sqrt(t))
    np.testing.assert_allclose(g[0], norm.cdf(d1), rtol=1e-12)  # delta
    np.testing.assert_allclose(sg.hessian(black_scholes)(v)[0, 0],
                               norm.pdf(d1) / (s * sigma * np.sqrt(t)), rtol=1e-10)  # gamma


X = np.linspace(0.0, 5.0, 12)
Y = np.sin(X) + 0.1 * np.cos(3 * X)


def kernel(log_ell, log_sf):
    d = X[:, None] - X[None, :]
    return np.exp(2 * log_sf) * np.exp(-0.5 * d ** 2 / np.exp(2 * log_ell))


def gp_nll(theta):
    """A GP's negative log likelihood with scipy.linalg's triangular and Cholesky solves."""
    K = kernel(theta[0], theta[1]) + np.exp(2 * theta[2]) * np.eye(X.size)
    L = cholesky(K, lower=True)
    alpha = cho_solve((L, True), Y)
    z = solve_triangular(L, Y, lower=True)
    quadratic = 0.5 * (Y @ alpha + z @ z)  # y^T K^-1 y, two ways
    return 0.5 * quadratic + np.sum(np.log(np.diag(L))) + 0.5 * X.size * np.log(2 * np.pi)


def test_gp_likelihood_with_scipy_linalg():
    theta = np.array([0.2, -0.1, -1.5])
    value, g = sg.value_and_grad(gp_nll)(theta)
    np.testing.assert_allclose(value, gp_nll(theta), rtol=1e-12)
    np.testing.assert_allclose(g, central(gp_nll, theta, _relative(theta)), rtol=1e-6)


def test_solve_triangular_in_a_helper_function():
    A = np.array([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [0.5, -1.0, 4.0]])

    def helper(b):
        return scipy.linalg.solve_triangular(A, b, lower=True)

    def loss(b):
        return np.sum(helper(b) ** 2)

    b = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(sg.grad(loss)(b), central(loss, b, _relative(b)), rtol=1e-7)


def lotka_volterra(t, y, a, b, c, d):
    return [a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]]


TIMES = np.linspace(0.0, 5.0, 11)
OBS = 5.0 + np.cos(TIMES)


def lv_misfit(p):
    sol = scipy.integrate.solve_ivp(lotka_volterra, (0.0, 5.0), np.array([10.0, 5.0]),
                                    t_eval=TIMES, args=tuple(p), rtol=1e-11, atol=1e-11)
    return np.sum((sol.y[0] - OBS) ** 2)


def test_lotka_volterra_with_scipy_integrate_solve_ivp():
    p = np.array([1.1, 0.4, 0.1, 0.4])
    g = sg.grad(lv_misfit)(p)
    assert np.max(np.abs(g - central(lv_misfit, p, _relative(p))) / np.abs(g)) < 1e-5


def test_scipy_optimize_root_in_a_function():
    def loss(p):
        sol = scipy.optimize.root(lambda x: x ** 3 + x - p, np.zeros(2), tol=1e-13)
        return np.sum(sol.x ** 2)

    p = np.array([2.0, 10.0])
    np.testing.assert_allclose(sg.grad(loss)(p), central(loss, p, _relative(p)), rtol=1e-6)
    np.testing.assert_allclose(sg.jacfwd(lambda p: scipy.optimize.root(
        lambda x: x ** 3 + x - p, np.zeros(2)).x)(p), np.diag([0.25, 1 / 13]), rtol=1e-9)


def _laplacian(n: int) -> scipy.sparse.csc_array:
    off = -np.ones(n - 1)
    return scipy.sparse.diags_array([off, 2.5 * np.ones(n), off], offsets=[-1, 0, 1],
                                    format="csc")


def test_scipy_sparse_linalg_solvers_as_imported():
    """``spla.spsolve``, ``from scipy.sparse.linalg import spsolve`` and ``spla.cg`` on a
    symbolic right-hand side are symgrad's: gradients equal the dense solve's."""
    A = _laplacian(7)
    dense = A.toarray()

    def by_module(b):
        return np.sum(spla.spsolve(A, b) ** 2)

    def by_name(b):
        return np.sum(spsolve(A, b) ** 2)

    def by_cg(b):
        x, _ = spla.cg(A, b, rtol=1e-13)
        return np.sum(x ** 2)

    b = np.linspace(-1.0, 2.0, 7)
    want = 2 * np.linalg.solve(dense.T, np.linalg.solve(dense, b))
    for f in (by_module, by_name, by_cg):
        np.testing.assert_allclose(sg.grad(f)(b), want, rtol=1e-9)
    np.testing.assert_allclose(sg.grad(by_name)(b), central(by_name, b, _relative(b)), rtol=1e-6)


def test_every_function_transform_sees_symgrad_scipy():
    def f(x):
        return scipy.special.expit(x) * norm.logpdf(x, 0.5, 2.0)

    x = np.array([0.3, -1.2])
    jac = sg.jacobian(f)(x)
    fd = [central(lambda v, k=k: f(v)[k], x, _relative(x))[k] for k in range(2)]
    np.testing.assert_allclose(np.diag(jac), fd, rtol=1e-6)
    _, out = sg.vjp(f, x)
    np.testing.assert_allclose(out(np.ones(2))[0], np.diag(jac), rtol=1e-12)


def test_a_function_symgrad_lacks_is_named():
    def f(a):
        return np.sum(scipy.linalg.logm(a))

    with pytest.raises(UnsupportedError, match="logm.*symgrad.scipy.linalg"):
        sg.grad(f)(np.eye(2))


def test_the_functions_themselves_still_call_scipy():
    """Outside a trace nothing changes: the user's function runs on SciPy."""
    assert norm.cdf(0.0) == 0.5
    assert black_scholes(np.array([100.0, 95.0, 0.5, 0.03, 0.25])) > 0
