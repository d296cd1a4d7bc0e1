"""Ordering ops: ``sort`` and ``partition`` give NumPy's values and send gradients back
through the permutation (against JAX and closed forms), in reverse and forward mode; the
index-valued ``argsort argpartition argmax argmin searchsorted`` are NumPy's; out-of-range
``kth``, empty axes and bad ``side`` are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from tests.support.complex_order import draw, same

R = np.random.default_rng(5)
X = R.permutation(12).reshape(3, 4) + R.uniform(0.0, 0.5, (3, 4))  # distinct values


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_values_and_gradient_equal_jax(axis, x64):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = sg.var("x", shape=X.shape)
    s = sg.sort(x, axis=axis)
    np.testing.assert_array_equal(sg.evaluate(s, {"x": X}), np.sort(X, axis=axis))
    weights = np.arange(1.0, X.size + 1).reshape(np.sort(X, axis=axis).shape)
    f = sg.sum(sg.sin(s) * weights)
    want = jax.grad(lambda v: jnp.sum(jnp.sin(jnp.sort(v, axis=axis)) * weights))(X)
    np.testing.assert_allclose(sg.evaluate(sg.grad(f, x), {"x": X}), want, rtol=1e-13)
    t = R.standard_normal(X.shape)
    _, want_t = jax.jvp(lambda v: jnp.sort(v, axis=axis), (X,), (t,))
    got_t = sg.evaluate(sg.jvp(s, x, t), {"x": X})
    np.testing.assert_allclose(got_t, want_t, rtol=1e-15)


def test_the_largest_k_of_each_row_get_the_gradient_of_a_top_k_sum():
    x = sg.var("x", shape=X.shape)
    top2 = sg.sum(sg.sort(x, axis=1)[:, -2:])
    grad = sg.evaluate(sg.grad(top2, x), {"x": X})
    ranks = np.argsort(np.argsort(X, axis=1), axis=1)
    np.testing.assert_array_equal(grad, (ranks >= 2).astype(float))


@pytest.mark.parametrize("kth, axis", [(2, -1), ((0, 3), -1), (1, 0), (5, None), (-1, 1)])
def test_partition_puts_the_kth_in_place_and_its_gradient_is_one_hot(kth, axis):
    x = sg.var("x", shape=X.shape)
    p = sg.evaluate(sg.partition(x, kth, axis=axis), {"x": X})
    flat = X.ravel() if axis is None else X
    ax = -1 if axis is None else axis
    srt = np.sort(flat, axis=ax)
    ks = np.atleast_1d(kth)
    for k in ks:
        np.testing.assert_array_equal(np.take(p, k, axis=ax), np.take(srt, k, axis=ax))
        before = np.take(p, np.arange(p.shape[ax])[: k % p.shape[ax]], axis=ax)
        assert (before <= np.expand_dims(np.take(srt, k, axis=ax), ax)).all()
    k = int(ks[0])
    picked = sg.take(sg.partition(x, kth, axis=axis), [k], axis=ax)
    grad = sg.evaluate(sg.grad(sg.sum(picked), x), {"x": X})
    want = (X == np.expand_dims(np.take(srt, k, axis=ax), ax)) if axis is not None else \
        (X == srt[k])
    np.testing.assert_array_equal(grad, want.astype(float))


def test_index_valued_ops_are_numpys():
    x = sg.var("x", shape=X.shape)
    at = {"x": X}
    cases = [
        (sg.argsort(x, axis=0), np.argsort(X, axis=0)),
        (sg.argmax(x, axis=1), np.argmax(X, axis=1)),
        (sg.argmin(x, axis=None, keepdims=True), np.argmin(X, axis=None, keepdims=True)),
        (sg.argmax(x), np.argmax(X)),
    ]
    for got, want in cases:
        value = np.asarray(sg.evaluate(got, at))
        assert value.dtype == np.int64 and value.shape == np.shape(want)
        np.testing.assert_array_equal(value, want)
    ties = sg.var("t", shape=(5,))
    assert sg.evaluate(sg.argmax(ties), {"t": [1.0, 3.0, 3.0, 0.0, 3.0]}) == 1  # the first
    a, v = sg.var("a", shape=(4,)), sg.var("v", shape=(2, 3))
    grid, queries = np.array([0.0, 1.0, 1.0, 2.0]), np.array([[1.0, 1.5, -1.0], [2.0, 3, 0]])
    for side in ("left", "right"):
        got = sg.evaluate(sg.searchsorted(a, v, side=side), {"a": grid, "v": queries})
        np.testing.assert_array_equal(got, np.searchsorted(grid, queries, side=side))


def test_bad_arguments_are_refused_by_name():
    x = sg.var("x", shape=(3, 4))
    with pytest.raises(sg.ShapeError, match="partition: kth 4 is out of range.*size 4"):
        sg.partition(x, 4)
    with pytest.raises(sg.ShapeError, match="argmax: an empty sequence has no maximum"):
        sg.argmax(sg.var("e", shape=(0, 3)), axis=0)
    with pytest.raises(sg.ShapeError, match="side must be 'left' or 'right'"):
        sg.searchsorted(sg.var("a", shape=(4,)), x, side="middle")
    with pytest.raises(sg.ShapeError, match="sorted array must be 1-D"):
        sg.searchsorted(x, x)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_complex_values_sort_and_select_in_numpys_order(axis):
    """Lexicographic (real parts, then imaginary parts), NaN last in NumPy's order of NaNs
    (``1+nanj`` before ``nan+0j`` before ``nan+nanj``); argmax/argmin the first NaN."""
    rng = np.random.default_rng(13)
    z = sg.var("z", shape=(3, 4), dtype="complex128")
    ax = -1 if axis is None else axis
    exprs = {"sort": (sg.sort(z, axis=axis), lambda v: np.sort(v, axis=axis)),
             "argsort": (sg.argsort(z, axis=ax), lambda v: np.argsort(v, axis=ax, kind="stable")),
             "argmax": (sg.argmax(z, axis=axis), lambda v: np.argmax(v, axis=axis)),
             "argmin": (sg.argmin(z, axis=axis), lambda v: np.argmin(v, axis=axis))}
    for _ in range(40):
        zv = draw(rng, (3, 4))
        for name, (e, ref) in exprs.items():
            assert same(sg.evaluate(e, {"z": zv}), ref(zv)), (name, zv)
    s = np.sort(draw(rng, (6,)))
    v = sg.var("v", shape=(6,), dtype="complex128")
    q = draw(rng, (5,))
    got = sg.evaluate(sg.searchsorted(v, q), {"v": s})
    np.testing.assert_array_equal(got, np.searchsorted(s, q))


def test_the_gradient_of_a_complex_sort_follows_the_elements_as_jax(x64):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    zv = np.array([1 + 3j, 0.5 + 9j, 1 + 2j, -2j, 0.5 - 1j])
    c = np.array([1.0, 2j, -1 + 1j, 0.5, 3 - 2j])
    z = sg.var("z", shape=(5,), dtype="complex128")
    loss = sg.sum(sg.real(sg.sort(z) * c) * sg.abs(sg.sort(z)))
    want = jax.grad(lambda u: jnp.sum(jnp.real(jnp.sort(u) * c) * jnp.abs(jnp.sort(u))))(zv)
    np.testing.assert_allclose(sg.evaluate(sg.grad(loss, z), {"z": zv}), want, rtol=1e-14)
