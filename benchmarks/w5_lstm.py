"""W5: an LSTM unrolled over T=20 steps, hidden 32, input 32, one sequence, scalar loss.

Weights ``W`` (4H, I), ``U`` (4H, H), ``b`` (4H,), gates stacked in the order input, forget,
output, candidate. With ``XW = xs @ W.T + b`` (all steps at once) and ``h0 = c0 = 0``::

    z = XW[t] + U @ h;  i, f, o = sigmoid(z[:H]), sigmoid(z[H:2H]), sigmoid(z[2H:3H])
    g = tanh(z[3H:]);   c = f * c + i * g;   h = o * tanh(c)
    L = sum_t 1/2 |h_t - y_t|^2

Gradient with respect to ``W, U, b``; ``xs`` (T, I) and targets ``ys`` (T, H) are data.
"""

from __future__ import annotations

import numpy as np

TITLE = "W5 LSTM (T=20, H=32, I=32)"
CONFIGS = {"T20_H32_I32": {"T": 20, "H": 32, "I": 32}}
SMOKE_CONFIG = {"T": 3, "H": 2, "I": 3}
PARAMS = ("W", "U", "b")
DATA = ("xs", "ys")


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    rng = np.random.default_rng(seed)
    t, h, i = cfg["T"], cfg["H"], cfg["I"]
    params = (
        rng.standard_normal((4 * h, i)) / np.sqrt(i),
        rng.standard_normal((4 * h, h)) / np.sqrt(h),
        0.1 * rng.standard_normal(4 * h),
    )
    return params, (rng.standard_normal((t, i)), 0.5 * rng.standard_normal((t, h)))


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _squared_error(h, t, data):
    """The step's loss 1/2 |h - y_t|^2 and its gradient with respect to h."""
    r = h - data[1][t]
    return 0.5 * float(r @ r), r


def _steps(params, data, cfg, head=_squared_error):
    """Forward pass keeping what the backward pass needs; ``head(h, t, data)`` gives each
    step's loss and its gradient with respect to ``h``."""
    W, U, b = params
    xs = data[0]
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
        step_loss, dh = head(h, t, data)
        loss += step_loss
        tape.append((i, f, o, g, c_prev, h_prev, tc, dh))
    return loss, tape


def numpy_forward(params: tuple, data: tuple, cfg: dict, head=_squared_error) -> float:
    return float(_steps(params, data, cfg, head)[0])


def numpy_grad(params: tuple, data: tuple, cfg: dict, head=_squared_error
               ) -> tuple[float, tuple]:
    """Hand-written backpropagation through time."""
    W, U, b = params
    xs = data[0]
    H = cfg["H"]
    loss, tape = _steps(params, data, cfg, head)
    dxw = np.empty((cfg["T"], 4 * H))
    dU = np.zeros_like(U)
    dh_next = np.zeros(H)
    dc_next = np.zeros(H)
    for t in range(cfg["T"] - 1, -1, -1):
        i, f, o, g, c_prev, h_prev, tc, dh_t = tape[t]
        dh = dh_t + dh_next
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


def _squared(xp, h, y):
    r = h - y
    return 0.5 * xp.sum(r * r)


def _generic(xp, params, data, cfg, sigmoid, zeros, head=_squared):
    """The loss written once for symgrad / jax.numpy / torch / autograd.numpy;
    ``head(xp, h, y_t)`` is a step's loss."""
    W, U, b = params
    xs, ys = data
    H = cfg["H"]
    xw = xs @ W.T + b
    h = c = zeros(H)
    loss = 0.0
    for t in range(cfg["T"]):
        z = xw[t] + U @ h
        i, f, o = sigmoid(z[:H]), sigmoid(z[H:2 * H]), sigmoid(z[2 * H:3 * H])
        g = xp.tanh(z[3 * H:])
        c = f * c + i * g
        h = o * xp.tanh(c)
        loss = loss + head(xp, h, ys[t])
    return loss


def symgrad_loss(cfg: dict):
    import symgrad as sg

    t, h, i = cfg["T"], cfg["H"], cfg["I"]
    params = (sg.var("W", (4 * h, i)), sg.var("U", (4 * h, h)), sg.var("b", (4 * h,)))
    data = (sg.var("xs", (t, i)), sg.var("ys", (t, h)))
    zero = sg.const(np.zeros(h))
    loss = _generic(sg, params, data, cfg, sg.sigmoid, lambda n: zero)
    return loss, params, data


def jax_loss(jax, cfg: dict):
    jnp = jax.numpy
    return lambda p, d: _generic(jnp, p, d, cfg, jax.nn.sigmoid, jnp.zeros)


def torch_loss(torch, cfg: dict):
    return lambda p, d: _generic(torch, p, d, cfg, torch.sigmoid, torch.zeros)


def autograd_loss(autograd, cfg: dict):
    import autograd.numpy as anp

    sigmoid = lambda a: 1.0 / (1.0 + anp.exp(-a))  # noqa: E731
    return lambda p, d: _generic(anp, p, d, cfg, sigmoid, anp.zeros)


def pytensor_loss(pt, cfg: dict):
    """(loss, params, data) as PyTensor variables of static shapes."""
    t, h, i = cfg["T"], cfg["H"], cfg["I"]
    params = (pt.tensor("W", shape=(4 * h, i)), pt.tensor("U", shape=(4 * h, h)),
              pt.tensor("b", shape=(4 * h,)))
    data = (pt.tensor("xs", shape=(t, i)), pt.tensor("ys", shape=(t, h)))
    return _generic(pt, params, data, cfg, pt.sigmoid, pt.zeros), params, data
