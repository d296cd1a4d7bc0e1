"""linalg.eig and linalg.eigvals of general matrices: NumPy's values (made complex), and
the eigenvalues' derivatives as JAX's; the eigenvectors' derivatives are those of NumPy's
own eigenvectors (LAPACK's gauge), against central differences of ``np.linalg.eig``."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

RNG = np.random.default_rng(3)
MATRICES = {
    "real-complex-pairs": np.array([[0.3, -1.2, 0.1], [1.0, 0.2, 0.4], [0.0, 0.5, -0.7]]),
    "real-real": RNG.standard_normal((3, 3)) + np.diag([3.0, 0.0, -3.0]),
    "complex": RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)),
    "stack": RNG.standard_normal((2, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(MATRICES))
def test_values_are_numpys_made_complex(name):
    a = MATRICES[name]
    A = sg.var("A", shape=a.shape, dtype=a.dtype.name)
    w, v = np.linalg.eig(A)
    got_w, got_v = sg.evaluate([w, v], {"A": a})
    want_w, want_v = np.linalg.eig(a)
    assert got_w.dtype == got_v.dtype == np.result_type(a, 1j)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-12)
    np.testing.assert_allclose(got_v, want_v, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sg.evaluate(np.linalg.eigvals(A), {"A": a}), want_w,
                               rtol=1e-12)


@pytest.mark.parametrize("name", sorted(MATRICES))
@pytest.mark.parametrize("which", ["eig", "eigvals"])
def test_eigenvalue_gradients_and_jvps_are_jaxs(name, which, x64):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a = MATRICES[name]
    A = sg.var("A", shape=a.shape, dtype=a.dtype.name)
    w = np.linalg.eig(A)[0] if which == "eig" else np.linalg.eigvals(A)
    c = RNG.standard_normal(w.shape) + 1j * RNG.standard_normal(w.shape)

    def jax_loss(m):
        return jnp.sum(jnp.real(jnp.linalg.eigvals(m) * c))

    g = sg.grad(sg.sum(sg.real(w * c)), A)
    np.testing.assert_allclose(sg.evaluate(g, {"A": a}), jax.grad(jax_loss)(a), rtol=1e-9,
                               atol=1e-12)
    t = RNG.standard_normal(a.shape).astype(a.dtype)
    want = jax.jvp(jnp.linalg.eigvals, (jnp.asarray(a),), (jnp.asarray(t),))[1]
    np.testing.assert_allclose(sg.evaluate(sg.jvp(w, A, t), {"A": a}), want, rtol=1e-9,
                               atol=1e-12)
    for backend in ("jax", "torch"):  # numba: test_eigenvalue_gradients_run_on_numba
        pytest.importorskip(backend)
        got = sg.compile(g, inputs=[A], backend=backend)(a)
        np.testing.assert_allclose(np.asarray(got), jax.grad(jax_loss)(a), rtol=1e-9,
                                   atol=1e-12, err_msg=backend)


@pytest.mark.parametrize("name", ["real-complex-pairs", "complex"])
def test_eigenvalue_gradients_run_on_numba(name, x64):
    """The gradient of eigenvalues compiles on Numba (its complex matrix nodes run as
    NumPy's calls in the driver) and equals JAX's."""
    jax = pytest.importorskip("jax")
    pytest.importorskip("numba")
    jnp = jax.numpy
    a = MATRICES[name]
    A = sg.var("A", shape=a.shape, dtype=a.dtype.name)
    c = RNG.standard_normal(a.shape[-1]) + 1j * RNG.standard_normal(a.shape[-1])
    loss = sg.sum(sg.real(np.linalg.eigvals(A) * c))
    fn = sg.compile([loss, sg.grad(loss, A)], inputs=[A], backend="numba")
    value, grad = fn(a)
    want = jax.value_and_grad(lambda m: jnp.sum(jnp.real(jnp.linalg.eigvals(m) * c)))(a)
    np.testing.assert_allclose(value, want[0], rtol=1e-9)
    np.testing.assert_allclose(grad, want[1], rtol=1e-9, atol=1e-12)


# random matrices (a matrix with exact zeros may sit where LAPACK's sign choice flips)
GAUGED = {
    "real-complex-pairs": RNG.standard_normal((4, 4)) + 2.0 * np.array(
        [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, -1], [0, 0, 1, 0]]),
    "real-real": RNG.standard_normal((3, 3)) + np.diag([3.0, 0.0, -3.0]),
    "complex": RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4)),
    "stack": RNG.standard_normal((2, 3, 3)) + 1j * RNG.standard_normal((2, 3, 3)),
}


def _phase_dependent(a: np.ndarray, rng):
    """A real loss of eig's results that depends on each eigenvector's phase, as symgrad
    builds it and as NumPy computes it."""
    c1, c2, c3 = (rng.standard_normal(a.shape) for _ in range(3))

    def numpy_f(m):
        w, v = np.linalg.eig(m)
        return np.sum(v.real * c1) + np.sum(v.imag * c2) + np.sum((w * c3[..., 0, :]).real)

    def symgrad_f(A):
        w, v = np.linalg.eig(A)
        return (sg.sum(sg.real(v) * c1) + sg.sum(sg.imag(v) * c2)
                + sg.sum(sg.real(w * c3[..., 0, :])))

    return numpy_f, symgrad_f


def _direction(a: np.ndarray, rng) -> np.ndarray:
    d = rng.standard_normal(a.shape)
    return d + 1j * rng.standard_normal(a.shape) if np.iscomplexobj(a) else d


@pytest.mark.parametrize("name", sorted(GAUGED))
def test_eigenvector_derivatives_are_those_of_numpys_eigenvectors(name):
    """Reverse and forward derivatives of a phase-dependent function of eig's eigenvectors
    equal central differences of NumPy's eig (unit columns, largest component real)."""
    rng = np.random.default_rng(11)
    a = GAUGED[name]
    A = sg.var("A", shape=a.shape, dtype=a.dtype.name)
    numpy_f, symgrad_f = _phase_dependent(a, rng)
    f = symgrad_f(A)
    d = _direction(a, rng)
    h = 1e-6
    want = (numpy_f(a + h * d) - numpy_f(a - h * d)) / (2 * h)
    g = sg.evaluate(sg.grad(f, A), {"A": a})
    assert np.sum((g * d).real) == pytest.approx(want, rel=1e-6, abs=1e-8)  # JAX's pairing
    assert float(sg.evaluate(sg.jvp(f, A, d), {"A": a})) == pytest.approx(want, rel=1e-6,
                                                                          abs=1e-8)


@pytest.mark.parametrize("name", sorted(GAUGED))
def test_eigenvector_second_derivatives(name):
    """Order 2: the derivative of the gradient along a direction (reverse over reverse and
    forward over reverse) equals central differences of the gradient."""
    rng = np.random.default_rng(12)
    a = GAUGED[name]
    A = sg.var("A", shape=a.shape, dtype=a.dtype.name)
    _, symgrad_f = _phase_dependent(a, rng)
    g = sg.grad(symgrad_f(A), A)
    c, d = _direction(a, rng), _direction(a, rng)
    second = sg.sum(sg.real(g * c))
    h = 1e-5

    def at(m):
        return float(sg.evaluate(second, {"A": m}))

    want = (at(a + h * d) - at(a - h * d)) / (2 * h)
    g2 = sg.evaluate(sg.grad(second, A), {"A": a})
    assert np.sum((g2 * d).real) == pytest.approx(want, rel=1e-5, abs=1e-7)
    assert float(sg.evaluate(sg.jvp(second, A, d), {"A": a})) == pytest.approx(
        want, rel=1e-5, abs=1e-7)


def test_eigenvalue_second_derivatives_of_a_real_matrix():
    """The eigenvalues' Hessian (their rule reads the eigenvectors) by check_grads."""
    a = GAUGED["real-complex-pairs"]
    A = sg.var("A", shape=a.shape)
    w = np.linalg.eigvals(A)
    sg.check_grads(sg.sum(sg.real(w) * np.arange(4.0) + sg.imag(w) ** 2), A, {"A": a}, order=2)


def test_eigenvector_derivatives_at_repeated_eigenvalues_are_not_finite():
    """Repeated eigenvalues: the eigenvectors are not differentiable there; the gradient
    holds inf or NaN (as eigh's), never a finite wrong number."""
    A = sg.var("A", shape=(3, 3))
    _, v = np.linalg.eig(A)
    g = sg.evaluate(sg.grad(sg.sum(sg.real(v)), A), {"A": np.eye(3)})
    assert not np.all(np.isfinite(g))
