"""``symgrad.scipy.integrate``: SciPy's own solves, ``odeint`` against
``jax.experimental.ode.odeint``, compiled functions, failures and refusals (the sensitivity
rules against finite differences: ``tests/transforms/test_sensitivity.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate

import symgrad as sg
from symgrad.errors import BackendError, UnsupportedError
from symgrad.scipy.integrate import odeint, solve_ivp
from tests.support.odes import LV_OBS, LV_TIMES, lotka_volterra


def test_odeint_matches_jax():
    jax = pytest.importorskip("jax")
    ode = pytest.importorskip("jax.experimental.ode")
    p = sg.var("p", shape=(2,))
    ts = np.linspace(0.0, 3.0, 7)

    def rhs(y, t, p):
        return sg.stack([y[1], -p[0] * sg.sin(y[0]) - p[1] * y[1]])

    y = odeint(rhs, [1.0, 0.0], ts, args=(p,), rtol=1e-12, atol=1e-12)
    loss = sg.sum(y[:, 0] ** 2)
    pv = np.array([2.0, 0.3])
    got = sg.evaluate([y, sg.grad(loss, p)], {"p": pv})
    with jax.enable_x64(True):
        jnp = jax.numpy

        def jrhs(y, t, p):
            return jnp.stack([y[1], -p[0] * jnp.sin(y[0]) - p[1] * y[1]])

        def jloss(p):
            yy = ode.odeint(jrhs, jnp.array([1.0, 0.0]), jnp.asarray(ts), p, rtol=1e-12,
                            atol=1e-12)
            return jnp.sum(yy[:, 0] ** 2), yy

        (ref_loss, ref_y), ref_g = jax.value_and_grad(jloss, has_aux=True)(jnp.asarray(pv))
    np.testing.assert_allclose(got[0], ref_y, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got[1], ref_g, rtol=1e-6)
    ref = scipy.integrate.odeint(lambda y, t: [y[1], -2.0 * np.sin(y[0]) - 0.3 * y[1]],
                                 [1.0, 0.0], ts, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[0], ref, rtol=1e-9, atol=1e-12)


def test_odeint_full_output_and_start_time_derivative():
    t = sg.var("t", shape=(3,))
    y, info = odeint(lambda y, s: -y, [1.0], t, full_output=True, rtol=1e-12, atol=1e-12)
    tv = np.array([0.5, 1.0, 2.0])
    got = sg.evaluate([y, sg.grad(y[2, 0], t), info["nfe"]], {"t": tv})
    np.testing.assert_allclose(got[0][:, 0], np.exp(-(tv - 0.5)), rtol=1e-9)
    # y(t2; t0) = exp(-(t2 - t0)): d/dt0 = y, d/dt2 = -y
    e = np.exp(-1.5)
    np.testing.assert_allclose(got[1], [e, 0.0, -e], rtol=1e-8, atol=1e-12)
    assert got[2].shape == (2,) and got[2][-1] > 0


def test_value_and_grad_of_a_function_compiles_and_runs():
    def misfit(p):
        sol = solve_ivp(lotka_volterra, (0.0, 10.0), np.array([10.0, 5.0]), t_eval=LV_TIMES,
                        args=tuple(p), rtol=1e-10, atol=1e-10)
        return np.sum((sol.y - LV_OBS) ** 2)

    vg = sg.value_and_grad(misfit)
    p0 = np.array([1.1, 0.4, 0.1, 0.4])
    value, grad = vg(p0)
    a, b, c, d = (sg.var(n) for n in "abcd")
    ref = sg.evaluate(sg.grad(misfit((a, b, c, d)), [a, b, c, d]),
                      {"a": 1.1, "b": 0.4, "c": 0.1, "d": 0.4})
    np.testing.assert_allclose(grad, ref, rtol=1e-12)


def test_a_failed_solve_gives_nan_and_says_so():
    a = sg.var("a")
    sol = solve_ivp(lambda t, y: a * y ** 2, (0.0, 2.0), [1.0], t_eval=[0.5, 1.5])
    y, ok, status = sg.evaluate([sol.y, sol.success, sol.status], {"a": 1.0})
    assert not ok and status == -1
    assert np.isfinite(y[0, 0]) and np.isnan(y[0, 1])


def test_refusals_name_the_fix():
    a = sg.var("a")
    with pytest.raises(UnsupportedError, match="t_eval=np.linspace"):
        solve_ivp(lambda t, y: -a * y, (0.0, 1.0), [1.0])
    with pytest.raises(UnsupportedError, match="dense_output"):
        solve_ivp(lambda t, y: -a * y, (0.0, 1.0), [1.0], t_eval=[1.0], dense_output=True)
    with pytest.raises(UnsupportedError, match="events"):
        solve_ivp(lambda t, y: -a * y, (0.0, 1.0), [1.0], t_eval=[1.0], events=lambda t, y: y)
    sol = solve_ivp(lambda t, y: -a * y, (0.0, 1.0), [1.0], t_eval=[1.0])
    with pytest.raises(BackendError, match="SciPy solver"):
        sg.to_source(sol.y, backend="torch")


def test_second_derivatives_of_odeint_in_times_and_args_compile():
    """odeint differentiated twice in y0, its times and its args: the scan of the
    sensitivity system over the output times holds its unit seeds as array constants; the
    compiled module passes them to the loop as operands, and equals the interpreter and
    central differences of the gradient."""
    rng = np.random.default_rng(5)
    weights = rng.standard_normal((4, 3))

    def func(y, t, arg1, arg2):
        return -np.sqrt(t) - y + arg1 - np.mean((y + arg2) ** 2)

    at = {"y0": rng.standard_normal(3), "t": np.linspace(0.1, 0.2, 4),
          "a1": rng.standard_normal(3), "a2": rng.standard_normal(3)}
    xs = [sg.var(k, shape=v.shape) for k, v in at.items()]
    f = sg.sum(odeint(func, xs[0], xs[1], (xs[2], xs[3]), rtol=1e-10, atol=1e-10) * weights)
    g = sg.concatenate(list(sg.grad(f, xs)))
    c = rng.standard_normal(13)
    h = sg.grad(sg.sum(g * c), xs)
    want = sg.evaluate(list(h), at)
    got = sg.compile(list(h), inputs=xs)(*at.values())
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    step = 1e-5
    for j, (name, k) in enumerate((("y0", 1), ("t", 2), ("a1", 0), ("a2", 2))):
        e = np.zeros_like(at[name])
        e[k] = step

        def dg(sign, name=name, e=e):
            return np.sum(sg.evaluate(g, {**at, name: at[name] + sign * e}) * c)

        fd = (dg(1) - dg(-1)) / (2 * step)
        assert want[j][k] == pytest.approx(fd, rel=1e-4, abs=1e-6)
