"""Complex values end to end: dtypes and constants, the parser's ``1j``, every target's
numbers, and derivatives by JAX's conventions (against ``jax.grad``, ``holomorphic=True``),
with clear errors where JAX refuses or an op has no complex meaning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg

jax = pytest.importorskip("jax")
jnp = jax.numpy

Z0 = np.array([0.3 + 0.4j, -1.1 + 0.2j, 0.7 - 0.9j])
W = np.array([0.5 - 1.0j, 2.0 + 0.25j, -0.75 + 0.5j])


def _losses():
    """Real-valued functions of a complex vector, written once for NumPy's names (symgrad
    traces them) and once for JAX's."""
    return {
        "abs2": lambda m: lambda z: m.sum(m.abs(z) ** 2),
        "exp_mix": lambda m: lambda z: m.sum(m.real(m.exp(z) * W) + m.imag(z * z)),
        "angle": lambda m: lambda z: m.sum(m.angle(z) * m.abs(z)),
        "conj": lambda m: lambda z: m.sum(m.real(m.conj(z) * m.sin(z))),
        "log_sqrt": lambda m: lambda z: m.sum(m.abs(m.log(z) + m.sqrt(z))),
        "dot": lambda m: lambda z: m.real(m.vdot(z, W * z)) if m is jnp
        else m.real(m.sum(m.conj(z) * (W * z))),
        "power": lambda m: lambda z: m.sum(m.abs(z ** 3 - 1j * z)),
        "matmul": lambda m: lambda z: m.sum(m.abs(m.outer(z, W) @ m.conj(z)) ** 2),
    }


@pytest.mark.parametrize("name", sorted(_losses()))
def test_gradient_of_a_real_function_of_complex_inputs_is_jaxs(name, x64):
    """``df/dx - i df/dy``, as ``jax.grad``; the gradient keeps the variable's dtype."""
    make = _losses()[name]
    got = sg.grad(make(np))(Z0)
    want = jax.grad(make(jnp))(jnp.asarray(Z0))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["abs2", "exp_mix", "conj", "power"])
def test_hessian_vector_products_of_real_functions_of_complex_inputs_are_jaxs(name, x64):
    """Order 2: the tangent of the gradient (forward over reverse) and the gradient of a
    real function of the gradient (reverse over reverse), as JAX's."""
    make = _losses()[name]
    z = sg.var("z", shape=(3,), dtype="complex128")
    g = sg.grad(make(np)(z), z)
    v = np.array([1.0 - 0.5j, 0.25j, -2.0 + 1.0j])
    jg = jax.grad(make(jnp))
    want = jax.jvp(jg, (jnp.asarray(Z0),), (jnp.asarray(v),))[1]
    np.testing.assert_allclose(sg.evaluate(sg.jvp(g, z, v), {"z": Z0}), want, rtol=1e-10,
                               atol=1e-12)
    second = sg.grad(sg.sum(sg.real(g * W)), z)
    want2 = jax.grad(lambda u: jnp.sum(jnp.real(jg(u) * W)))(jnp.asarray(Z0))
    np.testing.assert_allclose(sg.evaluate(second, {"z": Z0}), want2, rtol=1e-10, atol=1e-12)


