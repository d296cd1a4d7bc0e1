"""NumPy's functions on complex values: the ones that conjugate (vdot, vecdot, cov,
correlate) or take |.|^2 (var, std) give NumPy's values, and their gradients JAX's."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

RNG = np.random.default_rng(5)
A = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
V = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)
U = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)

CASES = [
    ("var", lambda m, a, b: m.var(a, axis=1), A, B),
    ("std", lambda m, a, b: m.std(a, ddof=1), A, B),
    ("vdot", lambda m, a, b: m.vdot(a, b), A, B),
    ("vecdot", lambda m, a, b: m.vecdot(a, b), A, B),
    ("cov", lambda m, a, b: m.cov(a), A, B),
    ("corrcoef", lambda m, a, b: m.corrcoef(a, b), A, B),
    ("correlate", lambda m, a, b: m.correlate(a, b, mode="full"), V, U),
    ("correlate-swapped", lambda m, a, b: m.correlate(b, a, mode="same"), V, U),
    ("trace", lambda m, a, b: m.trace(a @ b.T), A, B),
]


@pytest.mark.parametrize("name, f, a, b", CASES, ids=[c[0] for c in CASES])
def test_complex_values_equal_numpys_and_gradients_jaxs(name, f, a, b, x64):
    x = sg.var("x", shape=a.shape, dtype="complex128")
    y = sg.var("y", shape=b.shape, dtype="complex128")
    out = f(np, x, y)
    want = f(np, a, b)
    got = sg.evaluate(out, {"x": a, "y": b})
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if name == "corrcoef":
        return  # jnp.corrcoef clips the parts to [-1, 1]: no gradient to compare
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    w = np.asarray(want) * (0.5 - 0.25j)
    g = sg.grad(sg.sum(sg.real(out * w)), [x, y])
    ref = jax.grad(lambda p, q: jnp.sum(jnp.real(f(jnp, p, q) * w)), argnums=(0, 1))(a, b)
    for got_g, want_g in zip(sg.evaluate(list(g), {"x": a, "y": b}), ref):
        np.testing.assert_allclose(got_g, want_g, rtol=1e-10, atol=1e-12)


def test_iscomplex_and_isreal_read_the_imaginary_part():
    z0 = np.array([1.0 + 0j, 2.0 - 1e-300j, 0.5j])
    z = sg.var("z", shape=(3,), dtype="complex128")
    x = sg.var("x", shape=(3,))
    for f in (np.iscomplex, np.isreal):
        np.testing.assert_array_equal(sg.evaluate(f(z), {"z": z0}), f(z0))
        np.testing.assert_array_equal(sg.evaluate(f(x), {"x": z0.real}), f(z0.real))
