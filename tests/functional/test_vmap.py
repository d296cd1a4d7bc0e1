"""``sg.vmap`` traced once and rebuilt for the batch: against a Python loop over the
examples and against ``jax.vmap`` (in_axes/out_axes, pytrees, per-example gradients),
and the loop it falls back to where an op would mix the rows."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import symgrad as sg
from symgrad.transforms.batching import Unbatchable, batched
from tests.support.pytree_close import close as tree_close

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


close = functools.partial(tree_close, rtol=1e-12, atol=1e-13)


def net(xp):
    def f(params, x):
        h = xp.tanh(params["W1"] @ x + params["b1"])
        return {"out": params["W2"] @ h, "norm": xp.sum(h * h) + x[0]}
    return f


def loss(xp):
    def f(params, x, y):
        o = net(xp)(params, x)
        return xp.sum((o["out"] - y) ** 2) + 0.1 * o["norm"]
    return f


@pytest.fixture
def data(rng):
    params = {"W1": rng.standard_normal((5, 3)), "b1": rng.standard_normal(5),
              "W2": rng.standard_normal((2, 5))}
    return params, rng.standard_normal((6, 3)), rng.standard_normal((6, 2))


def test_per_example_values_and_gradients_match_a_loop_and_jax(data):
    params, X, Y = data
    fwd = sg.vmap(net(np), in_axes=(None, 0))
    assert fwd.vectorised(params, X)
    close(fwd(params, X), jax.vmap(net(jnp), in_axes=(None, 0))(params, X))
    loop = [net(np)(params, x) for x in X]
    close(fwd(params, X), {k: np.stack([r[k] for r in loop]) for k in ("norm", "out")})
    per = sg.vmap(sg.grad(loss(np)), in_axes=(None, 0, 0))  # a gradient per example
    assert per.vectorised(params, X, Y)
    close(per(params, X, Y), jax.vmap(jax.grad(loss(jnp)), in_axes=(None, 0, 0))(params, X, Y))
    by_x = sg.vmap(sg.grad(loss(np), argnums=1), in_axes=(None, 0, 0))
    close(by_x(params, X, Y), np.stack([sg.grad(loss(np), 1)(params, x, y)
                                        for x, y in zip(X, Y)]))


def test_in_axes_and_out_axes(rng):
    A, B = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))

    def f(a, b):
        return np.outer(a, b[:, 0]) * 2.0, a @ b

    A0, A1, B0 = A.T, A, rng.standard_normal((3, 4, 2))  # a: (4,), b: (4, 2)
    for a, b, axes, oaxes in ((A0, B0, (0, 0), 0), (A1, B0, (1, 0), (1, -1)),
                              (A1, B, (-1, None), (2, 1)), (A0, B, (0, None), -1)):
        got = sg.vmap(f, in_axes=axes, out_axes=oaxes)(a, b)
        want = jax.vmap(lambda a, b: (jnp.outer(a, b[:, 0]) * 2.0, a @ b), in_axes=axes,
                        out_axes=oaxes)(a, b)
        close(got, want)


def test_out_axes_none_is_refused_by_name():
    with pytest.raises(sg.ArgumentError, match="out_axes=None"):
        sg.vmap(lambda x: x * 2.0, out_axes=None)


def test_an_op_that_would_mix_the_rows_runs_the_loop(rng):
    X = rng.standard_normal((4, 6))

    def f(x):  # np.cumsum flattens: rebuilt for a batch it would run across the rows
        return np.cumsum(np.reshape(x, (2, 3)) * x[:3])

    mapped = sg.vmap(f)
    assert not mapped.vectorised(X)
    close(mapped(X), np.stack([f(x) for x in X]))
    close(mapped(X), jax.vmap(lambda x: jnp.cumsum(jnp.reshape(x, (2, 3)) * x[:3]))(X))
    assert sg.vmap(lambda x: np.reshape(x, (2, 3)) @ x[:3]).vectorised(X)  # trailing axes

    @sg.custom_jvp
    def g(x):
        return np.sin(x)

    g.defjvps(lambda t, out, x: np.cos(x) * t)
    assert not sg.vmap(g).vectorised(X)
    close(sg.vmap(g)(X), np.sin(X))


def test_the_probe_finds_a_batch_size_equal_to_an_axis():
    """The batch has as many rows as the matrix has columns: rebuilt as it is, ``W @ x``
    of a batch of vectors would be a valid matrix product of the wrong meaning; the
    probe size (no axis of the graph has it) and the op's batch rule prevent that."""
    x = sg.var("x", shape=(3,))
    W = np.arange(9.0).reshape(3, 3)
    xs = sg.var("xs", shape=(3, 3))
    (out,) = batched([sg.const(W) @ x], {"x": xs}, 3)
    at = np.arange(9.0).reshape(3, 3) + 1.0
    np.testing.assert_array_equal(sg.evaluate(out, {"xs": at}), at @ W.T)
    y = sg.var("y", shape=(3,))
    with pytest.raises(Unbatchable, match="einsum"):
        batched([sg.einsum("i,i->", y, y)], {"y": xs}, 3)


