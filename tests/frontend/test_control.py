"""``sg.cond`` / ``sg.switch`` against ``jax.lax.cond`` / ``jax.lax.switch`` (values and
gradients), and the bounded ``while_loop`` the refusal's message names, against a Python
``while`` loop and the closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgrad as sg

jax = pytest.importorskip("jax")
jnp = jax.numpy
pytestmark = pytest.mark.usefixtures("x64")  # float64 in JAX, restored after the module


def _branches(xp):
    return (lambda v, w: (xp.sin(v) * w, {"s": xp.sum(v ** 2)}),
            lambda v, w: (v * xp.exp(w), {"s": xp.sum(xp.cos(v))}))


@pytest.mark.parametrize("t", [-0.7, 0.0, 1.3])
def test_cond_matches_jax_values_and_gradients(t):
    v, w = np.array([0.3, -1.2, 2.0]), 0.8

    def loss(v, w, t, cond, xp):
        a, b = cond(t > 0, *_branches(xp), v, w)
        return xp.sum(a) + b["s"]

    got = sg.value_and_grad(lambda v, w, t: loss(v, w, t, sg.cond, np), argnums=(0, 1, 2))(v, w, t)
    want = jax.value_and_grad(lambda v, w, t: loss(v, w, t, jax.lax.cond, jnp),
                              argnums=(0, 1, 2))(v, w, t)
    np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=1e-14)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("k", [-2, 0, 1, 2, 7])
def test_switch_matches_jax_and_clamps_the_index(k):
    fs = [lambda x: x ** 3, lambda x: x * 2.0, lambda x: jnp.sin(x) if isinstance(
        x, jax.Array) else sg.sin(x)]
    got = sg.value_and_grad(lambda x, k: sg.switch(k, fs, x))(1.5, k)
    want = jax.value_and_grad(lambda x, k: jax.lax.switch(k, fs, x))(1.5, k)
    assert float(got[0]) == pytest.approx(float(want[0]), rel=1e-15)
    assert float(got[1]) == pytest.approx(float(want[1]), rel=1e-15)


def test_the_branch_not_taken_gives_an_exact_zero_gradient_even_where_it_is_nan():
    x = sg.var("x")
    y = sg.cond(x > 0, sg.sqrt, lambda v: 0.0 * v, x)
    assert float(sg.evaluate(y, {"x": -4.0})) == 0.0
    assert float(sg.evaluate(sg.grad(y, x), {"x": -4.0})) == 0.0
    assert float(sg.evaluate(sg.grad(y, x), {"x": 4.0})) == 0.25


def test_a_python_predicate_builds_only_the_branch_it_chooses():
    x = sg.var("x")
    built = []
    y = sg.cond(np.int64(0), lambda v: built.append("t") or v, lambda v: built.append("f") or -v,
                x)
    assert built == ["f"] and str(y) == "-x"
    assert sg.switch(np.int32(9), [lambda: 1.0, lambda: 2.0]) == 2.0


def test_an_integer_predicate_means_nonzero():
    n, x = sg.var("n", dtype="int64"), sg.var("x")
    y = sg.cond(n, lambda v: v, lambda v: -v, x)
    assert [float(sg.evaluate(y, {"n": m, "x": 2.0})) for m in (0, 3, -1)] == [-2.0, 2.0, 2.0]


def test_bounded_while_loop_as_the_refusal_writes_it():
    """Newton's square root: ``c <- (c + a / c) / 2`` while ``|c*c - a| > tol``."""
    with pytest.raises(sg.UnsupportedError, match="fori_loop"):
        sg.while_loop(lambda c: c > 0, lambda c: c, 1.0)

    def newton(a, max_steps=60):
        def keep_going(c):
            return sg.numpy.abs(c * c - a) > 1e-12

        def step(c):
            return (c + a / c) / 2.0

        return sg.fori_loop(0, max_steps, lambda i, c: sg.cond(keep_going(c), step,
                                                               lambda c: c, c), a)

    def python_while(a):
        c, steps = a, 0
        while abs(c * c - a) > 1e-12:
            c, steps = (c + a / c) / 2.0, steps + 1
        return c, steps

    for a in (2.0, 9.0, 1e4):
        value, grad = sg.value_and_grad(newton)(a)
        c, steps = python_while(a)
        assert steps < 60 and float(value) == c
        assert float(grad) == pytest.approx(0.5 / math.sqrt(a), rel=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda x: sg.cond(x > 0, lambda v: v, lambda v: (v, v), x), "same structure"),
    (lambda x: sg.cond(x > 0, lambda v: v, lambda v: sg.numpy.ones(2) * v, x), "shapes"),
    (lambda x: sg.cond(x, lambda v: v, lambda v: v, x), "compare it first"),
    (lambda x: sg.cond(x > sg.numpy.zeros(2), lambda v: v, lambda v: v, x), "sg.where"),
    (lambda x: sg.cond(x > 0, "not a function", lambda v: v, x), "true_fun must be"),
    (lambda x: sg.switch(x, [lambda v: v], x), "integer scalar"),
    (lambda x: sg.switch(0, [], x), "empty"),
    (lambda x: sg.switch(1.0, [lambda v: v], x), "integer"),
    (lambda x: sg.cond(2.5, lambda v: v, lambda v: v, x), "boolean or integer"),
])
def test_mismatched_or_wrong_arguments_say_what_to_fix(call, match):
    with pytest.raises(sg.SymgradError, match=match):
        call(sg.var("x"))
