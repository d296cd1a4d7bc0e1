"""symgrad.scipy.signal: convolve/correlate (and the 2-D and FFT spellings) against SciPy's
values in every mode, N-d, float64 and float32; derivatives to order 2 against finite
differences and against the adjoint written out (a correlation with the other operand);
forward mode, vmap, every backend; SciPy's errors as SymgradErrors.

(The registry battery checks the ``convolution`` op itself: shape/dtype rules, orders 1 and 2
against finite differences, forward mode, every backend's table.)"""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.scipy.signal as sgs
from tests.support.finite_differences import central

ss = pytest.importorskip("scipy.signal")

SHAPES = [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((4, 3), (2, 2)), ((2, 2), (4, 3)),
          ((3, 4, 2), (2, 2, 2)), ((4, 5), (2, 1)), ((1,), (1,))]
MODES = ["full", "valid", "same"]


def _pair(sa, sb, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_values_and_gradients_equal_scipys(name, mode, sa, sb):
    a, b = _pair(sa, sb)
    fn, ref = getattr(sgs, name), getattr(ss, name)
    A, B = sg.var("A", sa), sg.var("B", sb)
    y = fn(A, B, mode=mode)
    want = ref(a, b, mode=mode, method="direct")
    at = {"A": a, "B": b}
    np.testing.assert_allclose(sg.evaluate(y, at), want, rtol=1e-12, atol=1e-12)
    w = np.random.default_rng(1).standard_normal(want.shape)
    loss = sg.sum(y * w)
    ga, gb = sg.evaluate([sg.grad(loss, A), sg.grad(loss, B)], at)
    np.testing.assert_allclose(ga, central(lambda t: np.sum(ref(t, b, mode) * w), a),
                               atol=1e-8)
    np.testing.assert_allclose(gb, central(lambda t: np.sum(ref(a, t, mode) * w), b),
                               atol=1e-8)


def test_the_adjoint_is_a_correlation_with_the_other_operand():
    # dL/da = correlate(g, b, 'valid') for the full convolution, the textbook identity
    a, b = _pair((6,), (3,))
    g = np.random.default_rng(2).standard_normal(8)
    A = sg.var("A", (6,))
    got = sg.evaluate(sg.grad(sg.sum(sgs.convolve(A, b) * g), A), {"A": a})
    np.testing.assert_allclose(got, np.correlate(g, b, "valid"), rtol=1e-13)


def test_second_derivatives_and_the_mixed_hessian():
    a, b = _pair((4, 3), (2, 2), seed=3)
    w = np.random.default_rng(4).standard_normal((5, 4))
    A, B = sg.var("A", (4, 3)), sg.var("B", (2, 2))
    # a cubic in A: its Hessian-vector product against finite differences of the gradient
    y = sg.sum(sgs.convolve(A * A, B) * w)
    v = np.random.default_rng(5).standard_normal((4, 3))
    hv = sg.evaluate(sg.grad(sg.sum(sg.grad(y, A) * v), A), {"A": a, "B": b})

    def grad_a(t):
        return sg.evaluate(sg.grad(y, A), {"A": t, "B": b})

    eps = 1e-6
    np.testing.assert_allclose(hv, (grad_a(a + eps * v) - grad_a(a - eps * v)) / (2 * eps),
                               atol=1e-7)
    # bilinear: d2/(dA dB) of sum(convolve(A, B) w) is w's correlations, constant in A and B
    mixed = sg.grad(sg.sum(sg.grad(sg.sum(sgs.convolve(A, B) * w), B) * b), A)
    got = sg.evaluate(mixed, {"A": a * 0 + 7.0, "B": b})
    np.testing.assert_allclose(got, ss.correlate(w, b, "valid"), rtol=1e-12)


def test_forward_mode_and_vmap():
    a, b = _pair((5, 3), (2, 2), seed=6)
    ta = np.random.default_rng(7).standard_normal((5, 3))
    A = sg.var("A", (5, 3))
    tangent = sg.jvp(sgs.convolve(A, b, mode="same"), A, ta)
    np.testing.assert_allclose(sg.evaluate(tangent, {"A": a}), ss.convolve(ta, b, "same"),
                               rtol=1e-12, atol=1e-13)
    rows, kernels = _pair((4, 6), (4, 3), seed=8)
    both = sg.vmap(lambda r, k: sgs.convolve(r, k, mode="valid"))(rows, kernels)
    np.testing.assert_allclose(np.asarray(both),
                               [ss.convolve(r, k, "valid") for r, k in zip(rows, kernels)],
                               rtol=1e-12)
    one = sg.vmap(lambda r: sgs.correlate(r, kernels[0]))(rows)
    np.testing.assert_allclose(np.asarray(one), [ss.correlate(r, kernels[0]) for r in rows],
                               rtol=1e-12)


def test_float32_stays_float32():
    a, b = _pair((6, 4), (3, 2), dtype=np.float32)
    A = sg.var("A", (6, 4), "float32")
    y = sgs.convolve(A, b, mode="same")
    got = sg.evaluate(y, {"A": a})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ss.convolve(a, b, "same"), rtol=1e-5, atol=1e-5)
    assert sg.evaluate(sg.grad(sg.sum(y), A), {"A": a}).dtype == np.float32


