"""W5 as public code writes it: a character-level LSTM over a batch of sequences, trained
to predict the next character with a softmax cross-entropy at every step.

T=20 steps, hidden H=32, vocabulary V=32 (W5's input width), batch B=16. The data ``X``
(T+1, B, V) are one-hot characters; step ``t`` reads ``X[t]`` and is scored against
``X[t + 1]``. Weights ``Wx`` (V, 4H), ``Wh`` (H, 4H), ``b`` (4H,), gates stacked in the order
input, forget, output, candidate, and the read-out ``Wy`` (H, V), ``by`` (V,)::

    z = X[t] Wx + h Wh + b;  i, f, o = 1/(1+exp(-z[:, gate]));  g = tanh(z[:, 3H:])
    c = f * c + i * g;  h = o * tanh(c);  s = h Wy + by
    s = s - max(s, axis=1, keepdims=True)
    logp = s - log(sum(exp(s), axis=1, keepdims=True));  L -= sum(X[t+1] * logp)
    L = L / (T B)

:func:`loss` is that NumPy code, written once (a Python loop over the steps, which symgrad
rolls into a scan and JAX and PyTensor unroll): symgrad traces it with NumPy's own
functions, JAX runs it with ``np=jax.numpy`` and PyTensor with ``np=pytensor.tensor``.
:func:`symgrad_loss_ours` writes the same model with ``sg.sigmoid`` and
``sg.log_softmax`` (the other spelling, for the smoke tests). Gradient with respect to
``Wx, Wh, b, Wy, by``.
"""

from __future__ import annotations

import numpy

TITLE = "W5 char-LSTM as public code writes it (batch axis, next-step keepdims softmax CE)"
CONFIGS = {"T20_H32_V32_B16": {"T": 20, "H": 32, "V": 32, "B": 16}}
SMOKE_CONFIG = {"T": 3, "H": 2, "V": 3, "B": 2}
PARAMS = ("Wx", "Wh", "b", "Wy", "by")
DATA = ("X",)


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    """(params, data): float64 weights and one-hot characters (T+1, B, V)."""
    rng = numpy.random.default_rng(seed)
    t, h, v, b = cfg["T"], cfg["H"], cfg["V"], cfg["B"]
    params = (
        rng.standard_normal((v, 4 * h)) / numpy.sqrt(v),
        rng.standard_normal((h, 4 * h)) / numpy.sqrt(h),
        0.1 * rng.standard_normal(4 * h),
        rng.standard_normal((h, v)) / numpy.sqrt(h),
        0.1 * rng.standard_normal(v),
    )
    chars = rng.integers(0, v, size=(t + 1, b))
    return params, (numpy.eye(v)[chars],)


def loss(params, data, cfg: dict, np=numpy):
    """The loss (``np``: numpy, jax.numpy, pytensor.tensor)."""
    Wx, Wh, b, Wy, by = params
    (X,) = data
    T, H, B = cfg["T"], cfg["H"], cfg["B"]
    h = np.zeros((B, H))
    c = np.zeros((B, H))
    total = 0.0
    for t in range(T):
        z = X[t] @ Wx + h @ Wh + b
        i = 1.0 / (1.0 + np.exp(-z[:, :H]))
        f = 1.0 / (1.0 + np.exp(-z[:, H:2 * H]))
        o = 1.0 / (1.0 + np.exp(-z[:, 2 * H:3 * H]))
        g = np.tanh(z[:, 3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        s = h @ Wy + by
        s = s - np.max(s, axis=1, keepdims=True)
        logp = s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))
        total = total - np.sum(X[t + 1] * logp)
    return total / (T * B)


def numpy_forward(params: tuple, data: tuple, cfg: dict) -> float:
    return float(loss(params, data, cfg))


def _sigmoid(a):
    return 1.0 / (1.0 + numpy.exp(-a))


