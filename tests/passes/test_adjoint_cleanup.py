"""The adjoint cleanup keeps an untaken branch's adjoint an exact zero at every order: its
mask survives the sums, reshapes and other masks that a reduction's rule and a Hessian
build, so 0 is never multiplied by the branch's NaN derivative (lax.cond's values)."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


BRANCHES = {  # the untaken branch is NaN at x = [1, 2] (logarithms of negative numbers)
    "logsumexp": (lambda x: sg.logsumexp(np.log(-x)), lambda x: jax.nn.logsumexp(jnp.log(-x))),
    "softmax": (lambda x: np.sum(sg.softmax(np.log(-x))),
                lambda x: jnp.sum(jax.nn.softmax(jnp.log(-x)))),
    "logsumexp of sqrt": (lambda x: sg.logsumexp(np.sqrt(-x)),
                          lambda x: jax.nn.logsumexp(jnp.sqrt(-x))),
}


@pytest.mark.parametrize("name", sorted(BRANCHES))
def test_an_untaken_branch_gives_exact_hessians(name):
    untaken, jax_untaken = BRANCHES[name]
    x = np.array([1.0, 2.0])

    def f(x):
        return sg.cond(x[0] > 0, lambda x: np.sum(x ** 2) * x[1], untaken, x)

    def jf(x):
        return jax.lax.cond(x[0] > 0, lambda x: jnp.sum(x ** 2) * x[1], jax_untaken, x)

    def g(x):  # the same selection written with where
        return np.where(x[0] > 0, np.sum(x ** 2) * x[1], untaken(x))

    for fun in (f, g):
        np.testing.assert_allclose(sg.grad(fun)(x), np.asarray(jax.grad(jf)(x)), rtol=1e-15)
        want = np.asarray(jax.hessian(jf)(x))
        np.testing.assert_allclose(sg.hessian(fun)(x), want, rtol=1e-15)
        np.testing.assert_allclose(sg.jacfwd(sg.grad(fun))(x), want, rtol=1e-15)
        np.testing.assert_allclose(sg.hvp(fun, (x,), (np.ones(2),)), want @ np.ones(2),
                                   rtol=1e-15)
