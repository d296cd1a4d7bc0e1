"""NumPy's shaping and creation functions on expressions, with NumPy's keywords."""

from __future__ import annotations

import numpy as np

import symgrad as sg
import symgrad.numpy as snp


def test_reshape_takes_order_none_as_numpy_does():
    x = sg.var("x", shape=(6,))
    at = {"x": np.arange(6.0)}
    want = np.reshape(at["x"], (2, 3), order=None)
    for got in (snp.reshape(x, (2, 3), order=None), np.reshape(x, (2, 3), order=None),
                x.reshape((2, 3), order=None)):
        np.testing.assert_array_equal(sg.evaluate(got, at), want)
    g = sg.grad(lambda a: snp.sum(snp.reshape(a, (2, 3), order=None)[0] ** 2))(at["x"])
    np.testing.assert_array_equal(g, [0.0, 2.0, 4.0, 0.0, 0.0, 0.0])