@pytest.mark.parametrize("backend", ["numpy", "array_api", "jax", "torch"])
def test_every_backend_computes_values_and_gradients(backend, x64):
    if backend != "numpy":
        pytest.importorskip({"array_api": "array_api_compat", "jax": "jax",
                             "torch": "torch"}[backend])
    a, b = _pair((5, 4), (2, 3), seed=9)
    A, B = sg.var("A", (5, 4)), sg.var("B", (2, 3))
    y = sg.sum(sgs.convolve(A, B, mode="same") ** 2)
    outs = [y, sg.grad(y, A), sg.grad(y, B)]
    ref = sg.evaluate(outs, {"A": a, "B": b})
    fn = sg.compile(outs, backend=backend)
    got = fn(A=a, B=b)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sa,sb", [((5, 4), (3, 2)), ((5, 6), (4, 4)), ((3, 3), (5, 4)),
                                   ((6, 5), (2, 1))])
def test_two_d_and_fft_spellings(sa, sb):
    a, b = _pair(sa, sb, seed=10)
    A = sg.var("A", sa)
    for mode in MODES:
        for name in ("convolve2d", "correlate2d"):
            got = sg.evaluate(getattr(sgs, name)(A, b, mode=mode), {"A": a})
            np.testing.assert_allclose(got, getattr(ss, name)(a, b, mode=mode), rtol=1e-12)
        for name in ("fftconvolve", "oaconvolve"):
            got = sg.evaluate(getattr(sgs, name)(A, b, mode=mode), {"A": a})
            np.testing.assert_allclose(got, getattr(ss, name)(a, b, mode=mode), rtol=1e-10,
                                       atol=1e-12)


def test_scipys_errors_and_unsupported_arguments():
    A = sg.var("A", (3, 4))
    with pytest.raises(sg.ShapeError, match="same dimensionality"):
        sgs.convolve(A, np.ones(3))
    with pytest.raises(sg.ShapeError, match="at least as large"):
        sgs.convolve(A, np.ones((2, 5)), mode="valid")
    with pytest.raises(sg.ArgumentError, match="mode flags"):
        sgs.convolve(A, np.ones((2, 2)), mode="circular")
    with pytest.raises(sg.ArgumentError, match="method flags"):
        sgs.correlate(A, np.ones((2, 2)), method="winograd")
    with pytest.raises(sg.ArgumentError, match="boundary='wrap'"):
        sgs.convolve2d(A, np.ones((2, 2)), boundary="wrap")
    with pytest.raises(sg.ArgumentError, match="axes="):
        sgs.oaconvolve(A, np.ones((2, 2)), axes=0)
    with pytest.raises(sg.ArgumentError, match="unique"):
        sgs.fftconvolve(A, np.ones((2, 2)), axes=(0, -2))
    with pytest.raises(sg.ShapeError, match="incompatible shapes"):
        sgs.fftconvolve(A, np.ones((2, 2)), axes=1)
    # SciPy's own function cannot take an Expr: the message names the function here
    with pytest.raises(sg.UnsupportedError, match=r"use symgrad\.scipy\.signal\.convolve"):
        ss.convolve(A, np.ones((2, 2)))
    # scalars: the product, as SciPy's
    x = sg.var("x")
    assert sg.evaluate(sgs.convolve(x, 3.0), {"x": 2.0}) == 6.0


