"""W5 as users write it: the LSTM of :mod:`.w5_lstm` (T=20, H=32, I=32, one sequence) with
the logistic function written ``1 / (1 + exp(-z))`` and a cross-entropy loss at every step
through a max-shifted log-softmax written out by hand, in every system (no symgrad-only op)::

    s = h_t - max(h_t);  logp = s - log(sum(exp(s)));  L = -sum_t logp[y_t]

The hidden state ``h_t`` is the logit vector (H classes); targets ``ys`` are int64 (T,).
Gradient with respect to ``W, U, b``.
"""

from __future__ import annotations

import numpy as np

from . import w5_lstm
from .w5_lstm import PARAMS  # noqa: F401 - the workload interface, shared with W5

TITLE = "W5 LSTM as users write it (hand sigmoid, max-shifted log-softmax CE)"
CONFIGS = {"T20_H32_I32": {"T": 20, "H": 32, "I": 32}}
SMOKE_CONFIG = {"T": 3, "H": 2, "I": 3}
DATA = ("xs", "ys")


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    """W5's weights and inputs; the targets are classes (int64)."""
    params, (xs, _) = w5_lstm.inputs(cfg, seed)
    ys = np.random.default_rng(seed + 1).integers(0, cfg["H"], size=cfg["T"])
    return params, (xs, ys)


def _cross_entropy(h, t, data):
    """The step's loss -log_softmax(h)[y_t], max-shifted, and its gradient softmax - onehot."""
    y = data[1][t]
    s = h - np.max(h)
    e = np.exp(s)
    tot = np.sum(e)
    dh = e / tot
    dh[y] -= 1.0
    return -(s[y] - np.log(tot)), dh


def numpy_forward(params: tuple, data: tuple, cfg: dict) -> float:
    return w5_lstm.numpy_forward(params, data, cfg, _cross_entropy)


def numpy_grad(params: tuple, data: tuple, cfg: dict) -> tuple[float, tuple]:
    """Hand-written backpropagation through time (W5's, with this loss)."""
    return w5_lstm.numpy_grad(params, data, cfg, _cross_entropy)


def _generic(xp, params, data, cfg, zeros, amax):
    """W5's loop with the logistic function and a max-shifted log-softmax cross-entropy
    written out, for symgrad / jax.numpy / torch / autograd.numpy."""

    def sigmoid(a):
        return 1.0 / (1.0 + xp.exp(-a))

    def cross_entropy(xp, h, y):
        s = h - amax(h)
        logp = s - xp.log(xp.sum(xp.exp(s)))
        return -logp[y]

    return w5_lstm._generic(xp, params, data, cfg, sigmoid, zeros, cross_entropy)


def symgrad_loss(cfg: dict):
    import symgrad as sg

    t, h, i = cfg["T"], cfg["H"], cfg["I"]
    params = (sg.var("W", (4 * h, i)), sg.var("U", (4 * h, h)), sg.var("b", (4 * h,)))
    data = (sg.var("xs", (t, i)), sg.var("ys", (t,), "int64"))
    zero = sg.const(np.zeros(h))
    loss = _generic(sg, params, data, cfg, lambda n: zero, sg.max)
    return loss, params, data


def jax_loss(jax, cfg: dict):
    jnp = jax.numpy
    return lambda p, d: _generic(jnp, p, d, cfg, jnp.zeros, jnp.max)


def torch_loss(torch, cfg: dict):
    return lambda p, d: _generic(torch, p, d, cfg, torch.zeros, torch.max)


def autograd_loss(autograd, cfg: dict):
    import autograd.numpy as anp

    return lambda p, d: _generic(anp, p, d, cfg, anp.zeros, anp.max)
