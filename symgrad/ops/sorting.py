"""Ordering: ``sort argsort partition argmax argmin``.

``sort`` and ``partition`` are permutations of their input, so the gradient is the incoming
adjoint sent back through the permutation (a scatter with the indices ``argsort`` gives);
the index-valued functions have no gradient. ``partition`` is ``x`` taken in
``argpartition`` order: the kth element is in place, smaller ones before it, larger after
(NumPy leaves the order within each side unspecified; symgrad's is argpartition's).

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> sg.evaluate(sg.grad(sg.sort(x)[0] * 2.0, x), {"x": [3.0, 1.0, 2.0]})
array([0., 2., 0.])
"""

from __future__ import annotations

import numpy as np

from ..base.describe import describe
from ..base.errors import ShapeError
from ..ir.expr import F
from ..ir.op import Op, register, sig
from ..ir.shapes import norm_axis, reduced
from .indexing import DYN
from .structure import lane_map
from .tangent import first, flatten


def _axis_prepare(name: str):
    def prepare(shapes, dtypes, attrs):
        axis = attrs["axis"]
        out = dict(attrs)
        out["axis"] = None if axis is None else norm_axis(name, axis, len(shapes[0]))
        return out

    return prepare


def _flat_shape(shape, axis):
    return (int(np.prod(shape, dtype=np.int64)),) if axis is None else tuple(shape)


def _grids(shape: tuple, axis: int, indices) -> list:
    """Index operands that pick ``x[..., indices[...], ...]`` along ``axis`` (NumPy's
    take_along_axis): ``indices`` on that axis, broadcast aranges on the others."""
    nd = len(shape)
    out = []
    for k in range(nd):
        if k - nd == axis:
            out.append(indices)
        else:
            out.append(np.arange(shape[k]).reshape((-1,) + (1,) * (nd - 1 - k)))
    return out


def _order(order_op: str, n):
    """The operand (flattened for ``axis=None``) and the index operands that take it in the
    order ``order_op`` gives."""
    x, attrs = n.args[0], n.attrs
    flat = x if attrs["axis"] is None and x.ndim == 1 else \
        F.reshape(x, (x.size,)) if attrs["axis"] is None else x
    axis = -1 if attrs["axis"] is None else attrs["axis"]
    extra = {k: v for k, v in attrs.items() if k not in ("axis",)}
    idx = getattr(F, order_op)(flat, axis=axis, **extra)
    return flat, _grids(flat.shape, axis, idx)


def _permuted_rule(order_op: str):
    """Adjoint of ``x`` taken in the order ``order_op(x)`` gives: scatter it back."""

    def rule(n, g):
        x = n.args[0]
        flat, grids = _order(order_op, n)
        gx = F.index_add(g, *grids, key=(DYN,) * flat.ndim, shape=flat.shape)
        if flat.node != x.node:
            gx = F.reshape(gx, x.shape, src_ndim=1)
        return (gx,)

    return rule


def _permuted_forward(order_op: str):
    """Tangent of ``x`` taken in that order: the tangent taken in the same order."""

    def forward(n, t):
        flat, grids = _order(order_op, n)
        return F.index(flatten(t, n.args[0]) if n.attrs["axis"] is None else t, *grids,
                       key=(DYN,) * flat.ndim)

    return first(forward)


def _lanes(n):
    axis = n.attrs["axis"]
    return (lane_map(n, -1 if axis is None else axis, flat=axis is None),)


def _same_infer(shapes, dtypes, attrs):
    return _flat_shape(shapes[0], attrs["axis"]), dtypes[0]


def _index_infer(shapes, dtypes, attrs):
    return _flat_shape(shapes[0], attrs["axis"]), "int64"


def _kth_prepare(shapes, dtypes, attrs):
    out = _axis_prepare("partition")(shapes, dtypes, attrs)
    n = _flat_shape(shapes[0], out["axis"])[-1 if out["axis"] is None else out["axis"]]
    kth = attrs["kth"]
    ks = (kth,) if isinstance(kth, (int, np.integer)) else tuple(kth)
    if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not -n <= k < n
           for k in ks):
        raise ShapeError(f"partition: kth {describe(kth)} is out of range for an axis of size {n}")
    out["kth"] = tuple(int(k) % n for k in ks)
    return out


def _sort_examples(rng):
    return [([rng.standard_normal(5)], {"axis": -1}),
            ([rng.standard_normal((3, 4))], {"axis": 0}),
            ([rng.standard_normal((2, 3))], {"axis": None})]


def _argpartition(x, kth, axis):
    return np.argpartition(x, kth, axis=axis)


