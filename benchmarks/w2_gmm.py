"""W2: ADBench's Gaussian mixture objective (Srajer, Baydin, Fitzgibbon 2018), own code.

Parameters: ``alphas`` (K,), ``means`` (K, d) and ``icf`` (K, d + d(d-1)/2), the inverse
covariance factor of each component: ``Q_k = diag(exp(icf[k, :d])) + L_k`` with the strictly
lower triangle ``L_k`` packed column by column in ``icf[k, d:]``. Data ``x`` (N, d);
Wishart hyper-parameters ``gamma`` and ``m``. The objective, as ADBench defines it::

    -N d/2 log(2 pi) + sum_i logsumexp_k(alpha_k + sum(q_k) - 1/2 |Q_k (x_i - mu_k)|^2)
    - N logsumexp(alpha)
    + sum_k [1/2 gamma^2 (|exp(q_k)|^2 + |l_k|^2) - m sum(q_k)] - K C(d, gamma, m)

where ``C = n d (log gamma - log(2)/2) - log Gamma_d(n/2)`` with ``n = d + m + 1``.
Gradient with respect to ``alphas, means, icf``. The hand-written NumPy code builds ``Q``
by index assignment; the AD systems build it with constant scatter matrices
(``exp(q) @ D + l @ S``, reshaped), which every system here supports.
"""

from __future__ import annotations

import math

import numpy as np

TITLE = "W2 GMM (ADBench objective)"
CONFIGS = {
    "d2_K5_N1000": {"d": 2, "K": 5, "N": 1000, "gamma": 1.0, "m": 0},
    "d10_K25_N1000": {"d": 10, "K": 25, "N": 1000, "gamma": 1.0, "m": 0},
}
SMOKE_CONFIG = {"d": 3, "K": 2, "N": 5, "gamma": 1.3, "m": 2}
PARAMS = ("alphas", "means", "icf")
DATA = ("x",)


