"""Reductions over axes: ``sum mean max min`` and the stable ``logsumexp softmax log_softmax``.

Axes are stored as sorted tuples of NEGATIVE ints (``prepare``), so the same attributes
describe the same axes of a cotangent that carries extra leading batch axes.

Conventions (each one is tested):

* ``max``/``min`` ties split the adjoint equally: ``grad(max([1, 3, 3])) = [0, .5, .5]``
  (a NaN in the slice makes the value and its gradient NaN). The tie mask never depends on
  two computations of the same value agreeing to the last bit (:func:`extreme_share`).
* ``logsumexp``, ``softmax`` and ``log_softmax`` subtract the maximum first, so values and
  gradients are finite for inputs like ``[1000, 0]`` or ``[-1000, 0]``.
* ``logsumexp`` of an all ``-inf`` slice (or an empty one) is ``-inf`` and its gradient there
  is zero; ``softmax``/``log_softmax`` of an all ``-inf`` slice are NaN (0/0: undefined).

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> sg.evaluate(sg.grad(sg.max(x), x), {"x": [1.0, 3.0, 3.0]})
array([0. , 0.5, 0.5])
>>> sg.evaluate(sg.logsumexp(x), {"x": [1000.0, 0.0, -1000.0]})
1000.0
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base.describe import describe
from ..base.errors import ShapeError
from ..ir.expr import Expr, F
from ..ir.op import Op, SignatureError, register, sig
from ..ir.shapes import float_dtype, fmt, is_float, norm_axes, norm_axis, real_dtype, reduced
from .structure import lane_map, reduce_map
from .tangent import first, linear

_NEG_INF = float("-inf")


# -- shared attribute and shape rules ------------------------------------------------------


def _check_keepdims(name: str, keepdims) -> bool:
    if not isinstance(keepdims, (bool, np.bool_)):
        raise SignatureError(f"{name}: keepdims must be True or False, got {describe(keepdims)}")
    return bool(keepdims)


def prepare_axes(name: str) -> Callable:
    def prepare(shapes, dtypes, attrs):
        axes = norm_axes(name, attrs["axis"], len(shapes[0]))
        return {"axis": axes, "keepdims": _check_keepdims(name, attrs["keepdims"])}

    return prepare


def _prepare_one_axis(name: str) -> Callable:
    def prepare(shapes, dtypes, attrs):
        return {"axis": norm_axis(name, attrs["axis"], len(shapes[0]))}

    return prepare


def sum_dtype(dtype: str) -> str:
    return dtype if is_float(dtype) else "int64"


def reduce_infer(name: str, dtype_rule: Callable[[str], str], nonempty: bool = False):
    def infer(shapes, dtypes, attrs):
        shape, axes = shapes[0], attrs["axis"]
        if nonempty and any(shape[a] == 0 for a in axes):
            raise ShapeError(f"{name}: cannot reduce a zero-size axis of shape {fmt(shape)} "
                             f"(axis {describe(axes)}): the {name} of nothing has no value")
        return reduced(shape, axes, attrs["keepdims"]), dtype_rule(dtypes[0])

    return infer


def _one_axis_infer(shapes, dtypes, attrs):
    return shapes[0], float_dtype(dtypes[0])


def _keep(x, n, axes: tuple[int, ...]):
    """``x`` (``batch + n.shape``) reshaped so the reduced ``axes`` are size-1 again."""
    operand = n.args[0].shape
    batch = x.ndim - len(n.shape)
    target = x.shape[:batch] + reduced(operand, axes, True)
    return x if x.shape == target else F.reshape(x, target)


def _spread(g, n):
    """The sum rule: ``g`` with its reduced axes restored, broadcast to the operand's shape."""
    axes = n.attrs["axis"]
    kept = _keep(g, n, axes)
    target = kept.shape[: kept.ndim - len(n.args[0].shape)] + n.args[0].shape
    return kept if kept.shape == target else F.broadcast_to(kept, target)


def _same_dtype(dtype: str) -> str:
    return dtype


def _count(shape, axes) -> int:
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def reduce_examples(rng) -> list:
    x3 = rng.standard_normal((2, 3, 4))
    return [
        ([rng.standard_normal(5)], {"axis": None, "keepdims": False}),
        ([rng.standard_normal((3, 4))], {"axis": 0, "keepdims": False}),
        ([rng.standard_normal((3, 4))], {"axis": -1, "keepdims": True}),
        ([x3], {"axis": (0, 2), "keepdims": False}),
        ([x3], {"axis": None, "keepdims": True}),
        ([rng.standard_normal(())], {"axis": None, "keepdims": False}),
    ]


