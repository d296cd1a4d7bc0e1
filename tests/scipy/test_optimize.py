"""``symgrad.scipy.optimize``: SciPy's own solves, the solution's derivatives against closed
forms, SciPy's result fields, the emitted module (the implicit-function rules themselves:
``tests/transforms/test_implicit.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import symgrad as sg
import symgrad.scipy.optimize as sopt
from symgrad.errors import BackendError, DifferentiationError, UnsupportedError


@pytest.mark.parametrize("jac", ["pair", "function", False])
def test_root_with_the_users_jacobian(jac):
    p = sg.var("p")
    f = lambda x, p: x ** 3 + x - p  # noqa: E731
    df = lambda x, p: sg.diag(3 * x ** 2 + 1.0)  # noqa: E731
    if jac == "pair":
        sol = sopt.root(lambda x, p: (f(x, p), df(x, p)), [1.0, 2.0], args=(p,), jac=True)
    else:
        sol = sopt.root(f, [1.0, 2.0], args=(p,), jac=df if jac == "function" else False)
    x, g = sg.evaluate([sol.x, sg.grad(sg.sum(sol.x), p)], {"p": 2.0})
    np.testing.assert_allclose(x, [1.0, 1.0], rtol=1e-10)
    np.testing.assert_allclose(g, 0.5, rtol=1e-9)


def test_root_result_fields_are_scipys_run_time_values():
    p = sg.var("p")
    sol = sopt.root(lambda x: x ** 2 - p, [3.0], method="hybr")
    ref = scipy.optimize.root(lambda x: x ** 2 - 4.0, [3.0], method="hybr",
                              jac=lambda x: np.diag(2 * x))
    got = sg.evaluate([sol.success, sol.status, sol.nfev, sol.njev, sol.fun], {"p": 4.0})
    assert got[:4] == [ref.success, ref.status, ref.nfev, ref.njev]
    np.testing.assert_allclose(got[4], ref.fun, atol=1e-14)
    with pytest.raises(UnsupportedError, match="status"):
        sol.message  # noqa: B018


def test_fsolve_with_full_output():
    c = sg.var("c", shape=(2,))
    x, info, ier, mesg = sopt.fsolve(lambda x, c: sg.stack([x[0] ** 2 - c[0], x[1] - c[1]]),
                                     [1.0, 1.0], args=(c,), full_output=True)
    assert mesg is None
    got = sg.evaluate([x, sg.jacobian(x, c), ier, info["fvec"]], {"c": np.array([9.0, 2.0])})
    np.testing.assert_allclose(got[0], [3.0, 2.0], rtol=1e-12)
    np.testing.assert_allclose(got[1], [[1 / 6, 0.0], [0.0, 1.0]], rtol=1e-10)
    assert got[2] == 1
    np.testing.assert_allclose(got[3], 0.0, atol=1e-12)


@pytest.mark.parametrize("name", ["brentq", "brenth", "ridder", "bisect", "toms748"])
def test_bracketing_root_finders(name):
    s = sg.var("s")
    fn = getattr(sopt, name)
    x, r = fn(lambda x, s: sg.exp(x) - s * x - 2.0, 0.0, 3.0, args=(s,), xtol=1e-14,
              full_output=True)
    xv, g, h, conv = sg.evaluate([x, sg.grad(x, s), sg.grad(sg.grad(x, s), s), r.converged],
                                 {"s": 0.5})
    ref = getattr(scipy.optimize, name)(lambda x: np.exp(x) - 0.5 * x - 2.0, 0.0, 3.0,
                                        xtol=1e-14)
    assert conv and abs(xv - ref) < 1e-12
    # implicit: dx/ds = x / (e^x - s); the second derivative by differentiating that
    d1 = xv / (np.exp(xv) - 0.5)
    d2 = (d1 * (np.exp(xv) - 0.5) - xv * (np.exp(xv) * d1 - 1.0)) / (np.exp(xv) - 0.5) ** 2
    np.testing.assert_allclose([g, h], [d1, d2], rtol=1e-9)


@pytest.mark.parametrize("kw", [dict(bracket=(0.0, 3.0)), dict(bracket=(0.0, 3.0),
                                                                method="brenth"),
                                dict(x0=1.0, fprime=lambda x, k: 3 * x ** 2),
                                dict(x0=1.0, x1=1.5, method="secant"),
                                dict(x0=1.0, fprime=True, method="newton")])
def test_root_scalar_methods(kw):
    k = sg.var("k")
    if kw.get("fprime") is True:
        f = lambda x, k: (x ** 3 - k, 3 * x ** 2)  # noqa: E731
    else:
        f = lambda x, k: x ** 3 - k  # noqa: E731
    r = sopt.root_scalar(f, args=(k,), xtol=1e-14, **kw)
    got = sg.evaluate([r.root, sg.grad(r.root, k), r.converged], {"k": 8.0})
    np.testing.assert_allclose(got[:2], [2.0, 1 / 12], rtol=1e-9)
    assert got[2]


def test_newton_scalar_and_elementwise():
    a = sg.var("a", shape=(3,))
    x = sopt.newton(lambda x, a: sg.cos(x) - a * x, np.ones(3), args=(a,), tol=1e-14)
    av = np.array([0.5, 1.0, 2.0])
    xv, J = sg.evaluate([x, sg.jacobian(x, a)], {"a": av})
    np.testing.assert_allclose(np.cos(xv), av * xv, rtol=1e-12)
    np.testing.assert_allclose(J, np.diag(xv / (-np.sin(xv) - av)), rtol=1e-9)
    b = sg.var("b")
    xs, r = sopt.newton(lambda x: x ** 2 - b, 1.0, fprime=lambda x: 2 * x, full_output=True)
    np.testing.assert_allclose(sg.evaluate([xs, sg.grad(xs, b)], {"b": 2.0}),
                               [np.sqrt(2), 0.5 / np.sqrt(2)], rtol=1e-12)


X = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 0.5], [1.0, 2.0, -1.0], [1.0, 3.0, 0.0],
              [1.0, 4.0, 1.5]])
Y = np.array([1.0, 2.2, 2.9, 4.1, 5.2])


def ridge(w, lam):
    return np.sum((X @ w - Y) ** 2) + lam * np.sum(w ** 2)


def ridge_closed_form(lam):
    K = X.T @ X + lam * np.eye(3)
    w = np.linalg.solve(K, X.T @ Y)
    return w, -np.linalg.solve(K, w), 2 * np.linalg.solve(K, np.linalg.solve(K, w))


@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B", "CG", "Newton-CG", "trust-exact",
                                    "trust-ncg", "dogleg", "trust-krylov", "SLSQP", "TNC"])
def test_minimize_ridge_hyperparameter_gradient_matches_the_closed_form(method):
    lam = sg.var("lam")
    options = {"L-BFGS-B": {"ftol": 1e-16, "gtol": 1e-12}, "TNC": {"gtol": 1e-12},
               "SLSQP": {"ftol": 1e-16}}.get(method, {})
    res = sopt.minimize(ridge, np.zeros(3), args=(lam,), method=method, tol=1e-13,
                        options=options)
    w, dw = sg.evaluate([res.x, sg.jacobian(res.x, lam)], {"lam": 0.3})
    w_ref, dw_ref, d2w_ref = ridge_closed_form(0.3)
    np.testing.assert_allclose(w, w_ref, rtol=1e-6)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-5)
    if method == "BFGS":
        d2w = sg.evaluate(sg.jacobian(sg.jacobian(res.x, lam), lam), {"lam": 0.3})
        np.testing.assert_allclose(d2w, d2w_ref, rtol=1e-5)


def test_minimize_without_gradients_uses_the_users_method():
    lam = sg.var("lam")
    res = sopt.minimize(ridge, np.zeros(3), args=(lam,), method="Nelder-Mead",
                        options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000,
                                 "maxfev": 40000})
    w, dw = sg.evaluate([res.x, sg.jacobian(res.x, lam)], {"lam": 0.3})
    w_ref, dw_ref, _ = ridge_closed_form(0.3)
    np.testing.assert_allclose(w, w_ref, rtol=1e-7)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-5)


def test_minimize_fields_and_refusals():
    lam = sg.var("lam")
    res = sopt.minimize(ridge, np.zeros(3), args=(lam,), method="BFGS")
    ok, nit, fun, jac = sg.evaluate([res.success, res.nit, res.fun, res.jac], {"lam": 0.3})
    ref = scipy.optimize.minimize(ridge, np.zeros(3), args=(0.3,), method="BFGS",
                                  jac=lambda w, lam: 2 * X.T @ (X @ w - Y) + 2 * lam * w)
    assert ok and nit == ref.nit
    np.testing.assert_allclose(fun, ref.fun, rtol=1e-12)
    np.testing.assert_allclose(jac, ref.jac, atol=1e-9)
    with pytest.raises(DifferentiationError, match="run-time"):
        sg.grad(sg.sum(res.jac) + sg.sum(res.x), lam)
    with pytest.raises(UnsupportedError, match="penalty"):
        sopt.minimize(ridge, np.zeros(3), args=(lam,),
                      constraints=[{"type": "eq", "fun": lambda w: w[0]}])
    with pytest.raises(UnsupportedError, match="callback"):
        sopt.minimize(ridge, np.zeros(3), args=(lam,), callback=print)


@pytest.mark.parametrize("loss", ["linear", "soft_l1", "huber", "cauchy", "arctan"])
def test_least_squares_gradient_every_loss(loss):
    t = np.linspace(0.0, 2.0, 7)
    y = sg.var("y", shape=(7,))
    fit = sopt.least_squares(lambda c, y: c[0] * sg.exp(c[1] * t) - y, [1.0, 0.1], args=(y,),
                             loss=loss, f_scale=0.5, xtol=1e-15, ftol=1e-15, gtol=1e-15)
    yv = 1.5 * np.exp(0.4 * t) + np.array([0.1, -0.2, 0.05, 0.3, -0.1, 0.0, 0.2])
    x, J = sg.evaluate([fit.x, sg.jacobian(fit.x, y)], {"y": yv})
    # the implicit closed form -H_xx^-1 H_xy of the cost, its Hessian by JAX at SciPy's x
    jax = pytest.importorskip("jax")
    with jax.enable_x64(True):
        rho = {"linear": lambda z: z, "soft_l1": lambda z: 2 * ((1 + z) ** 0.5 - 1),
               "huber": lambda z: jax.numpy.where(z <= 1, z, 2 * z ** 0.5 - 1),
               "cauchy": jax.numpy.log1p, "arctan": jax.numpy.arctan}[loss]

        def cost(xy):
            c, yy = xy[:2], xy[2:]
            f = c[0] * jax.numpy.exp(c[1] * t) - yy
            return 0.5 * 0.25 * jax.numpy.sum(rho((f / 0.5) ** 2))

        H = np.asarray(jax.hessian(cost)(np.concatenate([x, yv])))
    np.testing.assert_allclose(J, -np.linalg.solve(H[:2, :2], H[:2, 2:]), rtol=1e-9, atol=1e-12)
    if loss == "linear":
        J = sg.evaluate(sg.jacobian(fit.x, y), {"y": yv})
        x = sg.evaluate(fit.x, {"y": yv})
        A = np.stack([np.exp(x[1] * t), x[0] * t * np.exp(x[1] * t)], 1)
        r = x[0] * np.exp(x[1] * t) - yv
        H = A.T @ A + np.array([[0.0, r @ (t * np.exp(x[1] * t))],
                                [r @ (t * np.exp(x[1] * t)),
                                 r @ (x[0] * t ** 2 * np.exp(x[1] * t))]])
        np.testing.assert_allclose(J, np.linalg.solve(H, A.T), rtol=1e-7)


def test_least_squares_with_bounds_and_fields():
    y = sg.var("y", shape=(3,))
    fit = sopt.least_squares(lambda c: c - y, np.zeros(3), bounds=(-1.0, 1.0))
    at = {"y": np.array([0.5, 2.0, -3.0])}
    x, J, mask, cost = sg.evaluate([fit.x, sg.jacobian(fit.x, y), fit.active_mask, fit.cost],
                                   at)
    np.testing.assert_allclose(x, [0.5, 1.0, -1.0], atol=1e-8)
    np.testing.assert_allclose(J, np.diag([1.0, 0.0, 0.0]), atol=1e-8)
    assert mask.tolist() == [0, 1, -1]
    np.testing.assert_allclose(cost, 0.5 * (1.0 + 4.0), rtol=1e-8)


def banded(x, p):
    """A 1,000-unknown banded nonlinear system (a discretised -u'' + u^3 = p)."""
    n = x.shape[0]
    h2 = (1.0 / (n + 1)) ** 2
    left = sg.concatenate([sg.zeros(1), x[:-1]])
    right = sg.concatenate([x[1:], sg.zeros(1)])
    return (2 * x - left - right) / h2 + x ** 3 - p


def test_banded_system_of_1000_unknowns_value_and_gradient():
    n = 1000
    p = sg.var("p", shape=(n,))
    w = np.linspace(1.0, 2.0, n)
    sol = sopt.root(banded, np.zeros(n), args=(p,), method="hybr")
    loss = sg.sum(sol.x * w)
    pv = 50.0 * np.sin(np.linspace(0, 3, n)) + 10.0
    fn = sg.compile([loss, sol.x, sg.grad(loss, p)], [p])
    value, x, g = fn(pv)
    assert np.abs(banded_np(x, pv)).max() < 1e-6 * np.abs(pv).max() / (1.0 / (n + 1)) ** 2
    h2 = (1.0 / (n + 1)) ** 2
    J = (np.diag(np.full(n, 2.0)) - np.eye(n, k=1) - np.eye(n, k=-1)) / h2 + np.diag(3 * x ** 2)
    np.testing.assert_allclose(g, np.linalg.solve(J.T, w), rtol=1e-9)
    np.testing.assert_allclose(value, x @ w, rtol=1e-14)


def banded_np(x, p):
    n = x.shape[0]
    h2 = (1.0 / (n + 1)) ** 2
    return (2 * x - np.r_[0.0, x[:-1]] - np.r_[x[1:], 0.0]) / h2 + x ** 3 - p


def test_emitted_module_calls_scipy_and_matches_evaluate():
    p = sg.var("p", shape=(2,))
    sol = sopt.root(lambda x, p: x ** 3 + x - p, np.zeros(2), args=(p,))
    loss = sg.sum(sol.x ** 2)
    outs = [loss, sg.grad(loss, p), sg.hessian(loss, p), sol.nfev]
    src = sg.to_source(outs, [p])
    assert "import scipy.optimize" in src and "def _sg_fn1(" in src
    ns: dict = {}
    exec(compile(src, "<solver>", "exec"), ns)  # noqa: S102 - our own emitted module
    pv = np.array([2.0, 10.0])
    for got, ref in zip(ns["f"](pv), sg.evaluate(outs, {"p": pv})):
        np.testing.assert_allclose(got, ref, rtol=1e-13)
    with pytest.raises(BackendError, match="SciPy solver"):
        sg.to_source(loss, [p], backend="jax")


def test_a_result_changed_in_place_does_not_change_the_next_call():
    """The solver's results are remembered for the nodes of one call: each caller gets its
    own copy."""
    p = sg.var("p")
    sol = sopt.root(lambda x: x ** 3 - p, [1.0])
    first = sg.evaluate(sol.x, {"p": 8.0})
    first[:] = -1.0
    np.testing.assert_allclose(sg.evaluate(sol.x, {"p": 8.0}), [2.0], rtol=1e-10)
    fn = sg.compile(sol.x, [p])
    out = fn(8.0)
    out[:] = -1.0
    np.testing.assert_allclose(fn(8.0), [2.0], rtol=1e-10)
