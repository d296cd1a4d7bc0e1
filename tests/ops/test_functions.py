"""More of NumPy's elementwise functions: inverse trigonometric and hyperbolic functions,
logs and exponentials of other bases, and the two-argument functions give NumPy's values and
JAX's gradients; ``mod``/``fmod`` differentiate as NumPy's definitions say; rounding,
predicates and logic pass no gradient; ``fmax``/``fmin`` ignore NaN and split ties;
``astype`` converts as NumPy does."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

R = np.random.default_rng(17)
U = R.uniform(-0.9, 0.9, (2, 5))  # in (-1, 1): arcsin, arccos, arctanh
P = R.uniform(1.1, 3.0, (2, 5))  # above 1: arccosh, logs
Q = R.uniform(0.5, 2.0, (1, 5))

UNARY = {"arcsin": U, "arccos": U, "arctan": U, "arcsinh": U, "arccosh": P, "arctanh": U,
         "exp2": U, "log2": P, "log10": P, "cbrt": P, "reciprocal": P, "deg2rad": U,
         "rad2deg": U}
BINARY = ["arctan2", "hypot", "logaddexp", "logaddexp2", "mod", "fmod", "copysign",
          "float_power", "fmax", "fmin"]


@pytest.fixture(scope="module")
def jax(x64):
    return pytest.importorskip("jax")


@pytest.mark.parametrize("name", UNARY)
def test_unary_values_and_gradients_equal_jax(name, jax):
    at = UNARY[name]
    x = sg.var("x", shape=at.shape)
    y = getattr(sg, name)(x)
    np.testing.assert_allclose(sg.evaluate(y, {"x": at}), getattr(np, name)(at), rtol=1e-14)
    fj = getattr(jax.numpy, name)
    g = sg.evaluate(sg.grad(sg.sum(sg.sin(y)), x), {"x": at})
    np.testing.assert_allclose(g, jax.grad(lambda v: jax.numpy.sin(fj(v)).sum())(at),
                               rtol=1e-13)


@pytest.mark.parametrize("name", BINARY)
def test_binary_values_and_gradients_equal_jax(name, jax):
    a, b = sg.var("a", shape=P.shape), sg.var("b", shape=Q.shape)
    signs = np.where(R.random(P.shape) < 0.5, -1.0, 1.0)
    av = P * signs if name in ("arctan2", "mod", "fmod", "copysign") else P
    y = getattr(sg, name)(a, b)
    at = {"a": av, "b": Q}
    np.testing.assert_allclose(sg.evaluate(y, at), getattr(np, name)(av, Q), rtol=1e-14)
    fj = getattr(jax.numpy, name)
    ga, gb = sg.evaluate(list(sg.grad(sg.sum(y * y), [a, b])), at)
    ja, jb = jax.grad(lambda p, q: (fj(p, q) ** 2).sum(), (0, 1))(av, Q)
    np.testing.assert_allclose(ga, ja, rtol=1e-12, atol=1e-14)
    if name != "copysign":  # JAX differentiates the sign; NumPy's copysign is flat in x2
        np.testing.assert_allclose(gb, jb, rtol=1e-12, atol=1e-14)
    else:
        np.testing.assert_array_equal(gb, 0.0)


def test_mod_and_fmod_differentiate_as_their_definitions():
    x, y = sg.var("x"), sg.var("y")
    for fn, q in ((sg.mod, np.floor), (sg.fmod, np.trunc)):
        for xv, yv in ((7.3, 2.0), (-7.3, 2.0), (7.3, -2.0)):
            gx, gy = sg.evaluate(list(sg.grad(fn(x, y), [x, y])), {"x": xv, "y": yv})
            assert gx == 1.0 and gy == -q(xv / yv)


def test_rounding_predicates_and_logic_pass_no_gradient():
    x = sg.var("x", shape=(6,))
    v = np.array([-1.5, -0.5, 0.5, 1.5, 2.49, np.nan])
    f = sg.sum(sg.where(sg.isnan(x), 0.0, x * (sg.floor(x) + sg.ceil(x) + sg.rint(x)
                                              + sg.trunc(x) + sg.round(x, 1))))
    fin = np.nan_to_num(v)
    want = np.where(np.isnan(v), 0.0, np.floor(fin) + np.ceil(fin) + np.rint(fin)
                    + np.trunc(fin) + np.round(fin, 1))
    np.testing.assert_array_equal(sg.evaluate(sg.grad(f, x), {"x": v}), want)
    for name in ("isnan", "isinf", "isfinite", "signbit"):
        np.testing.assert_array_equal(sg.evaluate(getattr(sg, name)(x), {"x": v}),
                                      getattr(np, name)(v))
    a, b = sg.var("a", shape=(4,), dtype="bool"), sg.var("b", shape=(4,), dtype="bool")
    av, bv = np.array([True, True, False, False]), np.array([True, False, True, False])
    for name in ("logical_and", "logical_or", "logical_xor"):
        np.testing.assert_array_equal(sg.evaluate(getattr(sg, name)(a, b), {"a": av, "b": bv}),
                                      getattr(np, name)(av, bv))


def test_fmax_and_fmin_ignore_nan_and_split_ties():
    x, y = sg.var("x", shape=(3,)), sg.var("y", shape=(3,))
    at = {"x": np.array([1.0, np.nan, 2.0]), "y": np.array([0.5, 3.0, 2.0])}
    np.testing.assert_array_equal(sg.evaluate(sg.fmax(x, y), at), [1.0, 3.0, 2.0])
    np.testing.assert_array_equal(sg.evaluate(sg.fmin(x, y), at), [0.5, 3.0, 2.0])
    gx, gy = sg.evaluate(list(sg.grad(sg.sum(sg.fmax(x, y)), [x, y])), at)
    np.testing.assert_array_equal(gx, [1.0, 0.0, 0.5])
    np.testing.assert_array_equal(gy, [0.0, 1.0, 0.5])


def test_astype_converts_as_numpy_and_refuses_unknown_dtypes():
    x = sg.var("x", shape=(4,))
    v = np.array([-1.7, 0.2, 2.5, 3.9])
    for dtype in ("int64", "float32", "bool", "int32"):
        got = sg.evaluate(sg.astype(x, dtype), {"x": v})
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, v.astype(dtype))
    g = sg.evaluate(sg.grad(sg.sum(sg.astype(x, "float32") ** 2), x), {"x": v})
    np.testing.assert_allclose(g, 2 * v, rtol=1e-6)
    with pytest.raises(sg.ShapeError, match="astype: dtype must be one of"):
        sg.astype(x, "complex64")