def _one_axis_examples(rng) -> list:
    return [
        ([rng.standard_normal(4)], {"axis": -1}),
        ([rng.standard_normal((3, 4))], {"axis": 0}),
        ([rng.standard_normal((2, 3, 4))], {"axis": 1}),
    ]


_AXES = sig("x", "=axis", "=keepdims", axis=None, keepdims=False)
_ONE_AXIS = sig("x", "=axis", axis=-1)


def _reduction(name, impl, backprop, dtype_rule, *, forward, nonempty=False, aliases=(),
               doc="", complex=False):
    """Register a reduction with NumPy's ``(x, axis=None, keepdims=False)`` signature."""
    return register(Op(
        name=name, signature=_AXES, prepare=prepare_axes(name),
        infer=reduce_infer(name, dtype_rule, nonempty), impl=impl, backprop=backprop,
        forward=forward, sparsity=lambda n: (reduce_map(n),), examples=reduce_examples,
        aliases=aliases, doc=doc, complex=complex,
    ))


def weighted(derivative: Callable) -> tuple[Callable, Callable]:
    """Backprop and forward rules of a reduction whose local derivative is ``D =
    derivative(n)`` (operand-shaped): the adjoint is ``g`` (reduced axes kept) times ``D``,
    the tangent is ``sum(t * D)`` over the reduced axes."""

    def backprop(n, g):
        return (_keep(g, n, n.attrs["axis"]) * derivative(n),)

    def forward(n, t):
        return F.sum(t * derivative(n), axis=n.attrs["axis"], keepdims=n.attrs["keepdims"])

    return backprop, first(forward)


# -- sum, mean, max, min --------------------------------------------------------------------


def _mean_rule(n, g):
    count = _count(n.args[0].shape, n.attrs["axis"])
    return (_spread(g, n) / float(max(count, 1)),)


def extreme_share(v: Expr, axes: tuple[int, ...], largest: bool, m: Expr | None = None) -> Expr:
    """The derivative of ``max`` (``largest``) or ``min`` of ``v`` over ``axes`` (negative
    ints) with respect to ``v``: ``1/k`` at each of the ``k`` entries equal to the extreme
    ``m`` (the axes kept; computed here when None), 0 elsewhere, NaN for a slice holding NaN.

    The tie mask ``v == m`` is widened by the one-hot of ``argmax`` (``argmin``), so it is
    never empty: a compiler may compute ``v`` or ``m`` again for the comparison, in another
    order than for the reduction (XLA on a GPU fuses each use of a value separately), and
    then ``v == m`` can be false everywhere, which made the shares ``0/0``.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(4,))
    >>> sg.evaluate(extreme_share(x, (-1,), True), {"x": [1.0, 3.0, 3.0, 2.0]})
    array([0. , 0.5, 0.5, 0. ])
    """
    if m is None:
        m = (F.max if largest else F.min)(v, axis=axes, keepdims=True)
    chosen = _arg_one_hot(v, axes, largest) & ~F.isnan(v)
    hit = F.astype((v == m) | chosen, real_dtype(v.data.dtype))  # real shares of complex values
    return hit / F.sum(hit, axis=axes, keepdims=True)


def _arg_one_hot(v: Expr, axes: tuple[int, ...], largest: bool) -> Expr:
    """True at the entry ``argmax`` (``argmin``) picks in each slice of ``v`` over
    ``axes``: an integer comparison, exact wherever it is computed."""
    nd = v.ndim
    axes = tuple(sorted(a % nd for a in axes))
    rest = [k for k in range(nd) if k not in axes]
    perm = tuple(rest + list(axes))
    moved = v if perm == tuple(range(nd)) else F.transpose(v, axes=perm)
    lead = moved.shape[:len(rest)]
    size = _count(v.shape, axes)
    flat = moved if len(axes) == 1 else F.reshape(moved, lead + (size,))
    pick = (F.argmax if largest else F.argmin)(flat, axis=-1, keepdims=True)
    hot = pick == np.arange(size, dtype=np.int64)
    if len(axes) != 1:  # several axes flattened into one, or none (a size-1 axis added)
        hot = F.reshape(hot, moved.shape)
    if moved is v:
        return hot
    return F.transpose(hot, axes=tuple(sorted(range(nd), key=lambda k: perm[k])))


def _extreme_share(largest: bool) -> Callable:
    """max/min: the derivative goes to the extreme elements, split equally among ties."""
    def share(n):
        axes = n.attrs["axis"]
        return extreme_share(n.args[0], axes, largest, _keep(n.out, n, axes))

    return share


