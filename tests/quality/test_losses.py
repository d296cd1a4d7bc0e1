"""Small real-world losses written in plain NumPy, traced three ways — with ``np=symgrad.numpy``,
with real ``numpy`` through the array protocols, and as text where the loss is one
expression — and checked against NumPy's own value, finite differences (gradient and
Hessian-vector products, float64) and, when JAX is installed, ``jax.grad``/``jax.hessian``."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp
from symgrad.testing import check_grads

R = np.random.default_rng(11)


def gaussian_nll(mu, L, X, np=np):
    """Full-covariance Gaussian negative log-likelihood; covariance L L^T + I."""
    S = L @ L.T + np.eye(L.shape[0])
    d = X - mu
    sign, logdet = np.linalg.slogdet(S)
    quad = np.sum(d * np.linalg.solve(S, d.T).T)
    return 0.5 * (X.shape[0] * logdet + quad)


def ridge(w0, X, y, lam, np=np):
    """Closed-form ridge solution fed back into a loss: depends on the data X through solve."""
    A = X.T @ X + lam * np.eye(X.shape[1])
    w = np.linalg.solve(A, X.T @ y)
    return np.sum((X @ w - y) ** 2) + lam * np.sum(w ** 2) + np.sum((w - w0) ** 2)


def gp_marginal(theta, X, y, np=np):
    """Gaussian-process negative log marginal likelihood with an RBF kernel (Cholesky)."""
    ell, sf, sn = np.exp(theta[0]), np.exp(theta[1]), np.exp(theta[2])
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = sf ** 2 * np.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-6) * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diagonal(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def policy_gradient(theta, S, actions, advantages, np=np):
    """A softmax policy's surrogate loss, max-shifted log-softmax written by hand."""
    logits = S @ theta
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    picked = np.take_along_axis(logp, actions[:, None], axis=1)[:, 0]
    return -np.mean(picked * advantages)


def pca_reconstruction(W, X, np=np):
    """Reconstruction error of projecting on the top eigenvectors of a learned covariance."""
    C = W @ W.T + 0.1 * np.eye(W.shape[0])
    evals, evecs = np.linalg.eigh(C)
    P = evecs[:, -2:]
    return np.sum((X - X @ P @ P.T) ** 2) + np.sum(evals)


def logdet_barrier(x, A, b, np=np):
    """-log det(diag(b - A x)) barrier plus a quadratic: an interior-point objective."""
    s = b - A @ x
    return -np.sum(np.log(s)) + 0.5 * x @ x


def spline_smoothness(y, h, np=np):
    """Second differences of a cubic spline's knot values: the roughness penalty."""
    d2 = np.diff(y, n=2) / h ** 2
    return np.sum(d2 ** 2) * h + 0.5 * np.sum(np.gradient(y, h) ** 2)


def spring_energy(P, np=np):
    """A chain of springs with a torsion term from cross products and norms."""
    seg = np.diff(P, axis=0)
    lengths = np.linalg.norm(seg, axis=1)
    c = np.cross(seg[:-1], seg[1:])
    return np.sum((lengths - 1.0) ** 2) + 0.1 * np.sum(np.linalg.norm(c, axis=1) ** 2)


X5 = R.standard_normal((6, 3))
CASES = {
    "gaussian_nll": (gaussian_nll, {"mu": R.standard_normal(3), "L": R.standard_normal((3, 3))},
                     (X5,)),
    "ridge": (ridge, {"w0": R.standard_normal(3), "X": R.standard_normal((8, 3))},
              (R.standard_normal(8), 0.3)),
    "gp_marginal": (gp_marginal, {"theta": np.array([0.1, -0.2, -1.0])},
                    (R.standard_normal((5, 2)), R.standard_normal(5))),
    "policy_gradient": (policy_gradient, {"theta": R.standard_normal((4, 3))},
                        (R.standard_normal((7, 4)), R.integers(0, 3, 7), R.standard_normal(7))),
    "pca_reconstruction": (pca_reconstruction, {"W": R.standard_normal((4, 4))},
                           (R.standard_normal((5, 4)),)),
    "logdet_barrier": (logdet_barrier, {"x": 0.1 * R.standard_normal(3)},
                       (R.standard_normal((5, 3)), np.full(5, 2.0))),
    "spline_smoothness": (spline_smoothness, {"y": R.standard_normal(8)}, (0.4,)),
    "spring_energy": (spring_energy, {"P": np.cumsum(R.standard_normal((5, 3)), axis=0)}, ()),
}


def _trace(name, how):
    fn, params, data = CASES[name]
    variables = {k: sg.var(k, v.shape) for k, v in params.items()}
    if how == "snp":
        f = fn(*variables.values(), *data, np=snp)
    else:
        f = fn(*variables.values(), *data)  # real numpy: the array protocols
    return f, variables, params


@pytest.mark.parametrize("how", ["snp", "numpy"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_value_gradient_and_hessian(name, how):
    fn, params, data = CASES[name]
    f, variables, at = _trace(name, how)
    assert isinstance(f, sg.Expr) and f.shape == ()
    want = fn(*params.values(), *data)
    assert sg.evaluate(f, at) == pytest.approx(float(want), rel=1e-10, abs=1e-12)
    check_grads(f, list(variables), at, order=2)
    fn_c = sg.compile([f, *sg.grad(f, list(variables))], inputs=list(variables))
    got = fn_c(*params.values())
    ref = sg.evaluate([f, *sg.grad(f, list(variables))], at)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
@pytest.mark.parametrize("name", sorted(set(CASES) - {"pca_reconstruction"}))
def test_loss_gradients_and_hessians_equal_jax(name):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    fn, params, data = CASES[name]
    f, variables, at = _trace(name, "snp")
    first = next(iter(params))
    grads = sg.evaluate(list(sg.grad(f, list(variables))), at)
    args = [jnp.asarray(v) for v in params.values()]
    # jitted: one XLA compile per derivative instead of one per primitive run eagerly
    jgrads = jax.jit(jax.grad(lambda *a: fn(*a, *data, np=jnp),
                              argnums=tuple(range(len(args)))))(*args)
    for g, jg in zip(grads, jgrads):
        np.testing.assert_allclose(g, np.asarray(jg), rtol=1e-9, atol=1e-10)
    H = sg.evaluate(sg.hessian(f, first), at)
    jH = jax.jit(jax.hessian(lambda a: fn(a, *args[1:], *data, np=jnp)))(args[0])
    np.testing.assert_allclose(H, np.asarray(jH), rtol=1e-8, atol=1e-9)


def test_the_one_expression_losses_parse_as_text():
    x = sg.parse("-sum(log(b - A @ x)) + 0.5 * x @ x", shapes={"x": (3,), "A": (5, 3),
                                                               "b": (5,)})
    fn, params, (A, b) = CASES["logdet_barrier"]
    at = {"x": params["x"], "A": A, "b": b}
    assert sg.evaluate(x, at) == pytest.approx(fn(params["x"], A, b), rel=1e-13)
    y = sg.parse("sum((diff(y, 2) / h ** 2) ** 2) * h", shapes={"y": (8,)})
    at = {"y": CASES["spline_smoothness"][1]["y"], "h": 0.4}
    want = np.sum((np.diff(at["y"], 2) / 0.16) ** 2) * 0.4
    assert sg.evaluate(y, at) == pytest.approx(want, rel=1e-13)
