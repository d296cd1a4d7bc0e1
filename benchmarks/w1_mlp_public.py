"""W1 as public code writes it: the two-layer network of CS231n's NumPy case study.

Biases and ReLU, weights applied as ``X @ W1``, integer class labels picked with
``probs[np.arange(N), y]``, the softmax max-shifted and normalised with
``np.max(..., axis=1, keepdims=True)`` / ``np.sum(..., axis=1, keepdims=True)``, the data
loss averaged over the batch, plus an L2 penalty::

    hidden = max(0, X W1 + b1);  scores = hidden W2 + b2
    L = -mean_n log softmax(scores)[n, y_n] + reg/2 (|W1|^2 + |W2|^2)

:func:`loss` is that NumPy code, written once: symgrad traces it with NumPy itself (its
functions called on symgrad variables), JAX runs it with ``np=jax.numpy`` and PyTensor with
``np=pytensor.tensor``. Sizes as W1's: N=128, d=784, m=256, K=10. Gradient with respect to
``W1, b1, W2, b2``. :func:`symgrad_loss_ours` writes the same model with symgrad's own ops
(``sg.relu``, ``sg.log_softmax``): the other spelling the smoke tests check against.
"""

from __future__ import annotations

import numpy

TITLE = "W1 MLP as public code writes it (ReLU, biases, keepdims softmax, integer labels)"
CONFIGS = {"N128_d784_m256_K10": {"N": 128, "d": 784, "m": 256, "K": 10}}
SMOKE_CONFIG = {"N": 4, "d": 5, "m": 3, "K": 3}
PARAMS = ("W1", "b1", "W2", "b2")
DATA = ("X", "y")
REG = 1e-3


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    """(params, data): float64 weights, float64 inputs, int64 labels."""
    rng = numpy.random.default_rng(seed)
    n, d, m, k = cfg["N"], cfg["d"], cfg["m"], cfg["K"]
    params = (
        rng.standard_normal((d, m)) / numpy.sqrt(d),
        0.1 * rng.standard_normal(m),
        rng.standard_normal((m, k)) / numpy.sqrt(m),
        0.1 * rng.standard_normal(k),
    )
    return params, (rng.standard_normal((n, d)), rng.integers(0, k, size=n))


def loss(params, data, np=numpy):
    """The loss as the case study writes it (``np``: numpy, jax.numpy, pytensor.tensor)."""
    W1, b1, W2, b2 = params
    X, y = data
    num_examples = X.shape[0]
    hidden = np.maximum(0, X @ W1 + b1)
    scores = hidden @ W2 + b2
    scores = scores - np.max(scores, axis=1, keepdims=True)
    exp_scores = np.exp(scores)
    probs = exp_scores / np.sum(exp_scores, axis=1, keepdims=True)
    correct_logprobs = -np.log(probs[np.arange(num_examples), y])
    data_loss = np.sum(correct_logprobs) / num_examples
    reg_loss = 0.5 * REG * np.sum(W1 * W1) + 0.5 * REG * np.sum(W2 * W2)
    return data_loss + reg_loss


def numpy_forward(params: tuple, data: tuple, cfg: dict) -> float:
    return float(loss(params, data))


def numpy_grad(params: tuple, data: tuple, cfg: dict) -> tuple[float, tuple]:
    """The case study's hand-written backward pass."""
    W1, b1, W2, b2 = params
    X, y = data
    n = X.shape[0]
    hidden = numpy.maximum(0, X @ W1 + b1)
    scores = hidden @ W2 + b2
    scores -= numpy.max(scores, axis=1, keepdims=True)
    exp_scores = numpy.exp(scores)
    probs = exp_scores / numpy.sum(exp_scores, axis=1, keepdims=True)
    value = -numpy.sum(numpy.log(probs[numpy.arange(n), y])) / n
    value += 0.5 * REG * numpy.sum(W1 * W1) + 0.5 * REG * numpy.sum(W2 * W2)
    dscores = probs
    dscores[numpy.arange(n), y] -= 1
    dscores /= n
    dhidden = dscores @ W2.T
    dhidden[hidden <= 0] = 0
    return float(value), (X.T @ dhidden + REG * W1, dhidden.sum(axis=0),
                          hidden.T @ dscores + REG * W2, dscores.sum(axis=0))


def _variables(cfg: dict):
    import symgrad as sg

    n, d, m, k = cfg["N"], cfg["d"], cfg["m"], cfg["K"]
    params = (sg.var("W1", (d, m)), sg.var("b1", (m,)), sg.var("W2", (m, k)),
              sg.var("b2", (k,)))
    return params, (sg.var("X", (n, d)), sg.var("y", (n,), "int64"))


def symgrad_loss(cfg: dict):
    """(loss, params, data): :func:`loss` traced with NumPy's own functions."""
    params, data = _variables(cfg)
    return loss(params, data), params, data


def symgrad_loss_ours(cfg: dict):
    """The same model in symgrad's own ops (the other spelling, for the smoke tests)."""
    import symgrad as sg

    (W1, b1, W2, b2), (X, y) = params, data = _variables(cfg)
    logp = sg.log_softmax(sg.relu(X @ W1 + b1) @ W2 + b2, axis=1)
    value = -sg.mean(logp[sg.arange(cfg["N"]), y])
    return value + 0.5 * REG * (sg.sum(W1 * W1) + sg.sum(W2 * W2)), params, data


def jax_loss(jax, cfg: dict):
    return lambda params, data: loss(params, data, np=jax.numpy)


def pytensor_loss(pt, cfg: dict):
    """(loss, params, data) as PyTensor variables of static shapes."""
    n, d, m, k = cfg["N"], cfg["d"], cfg["m"], cfg["K"]
    params = (pt.tensor("W1", shape=(d, m)), pt.tensor("b1", shape=(m,)),
              pt.tensor("W2", shape=(m, k)), pt.tensor("b2", shape=(k,)))
    data = (pt.tensor("X", shape=(n, d)), pt.tensor("y", shape=(n,), dtype="int64"))
    return loss(params, data, np=pt), params, data
