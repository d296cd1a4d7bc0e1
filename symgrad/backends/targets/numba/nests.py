"""Loop nests: how the ops that are not elementwise are written inside compiled code.

Inside a ``numba.njit`` function (a kernel of straight-line code, or a scan's step) a 0-d
value is a Numba scalar and an array a Numba array of static shape. An elementwise op is
one line of a fused loop (:mod:`.source`); every other op is written here, from its
node's static shapes and attributes, as the lines that assign its value: explicit loops
over literal ranges (Numba types a scalar loop far faster than an array expression, and
LLVM sees the trip counts), BLAS through ``np.dot`` for matrix products, or Numba's own
NumPy function where Numba implements it with NumPy's semantics (a view: ``np.transpose``,
``np.broadcast_to``; ``np.sort``, ``np.searchsorted``).

A *form* is a function ``form(site) -> lines`` (:class:`Site`: the node, its operands'
texts, the name it assigns, fresh local names); the table (:mod:`.table`) says which op
has which. The lines compute what the op's ``impl`` computes, in its order of operations
(a sum adds in loop order where NumPy adds pairwise: equal to rounding), with NumPy's
rules for NaN (``max``/``min``/``argmax`` propagate it), ``-inf`` slices, integer dtypes
and negative indices; a traced index out of range raises ``IndexError`` as NumPy does.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(2, 3))
>>> e = sg.max(x, axis=1, keepdims=True)
>>> nodes = e.graph.nodes
>>> names = iter(f"_k{j}" for j in range(99))
>>> print("\\n".join(FORMS["max"](Site(nodes[e.node], nodes, ["x"], "m", lambda p: next(names)))))
m = np.empty((2, 1), dtype=np.float64)
for _k0 in range(2):
    _k1 = x[_k0, 0]
    for _k2 in range(3):
        _k3 = x[_k0, _k2]
        if _k3 > _k1 or _k3 != _k3:
            _k1 = _k3
    m[_k0, 0] = _k1
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....ir.shapes import is_complex
from ....ops.indexing import split_parts
from ..numpy.table import scalar_source
from .nest_base import FLOATS, Site, Writer, affine, aligned, at, axes_of, cast, copy_map, shape_of
from .nest_products import FORMS as PRODUCT_FORMS

__all__ = ["FORMS", "Site", "Writer", "VIEWS", "at", "is_view", "view_key"]

# -- reductions --------------------------------------------------------------------------------

# (init(first element, result dtype), update lines(acc, v), finish(acc, count)) per reduction
_NAN_MAX = "if {v} > {acc} or {v} != {v}:"
_NAN_MIN = "if {v} < {acc} or {v} != {v}:"


# (start, update lines, the result, the accumulator's dtype: "out" the result's, "x" the
# operand's) of each reduction
_REDUCE = {
    "sum": ("{T}(0)", ["{acc} += {v}"], "{acc}", "out"),
    "mean": ("{T}(0)", ["{acc} += {v}"], "{T}({quotient})", "out"),
    "prod": ("{T}(1)", ["{acc} *= {v}"], "{acc}", "out"),
    "max": ("{first}", [_NAN_MAX, "    {acc} = {v}"], "{acc}", "x"),
    "min": ("{first}", [_NAN_MIN, "    {acc} = {v}"], "{acc}", "x"),
    "all": ("True", ["if not {v}:", "    {acc} = False"], "{acc}", "bool"),
    "any": ("False", ["if {v}:", "    {acc} = True"], "{acc}", "bool"),
}


def _reduce(site: Site) -> list[str]:
    """sum, mean, prod, max, min, all, any over any axes, with or without keepdims."""
    n, (x,) = site.node, site.args
    xs, w = shape_of(x), Writer(site)
    axes = axes_of(n.attrs.get("axis"), len(xs))
    keep = bool(n.attrs.get("keepdims"))
    if _by_rows(n, x, axes):
        return _reduce_rows(site, axes, keep)
    init, update, finish, held = _REDUCE[n.op]
    T = site.ctor
    count = math.prod(xs[a] for a in axes)
    out = shape_of(n)
    if out:
        w.alloc(site.out, out, n.dtype)
    idx = ["0"] * len(xs)
    for a in range(len(xs)):
        if a not in axes:
            idx[a] = w.loop(xs[a])
    acc = w.new("acc")
    first = at(site.ins[0], xs, idx)
    w(f"{acc} = " + init.format(T=T, first=first))
    for a in axes:
        idx[a] = w.loop(xs[a])
    v = w.new("x")
    w(f"{v} = {at(site.ins[0], xs, idx)}")
    for line in update:
        w(line.format(acc=acc, v=v))
    w.end(len(axes))
    oidx = [idx[a] if a not in axes else "0" for a in range(len(xs)) if a not in axes or keep]
    # a complex quotient by np.divide, NumPy's complex division (Numba's "/" raises at a
    # count of 0 and rounds otherwise)
    quotient = (f"np.divide({acc}, {T}({count}))" if is_complex(n.dtype)
                else f"{acc} / {T}({count})")
    value = finish.format(acc=acc, T=T, quotient=quotient)
    held = {"out": n.dtype, "x": x.dtype}.get(held, held)
    w.set(site.out, out, oidx, cast(n.dtype, value, held))
    return w.lines


def _by_rows(n: Any, x: Any, axes: Sequence[int]) -> bool:
    """Whether reduction ``n`` of ``x`` over ``axes`` accumulates into its result in the
    operand's order (:func:`_reduce_rows`): a floating sum, mean or product that keeps the
    last axis (a loop with the reduced axes inner would read ``x`` strided)."""
    return (n.op in _ROWS and bool(axes) and len(x.shape) - 1 not in axes
            and n.dtype in FLOATS and x.dtype == n.dtype)


# (the result's fill, its update, whether it is divided by the count after) per reduction
_ROWS = {"sum": ("zeros", "+=", False), "mean": ("zeros", "+=", True),
         "prod": ("ones", "*=", False)}


def _reduce_rows(site: Site, axes: Sequence[int], keep: bool) -> list[str]:
    """sum, mean, prod keeping the last axis: the operand read in its own order, each
    element added (multiplied) into its place of the result, whose rows the innermost
    loop walks unit-stride (LLVM vectorizes it); the same additions in the same order
    along each reduced axis as the loop over them."""
    n, (x,) = site.node, site.args
    xs, w = shape_of(x), Writer(site)
    fill, op, average = _ROWS[n.op]
    out = shape_of(n)
    w.alloc(site.out, out, n.dtype, fill)
    idx = w.loops(xs)
    oidx = [("0" if a in axes else i) for a, i in enumerate(idx) if a not in axes or keep]
    w(f"{at(site.out, out, oidx)} {op} {at(site.ins[0], xs, idx)}")
    w.end(len(xs))
    if average:
        count = math.prod(xs[a] for a in axes)
        idx = w.loops(out)
        w(f"{at(site.out, out, idx)} /= {site.ctor}({count})")
        w.end(len(out))
    return w.lines


def _arg(cmp: str) -> Callable[[Site], list[str]]:
    return lambda site: _arg_lines(site, cmp)


def _arg_lines(site: Site, cmp: str) -> list[str]:
    """argmax (``cmp`` ">") / argmin ("<"): the first extreme (the first NaN, if any)
    along an axis, or of the flattened array (``axis=None``)."""
    n, (x,) = site.node, site.args
    xs, w = shape_of(x), Writer(site)
    axis = n.attrs.get("axis")
    axes = list(range(len(xs))) if axis is None else [int(axis) % len(xs)]
    keep = bool(n.attrs.get("keepdims"))
    out = shape_of(n)
    if out:
        w.alloc(site.out, out, "int64")
    idx = ["0"] * len(xs)
    for a in range(len(xs)):
        if a not in axes:
            idx[a] = w.loop(xs[a])
    best, pos = w.new("best"), w.new("pos")
    w(f"{best} = {at(site.ins[0], xs, idx)}")
    w(f"{pos} = 0")
    for a in axes:
        idx[a] = w.loop(xs[a])
    v = w.new("x")
    w(f"{v} = {at(site.ins[0], xs, idx)}")
    w(f"if {v} {cmp} {best} or ({v} != {v} and {best} == {best}):")
    w(f"    {best} = {v}")
    w(f"    {pos} = {_flat(idx, xs, axes)}")
    w.end(len(axes))
    oidx = [idx[a] if a not in axes else "0" for a in range(len(xs)) if a not in axes or keep]
    w.set(site.out, out, oidx, f"np.int64({pos})" if not out else pos)
    return w.lines


def _flat(idx: Sequence[str], shape: Sequence[int], axes: Sequence[int]) -> str:
    """The C-order position of ``idx`` among the ``axes`` of ``shape``."""
    terms, stride = [], 1
    for a in reversed(axes):
        terms.append(idx[a] if stride == 1 else f"{idx[a]} * {stride}")
        stride *= shape[a]
    return " + ".join(reversed(terms)) or "0"


def _logsumexp(site: Site) -> list[str]:
    """log(sum(exp(x - m))) + m with m the slice's maximum (0 where it is not finite)."""
    n, (x,) = site.node, site.args
    xs, w, T = shape_of(x), Writer(site), site.ctor
    axes = axes_of(n.attrs.get("axis"), len(xs))
    keep = bool(n.attrs.get("keepdims"))
    out = shape_of(n)
    if out:
        w.alloc(site.out, out, n.dtype)
    idx = ["0"] * len(xs)
    for a in range(len(xs)):
        if a not in axes:
            idx[a] = w.loop(xs[a])
    m, s = w.new("m"), w.new("s")
    w(f"{m} = {T}(-np.inf)")
    _over(w, axes, xs, idx, site.ins[0], [_NAN_MAX, "    {acc} = {v}"], acc=m)
    w(f"if not np.isfinite({m}):")
    w(f"    {m} = {T}(0.0)")
    w(f"{s} = {T}(0)")
    _over(w, axes, xs, idx, site.ins[0], ["{s} += np.exp({v} - {m})"], m=m, s=s)
    oidx = [idx[a] if a not in axes else "0" for a in range(len(xs)) if a not in axes or keep]
    w.set(site.out, out, oidx, f"np.log({s}) + {m}")
    return w.lines


