"""W1: the single-hidden-layer network of the course notes, batched.

``L = -sum(onehot * log_softmax(tanh(X @ W.T + b) @ V.T + g, axis=1))``; gradient with
respect to ``W, b, V, g``. Sizes N=128 examples, d=784 inputs, m=256 hidden, K=10 classes.
"""

from __future__ import annotations

import numpy as np

TITLE = "W1 MLP (notes' network, batched)"
CONFIGS = {"N128_d784_m256_K10": {"N": 128, "d": 784, "m": 256, "K": 10}}
SMOKE_CONFIG = {"N": 4, "d": 5, "m": 3, "K": 3}
PARAMS = ("W", "b", "V", "g")
DATA = ("X", "onehot")


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    """(params, data) as float64 arrays."""
    rng = np.random.default_rng(seed)
    n, d, m, k = cfg["N"], cfg["d"], cfg["m"], cfg["K"]
    params = (
        rng.standard_normal((m, d)) / np.sqrt(d),
        0.1 * rng.standard_normal(m),
        rng.standard_normal((k, m)) / np.sqrt(m),
        0.1 * rng.standard_normal(k),
    )
    x = rng.standard_normal((n, d))
    onehot = np.eye(k)[rng.integers(0, k, size=n)]
    return params, (x, onehot)


def numpy_forward(params: tuple, data: tuple, cfg: dict) -> float:
    W, b, V, g = params
    X, onehot = data
    s = np.tanh(X @ W.T + b) @ V.T + g
    mx = s.max(axis=1, keepdims=True)
    lsm = s - (mx + np.log(np.exp(s - mx).sum(axis=1, keepdims=True)))
    return float(-np.sum(onehot * lsm))


def numpy_grad(params: tuple, data: tuple, cfg: dict) -> tuple[float, tuple]:
    """Hand-written value and gradient (what a careful NumPy user writes)."""
    W, b, V, g = params
    X, onehot = data
    h = np.tanh(X @ W.T + b)
    s = h @ V.T + g
    mx = s.max(axis=1, keepdims=True)
    e = np.exp(s - mx)
    tot = e.sum(axis=1, keepdims=True)
    lsm = s - mx - np.log(tot)
    value = float(-np.sum(onehot * lsm))
    ds = (e / tot) * onehot.sum(axis=1, keepdims=True) - onehot
    dz = (ds @ V) * (1.0 - h * h)
    return value, (dz.T @ X, dz.sum(axis=0), ds.T @ h, ds.sum(axis=0))


def symgrad_loss(cfg: dict):
    """(loss, params, data) as symgrad Exprs, built with the Python API."""
    import symgrad as sg

    n, d, m, k = cfg["N"], cfg["d"], cfg["m"], cfg["K"]
    W, b = sg.var("W", (m, d)), sg.var("b", (m,))
    V, g = sg.var("V", (k, m)), sg.var("g", (k,))
    X, onehot = sg.var("X", (n, d)), sg.var("onehot", (n, k))
    s = sg.tanh(X @ W.T + b) @ V.T + g
    loss = -sg.sum(onehot * sg.log_softmax(s, axis=1))
    return loss, (W, b, V, g), (X, onehot)


def jax_loss(jax, cfg: dict):
    jnp = jax.numpy

    def loss(params, data):
        W, b, V, g = params
        X, onehot = data
        s = jnp.tanh(X @ W.T + b) @ V.T + g
        return -jnp.sum(onehot * jax.nn.log_softmax(s, axis=1))

    return loss


def torch_loss(torch, cfg: dict):
    def loss(params, data):
        W, b, V, g = params
        X, onehot = data
        s = torch.tanh(X @ W.T + b) @ V.T + g
        return -torch.sum(onehot * torch.log_softmax(s, dim=1))

    return loss


def autograd_loss(autograd, cfg: dict):
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def loss(params, data):
        W, b, V, g = params
        X, onehot = data
        s = anp.tanh(X @ W.T + b) @ V.T + g
        return -anp.sum(onehot * (s - logsumexp(s, axis=1, keepdims=True)))

    return loss


def pytensor_loss(pt, cfg: dict):
    """(loss, params, data) as PyTensor variables of static shapes."""
    from pytensor.tensor.special import log_softmax

    n, d, m, k = cfg["N"], cfg["d"], cfg["m"], cfg["K"]
    W, b = pt.tensor("W", shape=(m, d)), pt.tensor("b", shape=(m,))
    V, g = pt.tensor("V", shape=(k, m)), pt.tensor("g", shape=(k,))
    X, onehot = pt.tensor("X", shape=(n, d)), pt.tensor("onehot", shape=(n, k))
    s = pt.tanh(X @ W.T + b) @ V.T + g
    return -pt.sum(onehot * log_softmax(s, axis=1)), (W, b, V, g), (X, onehot)