def numpy_grad(params: tuple, data: tuple, cfg: dict) -> tuple[float, tuple]:
    """Hand-written backpropagation through time over the batch."""
    Wx, Wh, b, Wy, by = params
    (X,) = data
    T, H, B = cfg["T"], cfg["H"], cfg["B"]
    scale = 1.0 / (T * B)
    h = numpy.zeros((B, H))
    c = numpy.zeros((B, H))
    tape, total = [], 0.0
    for t in range(T):
        z = X[t] @ Wx + h @ Wh + b
        i, f, o = _sigmoid(z[:, :H]), _sigmoid(z[:, H:2 * H]), _sigmoid(z[:, 2 * H:3 * H])
        g = numpy.tanh(z[:, 3 * H:])
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = numpy.tanh(c)
        h = o * tc
        s = h @ Wy + by
        s = s - numpy.max(s, axis=1, keepdims=True)
        e = numpy.exp(s)
        tot = numpy.sum(e, axis=1, keepdims=True)
        y = X[t + 1]
        total -= numpy.sum(y * (s - numpy.log(tot)))
        ds = (e / tot * numpy.sum(y, axis=1, keepdims=True) - y) * scale
        tape.append((i, f, o, g, c_prev, h_prev, tc, h, ds))
    dWx, dWh, db = numpy.zeros_like(Wx), numpy.zeros_like(Wh), numpy.zeros_like(b)
    dWy, dby = numpy.zeros_like(Wy), numpy.zeros_like(by)
    dh_next = numpy.zeros((B, H))
    dc_next = numpy.zeros((B, H))
    dz = numpy.empty((B, 4 * H))
    for t in range(T - 1, -1, -1):
        i, f, o, g, c_prev, h_prev, tc, h, ds = tape[t]
        dWy += h.T @ ds
        dby += ds.sum(axis=0)
        dh = ds @ Wy.T + dh_next
        dc = dh * o * (1.0 - tc * tc) + dc_next
        dz[:, :H] = dc * g * i * (1.0 - i)
        dz[:, H:2 * H] = dc * c_prev * f * (1.0 - f)
        dz[:, 2 * H:3 * H] = dh * tc * o * (1.0 - o)
        dz[:, 3 * H:] = dc * i * (1.0 - g * g)
        dWx += X[t].T @ dz
        dWh += h_prev.T @ dz
        db += dz.sum(axis=0)
        dh_next = dz @ Wh.T
        dc_next = dc * f
    return float(total * scale), (dWx, dWh, db, dWy, dby)


def _variables(cfg: dict):
    import symgrad as sg

    t, h, v, b = cfg["T"], cfg["H"], cfg["V"], cfg["B"]
    params = (sg.var("Wx", (v, 4 * h)), sg.var("Wh", (h, 4 * h)), sg.var("b", (4 * h,)),
              sg.var("Wy", (h, v)), sg.var("by", (v,)))
    return params, (sg.var("X", (t + 1, b, v)),)


def symgrad_loss(cfg: dict):
    """(loss, params, data): :func:`loss` traced with NumPy's own functions."""
    params, data = _variables(cfg)
    return loss(params, data, cfg), params, data


def symgrad_loss_ours(cfg: dict):
    """The same model in symgrad's own ops (the other spelling, for the smoke tests)."""
    import symgrad as sg

    (Wx, Wh, b, Wy, by), (X,) = params, data = _variables(cfg)
    T, H, B = cfg["T"], cfg["H"], cfg["B"]
    h = c = sg.zeros((B, H))
    total = 0.0
    for t in range(T):
        z = X[t] @ Wx + h @ Wh + b
        i, f, o = (sg.sigmoid(z[:, k * H:(k + 1) * H]) for k in range(3))
        c = f * c + i * sg.tanh(z[:, 3 * H:])
        h = o * sg.tanh(c)
        total = total - sg.sum(X[t + 1] * sg.log_softmax(h @ Wy + by, axis=1))
    return total / (T * B), params, data


def jax_loss(jax, cfg: dict):
    return lambda params, data: loss(params, data, cfg, np=jax.numpy)


def pytensor_loss(pt, cfg: dict):
    """(loss, params, data) as PyTensor variables of static shapes."""
    t, h, v, b = cfg["T"], cfg["H"], cfg["V"], cfg["B"]
    params = (pt.tensor("Wx", shape=(v, 4 * h)), pt.tensor("Wh", shape=(h, 4 * h)),
              pt.tensor("b", shape=(4 * h,)), pt.tensor("Wy", shape=(h, v)),
              pt.tensor("by", shape=(v,)))
    data = (pt.tensor("X", shape=(t + 1, b, v)),)
    return loss(params, data, cfg, np=pt), params, data
