"""linalg.eig and linalg.eigvals of general matrices: NumPy's values (made complex), and
the eigenvalues' derivatives as JAX's; the eigenvectors' derivatives are refused."""

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


def test_eigenvector_derivatives_are_refused():
    A = sg.var("A", shape=(3, 3))
    w, v = np.linalg.eig(A)
    with pytest.raises(sg.DifferentiationError, match="eigenvectors"):
        sg.grad(sg.sum(sg.abs(v)), A)
    with pytest.raises(sg.DifferentiationError, match="eigenvectors"):
        sg.jvp(v, A, np.eye(3))
    with pytest.raises(sg.DifferentiationError, match="eigenvectors"):
        sg.grad(sg.real(sg.grad(sg.sum(sg.real(w)), A)[0, 1]), A)  # second order