def test_vmap_inside_a_transform_is_batched_there(rng):
    W, X = rng.standard_normal((3, 2)), rng.standard_normal((7, 3))
    g = sg.grad(lambda W: np.sum(sg.vmap(lambda x: np.sum(np.tanh(x @ W)))(X)))(W)
    close(g, jax.grad(lambda W: jnp.sum(jnp.tanh(X @ W)))(W))


def _pose(q, lengths, np=np):
    """The planar end point of a chain of links: each link's homogeneous transform built
    with np.array, a constant last row, the joint angles indexed one by one."""
    T = np.eye(3)
    for k, a in enumerate(lengths):
        c, s = np.cos(q[k]), np.sin(q[k])
        T = T @ np.array([[c, -s, a * c], [s, c, a * s], [0.0, 0.0, 1.0]])
    return T[:2, 2]


def test_vmap_of_grad_is_batched_like_the_primal(rng):
    """The derivative graph of a function that indexes its argument and builds arrays with
    constant rows is batched in one call, as the function itself is (not one call per
    example); values as jax.vmap(jax.grad) and jax.vmap(jax.jacrev)."""
    lengths = [1.0, 0.7, 0.5, 0.3]
    Q = rng.standard_normal((50, 4))

    def reach(q):
        p = _pose(q, lengths)
        return p[0] * p[1]

    def jreach(q):
        p = _pose(q, lengths, jnp)
        return p[0] * p[1]

    per_pose = sg.vmap(sg.grad(reach))
    assert per_pose.vectorised(Q)
    close(per_pose(Q), jax.vmap(jax.grad(jreach))(Q))
    jac = sg.vmap(sg.jacobian(lambda q: _pose(q, lengths)))
    assert jac.vectorised(Q)
    close(jac(Q), jax.vmap(jax.jacrev(lambda q: _pose(q, lengths, jnp)))(Q))
    assert sg.vmap(lambda q: _pose(q, lengths)).vectorised(Q)


def test_in_axes_out_of_range_bools_and_keyword_arguments_as_jax():
    X = np.arange(6.0).reshape(2, 3)
    with pytest.raises(sg.ArgumentError, match="along axis 2, but its rank is 2"):
        sg.vmap(lambda x: x * 2.0, in_axes=2)(X)
    with pytest.raises(sg.ArgumentError, match="in_axes must be an int"):
        sg.vmap(lambda x: x * 2.0, in_axes=True)(X)
    got = sg.vmap(lambda x, y: x * y)(X, y=X + 1.0)  # keywords: mapped along axis 0
    close(got, jax.vmap(lambda x, y: x * y)(X, y=X + 1.0))
    got = sg.vmap(lambda s, y: s * y, in_axes=(None,))(2.0, y=X)
    close(got, jax.vmap(lambda s, y: s * y, in_axes=(None,))(2.0, y=X))
