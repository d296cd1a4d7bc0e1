"""What the op stanzas write their forward-mode (JVP) rules with.

A forward rule ``forward(n, t)`` receives one tangent per operand (``t[k]`` has shape
``batch + n.args[k].shape``, or is None where the tangent is zero) and returns the output's
tangent. Most rules are one short line because most ops fall into a few kinds:

* elementwise ops have a diagonal Jacobian, so the JVP is the sum over operands of the
  backprop contribution with the operand's tangent in place of the adjoint ``g``
  (:func:`elementwise`); the common arithmetic ops state it directly;
* ops linear in their float operands (reshape, transpose, indexing, sums, concatenation,
  scatters, ...) push the tangents through the same op (:func:`linear`);
* reductions whose adjoint is ``g`` (kept dims) times a local derivative ``D``
  (``max``, ``logsumexp``, ``prod``, ``norm``) sum ``t * D`` over the reduced axes;
* the rest (matmul, einsum, the scans, sort, the decompositions) are written out in their
  stanzas, with the literature they follow.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> sg.evaluate(sg.jvp(sg.sin(x), x, [1.0, 0.0, 2.0]), {"x": [0.0, 1.0, 0.0]})
array([1., 0., 2.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..ir.expr import Expr, F, build
from ..ir.nodeview import NodeView
from ..ir.op import REGISTRY
from ..ir.shapes import is_float

Tangents = Sequence["Expr | None"]


def batch_of(t: Expr, arg: Expr) -> tuple[int, ...]:
    """The leading batch axes of tangent ``t`` of operand ``arg``."""
    return t.shape[: t.ndim - arg.ndim]


def align(t: Expr, arg: Expr, ndim: int) -> Expr:
    """Tangent ``t`` (``batch + arg.shape``) with length-1 axes inserted after the batch
    axes, so that it has ``len(batch) + ndim`` axes and broadcasts like ``arg`` does
    against an ``ndim``-axis result."""
    missing = ndim - arg.ndim
    if missing <= 0 or t.ndim == arg.ndim:
        return t
    lead = batch_of(t, arg)
    return F.reshape(t, lead + (1,) * missing + arg.shape)


def total(*terms: Expr | None) -> Expr | None:
    """The sum of the terms that are not None (None if all are)."""
    out = None
    for term in terms:
        if term is not None:
            out = term if out is None else out + term
    return out


def zeros_for(arg: Expr, batch: tuple[int, ...]) -> Expr:
    """Zeros standing for a zero tangent of ``arg`` (shape ``batch + arg.shape``)."""
    return F.broadcast_to(F.zeros((), dtype=arg.dtype), batch + arg.shape)


def any_batch(n: Any, t: Tangents) -> tuple[int, ...]:
    """The batch axes of the tangents (all tangents carry the same ones)."""
    for a, tk in zip(n.args, t):
        if tk is not None:
            return batch_of(tk, a)
    return ()


def elementwise(backprop: Callable[..., tuple]) -> Callable[..., Expr | None]:
    """The JVP of an elementwise op from its VJP: the Jacobian is diagonal (per broadcast
    element), so the tangent is ``sum_k backprop(n, t_k)[k]``, each operand's tangent
    broadcast against the result as its operand is. One rule call per operand that has a
    tangent, asking for that operand's contribution only (``n.needs``)."""

    def forward(n, t):
        terms = []
        for k, tk in enumerate(t):
            if tk is not None:  # the rule builds operand k's contribution only
                only = NodeView(n.graph, n.data, tuple(j == k for j in range(len(t))))
                terms.append(backprop(only, align(tk, n.args[k], len(n.shape)))[k])
        return total(*terms)

    return forward


def linear(n: Any, t: Tangents) -> Expr | None:
    """The JVP of an op linear in its float operands (jointly): the same op applied to the
    tangents (zeros for float operands without one; other operands as they are)."""
    batch = any_batch(n, t)
    if not any(tk is not None for tk in t):
        return None
    operands = []
    for a, tk in zip(n.args, t):
        if tk is not None:
            operands.append(tk)
        elif is_float(a.data.dtype):
            operands.append(zeros_for(a, batch))
        else:
            operands.append(a)
    return build(REGISTRY[n.data.op], operands, dict(n.attrs))


def first(fn: Callable[..., Expr]) -> Callable[..., Expr | None]:
    """A rule that depends on the first operand's tangent only: ``fn(n, t0)``."""

    def forward(n, t):
        return None if t[0] is None else fn(n, t[0])

    return forward


def flatten(t: Expr, arg: Expr) -> Expr:
    """Tangent ``t`` of ``arg`` with ``arg``'s axes flattened (batch axes kept)."""
    if arg.ndim == 1:
        return t
    return F.reshape(t, (arg.size,), src_ndim=arg.ndim)


def reduced_sum(term: Expr, axes: tuple[int, ...], keepdims: bool) -> Expr:
    """``sum(term, axes)``: the tangent of a reduction whose local derivative is in ``term``."""
    return F.sum(term, axis=axes, keepdims=keepdims)



def typed(value: float, like: Expr) -> Expr:
    """The constant ``value`` with ``like``'s float dtype (float32 stays float32: a rule's
    ``where(c, 1.0, 0.0)`` of two Python floats would be float64)."""
    import numpy as np

    from ..ir.expr import const

    dtype = like.dtype if is_float(like.dtype) else "float64"
    return const(np.asarray(value, dtype=dtype), like=like)

__all__ = ["align", "any_batch", "batch_of", "elementwise", "first", "flatten", "linear",
           "reduced_sum", "total", "zeros_for"]
