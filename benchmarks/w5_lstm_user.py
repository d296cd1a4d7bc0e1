"""W5 as users write it: the LSTM of :mod:`.w5_lstm` (T=20, H=32, I=32, one sequence) with
the logistic function written ``1 / (1 + exp(-z))`` and a cross-entropy loss at every step
through a max-shifted log-softmax written out by hand, in every system (no symgrad-only op)::

    s = h_t - max(h_t);  logp = s - log(sum(exp(s)));  L = -sum_t logp[y_t]

The hidden state ``h_t`` is the logit vector (H classes); targets ``ys`` are int64 (T,).
Gradient with respect to ``W, U, b``.
"""

from __future__ import annotations

import numpy as np

from .w5_lstm import PARAMS  # noqa: F401 - the workload interface, shared with W5

TITLE = "W5 LSTM as users write it (hand sigmoid, max-shifted log-softmax CE)"
CONFIGS = {"T20_H32_I32": {"T": 20, "H": 32, "I": 32}}
SMOKE_CONFIG = {"T": 3, "H": 2, "I": 3}
DATA = ("xs", "ys")


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    rng = np.random.default_rng(seed)
    t, h, i = cfg["T"], cfg["H"], cfg["I"]
    params = (
        rng.standard_normal((4 * h, i)) / np.sqrt(i),
        rng.standard_normal((4 * h, h)) / np.sqrt(h),
        0.1 * rng.standard_normal(4 * h),
    )
    return params, (rng.standard_normal((t, i)), rng.integers(0, h, size=t))


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _steps(params, data, cfg):
    """Forward pass keeping what the backward pass needs."""
    W, U, b = params
    xs, ys = data
    H = cfg["H"]
    xw = xs @ W.T + b
    h = np.zeros(H)
    c = np.zeros(H)
    tape = []
    loss = 0.0
    for t in range(cfg["T"]):
        z = xw[t] + U @ h
        i, f, o = _sigmoid(z[:H]), _sigmoid(z[H:2 * H]), _sigmoid(z[2 * H:3 * H])
        g = np.tanh(z[3 * H:])
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        s = h - np.max(h)
        e = np.exp(s)
        tot = np.sum(e)
        loss -= s[ys[t]] - np.log(tot)
        tape.append((i, f, o, g, c_prev, h_prev, tc, e / tot))
    return loss, tape


def numpy_forward(params: tuple, data: tuple, cfg: dict) -> float:
    return float(_steps(params, data, cfg)[0])


def numpy_grad(params: tuple, data: tuple, cfg: dict) -> tuple[float, tuple]:
    """Hand-written backpropagation through time (softmax - onehot at each step)."""
    W, U, b = params
    xs, ys = data
    H = cfg["H"]
    loss, tape = _steps(params, data, cfg)
    dxw = np.empty((cfg["T"], 4 * H))
    dU = np.zeros_like(U)
    dh_next = np.zeros(H)
    dc_next = np.zeros(H)
    for t in range(cfg["T"] - 1, -1, -1):
        i, f, o, g, c_prev, h_prev, tc, p = tape[t]
        dh = p + dh_next
        dh[ys[t]] -= 1.0
        dc = dh * o * (1.0 - tc * tc) + dc_next
        dz = dxw[t]
        dz[:H] = dc * g * i * (1.0 - i)
        dz[H:2 * H] = dc * c_prev * f * (1.0 - f)
        dz[2 * H:3 * H] = dh * tc * o * (1.0 - o)
        dz[3 * H:] = dc * i * (1.0 - g * g)
        dU += np.outer(dz, h_prev)
        dh_next = U.T @ dz
        dc_next = dc * f
    return float(loss), (dxw.T @ xs, dU, dxw.sum(axis=0))


def _generic(xp, params, data, cfg, zeros, amax):
    """The loss written once for symgrad / jax.numpy / torch / autograd.numpy."""
    W, U, b = params
    xs, ys = data
    H = cfg["H"]
    xw = xs @ W.T + b
    h = c = zeros(H)
    loss = 0.0
    for t in range(cfg["T"]):
        z = xw[t] + U @ h
        i = 1.0 / (1.0 + xp.exp(-z[:H]))
        f = 1.0 / (1.0 + xp.exp(-z[H:2 * H]))
        o = 1.0 / (1.0 + xp.exp(-z[2 * H:3 * H]))
        g = xp.tanh(z[3 * H:])
        c = f * c + i * g
        h = o * xp.tanh(c)
        s = h - amax(h)
        logp = s - xp.log(xp.sum(xp.exp(s)))
        loss = loss - logp[ys[t]]
    return loss


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