def test_holomorphic_derivatives_are_jaxs(x64):
    """``holomorphic=True``: the complex derivative f'(z), by grad, jacfwd and jacrev."""
    def f(m):
        return lambda z: m.sin(z) * z + m.exp(2j * z) / (z + 3.0)
    z0 = 0.3 + 0.4j
    got = sg.grad(f(np), holomorphic=True)(z0)
    np.testing.assert_allclose(got, jax.grad(f(jnp), holomorphic=True)(z0), rtol=1e-12)
    want = jax.jacfwd(f(jnp), holomorphic=True)(jnp.asarray(Z0))
    np.testing.assert_allclose(sg.jacfwd(f(np), holomorphic=True)(Z0), want, rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(sg.jacrev(f(np), holomorphic=True)(Z0), want, rtol=1e-12,
                               atol=1e-14)
    z = sg.var("z", dtype="complex128")
    d = sg.grad(f(np)(z), z, holomorphic=True)
    np.testing.assert_allclose(sg.evaluate(d, {"z": z0}), jax.grad(f(jnp), holomorphic=True)(z0),
                               rtol=1e-12)


def test_real_inputs_of_complex_intermediates_get_real_gradients(x64):
    """A real variable's gradient through complex values is real, as JAX's; the forward
    Jacobian of a complex output of a real variable is complex."""
    x0 = np.array([0.2, -0.7, 1.3])

    def f(m):
        return lambda x: m.sum(m.abs(m.exp(1j * x) * W + x) ** 2)
    got = sg.grad(f(np))(x0)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, jax.grad(f(jnp))(x0), rtol=1e-12)
    x = sg.var("x", shape=(3,))
    jac = sg.evaluate(sg.jacobian(sg.exp(1j * x) * W, x), {"x": x0})
    want = jax.jacfwd(lambda u: jnp.exp(1j * u) * W)(x0)
    np.testing.assert_allclose(jac, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("call, match", [
    (lambda z: sg.grad(z * z, z), "holomorphic=True"),
    (lambda z: sg.jacfwd(sg.abs(z), z), "holomorphic=True"),
    (lambda z: sg.hessian(sg.abs(z) ** 2, z), "not complex-linear"),
    (lambda z: sg.grad(sg.abs(z), z, holomorphic=True), "complex output"),
    (lambda z: np.quantile(sg.stack([z, z]), 0.5), "real numbers only"),
    (lambda z: sg.floor(z), "real values only"),
    (lambda z: sg.erfinv(z), "real values only"),
])
def test_what_has_no_complex_meaning_is_refused_with_the_reason(call, match):
    z = sg.var("z", dtype="complex128")
    with pytest.raises(sg.SymgradError, match=match):
        call(z)


def test_complex_dtypes_promote_as_numpy():
    """NumPy 2's promotion, NEP 50 for Python complex scalars."""
    x32 = sg.var("x", dtype="float32")
    z64 = sg.var("z", dtype="complex64")
    z128 = sg.var("w", dtype="complex128")
    assert str((x32 * 1j).dtype) == "complex64"
    assert str((sg.var("i", dtype="int64") * 1j).dtype) == "complex128"
    assert str((z64 + 2.0).dtype) == "complex64"
    assert str((z64 + z128).dtype) == "complex128"
    assert str(sg.abs(z64).dtype) == "float32"
    assert str(sg.real(z128).dtype) == "float64"
    assert str(sg.const(np.array([1j], np.complex64)).dtype) == "complex64"


def test_the_parser_reads_imaginary_literals():
    e = sg.parse("exp(2j * x) + (1.5 - 0.5j)", dtypes={"x": "float64"})
    assert str(e.dtype) == "complex128"
    assert sg.evaluate(e, {"x": 0.25}) == pytest.approx(np.exp(0.5j) + 1.5 - 0.5j)
    with pytest.raises(sg.ParseError):
        sg.parse("(-1.0) ** 0.5")


@pytest.mark.parametrize("backend", ["numpy", "jax", "torch", "array_api", "math"])
def test_every_target_gives_numpys_numbers(backend, x64):
    """Values and gradients, compiled for each target, as NumPy's and JAX's."""
    if backend == "torch":
        pytest.importorskip("torch")
    z = sg.var("z", dtype="complex128")
    f = sg.abs(sg.exp(z) * (1 + 2j)) ** 2 + sg.real(sg.conj(z) * sg.sqrt(z)) + sg.angle(z)
    g = sg.grad(f, z)
    z0 = 0.3 + 0.4j
    kw = {"scalars": "math"} if backend == "math" else {"backend": backend}
    fn = sg.compile([f, g], inputs=[z], **kw)
    val, grad = (complex(np.asarray(v)) for v in fn(z0))
    ref = abs(np.exp(z0) * (1 + 2j)) ** 2 + (np.conj(z0) * np.sqrt(z0)).real + np.angle(z0)
    assert val == pytest.approx(ref, rel=1e-12)
    want = complex(jax.grad(lambda u: jnp.abs(jnp.exp(u) * (1 + 2j)) ** 2
                            + jnp.real(jnp.conj(u) * jnp.sqrt(u)) + jnp.angle(u))(z0))
    assert grad == pytest.approx(want, rel=1e-12)


def test_higher_derivatives_of_complex_variables_are_holomorphic_or_refused(x64):
    """derivative(f, z, n): the complex n-th derivative with holomorphic=True (as nested
    jax.grad(..., holomorphic=True)); without it, refused from the second order on; a
    complex f of a real x by Taylor mode, as nested jax.jacfwd."""
    z, x = sg.var("z", dtype="complex128"), sg.var("x")
    got = sg.evaluate(sg.derivative(sg.exp(2j * z) * z, z, 3, holomorphic=True),
                      {"z": 0.3 + 0.1j})
    d = jax.grad
    want = d(d(d(lambda u: jnp.exp(2j * u) * u, holomorphic=True), holomorphic=True),
             holomorphic=True)(0.3 + 0.1j)
    assert complex(got) == pytest.approx(complex(want), rel=1e-12)
    got = sg.evaluate(sg.derivative(sg.exp(1j * x) * x, x, 3), {"x": 0.3})
    f = jax.jacfwd
    assert complex(got) == pytest.approx(complex(f(f(f(lambda u: jnp.exp(1j * u) * u)))(0.3)),
                                         rel=1e-12)
    with pytest.raises(sg.DifferentiationError, match="not complex-linear"):
        sg.derivative(sg.abs(z) ** 2, z, 2)
    with pytest.raises(sg.DifferentiationError, match="holomorphic=True"):
        sg.derivative(sg.exp(z), z, 2)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_the_gradient_of_a_complex_abs_at_zero_is_zero_on_every_backend(backend):
    """``d|z|`` pairs with ``conj(z)/|z|``, zero at ``z = 0`` (as JAX's), computed without a
    division by zero: no NumPy warning, no ZeroDivisionError in a compiled kernel."""
    if backend == "numba":
        pytest.importorskip("numba")
    z = sg.var("z", shape=(3,), dtype="complex128")
    g = sg.grad(sg.sum(sg.abs(z)), z)
    v = np.array([0j, 3 + 4j, -1j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = sg.compile(g, backend=backend)(v)
    np.testing.assert_allclose(got, [0, 0.6 - 0.8j, 1j], rtol=1e-15)
