"""Python's ``math`` in a traced function: its functions take symbolic scalars (by module,
by ``from math import ...``, in the user's helpers and methods), match JAX's gradients of
the same formulas, keep ``math``'s own results on numbers, and refuse arrays and the
functions that have no symbolic meaning."""

from __future__ import annotations

import math
from math import atan2, exp, sqrt

import numpy as np
import pytest

import symgrad as sg

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.usefixtures("x64")
jnp = jax.numpy
jss = pytest.importorskip("jax.scipy.special")


def scalar_model(x):
    a = exp(x[0]) + sqrt(x[1] ** 2 + 1) * atan2(x[2], x[0])
    b = (math.hypot(x[0], x[1], x[2]) + math.lgamma(x[1] ** 2 + 1) + math.pow(x[0] ** 2, 1.5)
         + math.fsum([x[0], x[1]]) + math.prod([x[0], x[2], 2.0]) + math.cbrt(x[2]))
    c = math.tanh(x[1]) * math.acosh(x[2] ** 2 + 1) + math.copysign(x[0], -1.0)
    return a + b + c + math.pi * math.erfc(x[2]) + math.log(x[0] ** 2, 10) + math.log1p(x[0])


def scalar_model_jax(x):
    a = jnp.exp(x[0]) + jnp.sqrt(x[1] ** 2 + 1) * jnp.arctan2(x[2], x[0])
    b = (jnp.sqrt(x[0] ** 2 + x[1] ** 2 + x[2] ** 2) + jss.gammaln(x[1] ** 2 + 1)
         + (x[0] ** 2) ** 1.5 + x[0] + x[1] + x[0] * x[2] * 2.0 + jnp.cbrt(x[2]))
    c = jnp.tanh(x[1]) * jnp.arccosh(x[2] ** 2 + 1) + jnp.copysign(x[0], -1.0)
    return (a + b + c + jnp.pi * jss.erfc(x[2]) + jnp.log(x[0] ** 2) / jnp.log(10.0)
            + jnp.log1p(x[0]))


@pytest.mark.parametrize("x", [[0.7, -0.3, 1.2], [1.9, 0.4, -0.6]])
def test_math_functions_differentiate_as_jax_does(x):
    x = np.array(x)
    value, g = sg.value_and_grad(scalar_model)(x)
    assert float(value) == pytest.approx(scalar_model(x), rel=1e-14)  # math's own on numbers
    np.testing.assert_allclose(g, jax.grad(scalar_model_jax)(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sg.hessian(scalar_model)(x), jax.hessian(scalar_model_jax)(x),
                               rtol=1e-10, atol=1e-12)


class Pendulum:
    """A user's class whose method calls math on its attributes and the state."""

    def __init__(self, length):
        self.length = length

    def energy(self, state):
        theta, omega = state[0], state[1]
        return 0.5 * self.length ** 2 * omega ** 2 + 9.81 * self.length * (1 - math.cos(theta))


def test_math_in_a_method_and_a_loop():
    p = Pendulum(1.5)
    s = np.array([0.3, -1.1])
    np.testing.assert_allclose(sg.grad(p.energy)(s),
                               [9.81 * 1.5 * math.sin(0.3), 1.5 ** 2 * -1.1], rtol=1e-14)

    def chain(x):
        total = 0.0
        for i in range(len(x)):
            total += math.exp(-x[i]) * math.cos(x[i])
        return total

    x = np.array([0.2, 0.5, 1.3])
    np.testing.assert_allclose(sg.grad(chain)(x),
                               -np.exp(-x) * (np.cos(x) + np.sin(x)), rtol=1e-13)


def test_math_refuses_arrays_and_functions_without_a_symbolic_meaning():
    with pytest.raises(sg.UnsupportedError, match=r"math.exp takes a number.*np.exp"):
        sg.grad(lambda v: math.exp(v) @ v)(np.ones(2))
    with pytest.raises(sg.UnsupportedError, match="float"):
        sg.grad(lambda v: math.floor(v[0]) * v[1])(np.ones(2))


def test_math_outside_a_trace_is_untouched():
    assert math.exp(1.0) == math.e
    with pytest.raises(TypeError):
        math.exp(sg.var("x"))
