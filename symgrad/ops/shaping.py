"""Shape manipulation: ``reshape broadcast_to expand_dims squeeze concatenate stack``.

Every op acts on its operand's TRAILING axes; extra leading axes are batch axes carried
through unchanged, which is what lets one reverse pass with an identity seed build a whole
Jacobian. ``reshape`` records how many trailing axes it reshapes (``src_ndim``, filled in
from the operand's rank when the user calls it), and ``expand_dims``, ``squeeze``,
``concatenate`` and ``stack`` store their axes as negative ints. ``prepare`` also records
the number of batch axes (``batch``) so generated source reads ``np.reshape(x, (3, 2))``
when there are none.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(2, 3))
>>> sg.reshape(x, (3, -1)).shape
(3, 2)
>>> sg.concatenate([x, x], axis=1).shape
(2, 6)
"""

from __future__ import annotations

import math

import numpy as np

from ..base.describe import describe
from ..base.errors import ShapeError
from ..ir.expr import F, build
from ..ir.op import REGISTRY, Op, register, sig
from ..ir.shapes import Shape, fmt, is_float, norm_axes, norm_axis, result_dtype
from .indexing import index_along
from .structure import gather_map
from .tangent import align, any_batch, first, linear


def _ints(op: str, what: str, value) -> tuple[int, ...]:
    """A shape-like attribute as a tuple of ints (an int is a 1-tuple)."""
    items = (value,) if isinstance(value, (int, np.integer)) else value
    try:
        out = tuple(items)
    except TypeError:
        raise ShapeError(f"{op}: {what} must be an int or a tuple of ints, got "
                         f"{describe(value)}") from None
    if any(isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) for d in out):
        raise ShapeError(f"{op}: {what} must be an int or a tuple of ints, got {describe(value)}")
    return tuple(int(d) for d in out)


# -- reshape ------------------------------------------------------------------------------