def _over(w: Writer, axes: Sequence[int], xs: Sequence[int], idx: list[str], x: str,
          body: Sequence[str], out: str = "", **names: str) -> None:
    """A loop over ``axes`` (of ``xs``) binding ``{v}`` to the element, then ``body``
    (``{o}``: the element of ``out`` at the same index)."""
    for a in axes:
        idx[a] = w.loop(xs[a])
    v = w.new("x")
    w(f"{v} = {at(x, xs, idx)}")
    o = at(out, xs, idx) if out else ""
    for line in body:
        w(line.format(v=v, o=o, **names))
    w.end(len(axes))


def _softmax(log: bool) -> Callable[[Site], list[str]]:
    return lambda site: _softmax_lines(site, log)


def _softmax_lines(site: Site, log: bool) -> list[str]:
    """softmax / log_softmax (``log``) along one axis: x minus the lane's maximum
    (``-inf`` start, NaN propagated), then NumPy's expression."""
    n, (x,) = site.node, site.args
    xs, w, T = shape_of(x), Writer(site), site.ctor
    axis = int(n.attrs["axis"]) % len(xs)
    w.alloc(site.out, xs, n.dtype)
    idx = ["0"] * len(xs)
    for a in range(len(xs)):
        if a != axis:
            idx[a] = w.loop(xs[a])
    m, s = w.new("m"), w.new("s")
    w(f"{m} = {T}(-np.inf)")
    _over(w, [axis], xs, idx, site.ins[0], [_NAN_MAX, "    {acc} = {v}"], acc=m)
    w(f"{s} = {T}(0)")
    o = site.out
    if not log:
        _over(w, [axis], xs, idx, site.ins[0], ["{o} = np.exp({v} - {m})", "{s} += {o}"],
              o, m=m, s=s)
        _over(w, [axis], xs, idx, o, ["{o} = {v} / {s}"], o, s=s)
    else:
        _over(w, [axis], xs, idx, site.ins[0], ["{s} += np.exp({v} - {m})"], m=m, s=s)
        lg = w.new("lg")
        w(f"{lg} = np.log({s})")
        _over(w, [axis], xs, idx, site.ins[0], ["{o} = ({v} - {m}) - {lg}"], o, m=m, lg=lg)
    return w.lines


