"""Arrays a traced function makes and fills in place (``out = np.zeros(n); out[i] = expr``):
values and gradients equal JAX's of the same program written with ``.at[].set``, NumPy's
view semantics (reads and writes through slices, ``.T``, ``.reshape``), the last write winning
at a repeated index, ``np.add.at`` accumulating, in-place operators, copies independent of
their source; the array used in loops, scans and solvers; what cannot be followed refused."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.usefixtures("x64")
jnp = jax.numpy

X = np.array([0.7, -0.4, 1.3, 0.2])


def _same(f, fj, x=X):
    g, gj = sg.grad(f)(x), jax.grad(fj)(jnp.asarray(x))
    np.testing.assert_allclose(g, gj, rtol=1e-11, atol=1e-13)
    assert float(sg.jit(f)(x)) == pytest.approx(float(fj(jnp.asarray(x))), rel=1e-12)


def lorenz(y):
    d = np.zeros_like(y)
    d[0] = 10 * (y[1] - y[0])
    d[1] = y[0] * (28 - y[2]) - y[1]
    d[2] = y[0] * y[1] - 8 / 3 * y[2]
    d[3] = d[0] * d[2]  # reads what was stored
    return np.sum(d ** 2)


def lorenz_jax(y):
    d = jnp.zeros_like(y).at[0].set(10 * (y[1] - y[0])).at[1].set(y[0] * (28 - y[2]) - y[1])
    d = d.at[2].set(y[0] * y[1] - 8 / 3 * y[2])
    return jnp.sum(d.at[3].set(d[0] * d[2]) ** 2)


L = np.tril(np.random.default_rng(0).normal(size=(4, 4))) + 4 * np.eye(4)


def forward_substitution(b):
    z = np.zeros(4)
    for i in range(4):
        z[i] = (b[i] - L[i, :i] @ z[:i]) / L[i, i]
    return np.sum(z ** 3)


def forward_substitution_jax(b):
    return jnp.sum(jax.scipy.linalg.solve_triangular(L, b, lower=True) ** 3)


def tridiagonal(p):
    A = np.zeros((4, 4))
    for i in range(4):
        A[i, i] = 2 + p[i] ** 2
        if i:
            A[i, i - 1] = A[i - 1, i] = -p[i]
    return np.sum(np.linalg.solve(A, np.ones(4)))


def tridiagonal_jax(p):
    A = jnp.zeros((4, 4))
    for i in range(4):
        A = A.at[i, i].set(2 + p[i] ** 2)
        if i:
            A = A.at[i, i - 1].set(-p[i]).at[i - 1, i].set(-p[i])
    return jnp.sum(jnp.linalg.solve(A, jnp.ones(4)))


@pytest.mark.parametrize(("f", "fj"), [(lorenz, lorenz_jax),
                                       (forward_substitution, forward_substitution_jax),
                                       (tridiagonal, tridiagonal_jax)])
def test_filled_arrays_differentiate_as_jax_does(f, fj):
    _same(f, fj)


def test_views_read_and_write_their_array():
    def f(y):
        out = np.zeros(4)
        v = out[1:]              # a view made before any store
        out[2] = y[0] ** 2
        v[0] = y[1] * 3          # a store through the view lands in out[1]
        t = out.reshape(2, 2).T  # a view of a view
        out[3] = y[2]            # after t was made: t sees it
        return np.sum(v * np.arange(1.0, 4.0)) + t[1, 0] * y[3] + t[1, 1] + np.sum(out)

    def fj(y):
        out = jnp.zeros(4).at[2].set(y[0] ** 2).at[1].set(y[1] * 3).at[3].set(y[2])
        t = out.reshape(2, 2).T
        return jnp.sum(out[1:] * jnp.arange(1.0, 4.0)) + t[1, 0] * y[3] + t[1, 1] + jnp.sum(out)

    _same(f, fj)


def test_repeated_indices_in_place_operators_and_add_at():
    def f(y):
        out = np.zeros(3)
        out[[0, 0, 2]] = y[:3]              # the last write wins: out[0] = y[1]
        np.add.at(out, [1, 1, 2], y[1:])    # accumulates
        out += y[3]
        out[1:] *= y[0]
        out[0] += y[2]
        return np.sum(out ** 2)

    def fj(y):
        out = jnp.zeros(3).at[0].set(y[1]).at[2].set(y[2])
        out = out.at[jnp.array([1, 1, 2])].add(y[1:]) + y[3]
        return jnp.sum(out.at[1:].multiply(y[0]).at[0].add(y[2]) ** 2)

    _same(f, fj)


def test_copies_fill_copyto_fill_diagonal_and_full_like():
    def f(y):
        a = np.copy(y)
        a[0] = 5.0                  # y itself is unchanged
        b = np.array(a)
        b[1] = y[0] * a[0]          # a is unchanged
        c = a.copy()
        c[2] = 0.0
        e = np.empty(4)
        e.fill(y[1])
        np.copyto(e, y ** 2)
        m = np.zeros((2, 2))
        np.fill_diagonal(m, y[2])
        d = np.full_like(y, y[0])
        d[1] = 1.0
        return (np.sum(a) + np.sum(b ** 2) + np.sum(c) + np.sum(e) + np.sum(m * m)
                + np.sum(d * y) + np.sum(y))

    def fj(y):
        a = y.at[0].set(5.0)
        b, c = a.at[1].set(y[0] * a[0]), a.at[2].set(0.0)
        d = jnp.full_like(y, y[0]).at[1].set(1.0)
        return (jnp.sum(a) + jnp.sum(b ** 2) + jnp.sum(c) + jnp.sum(y ** 2)
                + 2 * y[2] ** 2 + jnp.sum(d * y) + jnp.sum(y))

    _same(f, fj)


def test_a_filled_array_returned_is_the_output():
    def f(y):
        out = np.zeros(2)
        out[0] = y[0] * y[1]
        out[1] = np.sin(y[2])
        return {"out": out}

    np.testing.assert_allclose(sg.jit(f)(X)["out"], [X[0] * X[1], np.sin(X[2])])
    J = sg.jacobian(f)(X)["out"]
    np.testing.assert_allclose(J, [[X[1], X[0], 0, 0], [0, 0, np.cos(X[2]), 0]], atol=1e-15)


def test_loops_scans_and_python_loops_with_filled_arrays():
    p = np.array([1.1, 0.4])

    def rk4(p):
        def f(y):
            d = np.empty(2)
            d[0] = p[0] * y[0] - p[1] * y[0] * y[1]
            d[1] = -y[1] + p[1] * y[0] * y[1]
            return d
        y, h = np.array([1.0, 0.5]), 0.05
        for _ in range(40):
            k1 = f(y)
            k2 = f(y + h / 2 * k1)
            k3 = f(y + h / 2 * k2)
            k4 = f(y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return np.sum(y ** 2)

    def rk4_jax(p):
        def f(y):
            return jnp.array([p[0] * y[0] - p[1] * y[0] * y[1], -y[1] + p[1] * y[0] * y[1]])
        y, h = jnp.array([1.0, 0.5]), 0.05
        for _ in range(40):
            k1 = f(y)
            k2 = f(y + h / 2 * k1)
            k3 = f(y + h / 2 * k2)
            k4 = f(y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return jnp.sum(y ** 2)

    def scanned(p):
        def step(c, x):
            n = np.zeros(2)
            n[0] = c[0] * np.cos(x) + p[0]
            n[1] = c[1] + n[0] * p[1]
            return n, n[1]
        c, ys = sg.scan(step, np.array([0.1, 0.2]), np.linspace(0, 1, 5))
        return np.sum(ys) + np.sum(c)

    def scanned_jax(p):
        def step(c, x):
            n0 = c[0] * jnp.cos(x) + p[0]
            n = jnp.array([n0, c[1] + n0 * p[1]])
            return n, n[1]
        c, ys = jax.lax.scan(step, jnp.array([0.1, 0.2]), jnp.linspace(0, 1, 5))
        return jnp.sum(ys) + jnp.sum(c)

    _same(rk4, rk4_jax, p)
    _same(scanned, scanned_jax, p)


def test_an_ode_right_hand_side_filled_in_place_goes_to_solve_ivp():
    from scipy.integrate import solve_ivp

    def lv(t, z, a, b):
        d = np.zeros_like(z)
        d[0] = a * z[0] - b * z[0] * z[1]
        d[1] = -z[1] + b * z[0] * z[1]
        return d

    def loss(p):
        sol = solve_ivp(lv, (0, 2), np.array([1.0, 0.5]), args=(p[0], p[1]),
                        t_eval=[2.0], rtol=1e-11, atol=1e-12)
        return np.sum(sol.y[:, -1] ** 2)

    p, h = np.array([1.1, 0.4]), 1e-5
    fd = [(loss(p + h * e) - loss(p - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(sg.grad(loss)(p), fd, rtol=1e-5)


def test_element_stores_read_back_before_the_array_is_used_whole():
    """Element stores and reads in a stencil loop (the last write wins, negative indices,
    numbers beside expressions): the same values and gradients as JAX's whole-array form."""
    n = 12

    def heat(p):
        u = np.zeros(n)
        u[n // 2] = 1.0
        for _ in range(6):
            new = np.empty(n)
            new[0] = new[-1] = 0.0
            for i in range(1, n - 1):
                new[i] = u[i] + p[0] * (u[i - 1] - 2 * u[i] + u[i + 1])
            new[3] = new[3] * 1.0  # an element read back and stored again
            u = new
        return np.sum(u * np.arange(n) ** 2) * p[1]

    def heat_jax(p):
        u = jnp.zeros(n).at[n // 2].set(1.0)
        for _ in range(6):
            u = jnp.zeros(n).at[1:-1].set(u[1:-1] + p[0] * (u[:-2] - 2 * u[1:-1] + u[2:]))
        return jnp.sum(u * jnp.arange(n) ** 2) * p[1]

    _same(heat, heat_jax, np.array([0.2, 1.3]))


def test_a_store_at_a_traced_position():
    def f(y):
        out = np.zeros(4)
        out[np.argmax(y)] = y[0] * 2.0
        return np.sum(out * np.arange(1.0, 5.0))

    def fj(y):
        return jnp.sum(jnp.zeros(4).at[jnp.argmax(y)].set(y[0] * 2.0) * jnp.arange(1.0, 5.0))

    _same(f, fj)


def test_what_cannot_be_followed_is_refused():
    with pytest.raises(sg.UnsupportedError, match="int64 array"):
        sg.jit(lambda y: np.zeros(2, dtype=int).__setitem__(0, y[0]))(X)

    def traced_index_array(y):
        out = np.zeros(4)
        out[np.argsort(y)] = y
        return np.sum(out)

    with pytest.raises(sg.UnsupportedError, match="traced array of indices"):
        sg.grad(traced_index_array)(X)

    def resized(y):
        out = np.zeros(4)
        out[0] = y[0]
        out.resize(8)
        return np.sum(out)

    with pytest.raises(sg.UnsupportedError, match="resize"):
        sg.grad(resized)(X)


def test_numbers_only_arrays_stay_numpy_arrays():
    """An array that never receives an expression computes with NumPy while tracing."""
    seen = []

    def f(y):
        k = np.zeros((3, 3))
        for i in range(3):
            k[i, i] = i + 1.0
        seen.append(float(np.trace(k)))  # numbers: a float of a NumPy result
        return np.sum(k @ y[:3])

    np.testing.assert_allclose(sg.grad(f)(X), [1.0, 2.0, 3.0, 0.0])
    assert seen == [6.0]
