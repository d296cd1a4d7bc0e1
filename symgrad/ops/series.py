"""What the op stanzas write their Taylor-mode rules with.

Taylor mode (Griewank & Walther, *Evaluating Derivatives*, ch. 13; JAX's ``jet``) pushes a
truncated series through the forward graph instead of differentiating the derivative graph
again: ``derivative(f, x, n)`` for a scalar ``x`` is then O(n^2) nodes per op, where
repeated reverse mode duplicates the Leibniz terms of every product at every order.

A Taylor rule ``taylor(n, s, K)`` receives one *series* per operand and returns the output's
series. A series is a list of ``K + 1`` entries: entry ``k`` is the ``k``-th derivative of
the node along ``x`` (entry 0 is the node itself), or None where it is zero. Rules work on
derivatives, not on Taylor coefficients (``u_k``, not ``u_k / k!``): the recurrences carry
binomial weights instead of ``1 / k!`` factors, so the entries have the magnitude of the
derivatives (``30!`` overflows no float32) and match what reverse mode computes. A rule
returns None to decline (an exponent it has no rule for); the transform then falls back to
repeated reverse mode, before building anything. Rules build graph from registered ops only.

* ops linear in their float operands, or piecewise linear (``where``, ``relu``, ``abs``):
  every order goes through the op's forward rule (:func:`piecewise_linear`);
* products and other bilinear ops: the Leibniz rule (:func:`bilinear`);
* functions with ``y' = g(y, u) u'``: the recurrence ``y_k = sum_j C(k-1, j) g_j u_(k-j)``
  (:func:`chain`), where ``g``'s series is built from ``y``'s lower orders (``exp``: ``g =
  y``; ``tanh``: ``g = 1 - y^2``); ``sin``/``cos`` and ``sinh``/``cosh`` as pairs
  (:func:`pair`); quotients, ``log`` and ``sqrt`` by solving ``b q = a``, ``u y' = u'`` and
  ``y y = u`` for the highest order (:func:`quotient`, :func:`logarithm`, :func:`root`).

>>> import symgrad as sg
>>> x = sg.var("x")
>>> print(sg.derivative(sg.sin(x) * sg.exp(x), x, 4))
-4.0 * (sin(x) * exp(x))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import comb
from typing import Any

import numpy as np

from ..ir.expr import Expr, build
from ..ir.op import REGISTRY

Series = list  # of Expr | None: entry k is the k-th derivative, None where it is zero


def scaled(c: int, e: Expr | None) -> Expr | None:
    """``c * e`` for an integer weight (``e`` itself for 1, ``-e`` for -1)."""
    if e is None or c == 0:
        return None
    if c == 1:
        return e
    if c == -1:
        return -e
    return float(c) * e


def total(terms: Sequence[Expr | None]) -> Expr | None:
    """The sum of the terms that are not None, left to right (None if all are)."""
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def weighted(a: Series, b: Series, k: int, first: int, last: int, shift: int = 0,
             op: Callable[[Expr, Expr], Expr] = lambda p, q: p * q) -> Expr | None:
    """``sum_{j=first..last} C(k - shift, j) op(a_j, b_(k-j))`` over the non-zero pairs;
    like terms (one product, several weights) are built once, with their weights summed."""
    found: dict[tuple[int, int], list] = {}
    for j in range(first, last + 1):
        p, q = a[j], b[k - j]
        if p is not None and q is not None:
            (p, sp), (q, sq) = _unsigned(p), _unsigned(q)
            slot = found.setdefault((p.node, q.node), [p, q, 0])
            slot[2] += sp * sq * comb(k - shift, j)
    return total([scaled(c, op(p, q)) for p, q, c in found.values()])


def _unsigned(e: Expr) -> tuple[Expr, int]:
    """``e`` as ``(m, sign)`` with ``e = sign * m`` and ``m`` no negation: ``-sin(x)`` and
    ``sin(x)`` are one term (the weights cancel exactly, in integers)."""
    sign = 1
    while e.data.op == "negative":
        e, sign = Expr(e.graph, e.data.args[0]), -sign
    return e, sign


def bilinear(n: Any, s: Sequence[Series], K: int) -> Series:
    """The Leibniz rule ``(a b)_k = sum_j C(k, j) a_j b_(k-j)`` for an op bilinear in its
    two operands (``multiply``, ``matmul``): the op applied to each pair of orders."""
    op, attrs = REGISTRY[n.data.op], dict(n.attrs)
    a, b = s
    return [n.out] + [weighted(a, b, k, 0, k, op=lambda p, q: build(op, [p, q], attrs))
                      for k in range(1, K + 1)]


def piecewise_linear(n: Any, s: Sequence[Series], K: int) -> Series:
    """For an op whose forward rule is linear in the tangents with a locally constant
    Jacobian (linear ops, ``where``, ``relu``, ``abs``): order ``k`` is the forward rule
    applied to the operands' order-``k`` entries."""
    rule = REGISTRY[n.data.op].forward
    out = [n.out]
    for k in range(1, K + 1):
        t = [x[k] for x in s]
        out.append(None if all(e is None for e in t) else rule(n, t))
    return out


def chain(u: Series, y0: Expr, g: Callable[[Series, int], Expr | None], K: int) -> Series:
    """The series of ``y`` with ``y' = g u'`` (``g_m`` given by ``g(y, m)`` from ``y_0..y_m``):
    ``y_k = sum_{j<k} C(k-1, j) g_j u_(k-j)``."""
    y: Series = [y0]
    gs: Series = []
    for k in range(1, K + 1):
        gs.append(g(y, k - 1))
        y.append(weighted(gs, u, k, 0, k - 1, shift=1))
    return y


