"""ravel_pytree as jax.flatten_util has it: arrays of a pytree as one vector and back, for
scipy.optimize; the same vector and structure as JAX's."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import symgrad as sg
from symgrad.flatten_util import ravel_pytree


def test_ravel_and_unravel_as_jax(rng):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from jax.flatten_util import ravel_pytree as jax_ravel

    params = {"W": rng.standard_normal((2, 3)), "b": rng.standard_normal(3),
              "layers": [np.float64(1.5), np.arange(2.0)]}
    flat, unravel = ravel_pytree(params)
    jflat, _ = jax_ravel(params)
    np.testing.assert_array_equal(flat, np.asarray(jflat))
    back = unravel(flat * 2.0)
    assert sg.tree_util.tree_structure(back) == sg.tree_util.tree_structure(params)
    np.testing.assert_array_equal(back["W"], 2.0 * params["W"])
    with pytest.raises(sg.ArgumentError, match="vector of 12 elements"):
        unravel(np.zeros(3))


def test_scipy_minimize_on_a_pytree_of_parameters(rng):
    X = rng.standard_normal((30, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3

    def loss(p):
        return np.mean((X @ p["w"] + p["b"] - y) ** 2)

    flat, unravel = ravel_pytree({"w": np.zeros(3), "b": np.zeros(())})
    vg = sg.value_and_grad(loss)

    def fun(v):
        value, g = vg(unravel(v))
        return value, ravel_pytree(g)[0]

    best = unravel(scipy.optimize.minimize(fun, flat, jac=True, method="BFGS").x)
    np.testing.assert_allclose(best["w"], [1.0, -2.0, 0.5], atol=1e-6)
    assert abs(best["b"] - 0.3) < 1e-6


def test_ravel_of_expressions_is_an_expression():
    a, b = sg.var("a", shape=(2,)), sg.var("b")
    flat, unravel = ravel_pytree((a, b))
    assert flat.shape == (3,)
    np.testing.assert_array_equal(sg.evaluate(flat, {"a": [1.0, 2.0], "b": 3.0}), [1, 2, 3])
    again = unravel(flat)
    assert again[0].shape == (2,) and again[1].shape == ()
