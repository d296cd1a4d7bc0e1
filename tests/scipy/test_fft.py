"""symgrad.scipy.fft: SciPy's transforms with SciPy's signatures give SciPy's values, and
a traced function reading scipy.fft differentiates as JAX's jnp.fft."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.scipy import fft as sfft

scipy_fft = pytest.importorskip("scipy.fft")

X = np.random.default_rng(2).standard_normal((4, 6))


@pytest.mark.parametrize("name, kwargs", [
    ("fft", {"n": 8, "axis": 0, "norm": "ortho", "workers": 2}),
    ("ifft", {}), ("fft2", {"s": (3, 5)}), ("ifftn", {"axes": (1,)}),
    ("rfft", {"overwrite_x": True}), ("irfft", {"n": 9}), ("rfftn", {}),
    ("irfft2", {}), ("hfft", {"norm": "forward"}), ("ihfft", {"axis": 0}),
])
def test_values_equal_scipys(name, kwargs):
    x = sg.var("x", shape=X.shape)
    got = sg.evaluate(getattr(sfft, name)(x, **kwargs), {"x": X})
    want = getattr(scipy_fft, name)(X, **kwargs)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_frequencies_and_lengths_are_scipys():
    def value(e):  # numbers in, NumPy's array out (eager)
        return sg.evaluate(e) if isinstance(e, sg.Expr) else e

    np.testing.assert_array_equal(value(sfft.rfftfreq(7, 0.5)), scipy_fft.rfftfreq(7, 0.5))
    np.testing.assert_array_equal(value(sfft.fftfreq(6)), scipy_fft.fftfreq(6))
    assert sfft.next_fast_len(97) == scipy_fft.next_fast_len(97)
    with pytest.raises(sg.UnsupportedError, match="plan"):
        sfft.fft(sg.var("x", shape=(4,)), plan=object())


def test_a_traced_function_reading_scipy_fft_differentiates_as_jax(x64):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def loss(x):
        return np.sum(np.abs(scipy_fft.rfft(x, axis=0)) ** 2 * np.cos(x[:3]))

    def jax_loss(x):
        return jnp.sum(jnp.abs(jnp.fft.rfft(x, axis=0)) ** 2 * jnp.cos(x[:3]))

    np.testing.assert_allclose(sg.grad(loss)(X), jax.grad(jax_loss)(X), rtol=1e-10)