def pair(u: Series, y0: Expr, z0: Expr, signs: tuple[int, int], K: int) -> Series:
    """``y`` of the pair ``y' = sy z u'``, ``z' = sz y u'`` (``sin``/``cos``: ``(1, -1)``)."""
    y, z = [y0], [z0]
    for k in range(1, K + 1):
        y.append(scaled(signs[0], weighted(z, u, k, 0, k - 1, shift=1)))
        z.append(scaled(signs[1], weighted(y, u, k, 0, k - 1, shift=1)))
    return y


def square_term(y: Series, m: int) -> Expr | None:
    """Order ``m`` of ``y * y`` (the Leibniz sum, each product built once)."""
    return weighted(y, y, m, 0, m)


def quotient(n: Any, s: Sequence[Series], K: int) -> Series:
    """``q = a / b``: ``q_k = (a_k - sum_{j=1..k} C(k, j) b_j q_(k-j)) / b_0``."""
    a, b = s
    q: Series = [n.out]
    b0 = n.args[1]
    for k in range(1, K + 1):
        q.append(_solved(a[k], weighted(b, q, k, 1, k), b0))
    return q


def inverse(b: Series, q0: Expr, K: int) -> Series:
    """``q = 1 / b`` (``q0`` its value): ``q_k = -sum_{j=1..k} C(k, j) b_j q_(k-j) / b_0``."""
    q: Series = [q0]
    for k in range(1, K + 1):
        q.append(_solved(None, weighted(b, q, k, 1, k), b[0]))
    return q


def shifted_square(u: Series, c: float, sign: int, K: int) -> Series:
    """The series of ``c + sign * u^2``."""
    value = scaled(sign, u[0] * u[0])
    return [value if c == 0 else c + value] + [scaled(sign, square_term(u, m))
                                              for m in range(1, K + 1)]


def through(u: Series, y0: Expr, g: Series, K: int) -> Series:
    """``y`` with ``y' = g u'`` for a known series ``g`` (orders ``0..K-1`` used)."""
    return chain(u, y0, lambda y, m: g[m], K)


def times(e: Series, c: float) -> Series:
    """``c * e`` for a constant factor (entry 0 kept: it is the node itself)."""
    return [e[0]] + [None if t is None else c * t for t in e[1:]]


def logarithm(u: Series, y0: Expr, base: Expr, K: int) -> Series:
    """``y = log(base)`` where ``base`` has the series ``u`` but for its value: from ``base
    y' = u'``, ``y_k = (u_k - sum_{j=1..k-1} C(k-1, j) u_j y_(k-j)) / base``."""
    y: Series = [y0]
    for k in range(1, K + 1):
        rest = weighted(u, y, k, 1, k - 1, shift=1)
        y.append(_solved(u[k], rest, base))
    return y


def root(u: Series, y0: Expr, K: int) -> Series:
    """``y = sqrt(u)``: from ``y y = u``, ``y_k = (u_k - sum_{j=1..k-1} C(k, j) y_j y_(k-j))
    / (2 y_0)``."""
    y: Series = [y0]
    twice = 2.0 * y0
    for k in range(1, K + 1):
        rest = weighted(y, y, k, 1, k - 1)
        y.append(_solved(u[k], rest, twice))
    return y


def _solved(top: Expr | None, rest: Expr | None, by: Expr) -> Expr | None:
    """``(top - rest) / by`` with None for zero."""
    if top is None and rest is None:
        return None
    num = -rest if top is None else top if rest is None else top - rest
    return num / by


def power(n: Any, s: Sequence[Series], K: int) -> Series | None:
    """``u ** p`` for a constant whole exponent ``0 <= p <= 64``: products of ``u``'s
    series (square and multiply; exact where ``u`` is 0, unlike the recurrence ``u y' = p y
    u'``). Other exponents decline (None)."""
    p = constant_whole(n.args[1], s[1], 64)
    if p is None:
        return None
    u = s[0]
    if p == 0:
        return [n.out] + [None] * K
    result: Series | None = None
    base = u
    while p:
        if p & 1:
            result = base if result is None else _times(result, base, K)
        p >>= 1
        if p:
            base = _times(base, base, K)
    return [n.out] + result[1:]


def _times(a: Series, b: Series, K: int) -> Series:
    return [a[0] * b[0]] + [weighted(a, b, k, 0, k) for k in range(1, K + 1)]


def constant_whole(e: Expr, series: Series, most: int) -> int | None:
    """The value of ``e`` if it is a constant whole number in ``[0, most]`` (every element
    equal) that does not depend on ``x``, else None."""
    if any(t is not None for t in series[1:]):
        return None
    node = e.data
    if not node.is_const:
        return None
    v = np.asarray(node.attrs["value"])
    if v.size == 0 or not np.all(v == v.flat[0]):
        return None
    p = float(v.flat[0])
    return int(p) if p.is_integer() and 0 <= p <= most else None


__all__ = ["Series", "bilinear", "chain", "constant_whole", "inverse", "logarithm", "pair",
           "piecewise_linear", "power", "quotient", "root", "scaled", "shifted_square",
           "square_term", "through", "times", "total", "weighted"]
