"""``sg.cond`` / ``sg.switch`` against ``jax.lax.cond`` / ``jax.lax.switch`` (values and
gradients), and ``sg.while_loop`` (unbounded and with ``max_steps=``) against a Python
``while`` loop, the closed form and ``jax.grad`` of the fixed-length scan of the same trip
count."""

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


def test_bounded_while_loop_written_with_fori_loop_and_cond():
    """Newton's square root: ``c <- (c + a / c) / 2`` while ``|c*c - a| > tol``."""

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


# -- while_loop ----------------------------------------------------------------------------

def _python_newton(a: float) -> tuple[float, int]:
    c, steps = a, 0
    while abs(c * c - a) > 1e-12 * a:
        c, steps = 0.5 * (c + a / c), steps + 1
    return c, steps


@pytest.mark.parametrize("max_steps", [None, 60])
def test_while_loop_newton_square_root_value_and_gradient(max_steps):
    """A Newton iteration run to a tolerance: the value is the Python loop's bit for bit,
    the gradient the closed form ``1 / (2 sqrt(a))``, on the interpreter and the NumPy
    target, unbounded and with ``max_steps``."""
    a = sg.var("a")
    r = sg.while_loop(lambda c: sg.abs(c * c - a) > 1e-12 * a, lambda c: 0.5 * (c + a / c), a,
                      max_steps=max_steps)
    g = sg.grad(r, a)
    fn = sg.compile([r, g])
    for av in (2.0, 9.0, 1e4, 0.03):
        c, steps = _python_newton(av)
        assert 0 < steps < 60
        for value, grad in (sg.evaluate([r, g], {"a": av}), fn(a=av)):
            assert float(value) == c
            assert float(grad) == pytest.approx(0.5 / math.sqrt(av), rel=1e-9)


def test_while_loop_pytree_carry_with_a_counter_matches_a_python_loop():
    """A dict carry with an int64 counter and a vector: the final value and the number of
    steps equal a Python ``while`` loop's."""
    v = sg.var("v", shape=(3,))

    def body(c):
        return {"n": c["n"] + 1, "x": 0.5 * c["x"] + v}

    out = sg.while_loop(lambda c: sg.sum(c["x"] * c["x"]) < 20.0, body,
                        {"n": np.int64(0), "x": v})
    vv = np.array([0.5, -1.0, 2.0])
    n, x = 0, vv.copy()
    while np.sum(x * x) < 20.0:
        n, x = n + 1, 0.5 * x + vv
    got = sg.evaluate([out["n"], out["x"]], {"v": vv})
    assert int(got[0]) == n and n >= 2
    np.testing.assert_array_equal(got[1], x)


def test_while_loop_gradient_equals_jax_grad_of_the_scan_with_its_trip_count():
    """JAX has no reverse-mode while_loop: the reference is ``jax.grad`` of a
    ``jax.lax.scan`` of the same step run the trip count the loop took."""
    w = sg.var("w", shape=(3, 3))
    x0 = sg.var("x0", shape=(3,))

    def step(c):
        k, x = c
        return k + 1, 1.1 * x + 0.1 * sg.tanh(w @ x) + 0.05

    k, x = sg.while_loop(lambda c: sg.sum(c[1] * c[1]) < 4.0, step, (0, x0), snapshots=2)
    loss = sg.sum(sg.sin(x))
    grads = sg.grad(loss, [w, x0])
    rng = np.random.default_rng(3)
    wv, xv = rng.normal(size=(3, 3)), rng.uniform(0.1, 0.2, 3)
    inputs = {"w": wv, "x0": xv}
    steps = int(sg.evaluate(k, inputs))
    assert steps > 5

    def ref(wj, xj):
        xs, _ = jax.lax.scan(lambda c, _: (1.1 * c + 0.1 * jnp.tanh(wj @ c) + 0.05, None),
                             xj, None, length=steps)
        return jnp.sum(jnp.sin(xs))

    want = jax.grad(ref, argnums=(0, 1))(wv, xv)
    for got_fn in (lambda: sg.evaluate(list(grads), inputs), lambda: sg.compile(
            list(grads))(**inputs)):
        for got, ref_ in zip(got_fn(), want):
            np.testing.assert_allclose(got, np.asarray(ref_), rtol=1e-12, atol=1e-14)


def test_while_loop_with_max_steps_runs_on_jax_and_marks_an_unfinished_loop_nan():
    """``max_steps`` makes a scan every target writes; where the condition still holds after
    ``max_steps`` steps the float result is NaN, not a truncated value."""
    x = sg.var("x")
    y = sg.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0, max_steps=8)
    fn = sg.compile([y, sg.grad(y, x)], backend="jax")
    assert [float(v) for v in fn(x=3.0)] == [27.0, 27.0]
    assert np.isnan(float(sg.evaluate(y, {"x": 1.2})))  # 1.2**8 < 10: unfinished
    assert float(sg.evaluate(y, {"x": 1.5})) == 1.5 ** 6


def test_while_loop_without_max_steps_is_refused_on_jax_naming_the_fix():
    x = sg.var("x")
    y = sg.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)
    with pytest.raises(sg.BackendError, match="max_steps="):
        sg.to_source(y, [x], backend="jax")
    with pytest.raises(sg.BackendError, match="max_steps="):
        sg.to_source(sg.grad(y, x), [x], backend="torch")


def test_while_loop_bad_input_gets_clear_errors():
    x = sg.var("x")
    with pytest.raises(sg.ArgumentError, match="cond_fun must return a boolean scalar"):
        sg.while_loop(lambda c: c, lambda c: c * x, 1.0)
    with pytest.raises(sg.ShapeError, match="while_loop: body_fun"):
        sg.while_loop(lambda c: c < 1.0, lambda c: sg.stack([c, c]), x)
    with pytest.raises(sg.ArgumentError, match="snapshots must be an int >= 1"):
        sg.while_loop(lambda c: c < 1.0, lambda c: c * x, x, snapshots=0)
    with pytest.raises(sg.ArgumentError, match="body_fun must be a function"):
        sg.while_loop(lambda c: c < 1.0, 3.0, x)
