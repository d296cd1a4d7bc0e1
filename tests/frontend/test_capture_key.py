"""The cache key of a traced function's state: a number read again is keyed by its value
(the sign of zero included), a function by identity, an array by shape and dtype with its
values an input; a value that would be read wrongly (``np.matrix``) is refused."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg


def test_numbers_and_objects_read_again_trace_again():
    lam = 0.5
    act = np.tanh

    def loss(w):
        return lam * np.sum(act(w))

    g = sg.grad(loss)
    w = np.array([0.1, -0.3])
    np.testing.assert_allclose(g(w), 0.5 / np.cosh(w) ** 2, rtol=1e-14)
    lam = 2.0
    np.testing.assert_allclose(g(w), 2.0 / np.cosh(w) ** 2, rtol=1e-14)
    act = np.sin
    np.testing.assert_allclose(g(w), 2.0 * np.cos(w), rtol=1e-14)
    assert g.cache_size == 3


def test_a_float_changed_from_zero_to_negative_zero_traces_again():
    def make():
        c = 0.0

        def f(x):
            return np.arctan2(c, -1.0) * x  # +-pi by the sign of c

        def flip():
            nonlocal c
            c = -0.0

        return f, flip

    f, flip = make()
    g = sg.grad(f)
    assert g(1.0) == np.arctan2(0.0, -1.0) == np.pi
    flip()
    assert g(1.0) == np.arctan2(-0.0, -1.0) == -np.pi


def test_a_captured_np_matrix_is_refused():
    """np.matrix's * is a matrix product: read as an array it would give a gradient of the
    wrong shape; refused with what to use."""
    M = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(sg.UnsupportedError, match=r"np\.matrix.*np\.asarray"):
        sg.grad(lambda x: np.sum(M * x))(np.ones(2))


def test_value_keys_tell_apart_what_traces_differently():
    """Floats by their bits (signed zeros apart, a NaN equal to itself), the type in the key
    (1, True and 1.0 apart), NumPy scalars by dtype and bytes, tuples elementwise."""
    from symgrad.frontend.capture_key import value_key

    assert value_key(0.0) != value_key(-0.0)
    assert value_key(float("nan")) == value_key(float("nan"))
    assert len({value_key(1), value_key(True), value_key(1.0)}) == 3
    assert value_key(np.float32(1.5)) != value_key(np.float64(1.5))
    assert value_key(np.float64(1.5)) == value_key(np.float64(1.5))
    assert value_key((1.0, -0.0)) != value_key((1.0, 0.0))
    assert value_key(frozenset({1, 2})) == value_key(frozenset({2, 1}))


def test_key_parts_hold_arrays_by_shape_and_dtype_and_containers_by_structure():
    """An array's part is its shape and dtype (its values go to the inputs, unchanged); a
    container's part is its structure and its leaves' parts; other objects by identity."""
    from symgrad.frontend.capture_key import part

    arrays: list = []
    a = np.arange(6.0).reshape(2, 3)
    assert part(a, arrays) == part(a + 1.0, []) == ((2, 3), "d")
    assert len(arrays) == 1 and np.array_equal(arrays[0], a)
    assert part(a.astype(np.float32), []) != part(a, [])
    first, second = [], []
    key = part({"w": a, "n": 3}, first)
    assert key == part({"w": a * 0.0, "n": 3}, second) and len(first) == len(second) == 1
    assert key != part({"w": a, "n": 4}, []) and key != part({"w": a, "m": 3}, [])
    thing = object()
    assert part(thing, []) == id(thing)
