"""A solver's callbacks in emitted code: module-level functions printed once, their array
constants module constants, the module standalone (NumPy and SciPy only), every target."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.scipy.optimize as sopt
from symgrad.errors import BackendError
from symgrad.scipy.integrate import solve_ivp


def _run(src: str, *args):
    ns: dict = {}
    exec(compile(src, "<emitted>", "exec"), ns)  # noqa: S102 - our own emitted module
    return ns["f"](*args)


def test_each_callback_is_printed_once_and_the_module_stands_alone():
    p = sg.var("p", shape=(3,))
    w = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 4.0]])  # an array constant
    sol = sopt.root(lambda x: w @ x + x ** 3 - p, np.zeros(3))
    loss = sg.sum(sol.x ** 2) + sg.sum(sol.fun)
    outs = [loss, sg.grad(loss, p), sol.nfev, sol.success]
    src = sg.to_source(outs, [p])
    assert src.count("def _sg_fn1(") == 1 and src.count("def _sg_fn2(") == 1
    assert "def _sg_fn3(" not in src  # the residual and its Jacobian, nothing else
    assert src.count("_sg_optimize(") == 1 + 3  # the helper, the solution and two fields
    pv = np.array([1.0, -2.0, 3.0])
    for got, ref in zip(_run(src, pv), sg.evaluate(outs, {"p": pv})):
        np.testing.assert_allclose(got, ref, rtol=1e-13)


def test_callback_constants_become_module_constants():
    t = sg.var("t")
    sol = solve_ivp(lambda s, y: np.array([[-2.0, 1.0], [1.0, -2.0]]) @ y * t, (0.0, 1.0),
                    [1.0, 0.0], t_eval=[1.0], method="Radau")
    src = sg.to_source(sol.y, [t])
    np.testing.assert_allclose(_run(src, 0.5), sg.evaluate(sol.y, {"t": 0.5}), rtol=1e-13)


def test_numba_target_runs_solvers_in_its_numpy_driver():
    pytest.importorskip("numba")
    k = sg.var("k")
    sol = solve_ivp(lambda s, y: -k * y, (0.0, 1.0), [1.0, 2.0], t_eval=[0.5, 1.0],
                    method="BDF")
    loss = sg.sum(sg.sin(sol.y))
    fn = sg.compile([loss, sg.grad(loss, k)], [k], backend="numba")
    np.testing.assert_allclose(fn(0.7), sg.evaluate([loss, sg.grad(loss, k)], {"k": 0.7}),
                               rtol=1e-12)


@pytest.mark.parametrize("backend", ["array_api", "jax", "torch"])
def test_array_targets_refuse_solver_calls_by_name(backend):
    p = sg.var("p")
    x = sopt.brentq(lambda x: x ** 3 - p, 0.0, 10.0)
    with pytest.raises(BackendError, match="optimize.*SciPy solver.*backend='numpy'"):
        sg.to_source(x, [p], backend=backend)


def test_implicit_functions_emit_on_every_target():
    """custom_root's value is its solve's, so every target writes it."""
    a = sg.var("a")
    x = sg.custom_root(lambda x: x ** 2 - a, 1.0,
                       lambda f, x0: sg.fori_loop(0, 8, lambda i, x: 0.5 * (x + a / x), x0),
                       lambda g, y: y / g(1.0))
    src = sg.to_source([x, sg.grad(x, a)], [a], backend="array_api")
    assert "custom_root" not in src.split('"""')[-1]
