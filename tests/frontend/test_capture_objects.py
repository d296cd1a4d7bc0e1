"""Objects, partials, defaults and containers as a traced function sees them: every
attribute, argument or element it reads is read again at every call (checked against JAX
and closed forms), what a view cannot record is refused, and tracing never changes the
user's object."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import symgrad as sg


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
