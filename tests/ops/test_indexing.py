"""Indexing: every NumPy key form (ints, negative ints, slices with steps, ``None``,
``...``, integer arrays broadcast together, integer Exprs) gives NumPy's value and shape as
one ``index`` node; its adjoint scatter-adds (duplicates accumulate) as JAX's does, to any
order; ``take`` is NumPy's; out-of-range indices are refused (static ones when built,
dynamic ones when evaluated), and so are integer arrays split by a slice."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

R = np.random.default_rng(19)
X = R.standard_normal((4, 5, 3))
IDX = np.array([[0, 3], [3, 1]])

KEYS = {
    "int": (2,), "negative": (-1, 0), "slice_step": (slice(None, None, 2), slice(1, 4)),
    "reverse": (slice(None, None, -1),), "newaxis": (None, 1, slice(None), None),
    "ellipsis": (Ellipsis, 0), "mixed": (slice(1, 3), Ellipsis, None, -2),
    "array": (IDX,), "arrays_broadcast": (slice(None), IDX, np.array([2, 0])[:, None]),
    "duplicates": (np.array([1, 1, 2, 1]),), "array_last": (Ellipsis, np.array([2, 2, 0])),
    "empty_slice": (slice(3, 1),),
}


@pytest.fixture(scope="module")
def jax(x64):
    return pytest.importorskip("jax")


@pytest.mark.parametrize("name", KEYS)
def test_values_shapes_and_gradients_equal_numpy_and_jax(name, jax):
    key = KEYS[name]
    x = sg.var("x", shape=X.shape)
    y = x[key]
    want = X[key]
    assert y.shape == want.shape
    assert y.graph.nodes[y.node].op == "index"  # one node whatever the key
    np.testing.assert_array_equal(sg.evaluate(y, {"x": X}), want)
    w = np.cos(np.arange(want.size)).reshape(want.shape)
    f = sg.sum(sg.sin(y) * w)
    want_g = jax.grad(lambda v: (jax.numpy.sin(v[key]) * w).sum())(X)
    np.testing.assert_allclose(sg.evaluate(sg.grad(f, x), {"x": X}), want_g, rtol=1e-14)


def test_second_derivatives_through_the_scatter_equal_jax(jax):
    x = sg.var("x", shape=(5,))
    v = R.standard_normal(5)
    idx = np.array([0, 3, 3, 1])
    f = sg.sum(sg.exp(x[idx]) * x[1:4].sum())
    H = sg.evaluate(sg.hessian(f, x), {"x": v})
    jnp = jax.numpy
    want = jax.hessian(lambda u: (jnp.exp(u[idx]) * u[1:4].sum()).sum())(v)
    np.testing.assert_allclose(H, want, rtol=1e-13)


def test_an_integer_expr_indexes_at_run_time_and_wraps_negatives():
    x = sg.var("x", shape=(4, 5, 3))
    i = sg.var("i", shape=(3,), dtype="int64")
    y = x[i, 2]
    for iv in ([0, 3, 1], [-1, -4, 2]):
        np.testing.assert_array_equal(sg.evaluate(y, {"x": X, "i": iv}), X[iv, 2])
    g = sg.evaluate(sg.grad(sg.sum(y), x), {"x": X, "i": [1, 1, 3]})
    want = np.zeros_like(X)
    np.add.at(want, ([1, 1, 3], 2), 1.0)
    np.testing.assert_array_equal(g, want)
    with pytest.raises(sg.EvaluationError):
        sg.evaluate(y, {"x": X, "i": [0, 4, 1]})


@pytest.mark.parametrize("axis", [None, 0, 2, -2])
def test_take_is_numpys(axis):
    x = sg.var("x", shape=X.shape)
    idx = np.array([[2, 0], [1, 1]])
    got = sg.evaluate(sg.take(x, idx, axis=axis), {"x": X})
    np.testing.assert_array_equal(got, np.take(X, idx, axis=axis))


def test_static_out_of_range_keys_are_refused_when_built():
    x = sg.var("x", shape=(4, 5, 3))
    for key in ((4,), (0, -6), (0, 0, 0, 0), (np.array([0, 4]),), (Ellipsis, Ellipsis)):
        with pytest.raises(sg.ShapeError):
            x[key]
    with pytest.raises(sg.SymgradError):
        x[1.5]
    with pytest.raises(sg.ShapeError, match="separated by a slice.*in two steps"):
        x[IDX, :, np.array([2, 0])]  # NumPy would move the broadcast axes to the front