FFT_CASES = [((7,), (3,), None), ((5, 4), (2, 3), None), ((5, 4), (5, 3), [1]),
             ((3, 6), (1, 4), -1), ((4, 2, 5), (2, 2, 3), (0, 2)), ((3,), (6,), None)]


def _operand(rng, shape, complex_):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


@pytest.mark.parametrize("kinds", ["rr", "cr", "rc", "cc"])
@pytest.mark.parametrize("sa,sb,axes", FFT_CASES)
def test_fftconvolve_is_scipys_through_the_fft(sa, sb, axes, kinds):
    """fftconvolve of real and complex operands, every mode, along some axes (the others
    broadcast): SciPy's values, shapes and dtypes, computed by the FFT ops."""
    rng = np.random.default_rng(len(sa) * 7 + len(kinds))
    a, b = _operand(rng, sa, kinds[0] == "c"), _operand(rng, sb, kinds[1] == "c")
    A = sg.var("A", sa, a.dtype.name)
    for mode in MODES:
        out = sgs.fftconvolve(A, b, mode=mode, axes=axes)
        assert {"rfftn", "fftn"} & {n.op for n in out.graph.nodes}
        got = sg.evaluate(out, {"A": a})
        want = ss.fftconvolve(a, b, mode=mode, axes=axes)
        assert got.shape == want.shape and got.dtype == want.dtype, (mode, got.shape)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=mode)


@pytest.mark.parametrize("kinds", ["rr", "cr", "cc"])
# (JAX's fftconvolve does not broadcast the axes it does not convolve: no (1, 4) operand)
@pytest.mark.parametrize("sa,sb,axes", [c for c in FFT_CASES[:5] if c[1] != (1, 4)])
def test_fftconvolve_gradients_are_jaxs(sa, sb, axes, kinds, x64):
    """The gradient of a real loss of fftconvolve in both operands (JAX's convention for
    complex ones) equals jax.scipy.signal.fftconvolve's, and to second order."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from jax.scipy.signal import fftconvolve as jax_fftconvolve

    rng = np.random.default_rng(len(sa) + 3 * len(kinds))
    a, b = _operand(rng, sa, kinds[0] == "c"), _operand(rng, sb, kinds[1] == "c")
    A, B = sg.var("A", sa, a.dtype.name), sg.var("B", sb, b.dtype.name)
    for mode in MODES:
        out = sgs.fftconvolve(A, B, mode=mode, axes=axes)
        w = _operand(rng, out.shape, True)
        loss = sg.sum(sg.real(out * w) ** 2)

        def jax_loss(x, y, mode=mode, w=w):
            return jnp.sum(jnp.real(jax_fftconvolve(x, y, mode=mode, axes=axes) * w) ** 2)

        grads = sg.grad(loss, [A, B])
        want = jax.grad(jax_loss, argnums=(0, 1))(a, b)
        for g, ref in zip(sg.evaluate(grads, {"A": a, "B": b}), want):
            np.testing.assert_allclose(g, ref, rtol=1e-9, atol=1e-9, err_msg=mode)
        if mode == "same":
            c = _operand(rng, sa, kinds[0] == "c")
            second = sg.grad(sg.sum(sg.real(grads[0] * c)), B)
            ref = jax.grad(lambda y, c=c: jnp.sum(jnp.real(jax.grad(jax_loss)(a, y) * c)))(b)
            np.testing.assert_allclose(sg.evaluate(second, {"A": a, "B": b}), ref, rtol=1e-9,
                                       atol=1e-9)

