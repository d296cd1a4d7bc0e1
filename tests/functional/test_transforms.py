"""JAX's function API on Python functions, checked against JAX: the transforms, their
nesting, argnums/has_aux/backend=, pytrees, vmap against a Python loop, and the tasks as
their sources write them (cs231n's dict-of-parameters net, Rosenbrock with trust-ncg, RK4
with an np.array right-hand side, LJ13's Hessian)."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import symgrad as sg
from tests.support.pytree_close import close

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.usefixtures("x64")  # float64 in JAX, restored after the module
jnp = jax.numpy


def f_np(x, y):
    return np.sum(np.sin(x) * np.exp(y[0]) + np.tanh(x * y[1]) ** 2) + np.prod(x[:2])


def f_jax(x, y):
    return jnp.sum(jnp.sin(x) * jnp.exp(y[0]) + jnp.tanh(x * y[1]) ** 2) + jnp.prod(x[:2])


def vec_np(x):
    return np.stack([np.sin(x[0]) * x[1], x[0] ** 3, np.exp(x[1] - x[2]), np.sum(x ** 2)])


def vec_jax(x):
    return jnp.stack([jnp.sin(x[0]) * x[1], x[0] ** 3, jnp.exp(x[1] - x[2]), jnp.sum(x ** 2)])


@pytest.fixture
def xy(rng):
    return rng.standard_normal(3), rng.standard_normal(2)




def test_first_order_transforms_match_jax(xy):
    x, y = xy
    value, g = jax.jit(jax.value_and_grad(f_jax, (0, 1)))(x, y)
    h = jax.jit(jax.hessian(f_jax, (0, 1)))(x, y)
    for argnums in (0, 1, (0, 1), (1, 0)):
        if isinstance(argnums, int):
            want_g, want_h = g[argnums], h[argnums][argnums]
        else:
            want_g = tuple(g[k] for k in argnums)
            want_h = tuple(tuple(h[i][j] for j in argnums) for i in argnums)
        close(sg.grad(f_np, argnums)(x, y), want_g)
        close(sg.value_and_grad(f_np, argnums)(x, y), (value, want_g))
        close(sg.hessian(f_np, argnums)(x, y), want_h)
    jac = jax.jit(jax.jacrev(vec_jax))(x)
    close(sg.jacrev(vec_np)(x), jac)
    close(sg.jacfwd(vec_np)(x), jac)
    close(sg.jacobian(vec_np)(x), jac)
    v = np.array([0.3, -1.0, 2.0])
    close(sg.jvp(vec_np, (x,), (v,)), jax.jvp(vec_jax, (x,), (v,)))
    out, pull = sg.vjp(vec_np, x)
    jout, jpull = jax.vjp(vec_jax, x)
    ct = np.array([1.0, -2.0, 0.5, 3.0])
    close(out, jout)
    close(pull(ct), jpull(ct))
    out, f_jvp = sg.linearize(vec_np, x)
    jout, jf_jvp = jax.linearize(vec_jax, x)
    close(f_jvp(v), jf_jvp(v))
    close(sg.hvp(lambda x: f_np(x, y), (x,), (v,)),
          jax.jvp(jax.grad(lambda x: f_jax(x, y)), (x,), (v,))[1])


def test_nesting_matches_jax(xy):
    x, _ = xy

    def g_np(t):
        return np.sin(t) * t ** 3 + np.exp(-t * t)

    def g_jax(t):
        return jnp.sin(t) * t ** 3 + jnp.exp(-t * t)

    t = 0.7
    close(sg.grad(sg.grad(sg.grad(g_np)))(t), jax.jit(jax.grad(jax.grad(jax.grad(g_jax))))(t))
    close(sg.jacfwd(sg.jacrev(vec_np))(x), jax.jit(jax.jacfwd(jax.jacrev(vec_jax)))(x))
    close(sg.jacrev(sg.grad(lambda x: np.sum(vec_np(x) ** 2)))(x),
          jax.jit(jax.jacrev(jax.grad(lambda x: jnp.sum(vec_jax(x) ** 2))))(x))
    # an inner transform on an expression of the outer's argument, and a closure over it
    def outer_np(x):
        return np.sum(sg.grad(lambda z: np.sum(np.sin(z) * x[0]))(2.0 * x) ** 2)

    def outer_jax(x):
        return jnp.sum(jax.jit(jax.grad(lambda z: jnp.sum(jnp.sin(z) * x[0])))(2.0 * x) ** 2)

    close(sg.grad(outer_np)(x), jax.jit(jax.grad(outer_jax))(x))


def test_has_aux_and_backend(xy):
    x, y = xy

    def with_aux(x, y):
        return f_np(x, y), {"norm": np.sum(x * x), "count": 3}

    g, aux = sg.grad(with_aux, has_aux=True)(x, y)
    close(g, jax.jit(jax.grad(f_jax))(x, y))
    assert aux["count"] == 3
    np.testing.assert_allclose(aux["norm"], x @ x, rtol=1e-15)
    jac, aux = sg.jacfwd(lambda x: (vec_np(x), x[0]), has_aux=True)(x)
    close(jac, jax.jit(jax.jacfwd(vec_jax))(x))
    gj = sg.grad(f_np, backend="jax")(x, y)
    close(np.asarray(gj), jax.jit(jax.grad(f_jax))(x, y))


@pytest.mark.parametrize("backend", ["torch", "array_api", "numba"])
def test_transforms_of_functions_take_numpy_arrays_on_every_backend(xy, backend):
    """grad(fun, backend=...) on NumPy arrays: the array targets' code gets its library's
    arrays (torch's functions refused the ndarray the NumPy fast path passed on)."""
    pytest.importorskip(backend if backend != "array_api" else "array_api_compat")
    x, y = xy
    g = sg.grad(f_np, backend=backend)(x, y)
    close(np.asarray(g), jax.jit(jax.grad(f_jax))(x, y))
    v, gv = sg.value_and_grad(f_np, backend=backend)(x, y)
    close(np.asarray(v), f_jax(x, y))
    close(np.asarray(gv), jax.jit(jax.grad(f_jax))(x, y))


def test_function_where_expression_expected_and_the_reverse():
    x = sg.var("x", shape=(2,))
    with pytest.raises(sg.DifferentiationError, match=r"sg.hessian\(expr, wrt\)"):
        sg.hessian(lambda v: np.sum(v ** 2), x)
    with pytest.raises(sg.DifferentiationError, match=r"Python function.*expression.*got str"):
        sg.jacfwd("x * x", x)
    with pytest.raises(sg.DifferentiationError, match=r"sg.vjp\(expr, wrt, g\)"):
        sg.vjp(3.0, 1.0)
    H = sg.hessian(sg.sum(x ** 3), x)  # the expression forms keep working
    np.testing.assert_allclose(sg.evaluate(H, {"x": [1.0, 2.0]}), np.diag([6.0, 12.0]))


# -- pytrees ------------------------------------------------------------------------------------

Params = collections.namedtuple("Params", ["w", "b"])


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


def test_pytree_arguments_outputs_and_gradients(rng):
    p = {"W1": rng.standard_normal((3, 4)), "layers": [Params(rng.standard_normal(4), 0.5)],
         "last": Layer(rng.standard_normal(4), np.array(0.1))}
    x = rng.standard_normal((5, 3))

    def net(p, x):
        h = np.tanh(x @ p["W1"]) * p["layers"][0].w + p["layers"][0].b
        return np.sum((h @ p["last"].w + p["last"].b) ** 2)

    g = sg.grad(net)(p, x)
    assert isinstance(g["layers"][0], Params) and isinstance(g["last"], Layer)
    jp = jax.tree_util.tree_map(jnp.asarray, {"W1": p["W1"], "layers": [tuple(p["layers"][0])],
                                               "last": (p["last"].w, p["last"].b)})

    def jnet(p, x):
        h = jnp.tanh(x @ p["W1"]) * p["layers"][0][0] + p["layers"][0][1]
        return jnp.sum((h @ p["last"][0] + p["last"][1]) ** 2)

    want = jax.jit(jax.grad(jnet))(jp, x)
    np.testing.assert_allclose(g["W1"], want["W1"], rtol=1e-12)
    np.testing.assert_allclose(g["layers"][0].w, want["layers"][0][0], rtol=1e-12)
    np.testing.assert_allclose(g["layers"][0].b, want["layers"][0][1], rtol=1e-12)
    np.testing.assert_allclose(g["last"].w, want["last"][0], rtol=1e-12)
    f = sg.jit(lambda p: {"s": (p["a"] + p["b"][0], p["b"][1] * 2.0)})
    assert f({"a": 1.0, "b": [2.0, 3.0]}) == {"s": (3.0, 6.0)}


def test_registered_class_round_trips():
    class Box:
        def __init__(self, lo, hi):
            self.lo, self.hi = lo, hi

    sg.tree_util.register_pytree_node(Box, lambda b: ((b.lo, b.hi), None),
                                      lambda aux, ch: Box(*ch))
    g = sg.grad(lambda b: np.sum((b.hi - b.lo) ** 2))(Box(np.zeros(2), np.ones(2)))
    assert isinstance(g, Box)
    np.testing.assert_array_equal(g.lo, [-2.0, -2.0])
    np.testing.assert_array_equal(g.hi, [2.0, 2.0])
    leaves, tree = sg.tree_util.tree_flatten({"b": Box(1.0, (2.0, 3.0)), "a": None})
    assert leaves == [1.0, 2.0, 3.0]
    again = sg.tree_util.tree_unflatten(tree, leaves)
    assert isinstance(again["b"], Box) and again["b"].hi == (2.0, 3.0) and again["a"] is None


def test_cs231n_two_layer_net(rng):
    """cs231n's two_layer_net(X, model, y) with model a dict, as the assignment writes it."""
    N, D, H, C = 6, 4, 5, 3

    def two_layer_net(X, model, y, reg=0.1):
        W1, b1, W2, b2 = model["W1"], model["b1"], model["W2"], model["b2"]
        hidden = np.maximum(0, X.dot(W1) + b1)
        scores = hidden.dot(W2) + b2
        scores = scores - np.max(scores, axis=1, keepdims=True)
        probs = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
        loss = -np.sum(np.log(probs[range(N), y])) / N
        return loss + 0.5 * reg * (np.sum(W1 * W1) + np.sum(W2 * W2))

    model = {"W1": rng.standard_normal((D, H)), "b1": rng.standard_normal(H),
             "W2": rng.standard_normal((H, C)), "b2": rng.standard_normal(C)}
    X, y = rng.standard_normal((N, D)), rng.integers(0, C, N)
    grads = sg.grad(two_layer_net, argnums=1)(X, model, y)

    def jnet(X, model, y, reg=0.1):
        hidden = jnp.maximum(0, X @ model["W1"] + model["b1"])
        logp = jax.nn.log_softmax(hidden @ model["W2"] + model["b2"])
        loss = -jnp.sum(logp[jnp.arange(N), y]) / N
        return loss + 0.5 * reg * (jnp.sum(model["W1"] ** 2) + jnp.sum(model["W2"] ** 2))

    close(grads, jax.jit(jax.grad(jnet, argnums=1))(X, model, y))


# -- vmap -----------------------------------------------------------------------------------------


def test_vmap_matches_a_python_loop(rng):
    W = rng.standard_normal((3, 2))
    X = rng.standard_normal((7, 3))

    def per_example(W, x):
        return np.sum(np.tanh(x @ W) ** 2)

    grads = sg.vmap(sg.grad(per_example), in_axes=(None, 0))(W, X)
    loop = np.stack([sg.grad(per_example)(W, x) for x in X])
    np.testing.assert_allclose(grads, loop, rtol=1e-15)
    close(grads, jax.vmap(jax.grad(lambda W, x: jnp.sum(jnp.tanh(x @ W) ** 2)),
                          in_axes=(None, 0))(W, X))
    cols = sg.vmap(lambda c: c * 2.0, in_axes=1, out_axes=1)(X)
    np.testing.assert_array_equal(cols, X * 2.0)
    # vmap inside a traced function (unrolled there)
    g = sg.grad(lambda W: np.sum(sg.vmap(lambda x: np.sum(np.tanh(x @ W)))(X)))(W)
    close(g, jax.jit(jax.grad(lambda W: jnp.sum(jnp.tanh(X @ W))))(W))


# -- the tasks ----------------------------------------------------------------------------------


def rosen(x):
    """SciPy's optimize tutorial."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


def test_rosenbrock_hessian_and_hvp_with_trust_ncg():
    from scipy.optimize import minimize, rosen_der, rosen_hess, rosen_hess_prod

    x0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
    np.testing.assert_allclose(sg.hessian(rosen)(x0), rosen_hess(x0), rtol=1e-13)
    p = np.array([1.0, -1.0, 0.5, 0.0, 2.0])
    np.testing.assert_allclose(sg.hvp(rosen, (x0,), (p,)), rosen_hess_prod(x0, p), rtol=1e-13)
    hessp = sg.jit(lambda x, p: sg.hvp(rosen, (x,), (p,)))
    res = minimize(rosen, x0, method="trust-ncg", jac=sg.grad(rosen), hessp=hessp,
                   options={"gtol": 1e-10})
    np.testing.assert_allclose(res.x, np.ones(5), rtol=1e-7)
    np.testing.assert_allclose(sg.grad(rosen)(x0), rosen_der(x0), rtol=1e-13)


def test_sparse_hessian_and_jacobian_of_a_function_are_scipy_matrices():
    """``sparse=True`` on the function forms gives ``scipy.sparse`` matrices equal to SciPy's
    own Rosenbrock Hessian and to JAX's dense Jacobian, and trust-constr takes the Hessian as
    SciPy users pass it (``hess=``)."""
    from scipy import sparse
    from scipy.optimize import minimize, rosen_hess

    x0 = np.linspace(0.5, 1.5, 60)
    H = sg.hessian(rosen, sparse=True)
    for method in (None, "distance2"):
        Hs = sg.hessian(rosen, sparse=True, method=method)(x0)
        assert sparse.issparse(Hs) and Hs.nnz == 3 * 60 - 2
        np.testing.assert_allclose(Hs.toarray(), rosen_hess(x0), rtol=1e-13)
    np.testing.assert_allclose(H(x0 + 0.1).toarray(), rosen_hess(x0 + 0.1), rtol=1e-13)
    res = minimize(rosen, x0, method="trust-constr", jac=sg.grad(rosen), hess=H,
                   options={"gtol": 1e-10, "xtol": 1e-12})
    np.testing.assert_allclose(res.x, np.ones(60), atol=1e-6)

    def resid(x):
        return x[1:] ** 2 * x[:-1] - np.sin(x[1:])

    def jresid(x):
        return x[1:] ** 2 * x[:-1] - jnp.sin(x[1:])

    for mode in ("reverse", "forward"):
        J = sg.jacobian(resid, sparse=True, mode=mode)(x0)
        assert sparse.issparse(J) and J.shape == (59, 60) and J.nnz == 2 * 59
        np.testing.assert_allclose(J.toarray(), jax.jacrev(jresid)(x0), rtol=1e-13)


def test_sparse_function_transforms_refuse_what_they_cannot_build():
    """A sparse Hessian of two arguments or of a vector-valued function, and a colouring
    method without ``sparse=True``, are refused with the fix."""
    x = np.ones(4)
    with pytest.raises(sg.DifferentiationError, match="one array argument"):
        sg.hessian(lambda a, b: np.sum(a * b), argnums=(0, 1), sparse=True)(x, x)
    with pytest.raises(sg.DifferentiationError, match="scalar function"):
        sg.hessian(lambda a: a ** 2, sparse=True)(x)
    with pytest.raises(sg.DifferentiationError, match="pass sparse=True"):
        sg.hessian(rosen, method="star")(x)
    with pytest.raises(sg.DifferentiationError, match="one array argument"):
        sg.jacobian(lambda a, b: a * b, argnums=(0, 1), sparse=True)(x, x)


def test_rk4_with_an_np_array_right_hand_side():
    """An ODE fit as odeint users write it: the right-hand side returns np.array([...])."""

    def rhs(y, theta):
        return np.array([theta[0] * y[0] - theta[1] * y[0] * y[1],
                         -theta[2] * y[1] + theta[1] * y[0] * y[1]])

    def solve(theta, h=0.1, steps=20):
        y = np.array([1.0, 0.5])
        for _ in range(steps):
            k1 = rhs(y, theta)
            k2 = rhs(y + h / 2 * k1, theta)
            k3 = rhs(y + h / 2 * k2, theta)
            k4 = rhs(y + h * k3, theta)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return np.sum((y - np.array([0.8, 0.9])) ** 2)

    def jrhs(y, theta):
        return jnp.array([theta[0] * y[0] - theta[1] * y[0] * y[1],
                          -theta[2] * y[1] + theta[1] * y[0] * y[1]])

    def jsolve(theta, h=0.1, steps=20):
        y = jnp.array([1.0, 0.5])
        for _ in range(steps):
            k1 = jrhs(y, theta)
            k2 = jrhs(y + h / 2 * k1, theta)
            k3 = jrhs(y + h / 2 * k2, theta)
            k4 = jrhs(y + h * k3, theta)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return jnp.sum((y - jnp.array([0.8, 0.9])) ** 2)

    theta = np.array([1.1, 0.4, 0.9])
    close(sg.value_and_grad(solve)(theta), jax.value_and_grad(jsolve)(theta))


def test_lj13_hessian():
    """Lennard-Jones energy of 13 atoms; its Hessian against JAX."""
    rng = np.random.default_rng(3)
    pos = rng.standard_normal((13, 3)) * 1.5
    iu = np.triu_indices(13, 1)

    def energy(x):
        r = x.reshape(13, 3)
        d = r[:, None, :] - r[None, :, :]
        r2 = np.sum(d ** 2, axis=-1)[iu]
        inv6 = 1.0 / r2 ** 3
        return np.sum(4.0 * (inv6 ** 2 - inv6))

    def jenergy(x):
        r = x.reshape(13, 3)
        d = r[:, None, :] - r[None, :, :]
        r2 = jnp.sum(d ** 2, axis=-1)[iu]
        inv6 = 1.0 / r2 ** 3
        return jnp.sum(4.0 * (inv6 ** 2 - inv6))

    x = pos.ravel()
    close(sg.hessian(energy)(x), jax.jit(jax.hessian(jenergy))(x), rtol=1e-10)


def test_stop_gradient_matches_jax(xy):
    x, _ = xy

    def f(x):
        return np.sum(x * sg.stop_gradient(x ** 2) + np.sin(x))

    def jf(x):
        return jnp.sum(x * jax.lax.stop_gradient(x ** 2) + jnp.sin(x))

    close(sg.grad(f)(x), jax.jit(jax.grad(jf))(x))
    close(sg.hessian(f)(x), jax.jit(jax.hessian(jf))(x))
    v = sg.var("v")
    assert sg.evaluate(sg.grad(v * sg.stop_gradient(v), v), {"v": 3.0}) == 3.0