def _cumulative(step: str, start: int) -> Callable[[Site], list[str]]:
    return lambda site: _cumulative_lines(site, step, start)


def _cumulative_lines(site: Site, step: str, start: int) -> list[str]:
    """cumsum (``step`` "+=", ``start`` 0) / cumprod ("*=", 1) along an axis, or of the
    flattened array (``axis=None``)."""
    n, (x,) = site.node, site.args
    xs, w = shape_of(x), Writer(site)
    axis = n.attrs.get("axis")
    axes = list(range(len(xs))) if axis is None else [int(axis) % len(xs)]
    w.alloc(site.out, shape_of(n), n.dtype)
    idx = ["0"] * len(xs)
    for a in range(len(xs)):
        if a not in axes:
            idx[a] = w.loop(xs[a])
    acc = w.new("acc")
    w(f"{acc} = {site.ctor}({start})")
    oidx = idx if axis is not None else None
    for a in axes:
        idx[a] = w.loop(xs[a])
    w(f"{acc} {step} {at(site.ins[0], xs, idx)}")
    target = idx if oidx is not None else [_flat(idx, xs, axes)]
    w(f"{site.out}[{', '.join(target)}] = {acc}")
    w.end(len(axes))
    return w.lines


# -- indexing ----------------------------------------------------------------------------------


