"""Two losses from ``numpy.linalg``: symgrad's emitted gradient against a hand-written one.

* a full-covariance Gaussian negative log-likelihood (``slogdet`` + ``solve``), gradient
  with respect to the mean and the covariance;
* a Gaussian-process negative log marginal likelihood with an RBF kernel (``cholesky`` +
  ``solve``), gradient with respect to the three log hyper-parameters.

Each loss is written once in plain NumPy style against a namespace (``np`` and its
``linalg``), so the same function is NumPy code and traces into symgrad. The hand-written
gradients use ``numpy.linalg`` only. Run ``python -m benchmarks.linalg_losses``: it checks
that the gradients agree and prints the paired time ratio (emitted value+gradient over the
hand-written value+gradient, medians of per-round ratios, one thread, one process).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np

from . import common

LOG_2PI = math.log(2.0 * math.pi)
CONFIGS = {
    "gaussian_nll": [{"N": 1000, "d": 10}, {"N": 200, "d": 50}],
    "gp_nlml": [{"n": 100}, {"n": 400}],
}


# -- the losses, as NumPy code --------------------------------------------------------------


def gaussian_nll(mu, sigma, x, np=np):
    """-sum_i log N(x_i; mu, sigma) for the rows of ``x``."""
    n, d = x.shape
    r = x - mu
    _, logdet = np.linalg.slogdet(sigma)
    quad = np.sum(r * np.linalg.solve(sigma, r.T).T)
    return 0.5 * (n * logdet + quad + n * d * LOG_2PI)


def gp_nlml(log_ell, log_sf, log_sn, d2, y, np=np):
    """-log p(y | X) of a GP with kernel sf^2 exp(-|x - x'|^2 / (2 ell^2)) + sn^2 I
    (``d2``: the squared distances)."""
    n = y.shape[0]
    k = np.exp(2.0 * log_sf) * np.exp(-0.5 * d2 / np.exp(2.0 * log_ell))
    k = k + np.exp(2.0 * log_sn) * np.eye(n)
    chol = np.linalg.cholesky(k)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
    return 0.5 * np.dot(y, alpha) + np.sum(np.log(np.einsum("ii->i", chol))) + 0.5 * n * LOG_2PI


# -- hand-written gradients --------------------------------------------------------------------


def gaussian_nll_value_and_grad(mu, sigma, x):
    n, d = x.shape
    r = x - mu
    inv = np.linalg.inv(sigma)
    z = r @ inv.T  # rows: inv(sigma) r_i
    _, logdet = np.linalg.slogdet(sigma)
    value = 0.5 * (n * logdet + np.sum(z * r) + n * d * LOG_2PI)
    return value, -z.sum(axis=0), 0.5 * (n * inv.T - z.T @ z)


def gp_nlml_value_and_grad(log_ell, log_sf, log_sn, d2, y):
    n = y.shape[0]
    kf = math.exp(2.0 * log_sf) * np.exp(-0.5 * d2 * math.exp(-2.0 * log_ell))
    noise = math.exp(2.0 * log_sn)
    k = kf + noise * np.eye(n)
    chol = np.linalg.cholesky(k)
    inv_chol = np.linalg.inv(chol)
    k_inv = inv_chol.T @ inv_chol
    alpha = k_inv @ y
    value = 0.5 * (y @ alpha) + np.sum(np.log(np.diagonal(chol))) + 0.5 * n * LOG_2PI
    w = 0.5 * (k_inv - np.outer(alpha, alpha))  # d value / d K
    d_ell = np.sum(w * kf * d2) * math.exp(-2.0 * log_ell)
    return value, d_ell, 2.0 * np.sum(w * kf), 2.0 * noise * np.trace(w)


# -- data and the symgrad versions ---------------------------------------------------------


def gaussian_nll_data(cfg: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    n, d = cfg["N"], cfg["d"]
    b = rng.standard_normal((d, d))
    sigma = b @ b.T / d + 0.5 * np.eye(d)
    x = rng.multivariate_normal(rng.standard_normal(d), sigma, size=n)
    return {"mu": x.mean(axis=0) + 0.1, "sigma": sigma * 1.1, "x": x}


def gp_data(cfg: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    n = cfg["n"]
    pts = rng.uniform(-3.0, 3.0, size=(n, 2))
    d2 = np.sum((pts[:, None, :] - pts[None, :, :]) ** 2, axis=-1)
    y = np.sin(pts[:, 0]) * np.cos(pts[:, 1]) + 0.1 * rng.standard_normal(n)
    return {"log_ell": 0.1, "log_sf": 0.2, "log_sn": -1.5, "d2": d2, "y": y}


def compiled(name: str, data: dict):
    """symgrad's value-and-gradient of loss ``name`` as emitted NumPy source (compiled),
    with the order of its inputs and of its gradients."""
    import symgrad as sg
    import symgrad.numpy as snp

    if name == "gaussian_nll":
        mu = sg.var("mu", data["mu"].shape)
        sigma = sg.var("sigma", data["sigma"].shape)
        x = sg.var("x", data["x"].shape)
        f = gaussian_nll(mu, sigma, x, np=snp)
        wrt, inputs = [mu, sigma], [mu, sigma, x]
    else:
        scalars = [sg.var(k) for k in ("log_ell", "log_sf", "log_sn")]
        d2, y = sg.var("d2", data["d2"].shape), sg.var("y", data["y"].shape)
        f = gp_nlml(*scalars, d2, y, np=snp)
        wrt, inputs = scalars, [*scalars, d2, y]
    fn = sg.compile([f, *sg.grad(f, wrt)], inputs=inputs)
    return f, wrt, fn, [i.name for i in inputs]


def hand(name: str):
    return gaussian_nll_value_and_grad if name == "gaussian_nll" else gp_nlml_value_and_grad


def data_for(name: str, cfg: dict) -> dict:
    return gaussian_nll_data(cfg) if name == "gaussian_nll" else gp_data(cfg)


# -- the measurement ----------------------------------------------------------------------------


def measure(name: str, cfg: dict, budget: float = 2.0) -> dict:
    import symgrad as sg

    data = data_for(name, cfg)
    f, _, fn, order = compiled(name, data)
    forward = sg.compile(f, inputs=order)
    args = [data[k] for k in order]
    ours, ref = fn.raw(*args), hand(name)(*args)
    err = common.rel_err(list(ours), list(ref))
    t_sym, t_hand, t_fwd = common.interleaved(
        [lambda: fn.raw(*args), lambda: hand(name)(*args), lambda: forward.raw(*args)],
        budget=budget)
    return {"loss": name, "config": cfg, "rel_err": err,
            "symgrad_ms": 1e3 * common.median(t_sym), "hand_ms": 1e3 * common.median(t_hand),
            "ratio": common.paired_ratio(t_sym, t_hand),
            "per_forward": common.paired_ratio(t_sym, t_fwd)}


def main() -> None:
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":  # one thread, set before NumPy loads
        sys.exit(subprocess.call([sys.executable, "-m", "benchmarks.linalg_losses"],
                                 env=common.cell_env()))
    print("| loss | size | emitted value+grad (ms) | hand-written (ms) | ratio | "
          "emitted value+grad / emitted value | rel. error |")
    print("|---|---|---|---|---|---|---|")
    for name, configs in CONFIGS.items():
        for cfg in configs:
            r = measure(name, cfg)
            size = " ".join(f"{k}={v}" for k, v in cfg.items())
            print(f"| {name} | {size} | {r['symgrad_ms']:.3f} | {r['hand_ms']:.3f} | "
                  f"{r['ratio']:.2f}x | {r['per_forward']:.2f}x | {r['rel_err']:.1e} |")


if __name__ == "__main__":
    common.with_thread_env("benchmarks.linalg_losses")
    main()
