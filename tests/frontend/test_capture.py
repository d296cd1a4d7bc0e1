"""Closures are never stale: what a traced function reads besides its arguments (globals,
closed-over cells, its helpers' globals, arrays reached through attributes) is read at every
call, or a change traces again. Checked against closed forms and JAX."""

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
        out = np.zeros(2)
        out[0] = w[0]
        return np.sum(out)

    with pytest.raises(sg.UnsupportedError, match=r"out\[0\] = w\[0\].*\.at\[i\]\.set.*np.stack"):
        sg.grad(fill)(np.ones(2))
    with pytest.raises(sg.UnsupportedError, match=r"test_capture.py:\d+: .*\.dot\(w\).*A @ expr"):
        sg.grad(lambda w: np.sum(np.ones((2, 2)).dot(w)))(np.ones(2))
    with pytest.raises(sg.UnsupportedError, match=r"float\(\) .*float\(w\[0\]\).*np.where"):
        sg.grad(lambda w: w[0] * float(w[0]))(np.ones(2))
    with pytest.raises(sg.UnsupportedError, match=r"scipy.linalg.sqrtm.*symgrad.scipy.linalg"):
        sg.grad(lambda w: np.sum(scipy.linalg.sqrtm(np.diag(w))))(np.ones(2))
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


# -- objects, partials, defaults and containers: read at every call ----------------------------


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


class Quadratic:
    """A model as users write them: parameters and settings on ``self``."""

    def __init__(self, Q, scale):
        self.Q, self.scale = Q, scale

    def loss(self, x):
        return self.scale * (x @ self.Q @ x)


def test_a_bound_method_reads_its_object_at_every_call():
    jax = _jax()
    m = Quadratic(np.eye(3), 1.0)
    g = sg.grad(m.loss)
    x = np.array([1.0, 2.0, 3.0])

    def jax_grad():  # JAX's grad traces again at each call: it reads the new values
        return np.asarray(jax.grad(lambda x: m.scale * (x @ m.Q @ x))(x))

    np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-15)
    m.Q = 2 * np.eye(3)  # rebound: an input, read again without tracing again
    np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-15)
    assert g.cache_size == 1
    m.Q[0, 1] = 5.0  # changed in place
    np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-15)
    m.scale = 10.0  # a number: traced again
    np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-15)
    assert g.cache_size == 2
    np.testing.assert_allclose(g(x), 10.0 * (m.Q + m.Q.T) @ x, rtol=1e-15)


class Layer:
    def __init__(self, W):
        self.W = W

    @property
    def scaled(self):
        return self.W * Network.gain


class Network:
    gain = 1.0  # a class attribute, read through the instance

    def __init__(self, layers):
        self.layers = layers
        self.head = layers[-1]

    def forward(self, x):
        for layer in self.layers:
            x = np.tanh(layer.scaled @ x)
        return x

    def loss(self, x):
        return np.sum(self.forward(x) ** 2) + self.penalty()

    def penalty(self):
        return 0.5 * np.sum(self.head.W ** 2)


def test_attributes_at_any_depth_properties_helpers_and_class_attributes(rng):
    jax = _jax()
    import jax.numpy as jnp

    net = Network([Layer(rng.standard_normal((3, 3))), Layer(rng.standard_normal((2, 3)))])
    g = sg.grad(net.loss)
    x = rng.standard_normal(3)

    def jax_grad():
        def loss(x):
            for layer in net.layers:
                x = jnp.tanh((layer.W * Network.gain) @ x)
            return jnp.sum(x ** 2) + 0.5 * jnp.sum(net.head.W ** 2)
        return np.asarray(jax.grad(loss)(x))

    np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-11, atol=1e-15)
    net.layers[0].W = rng.standard_normal((3, 3))  # an object in a list on self
    np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-11, atol=1e-15)
    net.layers[1].W *= 3.0  # in place, read through self.layers and self.head
    np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-11, atol=1e-15)
    Network.gain = 0.5  # the class attribute the property reads
    try:
        np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-11, atol=1e-15)
    finally:
        Network.gain = 1.0
    net.layers.append(Layer(rng.standard_normal((2, 2))))  # one layer more: traced again
    np.testing.assert_allclose(g(x), jax_grad(), rtol=1e-11, atol=1e-15)


def test_partial_arguments_are_read_at_every_call():
    import functools

    def weighted(a, x, powers):
        return np.sum(a * x ** powers[0])

    a = np.array([1.0, 1.0, 1.0])
    powers = [2.0]
    g = sg.grad(functools.partial(weighted, a, powers=powers))
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g(x), 2 * x, rtol=1e-15)
    a[:] = 3.0  # the array argument, changed in place
    np.testing.assert_allclose(g(x), 6 * x, rtol=1e-15)
    powers[0] = 3.0  # the list keyword, changed in place
    np.testing.assert_allclose(g(x), 9 * x ** 2, rtol=1e-15)


class Settings:
    def __init__(self):
        self.k = 2.0
        self.offset = np.zeros(3)


SETTINGS = Settings()
WEIGHTS = [1.0, 2.0]
TABLE = {"a": 1.0}


def _reads_module_state(x):
    return SETTINGS.k * np.sum((x - SETTINGS.offset) ** 2) * WEIGHTS[0] * TABLE["a"]


def test_module_objects_lists_dicts_and_defaults_changed_in_place():
    g = sg.grad(_reads_module_state)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g(x), 4 * x, rtol=1e-15)
    SETTINGS.k = 5.0  # a field of a module-level object
    SETTINGS.offset[:] = 1.0
    WEIGHTS[0] = 3.0  # a global list of numbers, changed in place
    TABLE["a"] = 0.5  # a global dict of numbers
    try:
        np.testing.assert_allclose(g(x), 2 * 5.0 * 3.0 * 0.5 * (x - 1.0), rtol=1e-15)
    finally:
        SETTINGS.k, SETTINGS.offset[:], WEIGHTS[0], TABLE["a"] = 2.0, 0.0, 1.0, 1.0

    def with_default(x, c=[1.0], scale={"s": 1.0}):  # noqa: B006 (the mutable default is the point)
        return c[0] * scale["s"] * x ** 2

    h = sg.grad(with_default)
    assert h(2.0) == 4.0
    with_default.__defaults__[0][0] = 3.0
    with_default.__defaults__[1]["s"] = 2.0
    assert h(2.0) == 24.0


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


def test_what_a_view_cannot_record_is_refused():
    class Opaque:
        def __init__(self):
            self.w = 2.0

        def loss(self, x):
            return vars(self)["w"] * x

    with pytest.raises(sg.UnsupportedError, match=r"__dict__ .*read them by name"):
        sg.grad(Opaque().loss)(1.0)


def test_a_traced_method_does_not_change_its_object():
    class Counter:
        def __init__(self):
            self.calls = 0
            self.w = np.array([1.0, 2.0])

        def loss(self, x):
            self.calls += 1  # seen by the rest of the trace, not written back
            return self.calls * np.sum(self.w * x)

    c = Counter()
    np.testing.assert_allclose(sg.grad(c.loss)(np.zeros(2)), [1.0, 2.0])
    assert c.calls == 0


def test_a_captured_np_matrix_is_refused():
    """np.matrix's * is a matrix product: read as an array it would give a gradient of the
    wrong shape; refused with what to use."""
    M = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(sg.UnsupportedError, match=r"np\.matrix.*np\.asarray"):
        sg.grad(lambda x: np.sum(M * x))(np.ones(2))
