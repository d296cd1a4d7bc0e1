"""Indexing: every NumPy key form (ints, negative ints, slices with steps, ``None``,
``...``, integer arrays broadcast together, integer Exprs) gives NumPy's value and shape as
one ``index`` node; its adjoint scatter-adds (duplicates accumulate) as JAX's does, to any
order; ``take`` is NumPy's; out-of-range indices are refused (static ones when built,
dynamic ones when evaluated). Integer arrays (and ints beside them) separated by a slice,
``None`` or ``...`` put their broadcast axes first, as NumPy and JAX do."""

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


def _value_and_gradient_checked(key, jax):
    """``x[key]``: its shape and value are NumPy's, a weighted sum's gradient JAX's; the
    selection, its weights and the variable, for further checks."""
    x = sg.var("x", shape=X.shape)
    y = x[key]
    want = X[key]
    assert y.shape == want.shape
    np.testing.assert_array_equal(sg.evaluate(y, {"x": X}), want)
    w = np.cos(np.arange(want.size)).reshape(want.shape)
    f = sg.sum(sg.sin(y) * w)
    want_g = jax.grad(lambda v: (jax.numpy.sin(v[key]) * w).sum())(X)
    np.testing.assert_allclose(sg.evaluate(sg.grad(f, x), {"x": X}), want_g, rtol=1e-14)
    return x, y, w


@pytest.mark.parametrize("name", KEYS)
def test_values_shapes_and_gradients_equal_numpy_and_jax(name, jax):
    _, y, _ = _value_and_gradient_checked(KEYS[name], jax)
    assert y.graph.nodes[y.node].op == "index"  # one node whatever the key


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


SEPARATED = {
    "int_slice_array": (3, slice(2, None), [1, 0]),  # autograd's test_index_mixed
    "arrays_around_a_slice": (IDX, slice(None), np.array([2, 0])),
    "array_none_array": (np.array([0, 3]), None, np.array([4, 1])),
    "none_int_slice_array": (None, 1, slice(None), np.array([[2], [0]])),
    "ellipsis_between": (np.array([1, 2, 2]), Ellipsis, np.array([0, 2, 1])),
    "negative_int_step_array": (-1, slice(None, None, -2), np.array([[1, 2, 0]])),
}


@pytest.mark.parametrize("name", SEPARATED)
def test_separated_advanced_indices_put_their_axes_first_as_numpy_and_jax(name, jax):
    key = SEPARATED[name]
    x, y, w = _value_and_gradient_checked(key, jax)
    H = sg.evaluate(sg.hessian(sg.sum(y ** 3 * w), x), {"x": X})
    want_h = jax.hessian(lambda v: (v[key] ** 3 * w).sum())(X)
    np.testing.assert_allclose(H, want_h, rtol=1e-13, atol=1e-14)


def _random_entry(rng: np.random.Generator, n: int, group: tuple[int, ...]):
    kind = rng.integers(4)
    if kind == 0:
        return int(rng.integers(-n, n))
    if kind == 1:
        step = int(rng.choice([1, 2, -1, -2]))
        return slice(int(rng.integers(-n, n)) if rng.random() < 0.5 else None,
                     int(rng.integers(-n, n + 1)) if rng.random() < 0.5 else None, step)
    shape = group[len(group) - int(rng.integers(len(group) + 1)):]  # broadcasts to group
    return rng.integers(-n, n, size=shape)


def _random_key(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple:
    group = tuple(int(g) for g in rng.integers(1, 4, size=int(rng.integers(1, 3))))
    entries = [_random_entry(rng, n, group) for n in shape]
    a = int(rng.integers(len(shape) + 1))
    b = int(rng.integers(a, len(shape) + 1))
    if rng.random() < 0.4:
        entries[a:b] = [Ellipsis]  # ... for the axes a to b (none when a == b)
    else:
        del entries[a:]  # the trailing axes taken whole
    for _ in range(int(rng.integers(3))):
        entries.insert(int(rng.integers(len(entries) + 1)), None)
    return tuple(entries)


def test_random_keys_give_numpys_values_and_a_scatter_add_gradient():
    rng = np.random.default_rng(7)
    x = sg.var("x", shape=X.shape)
    for _ in range(150):
        key = _random_key(rng, X.shape)
        want = X[key]
        y = x[key]
        assert y.shape == want.shape, key
        np.testing.assert_array_equal(sg.evaluate(y, {"x": X}), want, err_msg=str(key))
        if want.size:
            w = rng.standard_normal(want.shape)
            grad = np.zeros_like(X)
            np.add.at(grad, key, w)  # NumPy's own scatter-add over the same key
            got = sg.evaluate(sg.grad(sg.sum(y * w), x), {"x": X})
            np.testing.assert_allclose(got, grad, rtol=1e-14, atol=0, err_msg=str(key))


def test_a_traced_integer_index_separated_by_a_slice_moves_its_axes_first():
    x = sg.var("x", shape=X.shape)
    i = sg.var("i", shape=(2,), dtype="int64")
    y = x[i, :, 1]
    for iv in ([0, -1], [3, 2]):
        np.testing.assert_array_equal(sg.evaluate(y, {"x": X, "i": iv}), X[iv, :, 1])
