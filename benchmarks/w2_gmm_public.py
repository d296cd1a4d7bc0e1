"""W2 as public code writes it: the GMM objective of :mod:`.w2_gmm` in the spelling of
ADBench's Python (PyTorch) implementation, vectorised over the data.

The triangular factor is built from a diagonal and a strict lower part: each component's
strictly lower triangle is assembled column by column (zeros above, ``icf``'s packed
entries below, ``concatenate`` then ``stack``), and ``Q_k (x - mu_k)`` is
``exp(q_k) * xc + einsum("ijk,mik->mij", L, xc)``; log-sum-exps are max-shifted with
``np.max(..., axis=1, keepdims=True)`` / ``np.sum(..., axis=1, keepdims=True)`` over the
component axis, the data point on the batch axis. The same objective, parameters and data
as :mod:`.w2_gmm` (whose hand-written NumPy value and gradient serve here too): the smoke
tests check the two spellings against each other.

:func:`loss` is the NumPy code, written once: symgrad traces it with NumPy's own functions,
JAX runs it with ``np=jax.numpy`` and PyTensor with ``np=pytensor.tensor``.
"""

from __future__ import annotations

import numpy

from .w2_gmm import (  # noqa: F401 - the workload interface, shared with W2
    CONFIGS,
    DATA,
    PARAMS,
    SMOKE_CONFIG,
    constant,
    inputs,
    numpy_forward,
    numpy_grad,
)

TITLE = "W2 GMM as public code writes it (diagonal + strict lower factor, keepdims lse)"


def lower_factor(icf_low, d: int, np=numpy):
    """(K, d, d) strictly lower triangles from their packed columns (K, d(d-1)/2)."""
    k = icf_low.shape[0]
    columns, start = [], 0
    for i in range(d):
        count = d - i - 1
        column = np.concatenate([np.zeros((k, i + 1)), icf_low[:, start:start + count]],
                                axis=1)
        columns.append(column)
        start += count
    return np.stack(columns, axis=-1)


def loss(params, data, cfg: dict, np=numpy):
    """The objective (``np``: numpy, jax.numpy, pytensor.tensor)."""
    alphas, means, icf = params
    (x,) = data
    d, n = cfg["d"], cfg["N"]
    gamma, m = cfg["gamma"], cfg["m"]
    qdiags = np.exp(icf[:, :d])
    sum_qs = np.sum(icf[:, :d], axis=1)
    ls = lower_factor(icf[:, d:], d, np)
    xcentered = x[:, None, :] - means[None, :, :]  # (N, K, d)
    lxcentered = qdiags * xcentered + np.einsum("ijk,mik->mij", ls, xcentered)
    sqsum = np.sum(lxcentered ** 2, axis=2)  # (N, K)
    inner = alphas + sum_qs - 0.5 * sqsum
    mx = np.max(inner, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(inner - mx), axis=1, keepdims=True)) + mx
    amx = np.max(alphas)
    lse_alphas = np.log(np.sum(np.exp(alphas - amx))) + amx
    prior = np.sum(0.5 * gamma ** 2 * (np.sum(qdiags ** 2, axis=1)
                                       + np.sum(icf[:, d:] ** 2, axis=1)) - m * sum_qs)
    return constant(cfg) + np.sum(lse) - n * lse_alphas + prior


def _variables(cfg: dict):
    import symgrad as sg

    d, k, n = cfg["d"], cfg["K"], cfg["N"]
    p = d * (d - 1) // 2
    params = (sg.var("alphas", (k,)), sg.var("means", (k, d)), sg.var("icf", (k, d + p)))
    return params, (sg.var("x", (n, d)),)


def symgrad_loss(cfg: dict):
    """(loss, params, data): :func:`loss` traced with NumPy's own functions."""
    params, data = _variables(cfg)
    return loss(params, data, cfg), params, data


def jax_loss(jax, cfg: dict):
    return lambda params, data: loss(params, data, cfg, np=jax.numpy)


def pytensor_loss(pt, cfg: dict):
    """(loss, params, data) as PyTensor variables of static shapes."""
    d, k, n = cfg["d"], cfg["K"], cfg["N"]
    p = d * (d - 1) // 2
    params = (pt.tensor("alphas", shape=(k,)), pt.tensor("means", shape=(k, d)),
              pt.tensor("icf", shape=(k, d + p)))
    data = (pt.tensor("x", shape=(n, d)),)
    return loss(params, data, cfg, np=pt), params, data
