"""Programs as users write them, ported by changing the import line only: a model class
whose methods read their parameters from ``self``, gradients nested over closures, data
and optimiser code through ``symgrad.numpy``, methods that build matrices with
``np.array``, ``vmap`` of ``grad``. Each checked against JAX (or NumPy where no gradient
is taken)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import symgrad as sg
import symgrad.numpy as snp

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


# -- a model class: data and settings on self -------------------------------------------------


class GaussianProcess:
    """GP regression with a squared-exponential kernel; the hyperparameters are
    ``log(lengthscale), log(amplitude), log(noise)``."""

    def __init__(self, X, y, np=np):
        self.X, self.y, self.np = X, y, np
        self.jitter = 1e-8

    def kernel(self, params, A, B):
        np = self.np
        d = (A[:, None, :] - B[None, :, :]) / np.exp(params[0])
        return np.exp(params[1]) * np.exp(-0.5 * np.sum(d ** 2, axis=-1))

    def nll(self, params):
        np = self.np
        n = self.y.shape[0]
        K = self.kernel(params, self.X, self.X) + (np.exp(params[2]) + self.jitter) * np.eye(n)
        L = np.linalg.cholesky(K)
        alpha = np.linalg.solve(K, self.y)
        return 0.5 * self.y @ alpha + np.sum(np.log(np.diagonal(L))) + 0.5 * n * np.log(
            2 * np.pi)


def test_a_model_class_fits_and_follows_new_data(rng):
    X, y = rng.standard_normal((12, 2)), rng.standard_normal(12)
    gp = GaussianProcess(X, y)
    vg = sg.value_and_grad(gp.nll)
    params = np.array([0.1, -0.2, -1.0])

    def reference(gp):
        jgp = GaussianProcess(jnp.asarray(gp.X), jnp.asarray(gp.y), jnp)
        jgp.jitter = gp.jitter
        return jax.value_and_grad(jgp.nll)(params)

    for _ in range(2):
        value, grad = vg(params)
        want_value, want_grad = reference(gp)
        assert value == pytest.approx(float(want_value), rel=1e-12)
        np.testing.assert_allclose(grad, np.asarray(want_grad), rtol=1e-10, atol=1e-12)
        gp.X, gp.y = rng.standard_normal((12, 2)), rng.standard_normal(12)  # new data
    assert vg.cache_size == 1  # arrays read again, not traced again
    gp.jitter = 1e-4  # a number on self: traced again, and used
    np.testing.assert_allclose(vg(params)[1], np.asarray(reference(gp)[1]), rtol=1e-10)
    fit = scipy.optimize.minimize(vg, params, jac=True, method="BFGS")
    assert fit.success and np.linalg.norm(vg(fit.x)[1]) < 1e-4


# -- gradients nested over closures ------------------------------------------------------------


def test_hessian_vector_products_from_nested_closures(rng):
    """autograd's ``hessian_vector_product``: the gradient of ``grad(f)(x) @ v``, each a
    closure over the one before."""
    A = rng.standard_normal((4, 4))

    def f(x, np=np):
        return np.sum(np.tanh(A @ x) ** 2) + np.sum(x ** 4)

    def hvp(f):
        def inner(x, v):
            return sg.grad(lambda x: np.dot(sg.grad(f)(x), v))(x)
        return inner

    x, v = rng.standard_normal(4), rng.standard_normal(4)
    want = jax.grad(lambda x: jnp.dot(jax.grad(lambda x: f(x, jnp))(x), v))(x)
    np.testing.assert_allclose(hvp(f)(x, v), np.asarray(want), rtol=1e-12)
    np.testing.assert_allclose(hvp(f)(x, v), sg.hessian(f)(x) @ v, rtol=1e-12)


# -- data and optimiser code through symgrad.numpy --------------------------------------------


def test_a_training_loop_written_with_symgrad_numpy(rng, capsys):
    """Data made, a loss printed by a callback and parameters updated in place, all with
    ``symgrad.numpy``: numbers, as NumPy's (the gradient is the only graph)."""
    np_ = snp
    data_rng = np_.random.default_rng(0)
    X = data_rng.standard_normal((40, 3))
    y = (X @ np_.array([1.0, -1.0, 0.5]) > 0).astype(float)

    def loss(w):
        z = X @ w
        return np_.mean(np_.logaddexp(0.0, z) - y * z)

    def train(np_, grad, steps=30, lr=0.5):
        w = np_.zeros(3)
        for step in range(steps):
            w -= lr * grad(w)
            if step % 10 == 0:
                print(f"step {step}: loss {float(loss(w)):.6f}")
        return w

    w = train(np_, sg.grad(loss))
    assert type(w) is np.ndarray
    assert "step 20: loss" in capsys.readouterr().out
    jloss = jax.grad(lambda w: jnp.mean(jnp.logaddexp(0.0, X @ w) - y * (X @ w)))
    np.testing.assert_allclose(w, train(np, lambda w: np.asarray(jloss(w))), rtol=1e-12)


# -- methods that build matrices --------------------------------------------------------------


class Link:
    def __init__(self, length):
        self.length = length

    def transformation_matrix(self, theta, np=np):
        c, s = np.cos(theta), np.sin(theta)
        return np.array([[c, -s, self.length * c],
                         [s, c, self.length * s],
                         [0.0, 0.0, 1.0]])


class Arm:
    """A planar arm of seven links: forward kinematics as a chain of 3x3 transforms."""

    def __init__(self, lengths):
        self.links = [Link(a) for a in lengths]

    def end(self, q, np=np):
        T = np.eye(3)
        for k, link in enumerate(self.links):
            T = T @ link.transformation_matrix(q[k], np)
        return T[:2, 2]

    def reach(self, q, np=np):
        p = self.end(q, np)
        return p[0] * p[1]


def test_methods_that_build_matrices_with_np_array(rng):
    arm = Arm([1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    q = rng.standard_normal(7)
    jac = sg.jacobian(arm.end)
    np.testing.assert_allclose(jac(q), np.asarray(jax.jacrev(lambda q: arm.end(q, jnp))(q)),
                               rtol=1e-12, atol=1e-14)
    arm.links[3].length = 2.0  # a link's length, read again
    np.testing.assert_allclose(jac(q), np.asarray(jax.jacrev(lambda q: arm.end(q, jnp))(q)),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sg.grad(arm.reach)(q),
                               np.asarray(jax.grad(lambda q: arm.reach(q, jnp))(q)),
                               rtol=1e-12, atol=1e-14)


# -- vmap of grad ------------------------------------------------------------------------------


def test_per_pose_gradients_in_one_batched_call(rng):
    arm = Arm([1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    poses = rng.standard_normal((200, 7))
    per_pose = sg.vmap(sg.grad(arm.reach))
    assert per_pose.vectorised(poses)
    want = jax.vmap(jax.grad(lambda q: arm.reach(q, jnp)))(poses)
    np.testing.assert_allclose(per_pose(poses), np.asarray(want), rtol=1e-12, atol=1e-14)
