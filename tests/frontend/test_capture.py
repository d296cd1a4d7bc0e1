"""Closures are never stale: what a traced function reads besides its arguments (globals,
closed-over cells, its helpers' globals, arrays reached through attributes) is read at every
call, or a change traces again. Checked against closed forms and JAX (objects seen through
views: ``test_capture_objects.py``; the key of what was read: ``test_capture_key.py``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg

X_batch = np.zeros((8, 3))
y_batch = np.zeros(8)


def logistic_loss(w):
    """The course's logistic regression, reading its minibatch from globals."""
    z = X_batch @ w
    return np.mean(np.log1p(np.exp(-y_batch * z)))


def logistic_grad(w, X, y):  # the closed form
    z = X @ w
    return -(X * (y / (1.0 + np.exp(y * z)))[:, None]).mean(axis=0)


def test_global_minibatch_is_read_at_every_call(rng):
    global X_batch, y_batch
    g = sg.grad(logistic_loss)
    w = rng.standard_normal(3)
    for _ in range(4):
        X_batch = rng.standard_normal((8, 3))
        y_batch = np.sign(rng.standard_normal(8))
        np.testing.assert_allclose(g(w), logistic_grad(w, X_batch, y_batch), rtol=1e-12)
    assert g.cache_size == 1  # read, not retraced
    X_batch = rng.standard_normal((5, 3))  # a batch of another size: traced again
    y_batch = np.sign(rng.standard_normal(5))
    np.testing.assert_allclose(g(w), logistic_grad(w, X_batch, y_batch), rtol=1e-12)
    X_batch[:] = 0.0  # changed in place: read too
    np.testing.assert_allclose(g(w), np.zeros(3), atol=1e-15)
    assert "def grad_logistic_loss(w, X_batch, y_batch):" in g.source


