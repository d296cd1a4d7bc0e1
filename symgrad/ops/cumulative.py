"""Cumulative sums and products (``cumsum cumprod``) and the product reduction ``prod``.

Their gradients never divide by ``x``, so zeros in the input are fine: ``prod``'s adjoint
is the product of all *other* elements (exclusive prefix times exclusive suffix products)
and ``cumprod``'s is built from products over ranges ``prod(x[i+1:j+1])``, which costs
O(n^2) memory along the scanned axis (NumPy has no scan op to do it in O(n)).
``axis=None`` scans the flattened array, as NumPy does.

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> sg.evaluate(sg.grad(sg.prod(x), x), {"x": [2.0, 0.0, 5.0]})
array([ 0., 10.,  0.])
>>> sg.evaluate(sg.grad(sg.sum(sg.cumprod(x)), x), {"x": [2.0, 0.0, 5.0]})
array([ 1., 12.,  0.])
"""

from __future__ import annotations

import numpy as np

from ..ir.expr import F
from ..ir.op import Op, register, sig
from ..ir.shapes import norm_axis
from .indexing import index_along
from .reductions import prepare_axes, reduce_examples, reduce_infer, sum_dtype, weighted
from .structure import lane_map, reduce_map
from .tangent import first, flatten


def _scan_prepare(name: str):
    def prepare(shapes, dtypes, attrs):
        axis = attrs["axis"]
        return {"axis": None if axis is None else norm_axis(name, axis, len(shapes[0]))}

    return prepare


def _scan_infer(shapes, dtypes, attrs):
    shape = shapes[0]
    out = (int(np.prod(shape, dtype=np.int64)),) if attrs["axis"] is None else shape
    return out, sum_dtype(dtypes[0])


def _flat(x, n):
    """The scanned operand: ``x`` itself, or flattened for ``axis=None``."""
    return F.reshape(x, (x.size,)) if n.attrs["axis"] is None and x.ndim != 1 else x


def _unflat(gx, n):
    x = n.args[0]
    if n.attrs["axis"] is not None or x.ndim == 1:
        return gx
    return F.reshape(gx, x.shape, src_ndim=1)


def _axis(n) -> int:
    return -1 if n.attrs["axis"] is None else n.attrs["axis"]


def _flip(x, axis: int):
    own = x.shape[x.ndim + axis:] if axis < 0 else x.shape
    return index_along(x, own, axis, slice(None, None, -1))


def _cumsum_rule(n, g):
    axis = _axis(n)
    return (_unflat(_flip(F.cumsum(_flip(g, axis), axis=axis), axis), n),)


def _cumsum_forward(n, t):
    return F.cumsum(flatten(t, n.args[0]) if n.attrs["axis"] is None else t, axis=_axis(n))


def _last(x, axis: int):
    """``x`` with ``axis`` moved last (it is the trailing axes that carry meaning)."""
    if axis == -1:
        return x
    perm = [a for a in range(-x.ndim, 0) if a != axis] + [axis]
    return F.transpose(x, axes=tuple(p + x.ndim for p in perm))


def _unlast(x, axis: int):
    if axis == -1:
        return x
    nd = x.ndim
    perm = [a for a in range(-nd, 0) if a != axis] + [axis]
    inverse = sorted(range(nd), key=lambda k: perm[k])
    return F.transpose(x, axes=tuple(inverse))


def _exclusive_cumprod(x):
    """``[1, x0, x0*x1, ...]`` along the last axis (no division)."""
    if x.shape[-1] == 0:  # nothing before nothing
        return x
    ones = F.ones(x.shape[:-1] + (1,), dtype=x.dtype)
    return F.concatenate([ones, index_along(F.cumprod(x, axis=-1), x.shape, -1,
                                            slice(None, -1))], axis=-1)


def _cumprod_rule(n, g):
    """d/dx_i = L_i * sum_{j>=i} g_j * prod(x[i+1:j+1]), L_i = prod(x[:i])."""
    axis = _axis(n)
    x = _last(_flat(n.args[0], n), axis)  # (..., m)
    gl = _last(g, axis)
    m = x.shape[-1]
    after = np.arange(m)[:, None] < np.arange(m)[None, :]  # k > i
    t = F.where(after, F.expand_dims(x, axis=-2), 1.0)  # (..., i, k)
    ranges = F.cumprod(t, axis=-1)  # prod over i < k <= j
    before = np.arange(m)[None, :] < np.arange(m)[:, None]  # j < i
    s = F.sum(F.where(before, 0.0, F.expand_dims(gl, axis=-2) * ranges), axis=-1)
    gx = _exclusive_cumprod(x) * s
    return (_unflat(_unlast(gx, axis), n),)


