"""``sg.custom_root`` and ``sg.custom_linear_solve``: values from the user's solve, derivatives
by the implicit function theorem, against ``jax.lax.custom_root`` /
``jax.lax.custom_linear_solve`` (x64) and closed forms, to second order, forward and
reverse."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import DifferentiationError, ShapeError, UnsupportedError

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True, scope="module")
def _x64():
    with jax.enable_x64(True):
        yield


def newton_sg(f, x0):
    """Twenty Newton steps (the solve a user would trace)."""
    return sg.fori_loop(0, 20, lambda i, x: x - f(x) / sg.grad(f)(x), x0)


def newton_vec(f, x0):
    return sg.fori_loop(0, 20, lambda i, x: x - sg.solve(sg.jacobian(f)(x), f(x)), x0)


def scalar_solve(g, y):
    return y / g(1.0)


def dense_solve(g, y):
    return sg.solve(sg.jacobian(g)(y), y)


def test_scalar_root_value_and_derivatives_match_jax_and_the_closed_form():
    a = sg.var("a")
    x = sg.custom_root(lambda x: x ** 3 - a, 1.0, newton_sg, scalar_solve)
    d1, d2 = sg.grad(x, a), sg.grad(sg.grad(x, a), a)
    got = sg.evaluate([x, d1, d2, sg.jvp(x, a, 1.0)], {"a": 5.0})

    def jax_root(a):
        def solve(f, x0):
            return jax.lax.fori_loop(0, 20, lambda i, x: x - f(x) / jax.grad(f)(x), x0)

        return jax.lax.custom_root(lambda x: x ** 3 - a, 1.0, solve,
                                   lambda g, y: y / g(1.0))

    ref = [jax_root(5.0), jax.grad(jax_root)(5.0), jax.grad(jax.grad(jax_root))(5.0)]
    closed = [5.0 ** (1 / 3), 5.0 ** (-2 / 3) / 3, -2 / 9 * 5.0 ** (-5 / 3)]
    np.testing.assert_allclose(got[:3], ref, rtol=1e-12)
    np.testing.assert_allclose(got[:3], closed, rtol=1e-12)
    np.testing.assert_allclose(got[3], closed[1], rtol=1e-12)


def test_vector_root_jacobians_match_jax_forward_and_reverse():
    b = sg.var("b", shape=(3,))
    s = sg.var("s")
    A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]])

    def f(x):
        return sg.asarray(A) @ x + s * x ** 3 - b

    x = sg.custom_root(f, sg.zeros(3), newton_vec, dense_solve)
    at = {"b": np.array([1.0, -2.0, 0.5]), "s": 0.7}
    got = sg.evaluate([x, sg.jacobian(x, b), sg.jacfwd(x, b), sg.jacobian(x, s)], at)

    def jax_root(b, s):
        fj = lambda x: jnp.asarray(A) @ x + s * x ** 3 - b  # noqa: E731

        def solve(f, x0):
            return jax.lax.fori_loop(
                0, 20, lambda i, x: x - jnp.linalg.solve(jax.jacobian(f)(x), f(x)), x0)

        return jax.lax.custom_root(fj, jnp.zeros(3), solve,
                                   lambda g, y: jnp.linalg.solve(jax.jacobian(g)(y), y))

    bj, sj = at["b"], at["s"]
    np.testing.assert_allclose(got[0], jax_root(bj, sj), rtol=1e-12)
    np.testing.assert_allclose(got[1], jax.jacrev(jax_root)(bj, sj), rtol=1e-11)
    np.testing.assert_allclose(got[2], jax.jacfwd(jax_root)(bj, sj), rtol=1e-11)
    np.testing.assert_allclose(got[3], jax.jacrev(jax_root, 1)(bj, sj), rtol=1e-11)
    # closed form: dx/db = (A + 3 s diag(x^2))^-1
    J = A + 3 * at["s"] * np.diag(got[0] ** 2)
    np.testing.assert_allclose(got[1], np.linalg.inv(J), rtol=1e-11)


def test_vector_root_second_derivatives_match_jax():
    b = sg.var("b", shape=(2,))

    def f(x):
        return x + 0.5 * sg.sin(x) * sg.sum(x) - b

    x = sg.custom_root(f, sg.zeros(2), newton_vec, dense_solve)
    loss = sg.sum(x ** 2 * sg.asarray([1.0, 3.0]))
    at = {"b": np.array([0.3, -0.2])}
    H = sg.evaluate(sg.hessian(loss, b), at)

    def jax_loss(b):
        fj = lambda x: x + 0.5 * jnp.sin(x) * jnp.sum(x) - b  # noqa: E731

        def solve(f, x0):
            return jax.lax.fori_loop(
                0, 20, lambda i, x: x - jnp.linalg.solve(jax.jacobian(f)(x), f(x)), x0)

        xs = jax.lax.custom_root(fj, jnp.zeros(2), solve,
                                 lambda g, y: jnp.linalg.solve(jax.jacobian(g)(y), y))
        return jnp.sum(xs ** 2 * jnp.array([1.0, 3.0]))

    np.testing.assert_allclose(H, jax.hessian(jax_loss)(at["b"]), rtol=1e-10)
    sg.check_grads(loss, b, at, order=2)


def test_root_derivative_ignores_the_solver_iterations():
    """Two Newton steps give an inexact value; the derivative is still the implicit one at
    that value (as in JAX), not the derivative of the two steps."""
    a = sg.var("a")
    two = lambda f, x0: sg.fori_loop(0, 2, lambda i, x: x - f(x) / sg.grad(f)(x), x0)  # noqa: E731
    x = sg.custom_root(lambda x: x ** 2 - a, 1.0, two, scalar_solve)
    xv, dv = sg.evaluate([x, sg.grad(x, a)], {"a": 4.0})
    assert abs(xv - 2.0) > 1e-3
    np.testing.assert_allclose(dv, 1 / (2 * xv), rtol=1e-14)


def test_has_aux_returns_aux_without_derivative():
    a = sg.var("a")

    def solve(f, x0):
        x = newton_sg(f, x0)
        return x, {"residual": f(x), "steps": 20}

    x, aux = sg.custom_root(lambda x: x ** 2 - a, 1.0, solve, scalar_solve, has_aux=True)
    assert aux["steps"] == 20
    got = sg.evaluate([x, sg.grad(x + aux["residual"] * 1e6, a)], {"a": 9.0})
    np.testing.assert_allclose(got, [3.0, 1 / 6], rtol=1e-12)


def test_custom_linear_solve_matches_jax():
    theta = sg.var("theta", shape=(2,))
    b = sg.var("b", shape=(2,))

    def A(t):
        return sg.stack([sg.stack([3.0 + t[0], t[1]]), sg.stack([t[1], 2.0])])

    mat = A(theta)
    x = sg.custom_linear_solve(lambda v: mat @ v, b, lambda mv, r: sg.solve(mat, r),
                               lambda vm, r: sg.solve(mat.T, r))
    loss = sg.sum(x * sg.asarray([1.0, -2.0])) + sg.sum(x ** 2)
    at = {"theta": np.array([0.5, 0.7]), "b": np.array([1.0, 2.0])}
    got = sg.evaluate([x, *sg.grad(loss, [theta, b]), sg.jacfwd(x, theta)], at)

    def jax_x(t, bb):
        m = jnp.array([[3.0 + t[0], t[1]], [t[1], 2.0]])
        return jax.lax.custom_linear_solve(lambda v: m @ v, bb,
                                           lambda mv, r: jnp.linalg.solve(m, r),
                                           lambda vm, r: jnp.linalg.solve(m.T, r))

    def jax_loss(t, bb):
        xx = jax_x(t, bb)
        return jnp.sum(xx * jnp.array([1.0, -2.0])) + jnp.sum(xx ** 2)

    t, bb = at["theta"], at["b"]
    np.testing.assert_allclose(got[0], jax_x(t, bb), rtol=1e-13)
    np.testing.assert_allclose(got[1], jax.grad(jax_loss, 0)(t, bb), rtol=1e-12)
    np.testing.assert_allclose(got[2], jax.grad(jax_loss, 1)(t, bb), rtol=1e-12)
    np.testing.assert_allclose(got[3], jax.jacfwd(jax_x)(t, bb), rtol=1e-12)
    sg.check_grads(loss, [theta, b], at, order=2)


@pytest.mark.parametrize("how", ["symmetric", "transposed"])
def test_custom_linear_solve_without_transpose_solve(how):
    """symmetric=True solves again with ``solve``; without it, ``solve`` is transposed (a
    dense solve is linear in its right-hand side)."""
    b = sg.var("b", shape=(3,))
    M = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    if how == "transposed":
        M[0, 2] = 0.5
    m = sg.asarray(M)
    x = sg.custom_linear_solve(lambda v: m @ v, b, lambda mv, r: sg.solve(m, r),
                               symmetric=how == "symmetric")
    g = sg.evaluate(sg.grad(sg.sum(x * sg.asarray([1.0, 2.0, 3.0])), b),
                    {"b": np.ones(3)})
    np.testing.assert_allclose(g, np.linalg.solve(M.T, [1.0, 2.0, 3.0]), rtol=1e-13)


def test_custom_linear_solve_with_a_nonlinear_solve_is_refused_in_reverse_mode():
    b = sg.var("b", shape=(2,))
    x = sg.custom_linear_solve(lambda v: 2.0 * v, b, lambda mv, r: r * r)
    with pytest.raises(DifferentiationError, match="transpose_solve"):
        sg.grad(sg.sum(x), b)


def test_emitted_code_matches_evaluate():
    a = sg.var("a", shape=(2,))
    x = sg.custom_root(lambda x: x ** 3 + x - a, sg.zeros(2), newton_vec, dense_solve)
    loss = sg.sum(sg.sin(x))
    outs = [loss, sg.grad(loss, a)]
    at = np.array([0.5, 3.0])
    fn = sg.compile(outs, [a])
    for got, ref in zip(fn(at), sg.evaluate(outs, {"a": at})):
        np.testing.assert_allclose(got, ref, rtol=1e-14)


def test_bad_arguments_say_what_to_do():
    a = sg.var("a")
    with pytest.raises(UnsupportedError, match="ravel"):
        sg.custom_root(lambda x: x, (1.0, 2.0), lambda f, x: x, scalar_solve)
    with pytest.raises(ShapeError, match="as many equations"):
        sg.custom_root(lambda x: sg.stack([x - a, x]), 1.0, lambda f, x0: x0, scalar_solve)
