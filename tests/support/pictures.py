"""The graphs the picture and backprop tests use: the worked examples of the teaching notes
(Collins, Goodfellow, Tomassoli), a small network and the logistic neuron, each as its outputs
and their derivatives; the network's loss alone and its gradients by hand."""

from __future__ import annotations

import numpy as np

import symgrad as sg

SHAPES = {"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)}
NETWORK = "-log_softmax(V @ tanh(W @ x + b) + g)[y]"


def collins():
    u1, u2 = sg.var("u1"), sg.var("u2")
    u4 = u2 * (u1 + u2)
    return [u4, *sg.grad(u4, [u1, u2])]


def network():
    f = sg.parse(NETWORK, shapes=SHAPES, dtypes={"y": "int64"})
    return [f, *sg.grad(f, ["W", "b", "V", "g"])]


def goodfellow():  # Fig. 6.9: z = f(f(f(w))), with f = sin as in the notebook
    w = sg.var("w")
    z = sg.sin(sg.sin(sg.sin(w)))
    return [z, sg.grad(z, w)]


def sin_times_y():
    x, y = sg.var("x"), sg.var("y")
    f = sg.sin(x) * y
    return [f, *sg.grad(f, [x, y])]


def tomassoli():  # four paths from a to e, the notebook's functions
    a = sg.var("a")
    c = a**2 - (a + 2)
    e = (3 - c) * sg.sqrt(c)
    return [e, sg.grad(e, a)]


EXAMPLES = {"collins": collins, "network": network, "goodfellow": goodfellow,
            "sin_times_y": sin_times_y, "tomassoli": tomassoli}


def neuron(cleanup: bool = True):  # the logistic neuron: the sigmoid idiom covers u6..u8
    w, x, b = sg.var("w", shape=(3,)), sg.var("x", shape=(3,)), sg.var("b")
    s = 1 / (1 + sg.exp(-(w @ x + b)))
    return [s, *sg.grad(s, [w, b], cleanup=cleanup)]


def network_loss():
    """The loss of the network of Collins Fig. 1.4 / Goodfellow Alg. 6.3-6.4."""
    v = {k: sg.var(k, s) for k, s in SHAPES.items()}
    y = sg.var("y", dtype="int64")
    return -sg.log_softmax(v["V"] @ sg.tanh(v["W"] @ v["x"] + v["b"]) + v["g"])[y]


def hand_gradients(at):
    """Backprop by hand (Goodfellow Alg. 6.4, Collins Fig. 1.4), in NumPy."""
    W, x, b, V, g, y = (at[k] for k in ("W", "x", "b", "V", "g", "y"))
    h = np.tanh(W @ x + b)
    logits = V @ h + g
    p = np.exp(logits - logits.max())
    p /= p.sum()
    onehot = np.eye(len(logits))[y]
    dl = -(onehot - p)          # d o / d l = -(d q / d l)[y] = softmax(l) - onehot(y)
    dz = (V.T @ dl) * (1 - h * h)
    return {"g": dl, "V": np.outer(dl, h), "b": dz, "W": np.outer(dz, x), "x": W.T @ dz}