def _broadcast(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes])) if shapes else ()


def key_index(w: Writer, xshape: Sequence[int], key: tuple, batch: int,
              dyns: Sequence[tuple[str, Sequence[int]]], oidx: Sequence[str]) -> list[str]:
    """The index into ``x`` (of ``xshape``, indexed by canonical ``key`` over its trailing
    axes after ``batch`` leading ones; ``dyns``: the integer index operands' texts and
    shapes) that position ``oidx`` of ``x[key]`` reads. A traced index is wrapped when
    negative and checked against its axis (lines written into ``w``)."""
    group = _broadcast([s for _, s in dyns]) if dyns else None
    xi = list(oidx[:batch])
    o, d, axis, placed, gidx = batch, 0, batch, False, []
    for e in key:
        if e is None:
            o += 1
            continue
        size = xshape[axis]
        if isinstance(e, slice):
            r = range(*e.indices(size))
            xi.append(affine(r.start, r.step, oidx[o]))
            o += 1
        else:
            if group is not None and not placed:
                gidx, o, placed = list(oidx[o:o + len(group)]), o + len(group), True
            if isinstance(e, str):
                text, shape = dyns[d]
                d += 1
                j = w.new("j")
                w(f"{j} = {at(text, shape, aligned(shape, group, gidx))}")
                w(f"if {j} < 0:")
                w(f"    {j} += {size}")
                w(f"if {j} < 0 or {j} >= {size}:")
                w(f"    raise IndexError('index out of range for an axis of size {size}')")
                xi.append(j)
            else:
                xi.append(str(int(e)))
        axis += 1
    return xi


def view_key(n: Any, nodes: Any) -> str | None:
    """The subscript text of a node that is a view of its operand (an ``index`` with
    constant ints and forward slices only: Numba's basic indexing, no copy), else None."""
    form = _VIEW_KEYS.get(n.op)
    return None if form is None else form(n, nodes)


def _index_view(n: Any, nodes: Any) -> str | None:
    if len(n.args) != 1 or n.attrs.get("batch") or not n.shape:
        return None
    xshape, parts, axis = nodes[n.args[0]].shape, [], 0
    for e in n.attrs["key"]:
        if isinstance(e, slice):
            r = range(*e.indices(xshape[axis]))
            if r.step < 0:
                return None
            parts.append(f"{r.start}:{r.stop}" + (f":{r.step}" if r.step != 1 else ""))
        elif isinstance(e, int) and not isinstance(e, bool):
            parts.append(str(e % xshape[axis]))
        else:
            return None
        axis += 1
    return ", ".join(parts) if parts else None


_VIEW_KEYS: dict[str, Callable[[Any, Any], str | None]] = {"index": _index_view}


def is_view(n: Any, nodes: Any) -> bool:
    """Whether node ``n``'s form may share memory with an operand (:data:`VIEWS`)."""
    return n.op in VIEWS or view_key(n, nodes) is not None


def _index(site: Site) -> list[str]:
    """x[key]: basic (ints, slices, None) and integer-array indexing, traced or not; a view
    where :func:`view_key` gives one."""
    n, args = site.node, site.args
    key = view_key(n, site.nodes)
    if key is not None:
        return [f"{site.out} = {site.ins[0]}[{key}]"]
    x, w = args[0], Writer(site)
    out = shape_of(n)
    dyns = [(t, shape_of(a)) for t, a in zip(site.ins[1:], args[1:])]
    if out:
        w.alloc(site.out, out, n.dtype)
    oidx = w.loops(out)
    xi = key_index(w, shape_of(x), n.attrs["key"], n.attrs["batch"], dyns, oidx)
    w.set(site.out, out, oidx, at(site.ins[0], shape_of(x), xi))
    return w.lines