def _sg_partition(x, kth, axis):
    flat = np.ravel(x) if axis is None else x
    idx = np.argpartition(flat, kth, axis=-1 if axis is None else axis)
    return np.take_along_axis(flat, idx, axis=-1 if axis is None else axis)


register(Op(
    name="sort", complex=True,
    signature=sig("x", "=axis", axis=-1), prepare=_axis_prepare("sort"),
    infer=_same_infer, impl=lambda x, axis: np.sort(x, axis=axis),
    backprop=_permuted_rule("argsort"), forward=_permuted_forward("argsort"),
    sparsity=_lanes, examples=_sort_examples,
    doc="the elements sorted along axis (flattened if None); gradients follow the elements",
))
register(Op(
    name="argsort", complex=True,
    signature=sig("x", "=axis", axis=-1), prepare=_axis_prepare("argsort"),
    infer=_index_infer, impl=lambda x, axis: np.argsort(x, axis=axis), differentiable=False,
    examples=_sort_examples, doc="the indices that sort x along axis (int64)",
))
register(Op(
    name="partition", complex=True,
    signature=sig("x", "=kth", "=axis", kth=None, axis=-1),
    prepare=_kth_prepare, infer=_same_infer, impl=_sg_partition,
    backprop=_permuted_rule("argpartition"), forward=_permuted_forward("argpartition"),
    sparsity=_lanes,
    examples=lambda rng: [([rng.standard_normal(6)], {"kth": 2, "axis": -1}),
                          ([rng.standard_normal((3, 4))], {"kth": (0, 2), "axis": 0})],
    doc="x rearranged so the kth element is where sorting would put it (argpartition order)",
))
register(Op(
    name="argpartition", complex=True,
    signature=sig("x", "=kth", "=axis", kth=None, axis=-1),
    prepare=_kth_prepare, infer=_index_infer, impl=_argpartition, differentiable=False,
    examples=lambda rng: [([rng.standard_normal(6)], {"kth": 2, "axis": -1})],
    doc="the indices that partition x along axis (int64)",
))


def _searchsorted_prepare(shapes, dtypes, attrs):
    if len(shapes[0]) != 1:
        raise ShapeError(f"searchsorted: the sorted array must be 1-D, got shape {shapes[0]}")
    if attrs["side"] not in ("left", "right"):
        raise ShapeError(f"searchsorted: side must be 'left' or 'right', got {attrs['side']!r}")
    return {"side": attrs["side"]}


register(Op(
    name="searchsorted", complex=True,
    signature=sig("a", "v", "=side:str", side="left"),
    prepare=_searchsorted_prepare, infer=lambda s, d, a: (s[1], "int64"),
    impl=lambda a, v, side: np.asarray(np.searchsorted(a, v, side=side), dtype=np.int64),
    differentiable=False,
    examples=lambda rng: [([np.sort(rng.standard_normal(5)), rng.standard_normal((2, 3))],
                           {"side": "left"}),
                          ([np.array([0.0, 1.0, 1.0, 2.0]), np.array([1.0, 1.5])],
                           {"side": "right"})],
    doc="the indices where v would be inserted into the sorted 1-D a (int64)",
))


def _arg_prepare(name: str):
    def prepare(shapes, dtypes, attrs):
        axis, keep = attrs["axis"], attrs["keepdims"]
        if not isinstance(keep, (bool, np.bool_)):
            raise ShapeError(f"{name}: keepdims must be True or False, got {describe(keep)}")
        if axis is not None:
            axis = norm_axis(name, axis, len(shapes[0]))
        if 0 in (shapes[0] if axis is None else (shapes[0][axis],)):
            raise ShapeError(f"{name}: an empty sequence has no {name[3:]}imum")
        return {"axis": axis, "keepdims": bool(keep)}

    return prepare


def _arg_infer(shapes, dtypes, attrs):
    shape, axis, keep = shapes[0], attrs["axis"], attrs["keepdims"]
    axes = tuple(range(-len(shape), 0)) if axis is None else (axis,)
    return reduced(shape, axes, keep), "int64"


for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    register(Op(
        name=_name, signature=sig("x", "=axis", "=keepdims", axis=None, keepdims=False),
        complex=True,
        prepare=_arg_prepare(_name), infer=_arg_infer,
        impl=lambda x, axis, keepdims, _fn=_fn: np.asarray(_fn(x, axis=axis, keepdims=keepdims)),
        differentiable=False,
        examples=lambda rng: [([rng.standard_normal((3, 4))], {"axis": 1, "keepdims": False}),
                              ([rng.standard_normal((3, 4))], {"axis": None, "keepdims": True})],
        doc=f"the index of the {_name[3:]}imum along axis (of the flattened array if None)",
    ))

del _name, _fn
