"""Central differences: the independent reference the derivative tests check against.

>>> import numpy as np
>>> central(lambda v: np.sum(v ** 3), np.array([[1.0, 2.0]])).round(6)
array([[ 3., 12.]])
>>> central(lambda v: v ** 2, np.array([1.0, 3.0])).round(6)  # a Jacobian
array([[2., 0.],
       [0., 6.]])
>>> central(lambda z: np.sum(np.abs(z) ** 2), np.array([1.0 + 2.0j])).round(6)  # 2 conj(z)
array([2.-4.j])
>>> round(float(directional(np.sin, 0.0, 2.0)), 9)
2.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def central(f: Callable[[np.ndarray], Any], x: Any, h: Any = 1e-6) -> np.ndarray:
    """The derivative of ``f`` at ``x`` (an array of any shape) by central differences:
    ``f(x).shape + x.shape`` (``x``'s shape for a scalar ``f``).

    ``h`` is the step: a number, or an array of ``x``'s shape (a step per element). An
    integer ``x`` is read as float64; at an empty ``x``, zeros. At a complex ``x`` it is
    JAX's gradient of a real ``f`` (what ``sg.grad`` gives): ``df/dre - 1j df/dim`` for
    each element.
    """
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    if x.size == 0:  # no element to move: zeros of f's shape and x's
        return np.zeros(np.shape(f(x)) + x.shape)
    steps = np.broadcast_to(np.asarray(h, dtype=np.float64), x.shape)
    moves = ((1.0, 1.0), (1j, -1j)) if x.dtype.kind == "c" else ((1.0, 1.0),)
    cols = []
    for k in np.ndindex(x.shape):
        col = 0.0
        for move, weight in moves:
            e = np.zeros_like(x)
            e[k] = move * steps[k]
            diff = np.asarray(f(x + e)) - np.asarray(f(x - e))
            col = col + weight * diff / (2 * steps[k])
        cols.append(col)
    out = np.asarray(cols)
    out = out.reshape(x.shape + out.shape[1:])
    return np.moveaxis(out, list(range(x.ndim)), list(range(out.ndim - x.ndim, out.ndim)))


def directional(f: Callable[[Any], Any], x: Any, v: Any, h: float = 1e-6) -> np.ndarray:
    """The derivative of ``f`` at ``x`` along ``v`` (a Jacobian-vector product) by the
    central difference ``(f(x + h v) - f(x - h v)) / 2h``."""
    return (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)


def central_in(f: Callable[..., Any], args: Any, k: int, h: Any = 1e-6) -> np.ndarray:
    """The derivative of ``f(*args)`` in ``args[k]``, the others held, by :func:`central`.

    >>> round(float(central_in(lambda a, b: a * b, [2.0, 5.0], 1)), 6)
    2.0
    """
    args = list(args)
    return central(lambda v: f(*args[:k], v, *args[k + 1:]), args[k], h)


def central_at(expr: Any, at: dict, name: str, h: Any = 1e-6) -> np.ndarray:
    """The derivative of symgrad ``expr`` evaluated at ``at`` in its input ``name`` (the
    other inputs held), by :func:`central` over ``sg.evaluate``.

    >>> import symgrad as sg
    >>> x, y = sg.var("x", shape=(2,)), sg.var("y")
    >>> central_at(sg.sum(x * x) * y, {"x": np.array([1.0, -2.0]), "y": 3.0}, "x").round(6)
    array([  6., -12.])
    """
    import symgrad as sg

    return central(lambda v: sg.evaluate(expr, {**at, name: v}), at[name], h)