def _scatter(w: Writer, site: Site, g: int, dyn: Sequence[int], key: tuple, batch: int,
             full: tuple, add: bool) -> None:
    """One part of a scatter: ``out[key] (+)= operand g`` over g's elements."""
    gs = shape_of(site.args[g])
    dyns = [(site.ins[k], shape_of(site.args[k])) for k in dyn]
    gidx = w.loops(gs)
    xi = key_index(w, full, key, batch, dyns, gidx)
    w(f"{site.out}[{', '.join(xi)}] {'+=' if add else '='} {at(site.ins[g], gs, gidx)}")
    w.end(len(gs))


def _index_add(site: Site) -> list[str]:
    """zeros of the result's shape, g added at [key] (duplicates accumulate)."""
    n, w = site.node, Writer(site)
    full = shape_of(n)
    w.alloc(site.out, full, n.dtype, "zeros")
    _scatter(w, site, 0, range(1, len(n.args)), n.attrs["key"], n.attrs["batch"], full,
             n.attrs["accumulate"])
    return w.lines


def _scatter_sum(site: Site) -> list[str]:
    """zeros, then each part added at its key."""
    n, w = site.node, Writer(site)
    full = shape_of(n)
    w.alloc(site.out, full, n.dtype, "zeros")
    positions = list(range(len(n.args)))
    for (g, dyn), (key, _, _) in zip(split_parts(positions, n.attrs["parts"]), n.attrs["parts"]):
        _scatter(w, site, g, dyn, key, n.attrs["batch"], full, True)
    return w.lines


def _take(site: Site) -> list[str]:
    """np.take: along an axis, or from the flattened array (``axis=None``)."""
    n, (x, ind) = site.node, site.args
    w, xs, out = Writer(site), shape_of(x), shape_of(n)
    axis = n.attrs.get("axis")
    if out:
        w.alloc(site.out, out, n.dtype)
    oidx = w.loops(out)
    if axis is None:
        size = math.prod(xs)
        (j,) = key_index(w, (size,), ("@",), 0, [(site.ins[1], shape_of(ind))], oidx)
        xi = _unflat(w, j, xs)
    else:
        a = int(axis) % len(xs)
        key = ("@",) + (slice(None),) * (len(xs) - a - 1)
        xi = key_index(w, xs, key, a, [(site.ins[1], shape_of(ind))], oidx)
    w.set(site.out, out, oidx, at(site.ins[0], xs, xi))
    return w.lines


def _unflat(w: Writer, j: str, shape: Sequence[int]) -> list[str]:
    """The index of C-order position ``j`` in ``shape``."""
    out: list[str] = []
    q = j
    for k, d in enumerate(reversed(shape)):
        if k == len(shape) - 1:
            out.append(q)
            break
        r = w.new("r")
        w(f"{r} = {q} % {d}")
        nq = w.new("q")
        w(f"{nq} = {q} // {d}")
        out.append(r)
        q = nq
    return list(reversed(out))


# -- shaping -------------------------------------------------------------------------------------


def _matrix_transpose(site: Site) -> list[str]:
    nd = len(site.args[0].shape)
    return _permuted(site, list(range(nd - 2)) + [nd - 1, nd - 2])


def _transpose(site: Site) -> list[str]:
    nd = len(site.args[0].shape)
    return _permuted(site, [p % nd for p in site.attrs["axes"]])


def _permuted(site: Site, perm: list[int]) -> list[str]:
    """A permutation of the axes (a view)."""
    nd = len(perm)
    if nd < 2 or perm == list(range(nd)):
        return [f"{site.out} = {site.ins[0]}"]
    if nd == 2:
        return [f"{site.out} = {site.ins[0]}.T"]
    return [f"{site.out} = np.transpose({site.ins[0]}, {tuple(perm)!r})"]


def _reshape(site: Site) -> list[str]:
    """reshape, squeeze, expand_dims: the same elements in C order, another shape."""
    n, (x,) = site.node, site.args
    out, xs = shape_of(n), shape_of(x)
    if not xs:
        return copy_map(site, lambda idx: site.ins[0])
    if not out:
        return [f"{site.out} = {site.ins[0]}[{', '.join(['0'] * len(xs))}]"]
    return [f"{site.out} = np.ascontiguousarray({site.ins[0]}).reshape({out!r})"]


