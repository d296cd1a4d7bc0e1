"""Constant-makers: ``arange`` has NumPy's length and dtype for int, float and negative steps
(the shape known before evaluation), ``linspace eye zeros ones full`` are NumPy's,
``zeros_like``/``ones_like`` pass no gradient, and bad arguments are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

ARANGES = [(5,), (1, 10, 3), (0.5, 2.0, 0.3), (3, -2, -1), (0.0, 1.0, 0.1), (10, 1),
           (-2.5, 2.5, 0.5), (1, 2, 0.25), (0, 7, 7), (np.int32(4),), (0.1, 0.4, 0.1)]


@pytest.mark.parametrize("args", ARANGES, ids=[repr(a) for a in ARANGES])
def test_arange_has_numpys_length_values_and_dtype(args):
    got = sg.arange(*args)
    want = np.arange(*args)
    assert got.shape == want.shape  # known before evaluation
    value = sg.evaluate(got)
    assert value.dtype == want.dtype or (want.dtype == np.int32 and value.dtype == np.int64)
    np.testing.assert_allclose(value, want, rtol=0, atol=0)


def test_linspace_eye_and_filled_arrays_are_numpys():
    cases = [(sg.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5)),
             (sg.linspace(-1, 2, 4, endpoint=False), np.linspace(-1, 2, 4, endpoint=False)),
             (sg.eye(3), np.eye(3)), (sg.eye(2, 4, 1, dtype="int64"), np.eye(2, 4, 1, "int64")),
             (sg.eye(3, k=-2), np.eye(3, k=-2)), (sg.zeros((2, 3)), np.zeros((2, 3))),
             (sg.ones(4, dtype="int32"), np.ones(4, "int32")),
             (sg.full((2, 2), 2.5), np.full((2, 2), 2.5)),
             (sg.full(3, 7, dtype="int64"), np.full(3, 7, "int64"))]
    for got, want in cases:
        value = sg.evaluate(got)
        assert value.dtype == want.dtype and value.shape == want.shape
        np.testing.assert_array_equal(value, want)


def test_zeros_like_and_ones_like_pass_no_gradient():
    x = sg.var("x", shape=(3,))
    f = sg.sum(sg.ones_like(x) * x ** 2 + sg.zeros_like(x) * sg.exp(x))
    at = {"x": np.array([1.0, -2.0, 0.5])}
    np.testing.assert_array_equal(sg.evaluate(sg.grad(f, x), at), 2 * at["x"])
    assert sg.evaluate(sg.ones_like(sg.var("i", shape=(2,), dtype="int64")),
                       {"i": [3, 4]}).dtype == np.int64


@pytest.mark.parametrize("build, match", [
    (lambda: sg.arange(0, 5, 0), "arange: step cannot be zero"),
    (lambda: sg.arange(0.0, float("inf")), "arange: stop must be finite"),
    (lambda: sg.arange(True), "arange: stop must be a number"),
    (lambda: sg.zeros((2, 3), dtype="complex128"), "zeros: dtype must be one of"),
    (lambda: sg.full(3, True), "full: fill_value must be a number"),
    (lambda: sg.ones("3"), "ones: shape must be an int or a tuple of ints"),
    (lambda: sg.linspace(0.0, 1.0, 3, endpoint=1), "linspace: endpoint must be True or False"),
])
def test_bad_arguments_are_refused_by_name(build, match):
    with pytest.raises(sg.ShapeError, match=match):
        build()