def _reshape_target(shape, own: Shape) -> Shape:
    """``shape`` with its ``-1`` resolved for an operand part of shape ``own``."""
    target = _ints("reshape", "shape", shape)
    size = math.prod(own)
    if target.count(-1) > 1 or any(d < -1 for d in target):
        raise ShapeError(f"reshape: invalid target shape {describe(target)} (one -1 at most, "
                         "other sizes non-negative)")
    known = math.prod(d for d in target if d != -1)
    if -1 in target:
        if known == 0 or size % known:
            raise ShapeError(f"reshape: cannot reshape an array of shape {fmt(own)} "
                             f"({size} elements) into shape {describe(target)}")
        target = tuple(size // known if d == -1 else d for d in target)
    if math.prod(target) != size:
        raise ShapeError(f"reshape: cannot reshape an array of shape {fmt(own)} "
                         f"({size} elements) into shape {fmt(target)}")
    return target


def _reshape_prepare(shapes, dtypes, attrs):
    xs = shapes[0]
    src = attrs.get("src_ndim")
    src = len(xs) if src is None else src
    if isinstance(src, bool) or not isinstance(src, (int, np.integer)) or not 0 <= src <= len(xs):
        raise ShapeError(f"reshape: src_ndim must be an int in [0, {len(xs)}] for an operand "
                         f"of shape {fmt(xs)}, got {src!r}")
    batch = len(xs) - int(src)
    return {"shape": _reshape_target(attrs["shape"], xs[batch:]), "src_ndim": int(src),
            "batch": batch}


def _reshape_infer(shapes, dtypes, attrs):
    xs, batch = shapes[0], len(shapes[0]) - attrs["src_ndim"]
    if batch < 0 or math.prod(xs[batch:]) != math.prod(attrs["shape"]):
        raise ShapeError(f"reshape: cannot reshape shape {fmt(xs)} into {fmt(attrs['shape'])}")
    return tuple(xs[:batch]) + tuple(attrs["shape"]), dtypes[0]


def _reshape_rule(n, g):
    x = n.args[0]
    return (F.reshape(g, shape=x.shape[n.attrs["batch"]:], src_ndim=len(n.attrs["shape"])),)


def _examples_reshape(rng):
    x = rng.normal(size=(2, 3, 2))
    return [([x], {"shape": (3, 4)}), ([x], {"shape": (-1,)}), ([x], {"shape": (6, 1, -1)}),
            ([x], {"shape": (3, 2), "src_ndim": 2}), ([rng.normal(size=())], {"shape": (1, 1)})]


register(Op(
    name="reshape", signature=sig("x", "=shape", shape=None, src_ndim=None),
    prepare=_reshape_prepare, infer=_reshape_infer,
    impl=lambda x, shape, src_ndim, batch: np.reshape(x, np.shape(x)[:batch] + shape),
    backprop=_reshape_rule, forward=linear, sparsity=gather_map,
    examples=_examples_reshape, domain=None,
    doc="x with a new shape (one -1 is inferred); src_ndim: how many trailing axes "
        "of x to reshape (default all)",
))


# -- broadcast_to -------------------------------------------------------------------------


def _broadcast_prepare(shapes, dtypes, attrs):
    shape = _ints("broadcast_to", "shape", attrs["shape"])
    if any(d < 0 for d in shape):
        raise ShapeError(f"broadcast_to: invalid shape {describe(shape)}")
    return {"shape": shape, "batch": max(0, len(shapes[0]) - len(shape))}


def _broadcast_infer(shapes, dtypes, attrs):
    xs, shape = shapes[0], attrs["shape"]
    batch = max(0, len(xs) - len(shape))
    own = xs[batch:]
    lead = len(shape) - len(own)
    if any(d not in (1, t) for d, t in zip(own, shape[lead:])):
        raise ShapeError(f"broadcast_to: cannot broadcast shape {fmt(own)} to {fmt(shape)}")
    return tuple(xs[:batch]) + shape, dtypes[0]


def _examples_broadcast(rng):
    return [([rng.normal(size=(3, 1))], {"shape": (2, 3, 4)}),
            ([rng.normal(size=())], {"shape": (2, 2)}),
            ([rng.normal(size=(2, 1, 3))], {"shape": (4, 3)})]


register(Op(
    name="broadcast_to", signature=sig("x", "=shape", shape=None),
    prepare=_broadcast_prepare, infer=_broadcast_infer,
    impl=lambda x, shape, batch: np.broadcast_to(x, np.shape(x)[:batch] + shape),
    # The reverse pass sums the broadcast axes back (sum_to_shape), so the rule passes g on.
    backprop=lambda n, g: (g,), examples=_examples_broadcast, domain=None,
    forward=first(lambda n, t: F.broadcast_to(align(t, n.args[0], len(n.attrs["shape"])),
                                              n.attrs["shape"])),
    sparsity=gather_map,
    doc="x broadcast to `shape` (NumPy rules); extra leading axes of x are kept as batch axes",
))


# -- expand_dims / squeeze ----------------------------------------------------------------


def _count(axis) -> int:
    return 1 if isinstance(axis, (int, np.integer)) else len(tuple(axis))


def _expand_prepare(shapes, dtypes, attrs):
    axis = attrs["axis"]
    if axis is None:
        raise ShapeError("expand_dims: axis is required")
    _ints("expand_dims", "axis", axis)
    return {"axis": norm_axes("expand_dims", axis, len(shapes[0]) + _count(axis))}


def _expand_infer(shapes, dtypes, attrs):
    xs, axes = shapes[0], attrs["axis"]
    nd = len(xs) + len(axes)
    rest = iter(xs)
    return tuple(1 if i - nd in axes else next(rest) for i in range(nd)), dtypes[0]


def _squeeze_prepare(shapes, dtypes, attrs):
    xs, axis = shapes[0], attrs["axis"]
    if axis is None:
        return {"axis": tuple(i - len(xs) for i, d in enumerate(xs) if d == 1)}
    return {"axis": norm_axes("squeeze", axis, len(xs))}


def _squeeze_infer(shapes, dtypes, attrs):
    xs, axes = shapes[0], attrs["axis"]
    for a in axes:
        if not -len(xs) <= a < 0 or xs[a] != 1:
            size = xs[a] if -len(xs) <= a < 0 else "none"
            raise ShapeError(f"squeeze: cannot remove axis {a} of shape {fmt(xs)} "
                             f"(its size is {size}, not 1)")
    return tuple(d for i, d in enumerate(xs) if i - len(xs) not in axes), dtypes[0]


def _examples_expand(rng):
    return [([rng.normal(size=(2, 3))], {"axis": 0}), ([rng.normal(size=(2,))], {"axis": (0, -1)})]


def _examples_squeeze(rng):
    return [([rng.normal(size=(1, 3, 1))], {"axis": None}),
            ([rng.normal(size=(2, 1))], {"axis": 1})]


register(Op(
    name="expand_dims", signature=sig("x", "=axis", axis=None),
    prepare=_expand_prepare, infer=_expand_infer,
    impl=lambda x, axis: np.expand_dims(x, axis),
    backprop=lambda n, g: (F.squeeze(g, axis=n.attrs["axis"]),), forward=linear,
    sparsity=gather_map, examples=_examples_expand, domain=None,
    doc="x with new length-1 axes at `axis` (positions in the result)",
))
register(Op(
    name="squeeze", signature=sig("x", "=axis", axis=None),
    prepare=_squeeze_prepare, infer=_squeeze_infer,
    impl=lambda x, axis: np.squeeze(x, axis=axis),
    backprop=lambda n, g: (F.expand_dims(g, axis=n.attrs["axis"]),), forward=linear,
    sparsity=gather_map, examples=_examples_squeeze, domain=None,
    doc="x without its length-1 axes (all of them, or those in `axis`)",
))


# -- concatenate / stack ------------------------------------------------------------------


def _join_prepare(op: str, extra: int):
    def prepare(shapes, dtypes, attrs):
        nd = len(shapes[0])
        if nd + extra == 0:
            raise ShapeError(f"{op}: zero-dimensional arrays cannot be concatenated")
        return {"axis": norm_axis(op, attrs["axis"], nd + extra)}

    return prepare


def _concat_infer(shapes, dtypes, attrs):
    axis, first = attrs["axis"], shapes[0]
    for s in shapes:
        if len(s) != len(first) or not -len(s) <= axis < 0 or any(
            a != b for i, (a, b) in enumerate(zip(s, first)) if i - len(s) != axis
        ):
            raise ShapeError(f"concatenate: shapes {', '.join(map(fmt, shapes))} must match "
                             f"except on axis {axis}")
    out = list(first)
    out[axis] = sum(s[axis] for s in shapes)
    return tuple(out), result_dtype(*dtypes)


def _stack_infer(shapes, dtypes, attrs):
    first = shapes[0]
    if any(s != first for s in shapes):
        raise ShapeError(f"stack: all arrays must have the same shape, got "
                         f"{', '.join(map(fmt, shapes))}")
    at = len(first) + 1 + attrs["axis"]
    if not 0 <= at <= len(first):
        raise ShapeError(f"stack: axis {attrs['axis']} is out of range for rank {len(first) + 1}")
    return tuple(first[:at]) + (len(shapes),) + tuple(first[at:]), result_dtype(*dtypes)


def _concat_rule(n, g):
    axis, out, start = n.attrs["axis"], [], 0
    for x in n.args:
        stop = start + x.shape[axis]
        out.append(index_along(g, n.shape, axis, slice(start, stop)))
        start = stop
    return tuple(out)


def _stack_rule(n, g):
    return tuple(index_along(g, n.shape, n.attrs["axis"], i) for i in range(len(n.args)))


def _examples_join(rng):
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 1))
    return [([a, b], {"axis": 1}), ([a, a, a], {"axis": 0}), ([b.ravel(), a[0]], {"axis": -1})]