def _broadcast_to(site: Site) -> list[str]:
    n, (x,) = site.node, site.args
    out, xs = shape_of(n), shape_of(x)
    if not xs:
        return [f"{site.out} = np.full({out!r}, {site.ins[0]}, dtype={site.ctor})"]
    return [f"{site.out} = np.broadcast_to({site.ins[0]}, {out!r})"]


def _concatenate(site: Site) -> list[str]:
    """Operands copied into their slices of the result along an axis."""
    n, w = site.node, Writer(site)
    out = shape_of(n)
    axis = int(n.attrs["axis"]) % len(out)
    w.alloc(site.out, out, n.dtype)
    start = 0
    for text, a in zip(site.ins, site.args):
        w.put(site.out, [], text, shape_of(a), {axis: start})
        start += a.shape[axis]
    return w.lines


def _stack(site: Site) -> list[str]:
    """Operands copied into the result along a new axis."""
    n, w = site.node, Writer(site)
    out = shape_of(n)
    axis = int(n.attrs["axis"]) % len(out)
    w.alloc(site.out, out, n.dtype)
    for k, (text, a) in enumerate(zip(site.ins, site.args)):
        shape = shape_of(a)
        idx = w.loops(shape)
        key = [*idx[:axis], str(k), *idx[axis:]]
        w(f"{site.out}[{', '.join(key)}] = {at(text, shape, idx)}")
        w.end(len(shape))
    return w.lines


def _pass(site: Site) -> list[str]:
    """stop_gradient and custom rules' calls: the value is an operand (``out``'s, else the
    first)."""
    return [f"{site.out} = {site.ins[int(site.attrs.get('out', 0))]}"]


# -- constants -----------------------------------------------------------------------------------


def _filled(value: str | None) -> Callable[[Site], list[str]]:
    """zeros, ones (``value``), full (None: its ``fill_value``) and the ``_like``s."""
    return lambda site: _filled_lines(site, value)


def _filled_lines(site: Site, value: str | None) -> list[str]:
    n = site.node
    if value is None:
        value = scalar_source(site.attrs["fill_value"])
    if not n.shape:
        return [f"{site.out} = {site.ctor}({value})"]
    return [f"{site.out} = np.full({shape_of(n)!r}, {value}, dtype={site.ctor})"]


def _value_of(site: Site) -> np.ndarray:
    """The values of constant op ``site.node`` (eye, arange, linspace): NumPy's."""
    from ....ops import REGISTRY

    op = REGISTRY[site.node.op]
    return np.asarray(op.impl(**{k: site.attrs[k] for k in site.attrs if k in _CONST_KEYS[
        site.node.op]}))


def _constant_of(site: Site) -> list[str]:
    """eye, arange, linspace: the op's own values (static), written as a literal array."""
    value = _value_of(site)
    items = ", ".join(scalar_source(v) for v in value.ravel().tolist())
    text = f"np.array([{items}], dtype={site.ctor})"
    return [f"{site.out} = {text}" if value.ndim == 1 else
            f"{site.out} = {text}.reshape({value.shape!r})"]


def _eye(site: Site) -> list[str]:
    """eye: a literal array where small; else zeros and its diagonal set in a loop (Numba
    types a literal of thousands of elements for a minute)."""
    n = site.node
    if math.prod(n.shape) <= LITERAL_MAX:
        return _constant_of(site)
    rows, cols = n.shape
    k = int(site.attrs.get("k") or 0)
    i = site.fresh("i")
    return [f"{site.out} = np.zeros({(rows, cols)!r}, dtype={site.ctor})",
            f"for {i} in range({max(0, -k)}, {min(rows, cols - k)}):",
            f"    {site.out}[{i}, {i} + {k}] = 1"]


def _spaced(formula: Callable[[Site, np.ndarray], list[str] | None]
            ) -> Callable[[Site], list[str]]:
    """arange, linspace (``formula``, :func:`_arange_steps` or :func:`_linspace_steps`):
    a literal array where small; else a loop computing each element by NumPy's own
    formula, which ``formula`` checks gives NumPy's values to the bit (a literal where it
    does not)."""
    def lines(site: Site) -> list[str]:
        value = _value_of(site)
        steps = formula(site, value) if value.size > LITERAL_MAX else None
        return steps if steps is not None else _constant_of(site)
    return lines