def test_lbfgs_on_a_changing_minibatch_matches_jax(rng):
    """SGD-like use: scipy's L-BFGS-B on each new minibatch, gradients checked with JAX."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from scipy.optimize import minimize

    global X_batch, y_batch
    vg = sg.value_and_grad(logistic_loss)
    w = np.zeros(3)
    true_w = np.array([1.0, -2.0, 0.5])
    for _ in range(3):
        X_batch = rng.standard_normal((40, 3))
        y_batch = np.sign(X_batch @ true_w + 0.1 * rng.standard_normal(40))

        def jloss(w, X=X_batch, y=y_batch):
            return jnp.mean(jnp.log1p(jnp.exp(-jnp.asarray(y) * (X @ w))))

        value, grad = vg(w)
        assert value == pytest.approx(float(jloss(w)), rel=1e-13)
        np.testing.assert_allclose(grad, np.asarray(jax.grad(jloss)(w)), rtol=1e-12)
        w = minimize(vg, w, jac=True, method="L-BFGS-B").x
        np.testing.assert_allclose(vg(w)[1], np.asarray(jax.grad(jloss)(w)), rtol=1e-9,
                                   atol=1e-12)


def test_closed_over_cells_and_helpers():
    def make(data):
        def loss(w):
            return helper(w) + np.sum(data * w)
        return loss

    scale = np.array([2.0])

    def helper(w):
        return np.sum(scale * w ** 2)

    data = np.array([1.0, 1.0])
    loss = make(data)
    g = sg.grad(loss)
    w = np.array([1.0, 2.0])
    np.testing.assert_allclose(g(w), 4.0 * w + 1.0, rtol=1e-15)
    data[:] = [3.0, 5.0]  # the closed-over array, changed in place
    scale = np.array([10.0])  # the helper's closed-over array, rebound
    np.testing.assert_allclose(g(w), 20.0 * w + [3.0, 5.0], rtol=1e-15)


class Model:
    def __init__(self, X):
        self.X = X

    def loss(self, w):
        return np.sum((self.X @ w) ** 2)


def test_a_large_array_reached_otherwise_is_an_input_not_a_literal(rng):
    X = rng.standard_normal((2000, 3))
    m = Model(X)
    g = sg.grad(m.loss)
    w = rng.standard_normal(3)
    np.testing.assert_allclose(g(w), 2 * X.T @ (X @ w), rtol=1e-12)
    assert len(g.source) < 5000  # the 6000 numbers are not written into the source
    X *= 2.0  # the same object, changed in place: seen
    np.testing.assert_allclose(g(w), 2 * X.T @ (X @ w), rtol=1e-12)


def test_a_large_closure_compiles_small(rng):
    X = rng.standard_normal((10, 50_000))

    def loss(w):
        return np.sum(np.log1p(np.exp(-(w @ X))))

    g = sg.grad(loss)
    w = 0.01 * rng.standard_normal(10)
    z = w @ X
    np.testing.assert_allclose(g(w), X @ (-1.0 / (1.0 + np.exp(z))), rtol=1e-10)
    assert len(g.source) < 5000


def test_random_draws_while_tracing_warn():
    def noisy(w):
        return np.sum(w * np.random.standard_normal(2))

    with pytest.warns(sg.SymgradWarning, match="random numbers drawn while tracing"):
        sg.grad(noisy)(np.ones(2))
    gen = np.random.default_rng(0)

    def noisy2(w):
        return np.sum(w * gen.normal(size=2))

    with pytest.warns(sg.SymgradWarning, match="frozen"):
        sg.grad(noisy2)(np.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sg.grad(lambda w: np.sum(w ** 2))(np.ones(2))  # no warning without random


def test_nested_transforms_read_globals_too(rng):
    global X_batch, y_batch
    X_batch = rng.standard_normal((6, 3))
    y_batch = np.sign(rng.standard_normal(6))
    h = sg.hessian(logistic_loss)
    w = rng.standard_normal(3)
    first = h(w)
    X_batch = 2.0 * X_batch
    second = h(w)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def jloss(w):
        return jnp.mean(jnp.log1p(jnp.exp(-jnp.asarray(y_batch) * (X_batch @ w))))

    np.testing.assert_allclose(second, np.asarray(jax.hessian(jloss)(w)), rtol=1e-12)
    assert not np.allclose(first, second)


# -- messages that name the call and the fix ------------------------------------------------------


def test_messages_name_the_line_and_the_fix():
    import scipy.linalg
    import scipy.special

    def fill(w):
        out = np.zeros(2, dtype=np.int64)
        out[0] = w[0]
        return np.sum(out)

    with pytest.raises(sg.UnsupportedError, match=r"int64 array .*out\[0\] = w\[0\].*float"):
        sg.grad(fill)(np.ones(2))
    with pytest.raises(sg.UnsupportedError, match=r"test_capture.py:\d+: .*\.dot\(w\).*A @ expr"):
        sg.grad(lambda w: np.sum(np.ones((2, 2)).dot(w)))(np.ones(2))
    with pytest.raises(sg.UnsupportedError, match=r"float\(\) .*float\(w\[0\]\).*np.where"):
        sg.grad(lambda w: w[0] * float(w[0]))(np.ones(2))
    with pytest.raises(sg.UnsupportedError, match=r"scipy.linalg.logm.*symgrad.scipy.linalg"):
        sg.grad(lambda w: np.sum(scipy.linalg.logm(np.diag(w))))(np.ones(2))
    with pytest.raises(sg.UnsupportedError,
                       match=r"scipy.special.kolmogorov is not supported.*symgrad.scipy"):
        sg.grad(lambda w: np.sum(scipy.special.kolmogorov(w) * w))(np.ones(2))
    x = sg.var("x", shape=(2,))
    with pytest.raises(sg.UnsupportedError, match=r"np.array\(\[\.\.\.\]\).*np.stack"):
        np.array([x[0], x[1]])


_REGISTRY = {float: 2.0, int: 3.0}  # a library's registry: a dict keyed by types


def _scale_of(v):
    return _REGISTRY[type(v)]


def test_a_global_that_is_not_a_pytree_is_kept_as_it_is():
    """A function reading a dict keyed by types (autograd's VSpace registry is one) traces:
    the dict is not a pytree, so it is kept by identity, not lifted."""
    g = sg.grad(lambda w: _scale_of(1.0) * np.sum(w ** 2))
    np.testing.assert_allclose(g(np.array([1.0, -2.0])), [4.0, -8.0], rtol=1e-15)
    y, pull = sg.vjp(lambda a, b: a * _REGISTRY[float] + b, 1.5, 0.5)
    assert y == 3.5 and pull(1.0) == (2.0, 1.0)
