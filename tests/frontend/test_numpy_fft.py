"""numpy.fft on Exprs: fftshift/ifftshift trace (values and gradients equal NumPy's); the
transforms, whose values or inputs are complex, raise an UnsupportedError saying so."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [None, 1, -1, (0,), (0, 1), ()])
def test_shifts_equal_numpys_and_differentiate(name, axes):
    fn = getattr(np.fft, name)
    v = np.arange(15.0).reshape(3, 5)
    x = sg.var("x", shape=(3, 5))
    np.testing.assert_array_equal(sg.evaluate(fn(x, axes=axes), {"x": v}), fn(v, axes=axes))
    w = np.random.default_rng(0).standard_normal((3, 5))
    g = sg.evaluate(sg.grad(sg.sum(fn(x, axes=axes) * w), x), {"x": v})
    # a permutation: the gradient is w moved back by the inverse shift
    inverse = np.fft.ifftshift if name == "fftshift" else np.fft.fftshift
    np.testing.assert_array_equal(g, inverse(w, axes=axes))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "fft2", "ifftn", "rfftn",
                                  "irfft2", "hfft", "ihfft"])
def test_transforms_say_complex_numbers_are_not_supported(name):
    x = sg.var("x", shape=(4, 4))
    with pytest.raises(sg.UnsupportedError,
                       match=rf"numpy\.fft\.{name} .*complex numbers are not supported"):
        getattr(np.fft, name)(x)