def _arange_steps(site: Site, value: np.ndarray) -> list[str] | None:
    """NumPy's arange: its first two values ``start`` and ``start + step`` (Python's sum)
    in the dtype, then ``first + i * (second - first)`` in the dtype (its ``fill``)."""
    a, t = site.attrs, np.dtype(value.dtype).type
    if value.dtype.kind not in "fi":
        return None
    with np.errstate(all="ignore"):
        first, second = t(a["start"]), t(a["start"] + a["step"])
        mine = first + np.arange(value.size).astype(value.dtype) * (second - first)
        mine[:2] = first, second
    if mine.tobytes() != value.tobytes():
        return None
    c, i, d = site.ctor, site.fresh("i"), site.fresh("d")
    v0, v1 = f"{c}({scalar_source(first.item())})", f"{c}({scalar_source(second.item())})"
    return [f"{site.out} = np.empty({value.size}, dtype={c})",
            f"{site.out}[0] = {v0}",
            f"{site.out}[1] = {v1}",
            f"{d} = {v1} - {v0}",
            f"for {i} in range(2, {value.size}):",
            f"    {site.out}[{i}] = {v0} + {c}({i}) * {d}"]


def _linspace_steps(site: Site, value: np.ndarray) -> list[str] | None:
    """NumPy's linspace: ``i * step + start`` in float64 (``step = (stop - start) / div``),
    ``stop`` last where it is an endpoint, floored for an integer dtype, then the dtype."""
    a, n = site.attrs, value.size
    start, stop = float(a["start"]), float(a["stop"])
    step = (stop - start) / (n - 1 if a["endpoint"] else n)
    floor = value.dtype.kind == "i"
    if value.dtype.kind not in "fi":
        return None
    with np.errstate(all="ignore"):
        mine = np.arange(n, dtype=np.float64) * step + start
        if a["endpoint"]:
            mine[-1] = stop
        mine = (np.floor(mine) if floor else mine).astype(value.dtype)
    if mine.tobytes() != value.tobytes():
        return None
    c, i = site.ctor, site.fresh("i")
    v = f"np.float64({i}) * {scalar_source(step)} + {scalar_source(start)}"
    lines = [f"{site.out} = np.empty({n}, dtype={c})",
             f"for {i} in range({n}):",
             f"    {site.out}[{i}] = {c}({f'np.floor({v})' if floor else v})"]
    if a["endpoint"]:
        lines.append(f"{site.out}[{n - 1}] = {c}({scalar_source(stop)})")
    return lines


LITERAL_MAX = 64  # elements of a constant written as a literal array inside compiled code
_CONST_KEYS = {"eye": ("N", "M", "k", "dtype"), "arange": ("start", "stop", "step", "dtype"),
               "linspace": ("start", "stop", "num", "endpoint", "dtype")}


FORMS: dict[str, Callable[[Site], list[str]]] = {
    **dict.fromkeys(("sum", "mean", "prod", "max", "min", "all", "any"), _reduce),
    "argmax": _arg(">"), "argmin": _arg("<"),
    "logsumexp": _logsumexp, "softmax": _softmax(False), "log_softmax": _softmax(True),
    "cumsum": _cumulative("+=", 0), "cumprod": _cumulative("*=", 1),
    "index": _index, "index_add": _index_add, "scatter_sum": _scatter_sum, "take": _take,
    "transpose": _transpose, "matrix_transpose": _matrix_transpose,
    **dict.fromkeys(("reshape", "squeeze", "expand_dims"), _reshape),
    "broadcast_to": _broadcast_to, "concatenate": _concatenate, "stack": _stack,
    **dict.fromkeys(("stop_gradient", "custom_vjp_call", "custom_jvp_call"), _pass),
    **PRODUCT_FORMS,
    **dict.fromkeys(("zeros", "zeros_like"), _filled("0")),
    **dict.fromkeys(("ones", "ones_like"), _filled("1")), "full": _filled(None),
    "arange": _spaced(_arange_steps), "linspace": _spaced(_linspace_steps), "eye": _eye,
}

# the forms whose result may share memory with an operand (or be read only): a value
# that leaves the compiled function is copied first
VIEWS = frozenset({"transpose", "matrix_transpose", "reshape", "squeeze", "expand_dims",
                   "broadcast_to", "stop_gradient", "custom_vjp_call", "custom_jvp_call"})
