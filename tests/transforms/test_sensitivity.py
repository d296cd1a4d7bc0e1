"""Derivatives of integrator calls: parameter and initial-value gradients by forward
sensitivities and by the adjoint, explicit and stiff methods, against central finite
differences of SciPy's own solver at tight tolerances; stiff methods given the exact
Jacobian; forward mode and Hessians through forward sensitivities; the derivative with
respect to the output times; a second derivative through the adjoint refused with what to
use."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate

import symgrad as sg
from symgrad.errors import DifferentiationError
from symgrad.scipy.integrate import solve_ivp
from tests.support.finite_differences import central
from tests.support.odes import LV_AT, LV_OBS, LV_TIMES, lotka_volterra, robertson


def robertson_jac(t, y, k1, k2, k3):
    return [[-k1, k3 * y[2], k3 * y[1]],
            [k1, -2 * k2 * y[1] - k3 * y[2], -k3 * y[1]],
            [0.0, 2 * k2 * y[1], 0.0]]


ROB_TIMES = np.logspace(-5, 2, 12)
ROB_W = np.array([1.0, 1e4, 1.0])


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_lotka_volterra_gradients_match_finite_differences(method, sensitivity):
    p = [sg.var(n) for n in "abcd"]
    y0 = sg.var("y0", shape=(2,))
    sol = solve_ivp(lotka_volterra, (0.0, 10.0), y0, method=method, t_eval=LV_TIMES,
                    args=tuple(p), rtol=1e-11, atol=1e-11, sensitivity=sensitivity)
    loss = sg.sum((sol.y - LV_OBS) ** 2)
    fn = sg.compile([loss, *sg.grad(loss, [*p, y0])], [*p, y0])
    got = fn(*LV_AT.values())

    def misfit(v):
        r = scipy.integrate.solve_ivp(lotka_volterra, (0.0, 10.0), v[4:], method=method,
                                      t_eval=LV_TIMES, args=tuple(v[:4]), rtol=1e-13,
                                      atol=1e-13)
        return np.sum((r.y - LV_OBS) ** 2)

    v = np.array([1.1, 0.4, 0.1, 0.4, 10.0, 5.0])
    ref = central(misfit, v, 1e-6 * np.maximum(np.abs(v), 1.0))
    np.testing.assert_allclose(got[0], misfit(v), rtol=1e-8)
    grad = np.array([*got[1:5], *got[5]])
    assert np.max(np.abs(grad - ref) / np.abs(ref)) <= 1e-5


@pytest.mark.parametrize("method", ["BDF", "Radau"])
@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_robertson_stiff_gradients_match_finite_differences(method, sensitivity):
    k = [sg.var(n) for n in ("k1", "k2", "k3")]
    y0 = sg.var("y0", shape=(3,))
    sol = solve_ivp(robertson, (0.0, 100.0), y0, method=method, t_eval=ROB_TIMES,
                    args=tuple(k), rtol=1e-9, atol=1e-13, sensitivity=sensitivity)
    loss = sg.sum((sol.y * ROB_W[:, None]) ** 2)
    got = sg.compile(sg.grad(loss, [*k, y0]), [*k, y0])(0.04, 3e7, 1e4, np.array([1.0, 0, 0]))

    def misfit(v):
        r = scipy.integrate.solve_ivp(robertson, (0.0, 100.0), v[3:], method=method,
                                      t_eval=ROB_TIMES, args=tuple(v[:3]), rtol=1e-12,
                                      atol=1e-16, jac=robertson_jac)
        return np.sum((r.y * ROB_W[:, None]) ** 2)

    v = np.array([0.04, 3e7, 1e4, 1.0, 0.0, 0.0])
    ref = central(misfit, v, np.array([1e-6 * 0.04, 1e-6 * 3e7, 1e-6 * 1e4, 1e-6, 1e-7,
                                       1e-7]))
    grad = np.array([*got[:3], *got[3]])
    assert np.max(np.abs(grad - ref) / np.abs(ref)) <= 1e-4


def test_stiff_methods_get_the_exact_jacobian():
    k = sg.var("k")
    sol = solve_ivp(lambda t, y: [-k * y[0] * y[1], k * y[0] - y[1]], (0.0, 1.0),
                    [1.0, 0.5], method="BDF", t_eval=[1.0])
    src = sg.to_source([sol.y, sol.njev])
    assert src.count("def _sg_fn") == 2  # the right-hand side and its Jacobian
    ns: dict = {}
    exec(compile(src, "<ivp>", "exec"), ns)  # noqa: S102 - our own emitted module
    y, njev = ns["f"](0.7)
    ref = scipy.integrate.solve_ivp(lambda t, y: [-0.7 * y[0] * y[1], 0.7 * y[0] - y[1]],
                                    (0.0, 1.0), [1.0, 0.5], method="BDF", t_eval=[1.0],
                                    jac=lambda t, y: [[-0.7 * y[1], -0.7 * y[0]], [0.7, -1]])
    np.testing.assert_array_equal(y, ref.y)
    assert njev == ref.njev


def test_forward_mode_and_hessians_through_forward_sensitivities():
    a = sg.var("a", shape=(2,))
    sol = solve_ivp(lambda t, y, a: -a * y + sg.sin(t * a), (0.0, 2.0), [1.0, -1.0],
                    t_eval=[0.5, 1.0, 2.0], args=(a,), method="DOP853", rtol=1e-12,
                    atol=1e-12)
    loss = sg.sum(sol.y ** 2)
    at = {"a": np.array([0.7, 1.3])}
    J_rev, J_fwd = sg.evaluate([sg.jacobian(sol.y, a, mode="reverse"),
                                sg.jacfwd(sol.y, a)], at)
    np.testing.assert_allclose(J_rev, J_fwd, rtol=1e-9, atol=1e-12)
    sg.check_grads(loss, a, at, order=2)


def test_second_derivative_through_the_adjoint_says_what_to_use():
    a = sg.var("a")
    sol = solve_ivp(lambda t, y: -a * y, (0.0, 1.0), [1.0], t_eval=[1.0],
                    sensitivity="adjoint")
    with pytest.raises(DifferentiationError, match="sensitivity='forward'"):
        sg.hessian(sg.sum(sol.y), a)


def test_derivative_with_respect_to_the_output_times():
    t = sg.var("t", shape=(3,))
    a = 0.8
    sol = solve_ivp(lambda s, y: -a * y, (0.0, 2.0), [2.0], t_eval=t, rtol=1e-12,
                    atol=1e-12)
    tv = np.array([0.5, 1.0, 1.5])
    got = sg.evaluate(sg.grad(sg.sum(sol.y), t), {"t": tv})
    np.testing.assert_allclose(got, -a * 2.0 * np.exp(-a * tv), rtol=1e-9)