def _examples_stack(rng):
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    return [([a, b], {"axis": 0}), ([a, b, a], {"axis": -1}), ([a[0, 0], b[0, 0]], {"axis": 0})]


def _join_forward(n, t):
    """The tangents joined as the operands are; an operand without one joins as zeros (of
    its dtype if it is float; of the result's if it is integer data, which ``linear`` would
    pass on as it is: the values of np.r_[x, 1:10] became part of its tangent)."""
    if all(tk is None for tk in t):
        return None
    batch = any_batch(n, t)
    parts = []
    for a, tk in zip(n.args, t):
        if tk is None:
            dtype = a.dtype if is_float(a.dtype) else n.data.dtype
            tk = F.broadcast_to(F.zeros((), dtype=dtype), batch + a.shape)
        parts.append(tk)
    return build(REGISTRY[n.data.op], parts, dict(n.attrs))


def _join_batch(op: str):
    """``concatenate``/``stack`` for every row: an operand without the batch axis (a
    constant row of a matrix built with ``np.array``) is the same for every row."""
    def batch(args, batched, attrs, shape):
        size = next(a.shape[0] for a, flag in zip(args, batched) if flag)
        parts = [a if flag else F.broadcast_to(a, (size, *a.shape))
                 for a, flag in zip(args, batched)]
        return build(REGISTRY[op], parts, dict(attrs))

    return batch


register(Op(
    name="concatenate", signature=sig("[arrays]", "=axis", axis=0),
    prepare=_join_prepare("concatenate", 0), infer=_concat_infer,
    impl=lambda *arrays, axis: np.concatenate(arrays, axis=axis), backprop=_concat_rule,
    forward=_join_forward, sparsity=gather_map, examples=_examples_join, domain=None,
    aliases=("concat",), batch=_join_batch("concatenate"),
    doc="the arrays joined along an existing `axis`",
))
register(Op(
    name="stack", signature=sig("[arrays]", "=axis", axis=0),
    prepare=_join_prepare("stack", 1), infer=_stack_infer,
    impl=lambda *arrays, axis: np.stack(arrays, axis=axis), backprop=_stack_rule,
    forward=_join_forward, sparsity=gather_map, examples=_examples_stack, domain=None,
    batch=_join_batch("stack"),
    doc="the arrays (all of one shape) joined along a new `axis`",
))
