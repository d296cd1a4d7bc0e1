"""Bessel functions in symgrad.scipy.special (j0 j1 y0 y1 k0 k1 k0e k1e, jv yv iv ive kv kve,
jn yn): SciPy's ufuncs on an Expr dispatch to them; values equal SciPy's in float64 and
float32; first and second derivatives equal SciPy's own derivative functions (``jvp``,
``yvp``, ``ivp``, ``kvp``, which use the recurrences independently); a derivative in the
order raises, never 0; every backend computes them and their gradients.

(The registry battery already checks every new op: shape/dtype rules, orders 1 and 2
against finite differences, forward mode, every backend's table.)"""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.scipy.special as ssp

sp = pytest.importorskip("scipy.special")

UNARY = ["j0", "j1", "y0", "y1", "k0", "k1", "k0e", "k1e"]
ORDERED = ["jv", "yv", "iv", "ive", "kv", "kve", "jn", "yn"]
X = np.array([0.3, 0.9, 1.7, 2.5, 4.0, 7.5, 13.0])
ORDERS = [0.0, 1.0, 2.0, 2.5, -1.5, 5.0]


def _d(fn, x: np.ndarray, order: int = 1) -> np.ndarray:
    """The ``order``-th derivative of ``fn`` elementwise at ``x`` (reverse mode, nested)."""
    v = sg.var("x", shape=x.shape)
    f = fn(v)
    for _ in range(order):
        f = sg.grad(sg.sum(f), v)
    return np.asarray(sg.evaluate(f, {"x": x}))


def _scaled(kind: str, v, x, n: int):
    """The n-th derivative (n <= 2) of e^x K_v(x) or e^-|x| I_v(x), by Leibniz from
    SciPy's kvp / ivp."""
    if kind == "kve":
        e, s, d = np.exp(x), 1.0, [sp.kv(v, x), sp.kvp(v, x, 1), sp.kvp(v, x, 2)]
    else:
        e, s, d = np.exp(-np.abs(x)), -np.sign(x), [sp.iv(v, x), sp.ivp(v, x, 1),
                                                    sp.ivp(v, x, 2)]
    if n == 1:
        return e * (d[1] + s * d[0])
    return e * (d[2] + 2 * s * d[1] + d[0])


_REF = {"jv": lambda v, x, n: sp.jvp(v, x, n), "yv": lambda v, x, n: sp.yvp(v, x, n),
        "iv": lambda v, x, n: sp.ivp(v, x, n), "kv": lambda v, x, n: sp.kvp(v, x, n),
        "ive": lambda v, x, n: _scaled("ive", v, x, n),
        "kve": lambda v, x, n: _scaled("kve", v, x, n)}
_UNARY_AS = {"j0": ("jv", 0), "j1": ("jv", 1), "y0": ("yv", 0), "y1": ("yv", 1),
             "k0": ("kv", 0), "k1": ("kv", 1), "k0e": ("kve", 0), "k1e": ("kve", 1)}


@pytest.mark.parametrize("name", UNARY + ORDERED)
def test_scipys_ufunc_on_an_expr_dispatches_and_equals_scipy(name):
    ref = getattr(sp, name)
    for dtype in (np.float64, np.float32):
        xs = X.astype(dtype)
        x = sg.var("x", shape=X.shape, dtype=np.dtype(dtype).name)
        if name in UNARY:
            f, want = ref(x), ref(xs)
        else:
            f, want = ref(2, x), ref(2, xs)
        assert isinstance(f, sg.Expr)
        got = sg.evaluate(f, {"x": xs})
        # float32 stays float32 (SciPy's yn has no float32 loop for an int order: float64)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want.astype(dtype))


@pytest.mark.parametrize("name", UNARY)
def test_unary_derivatives_equal_scipys_to_order_two(name):
    kind, v = _UNARY_AS[name]
    for n in (1, 2):
        np.testing.assert_allclose(_d(getattr(ssp, name), X, n), _REF[kind](v, X, n),
                                   rtol=1e-12, atol=1e-14, err_msg=f"{name} order {n}")


@pytest.mark.parametrize("name", ["jv", "yv", "iv", "ive", "kv", "kve"])
@pytest.mark.parametrize("v", ORDERS)
def test_order_v_derivatives_equal_scipys_to_order_two(name, v):
    xs = X if name in ("yv", "kv", "kve") else np.concatenate([X, -X[:3]])
    if name == "jv" and v != int(v):
        xs = X  # J_v of a non-integer order is complex for x < 0
    for n in (1, 2):
        got = _d(lambda x: getattr(ssp, name)(v, x), xs, n)
        np.testing.assert_allclose(got, _REF[name](v, xs, n), rtol=1e-11, atol=1e-14,
                                   err_msg=f"{name}({v}) order {n}")


def test_derivatives_at_zero_are_the_limits():
    zero = np.zeros(1)
    assert _d(ssp.j1, zero)[0] == 0.5
    np.testing.assert_allclose(_d(lambda x: ssp.jv(1, x), zero), [0.5])
    np.testing.assert_allclose(_d(lambda x: ssp.iv(1, x), zero), [0.5])
    np.testing.assert_allclose(_d(lambda x: ssp.jv(2, x), zero, 2), [0.25])
    np.testing.assert_allclose(_d(ssp.j0, zero, 2), [-0.5])


def test_a_derivative_in_the_order_raises_and_stop_gradient_holds_it():
    v, x = sg.var("v"), sg.var("x")
    for name in ("jv", "yv", "iv", "ive", "kv", "kve", "yn"):
        with pytest.raises(sg.DifferentiationError, match=r"the order v"):
            sg.grad(getattr(ssp, name)(v, x), v)
        with pytest.raises(sg.DifferentiationError):  # through x too: v is a variable
            sg.grad(getattr(ssp, name)(v * x, x), x)
    f = ssp.jv(sg.stop_gradient(v), x)
    got = sg.evaluate(sg.grad(f, x), {"v": 1.5, "x": 2.0})
    np.testing.assert_allclose(got, sp.jvp(1.5, 2.0), rtol=1e-13)


@pytest.mark.parametrize("backend", ["numpy", "array_api", "jax", "torch"])
def test_every_backend_computes_values_and_gradients(backend, x64):
    if backend != "numpy":
        pytest.importorskip({"array_api": "array_api_compat", "jax": "jax",
                             "torch": "torch"}[backend])
    x = sg.var("x", shape=X.shape)
    f = sg.sum(ssp.j0(x) + ssp.y1(x) * ssp.k0e(x) + ssp.jv(2.5, x) + ssp.ive(1, x)
               + ssp.kv(0.5, x) * ssp.k1(x))
    outs = [f, sg.grad(f, x), sg.grad(sg.sum(sg.grad(f, x)), x)]
    ref = sg.evaluate(outs, {"x": X})
    got = sg.compile(outs, backend=backend)(x=X)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-12, atol=1e-14)