_max_rule, _max_forward = weighted(_extreme_share(True))
_min_rule, _min_forward = weighted(_extreme_share(False))

_reduction("sum", np.sum, lambda n, g: (_spread(g, n),), sum_dtype, forward=linear,
           doc="sum over axis (all axes when None)", complex=True)
_reduction("mean", np.mean, _mean_rule, float_dtype, forward=linear,
           doc="arithmetic mean over axis (all axes when None)", complex=True)
_reduction("max", np.max, _max_rule, _same_dtype, forward=_max_forward, nonempty=True,
           aliases=("amax",), doc="maximum over axis; tied maxima share the gradient equally",
           complex=True)
_reduction("min", np.min, _min_rule, _same_dtype, forward=_min_forward, nonempty=True,
           aliases=("amin",), doc="minimum over axis; tied minima share the gradient equally",
           complex=True)


# -- logsumexp, softmax, log_softmax ------------------------------------------------------


def _sg_logsumexp(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)  # an all -inf (or inf) slice: shift by nothing
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _softmax_weights(n):
    """d logsumexp / dx = softmax(x) = exp(x - m) / sum(exp(x - m)), ``m`` the slice's
    maximum held constant (the quotient does not depend on it); zeros where the whole slice
    is -inf. Not ``exp(x - logsumexp(x))``: where |x| >= 1e15, ``logsumexp(x)`` rounds to
    the maximum (the ``log(k)`` it adds is below its ulp) and every weight to 1."""
    x, axes = n.args[0], n.attrs["axis"]
    if 0 in x.shape:
        return F.zeros(x.shape, dtype=x.dtype)
    m = F.max(x, axis=axes, keepdims=True)
    e = F.exp(x - F.stop_gradient(F.where(F.isfinite(m), m, 0.0)))
    total = F.sum(e, axis=axes, keepdims=True)
    return e / F.where(total == 0.0, 1.0, total)


_logsumexp_rule, _logsumexp_forward = weighted(_softmax_weights)


def _sg_softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))
    return e / np.sum(e, axis=axis, keepdims=True)


def _sg_log_softmax(x, axis):
    s = x - np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _softmax_rule(n, g):
    p, axis = n.out, n.attrs["axis"]
    return (p * (g - F.sum(g * p, axis=axis, keepdims=True)),)


def _log_softmax_rule(n, g):
    axis = n.attrs["axis"]
    return (g - F.exp(n.out) * F.sum(g, axis=axis, keepdims=True),)


def _log_softmax_forward(n, t):
    """J = I - 1 p^T along the axis: J t = t - sum(p * t)."""
    return t - F.sum(F.exp(n.out) * t, axis=n.attrs["axis"], keepdims=True)


register(Op(
    name="logsumexp", signature=_AXES, prepare=prepare_axes("logsumexp"),
    infer=reduce_infer("logsumexp", float_dtype), impl=_sg_logsumexp,
    backprop=_logsumexp_rule, forward=_logsumexp_forward,
    sparsity=lambda n: (reduce_map(n),), examples=reduce_examples,
    doc="log(sum(exp(x), axis)) computed stably; -inf for an all -inf slice",
))
register(Op(
    name="softmax", signature=_ONE_AXIS, prepare=_prepare_one_axis("softmax"),
    infer=_one_axis_infer, impl=_sg_softmax, backprop=_softmax_rule,
    # the Jacobian diag(p) - p p^T is symmetric: the tangent is the backprop rule's image
    forward=first(lambda n, t: _softmax_rule(n, t)[0]), sparsity=lambda n: (lane_map(n),),
    examples=_one_axis_examples,
    doc="exp(x) / sum(exp(x), axis) computed stably (the maximum is subtracted first)",
))
register(Op(
    name="log_softmax", signature=_ONE_AXIS, prepare=_prepare_one_axis("log_softmax"),
    infer=_one_axis_infer, impl=_sg_log_softmax, backprop=_log_softmax_rule,
    forward=first(_log_softmax_forward), sparsity=lambda n: (lane_map(n),),
    examples=_one_axis_examples, doc="x - logsumexp(x, axis, keepdims=True) computed stably",
))


# A chain ``((t0 op t1) op t2) ...`` of this elementwise binary op is this reduction over
# the stacked terms (used by symgrad.passes.reductions): the same value up to the order of
# the additions (sum, prod) or exactly (max, min: both propagate NaN).
CHAIN_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}
