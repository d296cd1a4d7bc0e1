"""Derivatives of solver calls by the implicit function theorem: a root's Jacobian against
the closed form ``-J_x^{-1} J_theta`` for every SciPy method, a coupled system's Hessian
through the solution against finite differences, and a minimiser's component at an active
bound following the bound."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import symgrad as sg
import symgrad.scipy.optimize as sopt


def cubic(x, p):
    return x ** 3 + 2.0 * x - p


@pytest.mark.parametrize("method", ["hybr", "lm", "krylov", "df-sane", "broyden1"])
def test_root_gradient_matches_the_implicit_closed_form(method):
    p = sg.var("p", shape=(3,))
    sol = sopt.root(cubic, np.zeros(3), args=(p,), method=method, tol=1e-13)
    pv = np.array([1.0, 3.0, -4.0])
    x, J = sg.evaluate([sol.x, sg.jacobian(sol.x, p)], {"p": pv})
    ref = scipy.optimize.root(cubic, np.zeros(3), args=(pv,), method=method, tol=1e-13).x
    np.testing.assert_allclose(x, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(J, np.diag(1 / (3 * x ** 2 + 2)), rtol=1e-8, atol=1e-12)


def test_root_of_a_coupled_system_gradient_and_hessian():
    """x solves A x + x^3 = b(theta): dx/dtheta = (A + 3 diag(x^2))^-1 db/dtheta; the
    Hessian of a loss through it against finite differences of the gradient."""
    A = np.array([[4.0, -1.0, 0.0], [-1.0, 4.0, -1.0], [0.0, -1.0, 4.0]])
    theta = sg.var("theta", shape=(2,))

    def residual(x, th):
        b = sg.stack([th[0], th[0] * th[1], th[1] ** 2])
        return sg.asarray(A) @ x + x ** 3 - b

    sol = sopt.root(residual, np.zeros(3), args=(theta,), tol=1e-14)
    at = {"theta": np.array([1.0, 2.0])}
    x, J = sg.evaluate([sol.x, sg.jacobian(sol.x, theta)], at)
    db = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 4.0]])
    np.testing.assert_allclose(J, np.linalg.solve(A + 3 * np.diag(x ** 2), db), rtol=1e-10)
    loss = sg.sum(sol.x ** 2) + sg.sum(sol.fun)
    sg.check_grads(loss, theta, at, order=2)


def test_minimize_with_an_active_bound():
    """The minimiser of (x0 - a)^2 + (x1 - 2a)^2 with x1 <= u: x0 = a, x1 = u where 2a > u;
    the component at the bound follows the bound."""
    a, u = sg.var("a"), sg.var("u")
    res = sopt.minimize(lambda x, a: (x[0] - a) ** 2 + (x[1] - 2 * a) ** 2, [0.0, 0.0],
                        args=(a,), method="L-BFGS-B", bounds=[(None, None), (-5.0, u)],
                        options={"ftol": 1e-16, "gtol": 1e-12})
    at = {"a": 1.0, "u": 1.5}
    x, Ja, Ju = sg.evaluate([res.x, sg.jacobian(res.x, a), sg.jacobian(res.x, u)], at)
    np.testing.assert_allclose(x, [1.0, 1.5], rtol=1e-8)
    np.testing.assert_allclose(Ja, [1.0, 0.0], atol=1e-8)
    np.testing.assert_allclose(Ju, [0.0, 1.0], atol=1e-8)
