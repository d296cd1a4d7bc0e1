"""Rewrite rules used by :mod:`symgrad.simplify`: algebraic identities and stability fixes.

Each rule takes a :class:`~symgrad.reverse.NodeView` of a freshly rebuilt node (its operands
already simplified) and returns a replacement Expr or ``None``. A rule must preserve the
node's shape and dtype and may only change results where the original overflowed or lost
precision (``log(1 + x)`` -> ``log1p(x)``), or by the sign of a zero (``x + 0`` -> ``x``).
``0 * x`` is never rewritten: it is NaN for infinite ``x``.
"""

from __future__ import annotations

from collections.abc import Callable

from .registry import F


def _op(e, name: str) -> bool:
    return e.op == name


def _is(e, value: float) -> bool:
    n = e.data
    return n.op == "const" and n.attrs["value"].size == 1 and bool(n.attrs["value"] == value)


def _arg(e, k: int = 0):
    return e.graph.expr(e.data.args[k])


def _add(n):
    x, y = n.args
    if _is(y, 0.0):
        return x
    if _is(x, 0.0):
        return y
    if _op(y, "negative"):
        return x - _arg(y)
    if _op(x, "negative"):
        return y - _arg(x)
    return None


def _subtract(n):
    x, y = n.args
    if _is(y, 0.0):
        return x
    if _is(x, 0.0):
        return -y
    if _op(y, "negative"):
        return x + _arg(y)
    if _op(x, "exp") and _is(y, 1.0):
        return F.expm1(_arg(x))
    return None


def _multiply(n):
    x, y = n.args
    if _is(y, -1.0):
        return -x
    if _is(x, -1.0):
        return -y
    if _op(x, "negative") and _op(y, "negative"):
        return _arg(x) * _arg(y)
    if x.node == y.node:
        return F.square(x)
    if _op(y, "divide") and _is(_arg(y), 1.0):
        return x / _arg(y, 1)
    if _op(x, "divide") and _is(_arg(x), 1.0):
        return y / _arg(x, 1)
    return None


def _negative(n):
    (x,) = n.args
    return _arg(x) if _op(x, "negative") else None


def _power(n):
    x, y = n.args
    if _is(y, 2.0):
        return F.square(x)
    if _is(y, 0.5):
        return F.sqrt(x)
    if _is(y, -1.0):
        return 1.0 / x
    return None


def _log(n):
    (x,) = n.args
    if _op(x, "exp"):
        return _arg(x)
    if _op(x, "add") and _is(_arg(x, 0), 1.0):
        return F.log1p(_arg(x, 1))
    if _op(x, "add") and _is(_arg(x, 1), 1.0):
        return F.log1p(_arg(x, 0))
    if _op(x, "sigmoid"):
        return -F.softplus(-_arg(x))
    if _op(x, "softmax"):
        return F.log_softmax(_arg(x), axis=x.data.attrs["axis"])
    if _op(x, "sum") and _op(_arg(x), "exp"):
        a = x.data.attrs
        return F.logsumexp(_arg(_arg(x)), axis=a["axis"], keepdims=a["keepdims"])
    return None


def _log1p(n):
    (x,) = n.args
    return F.softplus(_arg(x)) if _op(x, "exp") else None


def _exp(n):
    (x,) = n.args
    return F.softmax(_arg(x), axis=x.data.attrs["axis"]) if _op(x, "log_softmax") else None


RULES: dict[str, Callable] = {
    "add": _add, "subtract": _subtract, "multiply": _multiply, "negative": _negative,
    "power": _power, "log": _log, "log1p": _log1p, "exp": _exp,
}
