"""Cumulative sums and products and ``prod``: NumPy's values along any axis (flattened for
``axis=None``), gradients (and Hessians) equal to JAX's, including at inputs with zeros (the
rules never divide by ``x``), forward mode equal to JAX's ``jvp``, and ``all``/``any``."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

R = np.random.default_rng(3)
X = R.uniform(0.5, 1.5, (3, 4)) * np.sign(R.standard_normal((3, 4)))
ZEROS = X.copy()
ZEROS[0, 1] = ZEROS[2, 1] = ZEROS[2, 3] = 0.0  # one zero in row 0, two in row 2

CASES = [("cumsum", {"axis": 1}), ("cumsum", {"axis": None}), ("cumprod", {"axis": 0}),
         ("cumprod", {"axis": -1}), ("cumprod", {"axis": None}), ("prod", {"axis": 1}),
         ("prod", {"axis": (0, 1), "keepdims": True}), ("prod", {})]


@pytest.fixture(scope="module")
def jnp(x64):
    jax = pytest.importorskip("jax")
    return jax.numpy


@pytest.mark.parametrize("at", [X, ZEROS], ids=["nonzero", "zeros"])
@pytest.mark.parametrize("name, kw", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_values_and_derivatives_equal_jax(name, kw, at, jnp):
    import jax

    x = sg.var("x", shape=X.shape)
    y = getattr(sg, name)(x, **kw)
    want = getattr(np, name)(at, **kw)
    np.testing.assert_allclose(sg.evaluate(y, {"x": at}), want, rtol=1e-14)
    w = np.cos(np.arange(np.size(want))).reshape(np.shape(want))

    def ref(v):
        return jnp.sum(jnp.sin(getattr(jnp, name)(v, **kw)) * w)

    f = sg.sum(sg.sin(y) * w)
    np.testing.assert_allclose(sg.evaluate(sg.grad(f, x), {"x": at}), jax.grad(ref)(at),
                               rtol=1e-12, atol=1e-14)
    t = np.cos(np.arange(X.size) * 0.7).reshape(X.shape)
    _, want_t = jax.jvp(lambda v: getattr(jnp, name)(v, **kw), (at,), (t,))
    np.testing.assert_allclose(sg.evaluate(sg.jvp(y, x, t), {"x": at}), want_t, rtol=1e-13,
                               atol=1e-15)


@pytest.mark.parametrize("name, kw", [("cumprod", {"axis": 0}), ("prod", {"axis": 1})])
def test_hessians_at_zeros_equal_jax(name, kw, jnp):
    """Second order where a rule dividing by x would give NaN."""
    import jax

    x = sg.var("x", shape=X.shape)
    want = getattr(np, name)(ZEROS, **kw)
    w = np.cos(np.arange(np.size(want))).reshape(np.shape(want))
    f = sg.sum(sg.sin(getattr(sg, name)(x, **kw)) * w)
    H = sg.evaluate(sg.hessian(f, x), {"x": ZEROS})
    want_H = jax.hessian(lambda v: jnp.sum(jnp.sin(getattr(jnp, name)(v, **kw)) * w))(ZEROS)
    np.testing.assert_allclose(H, want_H, rtol=1e-11, atol=1e-13)


def test_the_gradient_of_prod_is_the_product_of_the_others():
    v = np.array([2.0, 0.0, 5.0, 0.5])
    x = sg.var("x", shape=(4,))
    grad = sg.evaluate(sg.grad(sg.prod(x), x), {"x": v})
    np.testing.assert_array_equal(grad, [0.0, 5.0, 0.0, 0.0])
    grad = sg.evaluate(sg.grad(sg.prod(x), x), {"x": [2.0, 3.0, 5.0, 0.5]})
    np.testing.assert_allclose(grad, [7.5, 5.0, 3.0, 30.0], rtol=1e-15)


def test_all_and_any_are_numpys():
    b = sg.var("b", shape=(3, 4), dtype="bool")
    m = R.random((3, 4)) < 0.6
    for name, kw in [("all", {"axis": 1}), ("any", {"axis": 0, "keepdims": True}),
                     ("all", {}), ("any", {})]:
        got = sg.evaluate(getattr(sg, name)(b, **kw), {"b": m})
        np.testing.assert_array_equal(got, getattr(np, name)(m, **kw))
