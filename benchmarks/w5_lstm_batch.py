"""W5 over a batch axis, as public code writes it: an LSTM (T=20, H=32, I=32) run on a
batch of B=16 sequences, with a next-step softmax cross-entropy through an output layer
``V`` (H, K) over K=32 classes, the reductions written with ``keepdims``::

    z = x_t @ W.T + h @ U.T + b        (B, 4H); gates input, forget, output, candidate
    i, f, o = 1 / (1 + exp(-z[:, :H])), ...;  g = tanh(z[:, 3H:])
    c = f * c + i * g;  h = o * tanh(c)
    s = h @ V - max(h @ V, axis=1, keepdims=True)
    logp = s - log(sum(exp(s), axis=1, keepdims=True))
    L = -sum_t mean_b logp[b, y_tb]

Gradient with respect to ``W, U, b, V``; ``xs`` (T, B, I) and int64 classes ``ys`` (T, B)
are data.
"""

from __future__ import annotations

import numpy as np

TITLE = "W5 LSTM over a batch (B=16, keepdims softmax cross-entropy, K=32)"
CONFIGS = {"T20_H32_I32_B16": {"T": 20, "H": 32, "I": 32, "B": 16, "K": 32}}
SMOKE_CONFIG = {"T": 3, "H": 2, "I": 3, "B": 2, "K": 3}
PARAMS = ("W", "U", "b", "V")
DATA = ("xs", "ys")


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    rng = np.random.default_rng(seed)
    t, h, i, b, k = cfg["T"], cfg["H"], cfg["I"], cfg["B"], cfg["K"]
    params = (rng.standard_normal((4 * h, i)) / np.sqrt(i),
              rng.standard_normal((4 * h, h)) / np.sqrt(h),
              0.1 * rng.standard_normal(4 * h),
              rng.standard_normal((h, k)) / np.sqrt(h))
    return params, (rng.standard_normal((t, b, i)), rng.integers(0, k, size=(t, b)))


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _steps(params, data, cfg):
    """The forward pass, keeping what the backward pass needs."""
    W, U, b, V = params
    xs, ys = data
    H, B = cfg["H"], cfg["B"]
    h = np.zeros((B, H))
    c = np.zeros((B, H))
    rows = np.arange(B)
    tape = []
    loss = 0.0
    for t in range(cfg["T"]):
        z = xs[t] @ W.T + h @ U.T + b
        i, f, o = _sigmoid(z[:, :H]), _sigmoid(z[:, H:2 * H]), _sigmoid(z[:, 2 * H:3 * H])
        g = np.tanh(z[:, 3 * H:])
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        s = h @ V
        s = s - np.max(s, axis=1, keepdims=True)
        e = np.exp(s)
        tot = np.sum(e, axis=1, keepdims=True)
        loss -= np.mean((s - np.log(tot))[rows, ys[t]])
        dlogits = e / tot
        dlogits[rows, ys[t]] -= 1.0
        tape.append((i, f, o, g, c_prev, h_prev, tc, h, dlogits / B))
    return loss, tape


def numpy_forward(params: tuple, data: tuple, cfg: dict) -> float:
    return float(_steps(params, data, cfg)[0])


def numpy_grad(params: tuple, data: tuple, cfg: dict) -> tuple[float, tuple]:
    """Hand-written backpropagation through time, one batch."""
    W, U, b, V = params
    xs = data[0]
    H = cfg["H"]
    loss, tape = _steps(params, data, cfg)
    dW, dU, db, dV = (np.zeros_like(p) for p in params)
    dh_next = np.zeros((cfg["B"], H))
    dc_next = np.zeros((cfg["B"], H))
    for t in range(cfg["T"] - 1, -1, -1):
        i, f, o, g, c_prev, h_prev, tc, h, dlogits = tape[t]
        dV += h.T @ dlogits
        dh = dlogits @ V.T + dh_next
        dc = dh * o * (1.0 - tc * tc) + dc_next
        dz = np.concatenate([dc * g * i * (1.0 - i), dc * c_prev * f * (1.0 - f),
                             dh * tc * o * (1.0 - o), dc * i * (1.0 - g * g)], axis=1)
        dW += dz.T @ xs[t]
        dU += dz.T @ h_prev
        db += dz.sum(axis=0)
        dh_next = dz @ U
        dc_next = dc * f
    return float(loss), (dW, dU, db, dV)


def _generic(xp, params, data, cfg, zeros, amax, sumk, arange):
    """The loss written once for symgrad / jax.numpy / torch / autograd.numpy: ``amax`` and
    ``sumk`` reduce axis 1 keeping it, ``arange(n)`` counts the batch rows."""
    W, U, b, V = params
    xs, ys = data
    H, B = cfg["H"], cfg["B"]
    h = c = zeros((B, H))
    rows = arange(B)
    loss = 0.0
    for t in range(cfg["T"]):
        z = xs[t] @ W.T + h @ U.T + b
        i = 1.0 / (1.0 + xp.exp(-z[:, :H]))
        f = 1.0 / (1.0 + xp.exp(-z[:, H:2 * H]))
        o = 1.0 / (1.0 + xp.exp(-z[:, 2 * H:3 * H]))
        g = xp.tanh(z[:, 3 * H:])
        c = f * c + i * g
        h = o * xp.tanh(c)
        logits = h @ V
        s = logits - amax(logits)
        logp = s - xp.log(sumk(xp.exp(s)))
        loss = loss - xp.mean(logp[rows, ys[t]])
    return loss


def symgrad_loss(cfg: dict):
    import symgrad as sg

    t, h, i, b, k = cfg["T"], cfg["H"], cfg["I"], cfg["B"], cfg["K"]
    params = (sg.var("W", (4 * h, i)), sg.var("U", (4 * h, h)), sg.var("b", (4 * h,)),
              sg.var("V", (h, k)))
    data = (sg.var("xs", (t, b, i)), sg.var("ys", (t, b), "int64"))
    loss = _generic(sg, params, data, cfg, lambda s: sg.const(np.zeros(s)),
                    lambda a: sg.max(a, axis=1, keepdims=True),
                    lambda a: sg.sum(a, axis=1, keepdims=True), np.arange)
    return loss, params, data


def jax_loss(jax, cfg: dict):
    jnp = jax.numpy
    return lambda p, d: _generic(jnp, p, d, cfg, jnp.zeros,
                                 lambda a: jnp.max(a, axis=1, keepdims=True),
                                 lambda a: jnp.sum(a, axis=1, keepdims=True), jnp.arange)


def torch_loss(torch, cfg: dict):
    return lambda p, d: _generic(torch, p, d, cfg, torch.zeros,
                                 lambda a: torch.amax(a, dim=1, keepdim=True),
                                 lambda a: torch.sum(a, dim=1, keepdim=True), torch.arange)


def autograd_loss(autograd, cfg: dict):
    import autograd.numpy as anp

    return lambda p, d: _generic(anp, p, d, cfg, anp.zeros,
                                 lambda a: anp.max(a, axis=1, keepdims=True),
                                 lambda a: anp.sum(a, axis=1, keepdims=True), np.arange)