def tri_index(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the strictly lower triangle in ADBench's column-major packing order."""
    cols, rows = np.triu_indices(d, 1)
    return rows, cols


def scatter(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Constant matrices D (d, d*d) and S (P, d*d): ``diag @ D + l @ S`` is Q flattened."""
    rows, cols = tri_index(d)
    diag = np.zeros((d, d * d))
    diag[np.arange(d), np.arange(d) * (d + 1)] = 1.0
    low = np.zeros((rows.size, d * d))
    low[np.arange(rows.size), rows * d + cols] = 1.0
    return diag, low


def constant(cfg: dict) -> float:
    """The parameter-free part: -N d/2 log(2 pi) - K C(d, gamma, m)."""
    d, k, n, gamma, m = cfg["d"], cfg["K"], cfg["N"], cfg["gamma"], cfg["m"]
    nu = d + m + 1
    multigammaln = d * (d - 1) / 4 * math.log(math.pi) + sum(
        math.lgamma(0.5 * nu + (1 - j) / 2) for j in range(1, d + 1)
    )
    c = nu * d * (math.log(gamma) - 0.5 * math.log(2)) - multigammaln
    return -n * d * 0.5 * math.log(2 * math.pi) - k * c


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    rng = np.random.default_rng(seed)
    d, k, n = cfg["d"], cfg["K"], cfg["N"]
    p = d * (d - 1) // 2
    params = (
        rng.standard_normal(k),
        rng.standard_normal((k, d)),
        np.concatenate([0.3 * rng.standard_normal((k, d)), 0.3 * rng.standard_normal((k, p))], 1),
    )
    return params, (rng.standard_normal((n, d)),)


def _qmats(icf: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    k = icf.shape[0]
    rows, cols = tri_index(d)
    diag = np.exp(icf[:, :d])
    Q = np.zeros((k, d, d))
    Q[:, rows, cols] = icf[:, d:]
    Q[:, np.arange(d), np.arange(d)] = diag
    return Q, diag


def _lse(a: np.ndarray, axis: int) -> np.ndarray:
    mx = a.max(axis=axis, keepdims=True)
    return np.squeeze(mx, axis) + np.log(np.exp(a - mx).sum(axis=axis))


def _main_term(params, data, cfg):
    alphas, means, icf = params
    (x,) = data
    d = means.shape[1]
    Q, diag = _qmats(icf, d)
    xc = x[None, :, :] - means[:, None, :]  # (K, N, d)
    z = xc @ Q.transpose(0, 2, 1)  # z[k, n] = Q_k (x_n - mu_k)
    sumq = icf[:, :d].sum(axis=1)
    main = (alphas + sumq)[:, None] - 0.5 * np.sum(z * z, axis=2)  # (K, N)
    return main, Q, diag, xc, z


def _prior(icf, diag, cfg):
    d, g2, m = cfg["d"], cfg["gamma"] ** 2, cfg["m"]
    return 0.5 * g2 * (np.sum(diag * diag) + np.sum(icf[:, d:] ** 2)) - m * np.sum(icf[:, :d])


def numpy_forward(params: tuple, data: tuple, cfg: dict) -> float:
    alphas, _, icf = params
    main, _, diag, _, _ = _main_term(params, data, cfg)
    n = data[0].shape[0]
    slse = np.sum(_lse(main, 0))
    return float(constant(cfg) + slse - n * _lse(alphas, 0) + _prior(icf, diag, cfg))


def numpy_grad(params: tuple, data: tuple, cfg: dict) -> tuple[float, tuple]:
    """Hand-written value and gradient."""
    alphas, _, icf = params
    d, g2, m = cfg["d"], cfg["gamma"] ** 2, cfg["m"]
    n = data[0].shape[0]
    main, Q, diag, xc, z = _main_term(params, data, cfg)
    mx = main.max(axis=0)
    e = np.exp(main - mx)
    tot = e.sum(axis=0)
    r = e / tot  # responsibilities (K, N)
    amx = alphas.max()
    ea = np.exp(alphas - amx)
    value = constant(cfg) + np.sum(mx + np.log(tot)) - n * (amx + np.log(ea.sum()))
    value += _prior(icf, diag, cfg)
    rsum = r.sum(axis=1)
    dalphas = rsum - n * ea / ea.sum()
    rz = r[:, :, None] * z  # = -dz
    dQ = -(rz.transpose(0, 2, 1) @ xc)  # (K, d, d)
    dmeans = (rz.sum(axis=1)[:, None, :] @ Q)[:, 0, :]
    rows, cols = tri_index(d)
    dq = rsum[:, None] + np.diagonal(dQ, axis1=1, axis2=2) * diag + g2 * diag * diag - m
    dl = dQ[:, rows, cols] + g2 * icf[:, d:]
    return float(value), (dalphas, dmeans, np.concatenate([dq, dl], axis=1))


def _generic(xp, params, data, cfg, consts, lse, reshape, swap):
    """The objective written once for jax.numpy / torch / autograd.numpy / symgrad."""
    alphas, means, icf = params
    (x,) = data
    d, k, n = cfg["d"], cfg["K"], cfg["N"]
    D, S = consts
    q, low = icf[:, :d], icf[:, d:]
    eq = xp.exp(q)
    Q = reshape(eq @ D + low @ S, (k, d, d))
    xc = x - reshape(means, (k, 1, d))
    z = xc @ swap(Q)
    main = reshape(alphas + xp.sum(q, axis=1), (k, 1)) - 0.5 * xp.sum(z * z, axis=2)
    prior = 0.5 * cfg["gamma"] ** 2 * (xp.sum(eq * eq) + xp.sum(low * low)) - cfg["m"] * xp.sum(q)
    return constant(cfg) + xp.sum(lse(main, 0)) - n * lse(alphas, 0) + prior


def symgrad_loss(cfg: dict, lse=None):
    """(loss, params, data) as symgrad Exprs; ``lse(a, axis)`` defaults to sg.logsumexp."""
    import symgrad as sg

    d, k, n = cfg["d"], cfg["K"], cfg["N"]
    p = d * (d - 1) // 2
    params = (sg.var("alphas", (k,)), sg.var("means", (k, d)), sg.var("icf", (k, d + p)))
    data = (sg.var("x", (n, d)),)
    D, S = scatter(d)
    loss = _generic(
        sg, params, data, cfg, (sg.const(D), sg.const(S)),
        lse or (lambda a, ax: sg.logsumexp(a, axis=ax)), sg.reshape,
        lambda a: sg.transpose(a, (0, 2, 1)),
    )
    return loss, params, data


def jax_loss(jax, cfg: dict):
    jnp = jax.numpy
    consts = tuple(jnp.asarray(c) for c in scatter(cfg["d"]))

    def loss(params, data):
        return _generic(
            jnp, params, data, cfg, consts,
            lambda a, ax: jax.nn.logsumexp(a, axis=ax), jnp.reshape,
            lambda a: jnp.swapaxes(a, 1, 2),
        )

    return loss


def torch_loss(torch, cfg: dict):
    consts = tuple(torch.from_numpy(c) for c in scatter(cfg["d"]))

    def loss(params, data):
        return _generic(
            torch, params, data, cfg, consts,
            lambda a, ax: torch.logsumexp(a, dim=ax), torch.reshape,
            lambda a: a.transpose(1, 2),
        )

    return loss


def autograd_loss(autograd, cfg: dict):
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    consts = scatter(cfg["d"])

    def loss(params, data):
        return _generic(
            anp, params, data, cfg, consts,
            lambda a, ax: logsumexp(a, axis=ax), anp.reshape,
            lambda a: anp.swapaxes(a, 1, 2),
        )

    return loss


def pytensor_loss(pt, cfg: dict):
    """(loss, params, data) as PyTensor variables of static shapes."""
    from pytensor.tensor.math import logsumexp

    d, k, n = cfg["d"], cfg["K"], cfg["N"]
    p = d * (d - 1) // 2
    params = (pt.tensor("alphas", shape=(k,)), pt.tensor("means", shape=(k, d)),
              pt.tensor("icf", shape=(k, d + p)))
    data = (pt.tensor("x", shape=(n, d)),)
    consts = tuple(pt.constant(c) for c in scatter(d))
    loss = _generic(pt, params, data, cfg, consts, lambda a, ax: logsumexp(a, axis=ax),
                    pt.reshape, lambda a: pt.swapaxes(a, 1, 2))
    return loss, params, data
