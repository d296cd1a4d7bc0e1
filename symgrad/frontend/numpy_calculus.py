"""NumPy's differences, integrals, interpolation and convolutions, built from ops:
``diff gradient trapezoid interp convolve correlate``. Spacings, orders and modes are
static numbers and strings; the arrays are traced.

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(4,))
>>> sg.evaluate(sg.numpy.diff(x ** 2), {"x": np.arange(4.0)}).tolist()
[1.0, 3.0, 5.0]
"""

from __future__ import annotations

import numpy as np

from ..base.errors import ShapeError, UnsupportedError
from ..ir.expr import F
from .numpy_arrays import concatenate, flip, slice_along
from .numpy_define import as_expr, axes_tuple, axis_int, define


@define("diff", "a", "=n", "=axis", "?prepend", "?append", n=1, axis=-1)
def diff(a, n=1, axis=-1, prepend=None, append=None):
    a = as_expr(a)
    axis = axis_int("diff", axis, a.ndim)
    edge = a.shape[:axis] + (1,) + a.shape[axis + 1:]
    pieces = [a]
    if prepend is not None:
        p = as_expr(prepend)
        pieces.insert(0, F.broadcast_to(p, edge) if p.ndim == 0 else p)
    if append is not None:
        p = as_expr(append)
        pieces.append(F.broadcast_to(p, edge) if p.ndim == 0 else p)
    a = concatenate(pieces, axis=axis)
    for _ in range(n):
        a = slice_along(a, axis, slice(1, None)) - slice_along(a, axis, slice(None, -1))
    return a


@define("gradient", "f", "*varargs", axis=None, edge_order=1)
def gradient(f, *varargs, axis=None, edge_order=1):
    """Central differences inside, one-sided at the edges (edge_order 1 or 2), with a
    scalar spacing per axis (coordinate arrays are not supported)."""
    f = as_expr(f)
    axes = axes_tuple("gradient", axis, f.ndim)
    spacing = list(varargs) or [1.0]
    if len(spacing) == 1:
        spacing = spacing * len(axes)
    if len(spacing) != len(axes) or any(np.ndim(h) != 0 for h in spacing):
        raise UnsupportedError("gradient: give one scalar spacing per axis (coordinate "
                               "arrays are not supported)")
    out = []
    for ax, h in zip(axes, spacing):
        n = f.shape[ax]
        if n < edge_order + 1:
            raise ShapeError(f"gradient: an axis of size {n} is too short for "
                             f"edge_order={edge_order}")
        s = lambda i, j=None, ax=ax: slice_along(f, ax, slice(i, j))  # noqa: E731
        mid = (s(2, None) - s(None, -2)) / (2.0 * h)
        if edge_order == 1:
            first, last = (s(1, 2) - s(0, 1)) / h, (s(-1, None) - s(-2, -1)) / h
        else:
            first = (-1.5 * s(0, 1) + 2.0 * s(1, 2) - 0.5 * s(2, 3)) / h
            last = (0.5 * s(-3, -2) - 2.0 * s(-2, -1) + 1.5 * s(-1, None)) / h
        out.append(concatenate([first, mid, last], axis=ax))
    return out[0] if len(out) == 1 else tuple(out)  # a tuple, as NumPy 2 gives


@define("trapezoid", "y", "?x", "=dx", "=axis", dx=1.0, axis=-1)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = as_expr(y)
    ax = axis_int("trapezoid", axis, y.ndim)
    d = diff(x, axis=-1 if as_expr(x).ndim == 1 else ax) if x is not None else dx
    if x is not None and as_expr(x).ndim == 1 and y.ndim > 1:
        d = F.reshape(d, (-1,) + (1,) * (y.ndim - 1 - ax))
    avg = (slice_along(y, ax, slice(1, None)) + slice_along(y, ax, slice(None, -1))) / 2.0
    return F.sum(avg * d, axis=ax)


@define("interp", "x", "xp", "fp", "?left", "?right", period=None)
def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation through (xp, fp) (xp increasing, 1-D), as NumPy's;
    differentiable in x, xp and fp."""
    if period is not None:
        raise UnsupportedError("interp: period= is not supported")
    x, xp, fp = as_expr(x), as_expr(xp), as_expr(fp)
    n = xp.shape[0]
    k = F.minimum(F.maximum(F.searchsorted(xp, x, side="right"), 1), n - 1)
    x0, x1, y0, y1 = xp[k - 1], xp[k], fp[k - 1], fp[k]
    y = y0 + (x - x0) * ((y1 - y0) / (x1 - x0))
    y = F.where(x < xp[0], fp[0] if left is None else left, y)
    return F.where(x > xp[n - 1], fp[n - 1] if right is None else right, y)


def _conv_index(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Gather indices for the full convolution of lengths n and m: out[k] = sum_j
    a[k - j] v[j]; positions outside ``a`` read a zero appended at index n."""
    k, j = np.arange(n + m - 1)[:, None], np.arange(m)[None, :]
    src = k - j
    return np.where((src >= 0) & (src < n), src, n), np.zeros(1)


@define("convolve", "a", "v", "=mode", mode="full", strings=("mode",))
def convolve(a, v, mode="full"):
    """NumPy's 1-D convolution as one gather and one matrix product (differentiable in both
    arguments); ``mode`` full, same or valid."""
    a, v = as_expr(a), as_expr(v)
    if a.ndim != 1 or v.ndim != 1:
        raise ShapeError("convolve: both arguments must be 1-D")
    if a.shape[0] < v.shape[0]:
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    idx, _ = _conv_index(n, m)
    padded = concatenate([a, F.zeros((1,), dtype=a.dtype)], axis=0)
    full = padded[idx] @ v
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return full[start: start + n]
    if mode == "valid":
        return full[m - 1: n]
    raise ShapeError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")


@define("correlate", "a", "v", "=mode", mode="valid", strings=("mode",))
def correlate(a, v, mode="valid"):
    """NumPy's 1-D cross-correlation of real arrays: convolve with v reversed."""
    a, v = as_expr(a), as_expr(v)
    if a.shape[0] < v.shape[0]:
        return flip(correlate(v, a, mode))
    return convolve(a, flip(v), mode)
