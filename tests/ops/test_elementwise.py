"""Elementwise ops: NumPy's broadcasting and NumPy 2's result dtypes, values and gradients
(with broadcast operands summed back) equal to JAX's, second derivatives equal to JAX's,
comparisons that are boolean and pass no gradient, and ``where`` sending each branch its
part of the adjoint."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from tests.support.complex_order import draw, same

R = np.random.default_rng(13)
POS = R.uniform(0.2, 1.4, (3, 4))  # in every function's domain (tan: below pi/2)
ROW = R.uniform(0.5, 1.5, (1, 4))
COL = R.uniform(-1.0, 1.0, (3, 1))

UNARY = ["exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh",
         "sigmoid", "softplus", "relu", "abs", "sign", "square", "negative"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum"]


@pytest.fixture(scope="module")
def jax(x64):
    return pytest.importorskip("jax")


def _jax_fn(jax, name):
    return getattr(jax.nn, name) if name in ("sigmoid", "softplus", "relu") else \
        getattr(jax.numpy, name)


@pytest.mark.parametrize("name", UNARY)
def test_unary_values_first_and_second_derivatives_equal_jax(name, jax):
    x = sg.var("x", shape=POS.shape)
    at = POS - 0.7 if name in ("relu", "abs", "sign") else POS  # both sides of the kink
    y = getattr(sg, name)(x)
    fj = _jax_fn(jax, name)
    np.testing.assert_allclose(sg.evaluate(y, {"x": at}), fj(at), rtol=1e-14)
    w = np.arange(1.0, 13.0).reshape(3, 4)
    g = sg.evaluate(sg.grad(sg.sum(y * w), x), {"x": at})
    np.testing.assert_allclose(g, jax.grad(lambda v: (fj(v) * w).sum())(at), rtol=1e-13,
                               atol=1e-15)
    t = np.ones(at.shape)  # the diagonal of the Hessian: the jvp of the gradient
    d2 = sg.evaluate(sg.jvp(sg.grad(sg.sum(y), x), x, t), {"x": at})
    want = jax.jvp(jax.grad(lambda v: fj(v).sum()), (at,), (t,))[1]
    np.testing.assert_allclose(d2, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcasting_values_and_gradients_equal_jax(name, jax):
    a, b = sg.var("a", shape=ROW.shape), sg.var("b", shape=COL.shape)
    y = getattr(sg, name)(a, b)
    at = {"a": ROW, "b": COL}
    want = getattr(np, name)(ROW, COL)
    value = sg.evaluate(y, at)
    assert y.shape == want.shape == (3, 4)
    np.testing.assert_allclose(value, want, rtol=1e-14)
    w = np.cos(np.arange(12.0)).reshape(3, 4)
    ga, gb = sg.evaluate(list(sg.grad(sg.sum(y * w), [a, b])), at)
    ja, jb = jax.grad(lambda p, q: (getattr(jax.numpy, name)(p, q) * w).sum(), (0, 1))(ROW, COL)
    assert ga.shape == ROW.shape and gb.shape == COL.shape  # summed back over broadcasting
    np.testing.assert_allclose(ga, ja, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(gb, jb, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("left, right", [("int64", "float32"), ("float32", "float64"),
                                         ("bool", "int64"), ("int64", "int64"),
                                         ("float32", "float32"), ("bool", "float32")])
def test_result_dtypes_are_numpys(left, right):
    a, b = sg.var("a", shape=(2,), dtype=left), sg.var("b", shape=(3, 1), dtype=right)
    av, bv = np.ones(2, dtype=left), np.ones((3, 1), dtype=right)
    for name in ("add", "multiply", "maximum"):
        y = getattr(sg, name)(a, b)
        want = getattr(np, name)(av, bv)
        assert (y.shape, y.dtype) == (want.shape, want.dtype.name), name
        assert sg.evaluate(y, {"a": av, "b": bv}).dtype == want.dtype
    y = a / b
    assert y.dtype == (av / bv).dtype.name


def test_comparisons_are_boolean_and_pass_no_gradient():
    x, y = sg.var("x", shape=(3, 4)), sg.var("y", shape=(1, 4))
    at = {"x": POS, "y": ROW}
    for op in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal"):
        c = getattr(sg, op)(x, y)
        assert c.dtype == "bool"
        np.testing.assert_array_equal(sg.evaluate(c, at), getattr(np, op)(POS, ROW))
    f = sg.sum(sg.where(x < y, x, 0.0))  # the mask is a constant of the derivative
    np.testing.assert_array_equal(sg.evaluate(sg.grad(f, x), at), (POS < ROW).astype(float))


def test_where_sends_each_branch_its_part_of_the_adjoint(jax):
    c = sg.var("c", shape=(3, 1), dtype="bool")
    a, b = sg.var("a", shape=(3, 4)), sg.var("b", shape=(1, 4))
    cv = np.array([[True], [False], [True]])
    at = {"c": cv, "a": POS, "b": ROW}
    y = sg.where(c, sg.sin(a), b ** 2)
    np.testing.assert_allclose(sg.evaluate(y, at), np.where(cv, np.sin(POS), ROW ** 2))
    ga, gb = sg.evaluate(list(sg.grad(sg.sum(y), [a, b])), at)
    jnp = jax.numpy
    ja, jb = jax.grad(lambda p, q: jnp.where(cv, jnp.sin(p), q ** 2).sum(), (0, 1))(POS, ROW)
    np.testing.assert_allclose(ga, ja, rtol=1e-14)
    np.testing.assert_allclose(gb, jb, rtol=1e-14)
    assert gb.shape == (1, 4)


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin", "less", "less_equal",
                                  "greater", "greater_equal"])
def test_complex_comparisons_are_numpys_lexicographic_order(name):
    """maximum/minimum give the NaN operand (the first if both), fmax/fmin the other one;
    a comparison beside a NaN is False, as NumPy's."""
    rng = np.random.default_rng(11)
    z = sg.var("z", shape=(4, 3), dtype="complex128")
    w = sg.var("w", shape=(3,), dtype="complex128")
    e = getattr(sg, name)(z, w)
    for _ in range(40):
        zv, wv = draw(rng, (4, 3)), draw(rng, (3,))
        with np.errstate(invalid="ignore"):  # NumPy's comparisons of NaNs warn
            want = getattr(np, name)(zv, wv)
        assert same(sg.evaluate(e, {"z": zv, "w": wv}), want), (zv, wv)
    assert same(sg.evaluate(sg.maximum(z, 1.0), {"z": zv}), np.maximum(zv, 1.0))


def test_the_gradient_of_a_complex_maximum_splits_ties_as_jax(x64):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    zv = np.array([1 + 3j, 0.5 + 9j, 2 - 1j, 1 + 2j])
    wv = np.array([1 + 3j, 0.5 + 8j, 2 + 1j, 1 + 2j])
    z = sg.var("z", shape=(4,), dtype="complex128")
    w = sg.var("w", shape=(4,), dtype="complex128")
    c = np.array([0.5 + 1j, -2j, 1.5, 1 - 1j])
    loss = sg.sum(sg.real(sg.maximum(z, w) * c) + sg.abs(sg.minimum(z, w)) ** 2)
    want = jax.grad(lambda u, v: jnp.sum(jnp.real(jnp.maximum(u, v) * c)
                                         + jnp.abs(jnp.minimum(u, v)) ** 2),
                    argnums=(0, 1))(zv, wv)
    got = sg.evaluate(list(sg.grad(loss, [z, w])), {"z": zv, "w": wv})
    for g, ref in zip(got, want):
        np.testing.assert_allclose(g, ref, rtol=1e-14)
