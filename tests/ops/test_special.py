"""The error function of complex values: SciPy's (Faddeeva's) values, holomorphic
derivatives of any order (``erf'(z) = 2/sqrt(pi) exp(-z^2)``) against central differences of
SciPy's, gradients of real losses by JAX's convention, and each target's answer: SciPy's
values, or a refusal when it compiles."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sps

import symgrad as sg

ZV = np.array([0.3 + 0.4j, -1.2 + 2.0j, 2.0 - 0.5j, -0.7 - 1.1j, 1e-3 + 3.0j])


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_complex_values_are_scipys(name):
    z = sg.var("z", shape=ZV.shape, dtype="complex128")
    got = sg.evaluate(getattr(sg, name)(z), {"z": ZV})
    assert got.dtype == np.complex128
    np.testing.assert_array_equal(got, getattr(sps, name)(ZV))
    z64 = sg.var("w", shape=ZV.shape, dtype="complex64")
    assert str(getattr(sg, name)(z64).dtype) == "complex64"


def _central(fn, z, order, h=1e-3):
    """The ``order``-th complex derivative of holomorphic ``fn`` at ``z``: central
    differences along the real axis (a holomorphic function's derivative is that one)."""
    if order == 0:
        return fn(z)
    return (_central(fn, z + h, order - 1, h) - _central(fn, z - h, order - 1, h)) / (2 * h)


@pytest.mark.parametrize("name", ["erf", "erfc"])
@pytest.mark.parametrize("order", [1, 2, 3])
def test_holomorphic_derivatives_of_any_order_match_central_differences(name, order):
    """And the closed form ``erf^(n)(z) = (-1)^(n-1) 2/sqrt(pi) H_(n-1)(z) exp(-z^2)``
    (Hermite polynomials), to rounding."""
    s = sg.var("s", dtype="complex128")
    d = sg.derivative(getattr(sg, name)(s), s, n=order, holomorphic=True)
    sign = 1.0 if name == "erf" else -1.0
    for z0 in ZV:
        got = complex(sg.evaluate(d, {"s": z0}))
        assert got == pytest.approx(_central(getattr(sps, name), z0, order), rel=1e-4)
        hermite = np.polynomial.hermite.hermval(z0, [0.0] * (order - 1) + [1.0])
        closed = sign * (-1) ** (order - 1) * 2 / np.sqrt(np.pi) * hermite * np.exp(-z0 ** 2)
        assert got == pytest.approx(closed, rel=1e-13)


def test_the_gradient_of_a_real_loss_is_df_dx_minus_i_df_dy():
    z = sg.var("z", shape=ZV.shape, dtype="complex128")
    c = np.array([1.0, 0.5j, -2.0, 1 + 1j, 0.3])
    loss = sg.sum(sg.abs(sg.erf(z) * c) ** 2 + sg.real(sg.erfc(z)))

    def f(v):  # the loss term of each element (the loss is their sum)
        return np.abs(sps.erf(v) * c) ** 2 + np.real(sps.erfc(v))

    h = 1e-5
    dx = (f(ZV + h) - f(ZV - h)) / (2 * h)
    dy = (f(ZV + 1j * h) - f(ZV - 1j * h)) / (2 * h)
    np.testing.assert_allclose(sg.evaluate(sg.grad(loss, z), {"z": ZV}), dx - 1j * dy,
                               rtol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax", "torch", "math"])
def test_each_target_gives_scipys_complex_erf_or_refuses_it(backend, x64):
    """NumPy and Numba (SciPy's call in the driver) give SciPy's values and derivatives;
    JAX and PyTorch, which have no complex erf, refuse when compiling."""
    pytest.importorskip({"numpy": "numpy", "numba": "numba", "jax": "jax", "torch": "torch",
                         "math": "numpy"}[backend])
    shape = () if backend == "math" else ZV.shape
    z = sg.var("z", shape=shape, dtype="complex128")
    out = [sg.erf(z) + 2 * sg.erfc(z)]
    out.append(sg.grad(sg.sum(sg.abs(out[0]) ** 2), z))
    kw = {"scalars": "math"} if backend == "math" else {"backend": backend}
    if backend in ("jax", "torch"):
        with pytest.raises(sg.BackendError, match="erf.*of complex values.*no complex erf"):
            sg.compile(out, inputs=[z], **kw)
        return
    fn = sg.compile(out, inputs=[z], **kw)
    zv = ZV[1] if backend == "math" else ZV
    val, grad = fn(zv)
    np.testing.assert_allclose(val, sps.erf(zv) + 2 * sps.erfc(zv), rtol=1e-15)
    np.testing.assert_allclose(grad, sg.evaluate(out[1], {"z": zv}), rtol=1e-13)