def _cumprod_forward(n, t):
    """T_j = sum_{i<=j} prod(x[:i]) prod(x[i+1:j+1]) t_i: the recursion T_j = x_j T_{j-1} +
    out_{j-1} t_j solved with the products over ranges of the backprop rule."""
    axis = _axis(n)
    x = _last(_flat(n.args[0], n), axis)  # (..., m)
    tl = _last(flatten(t, n.args[0]) if n.attrs["axis"] is None else t, axis)
    m = x.shape[-1]
    after = np.arange(m)[:, None] < np.arange(m)[None, :]  # k > i
    ranges = F.cumprod(F.where(after, F.expand_dims(x, axis=-2), 1.0), axis=-1)  # (.., i, j)
    before = np.arange(m)[None, :] < np.arange(m)[:, None]  # j < i
    weights = F.where(before, 0.0, ranges)
    scaled = F.expand_dims(_exclusive_cumprod(x) * tl, axis=-1)  # (..., i, 1)
    return _unlast(F.sum(weights * scaled, axis=-2), axis)


def _scan_sparsity(n):
    return (lane_map(n, _axis(n), flat=n.attrs["axis"] is None),)


def _scan_examples(rng):
    return [([rng.standard_normal(4)], {"axis": None}),
            ([rng.standard_normal((3, 4))], {"axis": 0}),
            ([rng.standard_normal((2, 3))], {"axis": -1}),
            ([rng.standard_normal((2, 2))], {"axis": None}),
            ([np.array([2.0, 0.0, 3.0, 0.5])], {"axis": 0})]


for _name, _fn, _rule, _fwd in (("cumsum", np.cumsum, _cumsum_rule, _cumsum_forward),
                                ("cumprod", np.cumprod, _cumprod_rule, _cumprod_forward)):
    register(Op(
        name=_name, signature=sig("x", "=axis", axis=None), prepare=_scan_prepare(_name),
        infer=_scan_infer, impl=lambda x, axis, _fn=_fn: _fn(x, axis=axis), backprop=_rule,
        forward=first(_fwd), sparsity=_scan_sparsity, examples=_scan_examples,
        doc=f"{_name[3:]} of the elements up to each position along axis (flattened if None)",
    ))


def _prod_others(n):
    """The product of all the other elements: exclusive prefix times exclusive suffix."""
    x, axes = n.args[0], n.attrs["axis"]
    keep = [a for a in range(-x.ndim, 0) if a not in axes]
    perm = tuple(a + x.ndim for a in keep + list(axes))
    moved = F.transpose(x, axes=perm) if perm != tuple(range(x.ndim)) else x
    kept_shape = moved.shape[: len(keep)]
    flat = F.reshape(moved, kept_shape + (int(np.prod(moved.shape[len(keep):])),))
    reverse = _flip(flat, -1)
    others = _exclusive_cumprod(flat) * _flip(_exclusive_cumprod(reverse), -1)
    others = F.reshape(others, moved.shape)
    if perm != tuple(range(x.ndim)):
        inverse = sorted(range(x.ndim), key=lambda k: perm[k])
        others = F.transpose(others, axes=tuple(inverse))
    return others


_prod_rule, _prod_forward = weighted(_prod_others)


register(Op(
    name="prod", signature=sig("x", "=axis", "=keepdims", axis=None, keepdims=False),
    prepare=prepare_axes("prod"), infer=reduce_infer("prod", sum_dtype), impl=np.prod,
    backprop=_prod_rule, forward=_prod_forward, sparsity=lambda n: (reduce_map(n),),
    examples=lambda rng: [*reduce_examples(rng),
                          ([np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]])],
                           {"axis": -1, "keepdims": False})],
    doc="product over axis (all axes when None); its gradient never divides by x",
))

for _name, _fn in (("all", np.all), ("any", np.any)):
    register(Op(
        name=_name, signature=sig("x", "=axis", "=keepdims", axis=None, keepdims=False),
        prepare=prepare_axes(_name), infer=reduce_infer(_name, lambda d: "bool"), impl=_fn,
        differentiable=False,
        examples=lambda rng: [([rng.random((3, 4)) < 0.5], {"axis": -1, "keepdims": False}),
                              ([rng.random(5) < 0.9], {"axis": None, "keepdims": False})],
        doc=f"whether {_name} elements are true, over axis",
    ))

del _name, _fn, _rule, _fwd
