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
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....ops.indexing import split_parts
from ....ops.products import parse_spec
from ....ops.structure import matmul_spec
from ..numpy.table import NUMPY_TYPE, scalar_source

__all__ = ["FORMS", "Site", "Writer", "VIEWS", "at", "is_view", "view_key"]

FLOATS = frozenset({"float64", "float32"})


@dataclass
class Site:
    """One node as compiled code writes it: ``ins`` (its operands' texts: names, or
    literals for 0-d constants), ``out`` (the name its lines assign) and ``fresh`` (a new
    local name for a prefix)."""

    node: Any
    nodes: Any
    ins: list[str]
    out: str
    fresh: Callable[[str], str]

    @property
    def args(self) -> list[Any]:
        return [self.nodes[a] for a in self.node.args]

    @property
    def attrs(self) -> dict:
        return self.node.attrs

    @property
    def ctor(self) -> str:
        """The NumPy scalar type of the result (``np.float64``)."""
        return NUMPY_TYPE[self.node.dtype]


class Writer:
    """Lines at a nesting depth, with fresh names for loop indices and locals."""

    def __init__(self, site: Site) -> None:
        self.site, self.lines, self.depth = site, [], 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def new(self, prefix: str = "v") -> str:
        return self.site.fresh(prefix)

    def loop(self, n: int | str, start: int | str = 0) -> str:
        """Open ``for i in range(start, n):``; the index's name."""
        i = self.new("i")
        self(f"for {i} in range({n}):" if start == 0 else f"for {i} in range({start}, {n}):")
        self.depth += 1
        return i

    def loops(self, shape: Sequence[int]) -> list[str]:
        return [self.loop(d) for d in shape]

    def end(self, k: int = 1) -> None:
        self.depth -= k

    def alloc(self, name: str, shape: tuple, dtype: str, fill: str = "empty") -> None:
        self(f"{name} = np.{fill}({shape!r}, dtype={NUMPY_TYPE[dtype]})")

    def set(self, name: str, shape: tuple, idx: Sequence[str], value: str) -> None:
        """``name[idx] = value``, or ``name = value`` for a 0-d result."""
        self(f"{at(name, shape, idx)} = {value}")

    def put(self, dst: str, lead: Sequence[str], src: str, shape: Sequence[int],
            offsets: dict[int, int] | None = None) -> None:
        """``dst[lead..., i...] = src[i...]`` over ``src``'s ``shape``, element by element
        (an axis ``d`` in ``offsets`` shifted by it): Numba compiles an array assigned to a
        slice with a shape check whose error message alone takes seconds to compile."""
        idx = self.loops(shape)
        key = [_affine((offsets or {}).get(d, 0), 1, i) for d, i in enumerate(idx)]
        self(f"{dst}[{', '.join([*lead, *key])}] = {at(src, shape, idx)}"
             if [*lead, *key] else f"{dst} = {src}")
        self.end(len(shape))


def at(text: str, shape: Sequence[int], idx: Sequence[str]) -> str:
    """The element of operand ``text`` (of ``shape``) at ``idx`` (one text per axis; a 0-d
    operand is its own element)."""
    return f"{text}[{', '.join(idx)}]" if len(shape) else text


def aligned(shape: Sequence[int], full: Sequence[int], idx: Sequence[str]) -> list[str]:
    """The index of an operand of ``shape`` broadcast against ``full`` (indices ``idx``):
    aligned to the right, ``0`` along its axes of length 1."""
    off = len(full) - len(shape)
    return ["0" if s == 1 and full[off + d] != 1 else idx[off + d] for d, s in enumerate(shape)]


def cast(dtype: str, text: str, source: str) -> str:
    """``text`` (of dtype ``source``) as ``dtype``: unchanged when they agree."""
    return text if dtype == source else f"{NUMPY_TYPE[dtype]}({text})"


def _axes(axis: Any, ndim: int) -> list[int]:
    """Non-negative, sorted axes of an ``axis`` attribute (all when None)."""
    if axis is None:
        return list(range(ndim))
    seq = (axis,) if isinstance(axis, (int, np.integer)) else axis
    return sorted({int(a) % ndim for a in seq}) if ndim else []


def _shape(n: Any) -> tuple[int, ...]:
    return tuple(n.shape)


# -- reductions --------------------------------------------------------------------------------

# (init(first element, result dtype), update lines(acc, v), finish(acc, count)) per reduction
_NAN_MAX = "if {v} > {acc} or {v} != {v}:"
_NAN_MIN = "if {v} < {acc} or {v} != {v}:"


# (start, update lines, the result, the accumulator's dtype: "out" the result's, "x" the
# operand's) of each reduction
_REDUCE = {
    "sum": ("{T}(0)", ["{acc} += {v}"], "{acc}", "out"),
    "mean": ("{T}(0)", ["{acc} += {v}"], "{T}({acc} / {T}({count}))", "out"),
    "prod": ("{T}(1)", ["{acc} *= {v}"], "{acc}", "out"),
    "max": ("{first}", [_NAN_MAX, "    {acc} = {v}"], "{acc}", "x"),
    "min": ("{first}", [_NAN_MIN, "    {acc} = {v}"], "{acc}", "x"),
    "all": ("True", ["if not {v}:", "    {acc} = False"], "{acc}", "bool"),
    "any": ("False", ["if {v}:", "    {acc} = True"], "{acc}", "bool"),
}


def _reduce(site: Site) -> list[str]:
    """sum, mean, prod, max, min, all, any over any axes, with or without keepdims."""
    n, (x,) = site.node, site.args
    xs, w = _shape(x), Writer(site)
    axes = _axes(n.attrs.get("axis"), len(xs))
    keep = bool(n.attrs.get("keepdims"))
    init, update, finish, held = _REDUCE[n.op]
    T = site.ctor
    count = math.prod(xs[a] for a in axes)
    out = _shape(n)
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
    value = finish.format(acc=acc, T=T, count=count)
    held = {"out": n.dtype, "x": x.dtype}.get(held, held)
    w.set(site.out, out, oidx, cast(n.dtype, value, held))
    return w.lines


def _arg(cmp: str) -> Callable[[Site], list[str]]:
    return lambda site: _arg_lines(site, cmp)


def _arg_lines(site: Site, cmp: str) -> list[str]:
    """argmax (``cmp`` ">") / argmin ("<"): the first extreme (the first NaN, if any)
    along an axis, or of the flattened array (``axis=None``)."""
    n, (x,) = site.node, site.args
    xs, w = _shape(x), Writer(site)
    axis = n.attrs.get("axis")
    axes = list(range(len(xs))) if axis is None else [int(axis) % len(xs)]
    keep = bool(n.attrs.get("keepdims"))
    out = _shape(n)
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
    xs, w, T = _shape(x), Writer(site), site.ctor
    axes = _axes(n.attrs.get("axis"), len(xs))
    keep = bool(n.attrs.get("keepdims"))
    out = _shape(n)
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
    xs, w, T = _shape(x), Writer(site), site.ctor
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
    xs, w = _shape(x), Writer(site)
    axis = n.attrs.get("axis")
    axes = list(range(len(xs))) if axis is None else [int(axis) % len(xs)]
    w.alloc(site.out, _shape(n), n.dtype)
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


def _affine(start: int, step: int, i: str) -> str:
    if step == 1:
        return i if start == 0 else f"{start} + {i}"
    return f"{start} + {step} * {i}" if start else f"{step} * {i}"


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
            xi.append(_affine(r.start, r.step, oidx[o]))
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
    """The subscript text of an ``index`` node that is a view of its operand (constant ints
    and forward slices only: Numba's basic indexing, no copy), else None."""
    if n.op != "index" or len(n.args) != 1 or n.attrs.get("batch") or not n.shape:
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
    out = _shape(n)
    dyns = [(t, _shape(a)) for t, a in zip(site.ins[1:], args[1:])]
    if out:
        w.alloc(site.out, out, n.dtype)
    oidx = w.loops(out)
    xi = key_index(w, _shape(x), n.attrs["key"], n.attrs["batch"], dyns, oidx)
    w.set(site.out, out, oidx, at(site.ins[0], _shape(x), xi))
    return w.lines


def _scatter(w: Writer, site: Site, g: int, dyn: Sequence[int], key: tuple, batch: int,
             full: tuple, add: bool) -> None:
    """One part of a scatter: ``out[key] (+)= operand g`` over g's elements."""
    gs = _shape(site.args[g])
    dyns = [(site.ins[k], _shape(site.args[k])) for k in dyn]
    gidx = w.loops(gs)
    xi = key_index(w, full, key, batch, dyns, gidx)
    w(f"{site.out}[{', '.join(xi)}] {'+=' if add else '='} {at(site.ins[g], gs, gidx)}")
    w.end(len(gs))


def _index_add(site: Site) -> list[str]:
    """zeros of the result's shape, g added at [key] (duplicates accumulate)."""
    n, w = site.node, Writer(site)
    full = _shape(n)
    w.alloc(site.out, full, n.dtype, "zeros")
    _scatter(w, site, 0, range(1, len(n.args)), n.attrs["key"], n.attrs["batch"], full,
             n.attrs["accumulate"])
    return w.lines


def _scatter_sum(site: Site) -> list[str]:
    """zeros, then each part added at its key."""
    n, w = site.node, Writer(site)
    full = _shape(n)
    w.alloc(site.out, full, n.dtype, "zeros")
    positions = list(range(len(n.args)))
    for (g, dyn), (key, _, _) in zip(split_parts(positions, n.attrs["parts"]), n.attrs["parts"]):
        _scatter(w, site, g, dyn, key, n.attrs["batch"], full, True)
    return w.lines


def _take(site: Site) -> list[str]:
    """np.take: along an axis, or from the flattened array (``axis=None``)."""
    n, (x, ind) = site.node, site.args
    w, xs, out = Writer(site), _shape(x), _shape(n)
    axis = n.attrs.get("axis")
    if out:
        w.alloc(site.out, out, n.dtype)
    oidx = w.loops(out)
    if axis is None:
        size = math.prod(xs)
        (j,) = key_index(w, (size,), ("@",), 0, [(site.ins[1], _shape(ind))], oidx)
        xi = _unflat(w, j, xs)
    else:
        a = int(axis) % len(xs)
        key = ("@",) + (slice(None),) * (len(xs) - a - 1)
        xi = key_index(w, xs, key, a, [(site.ins[1], _shape(ind))], oidx)
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


def _copy_map(site: Site, read: Callable[[list[str]], str]) -> list[str]:
    """The result filled element by element: ``out[i] = read(i)``."""
    n, w = site.node, Writer(site)
    out = _shape(n)
    if out:
        w.alloc(site.out, out, n.dtype)
    idx = w.loops(out)
    w.set(site.out, out, idx, read(idx))
    return w.lines


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
    out, xs = _shape(n), _shape(x)
    if not xs:
        return _copy_map(site, lambda idx: site.ins[0])
    if not out:
        return [f"{site.out} = {site.ins[0]}[{', '.join(['0'] * len(xs))}]"]
    return [f"{site.out} = np.ascontiguousarray({site.ins[0]}).reshape({out!r})"]


def _broadcast_to(site: Site) -> list[str]:
    n, (x,) = site.node, site.args
    out, xs = _shape(n), _shape(x)
    if not xs:
        return [f"{site.out} = np.full({out!r}, {site.ins[0]}, dtype={site.ctor})"]
    return [f"{site.out} = np.broadcast_to({site.ins[0]}, {out!r})"]


def _concatenate(site: Site) -> list[str]:
    """Operands copied into their slices of the result along an axis."""
    n, w = site.node, Writer(site)
    out = _shape(n)
    axis = int(n.attrs["axis"]) % len(out)
    w.alloc(site.out, out, n.dtype)
    start = 0
    for text, a in zip(site.ins, site.args):
        w.put(site.out, [], text, _shape(a), {axis: start})
        start += a.shape[axis]
    return w.lines


def _stack(site: Site) -> list[str]:
    """Operands copied into the result along a new axis."""
    n, w = site.node, Writer(site)
    out = _shape(n)
    axis = int(n.attrs["axis"]) % len(out)
    w.alloc(site.out, out, n.dtype)
    for k, (text, a) in enumerate(zip(site.ins, site.args)):
        shape = _shape(a)
        idx = w.loops(shape)
        key = [*idx[:axis], str(k), *idx[axis:]]
        w(f"{site.out}[{', '.join(key)}] = {at(text, shape, idx)}")
        w.end(len(shape))
    return w.lines


def _pass(site: Site) -> list[str]:
    """stop_gradient and custom rules' calls: the value is an operand (``out``'s, else the
    first)."""
    return [f"{site.out} = {site.ins[int(site.attrs.get('out', 0))]}"]


# -- products ------------------------------------------------------------------------------------


def _blas(site: Site) -> bool:
    """Operands BLAS takes: vectors or matrices of the result's floating dtype."""
    return (site.node.dtype in FLOATS and all(a.dtype == site.node.dtype for a in site.args)
            and all(1 <= len(a.shape) <= 2 for a in site.args))


def einsum_lines(w: Writer, site: Site, spec: str, ins: Sequence[str],
                 shapes: Sequence[Sequence[int]], dtypes: Sequence[str]) -> None:
    """``out = einsum(spec, *ins)`` as loops: the output's letters outside, the summed
    ones inside, each term the product of the operands in order (an operand's axis of
    length 1 against a longer one is broadcast)."""
    n = site.node
    terms, right, sizes = parse_spec(spec, [tuple(s) for s in shapes])
    out = _shape(n)
    T = site.ctor
    if out:
        w.alloc(site.out, out, n.dtype)
    index = {c: w.loop(sizes[c]) for c in right}
    summed = [c for c in dict.fromkeys("".join(terms)) if c not in index]
    acc = w.new("acc")
    w(f"{acc} = {T}(0)")
    for c in summed:
        index[c] = w.loop(sizes[c])
    factors = []
    for text, term, shape, dt in zip(ins, terms, shapes, dtypes):
        idx = ["0" if s == 1 and sizes[c] != 1 else index[c] for c, s in zip(term, shape)]
        factors.append(cast(n.dtype, at(text, shape, idx), dt))
    w(f"{acc} += {' * '.join(factors)}")
    w.end(len(summed))
    w.set(site.out, out, [index[c] for c in right], acc)
    w.end(len(right))


def _einsum(site: Site) -> list[str]:
    w = Writer(site)
    einsum_lines(w, site, site.attrs["spec"], site.ins, [_shape(a) for a in site.args],
                 [a.dtype for a in site.args])
    return w.lines


def _matmul(site: Site) -> list[str]:
    """matmul and dot: BLAS (``np.dot``) for vectors and matrices of one floating dtype, a
    loop over the stacked matrices around it when batched, else the loops of the einsum
    it equals (integers, mixed dtypes, broadcast stacks)."""
    n, (a, b) = site.node, site.args
    if not a.shape or not b.shape:  # dot with a scalar: a product
        return _copy_map(site, lambda idx: " * ".join(
            cast(n.dtype, at(t, _shape(x), aligned(_shape(x), _shape(n), idx)), x.dtype)
            for t, x in zip(site.ins, site.args)))
    if _blas(site):
        return [f"{site.out} = np.dot({site.ins[0]}, {site.ins[1]})"]
    w = Writer(site)
    if (n.dtype in FLOATS and a.dtype == b.dtype == n.dtype and len(a.shape) >= 2
            and len(b.shape) >= 2 and a.shape[:-2] == b.shape[:-2]):
        w.alloc(site.out, _shape(n), n.dtype)
        idx = w.loops(a.shape[:-2])
        key, t = ", ".join(idx), w.new("p")
        w(f"{t} = np.dot({site.ins[0]}[{key}], {site.ins[1]}[{key}])")
        w.put(site.out, idx, t, _shape(n)[len(idx):])
        w.end(len(idx))
        return w.lines
    spec = matmul_spec(_shape(a), _shape(b), _shape(n))
    einsum_lines(w, site, spec, site.ins, [_shape(a), _shape(b)], [a.dtype, b.dtype])
    return w.lines


def _outer(site: Site) -> list[str]:
    n = site.node
    (a, b) = site.args
    return _copy_map(site, lambda idx: f"{cast(n.dtype, f'{site.ins[0]}[{idx[0]}]', a.dtype)} * "
                                       f"{cast(n.dtype, f'{site.ins[1]}[{idx[1]}]', b.dtype)}")


def _multi_dot(site: Site) -> list[str]:
    """np.linalg.multi_dot: NumPy's order of the products (the cheapest, from the static
    shapes), each one ``np.dot``; a first (last) vector is a row (column)."""
    shapes = [_shape(a) for a in site.args]
    mats = [(1, s[0]) if len(s) == 1 and k == 0 else (s[0], 1) if len(s) == 1 else s
            for k, s in enumerate(shapes)]
    w = Writer(site)
    names = []
    for text, s, m in zip(site.ins, shapes, mats):
        if len(s) == 1:
            t = w.new("m")
            w(f"{t} = np.ascontiguousarray({text}).reshape({m!r})")
            names.append(t)
        else:
            names.append(text)
    order = _chain_order(mats)

    def product(i: int, j: int) -> str:
        if i == j:
            return names[i]
        k = order[i][j]
        left, right = product(i, k), product(k + 1, j)
        t = w.new("p")
        w(f"{t} = np.dot({left}, {right})")
        return t

    result = product(0, len(names) - 1)
    out = _shape(site.node)
    w(f"{site.out} = {result}.reshape({out!r})" if out else f"{site.out} = {result}[0, 0]")
    return w.lines


def _chain_order(mats: Sequence[Sequence[int]]) -> list[list[int]]:
    """NumPy's multi_dot parenthesisation: for three matrices the cheaper of (AB)C and
    A(BC) (ties: (AB)C), else the matrix-chain dynamic programme (``s[i][j]``: the split)."""
    n = len(mats)
    dims = [m[0] for m in mats] + [mats[-1][1]]
    split = [[0] * n for _ in range(n)]
    if n == 3:
        a0, a1b0, b1c0, c1 = dims
        cost1 = a0 * b1c0 * (a1b0 + c1)
        cost2 = a1b0 * c1 * (a0 + b1c0)
        split[0][2] = 1 if cost1 < cost2 else 0
        split[0][1], split[1][2] = 0, 1
        return split
    cost = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _matrix_power(site: Site) -> list[str]:
    """NumPy's binary powering (n static): products of squares, ``inv`` first for n < 0,
    the identity for n = 0; a stack of matrices one at a time."""
    n, (a,) = site.node, site.args
    p = int(site.attrs["n"])
    w = Writer(site)
    lead = _shape(a)[:-2]
    m = a.shape[-1]
    if lead:
        w.alloc(site.out, _shape(n), n.dtype)
        idx = w.loops(lead)
        src, dst = f"{site.ins[0]}[{', '.join(idx)}]", w.new("mp")
    else:
        src, dst = site.ins[0], site.out

    def mul(x: str, y: str) -> str:
        t = w.new("z")
        if n.dtype in FLOATS:
            w(f"{t} = np.dot({x}, {y})")
            return t
        w.alloc(t, (m, m), n.dtype, "zeros")
        i, j, k = w.loop(m), w.loop(m), w.loop(m)
        w(f"{t}[{i}, {j}] += {x}[{i}, {k}] * {y}[{k}, {j}]")
        w.end(3)
        return t

    if p == 0:
        w(f"{dst} = np.eye({m}, dtype={site.ctor})")
    else:
        base = src
        if p < 0:
            base = w.new("ai")
            w(f"{base} = np.linalg.inv({src})")
            p = -p
        if p <= 3:
            result = base if p == 1 else mul(base, base) if p == 2 else mul(mul(base, base),
                                                                             base)
        else:
            z = result = None
            while p > 0:
                z = base if z is None else mul(z, z)
                p, bit = divmod(p, 2)
                if bit:
                    result = z if result is None else mul(result, z)
        w(f"{dst} = np.ascontiguousarray({result}).copy()" if result in (src, base)
          else f"{dst} = {result}")
    if lead:
        w.put(site.out, idx, dst, (m, m))
        w.end(len(lead))
    return w.lines


def _trace(site: Site) -> list[str]:
    """The sum of a diagonal (offset, axes) for every position of the other axes."""
    n, (x,) = site.node, site.args
    xs, w = _shape(x), Writer(site)
    a1, a2 = int(site.attrs["axis1"]) % len(xs), int(site.attrs["axis2"]) % len(xs)
    off = int(site.attrs["offset"])
    out = _shape(n)
    if out:
        w.alloc(site.out, out, n.dtype)
    idx = ["0"] * len(xs)
    rest = [d for d in range(len(xs)) if d not in (a1, a2)]
    for d in rest:
        idx[d] = w.loop(xs[d])
    acc = w.new("acc")
    w(f"{acc} = {site.ctor}(0)")
    lo, hi = max(0, -off), min(xs[a1], xs[a2] - off)
    if hi > lo:
        k = w.loop(hi, lo)
        idx[a1], idx[a2] = k, _affine(off, 1, k)
        w(f"{acc} += {at(site.ins[0], xs, idx)}")
        w.end()
    w.set(site.out, out, [idx[d] for d in rest], acc)
    w.end(len(rest))
    return w.lines


def _convolution(site: Site) -> list[str]:
    """``out[k] = sum_j a[k - j] b[j]`` over every axis at once, ``full`` or ``valid`` per
    axis (the overlaps of the two operands)."""
    n, (a, b) = site.node, site.args
    A, B = _shape(a), _shape(b)
    out, w = _shape(n), Writer(site)
    if not A:
        return _copy_map(site, lambda idx: f"{cast(n.dtype, site.ins[0], a.dtype)} * "
                                           f"{cast(n.dtype, site.ins[1], b.dtype)}")
    modes = (site.attrs["modes"] or "").split(",")
    w.alloc(site.out, out, n.dtype)
    k = w.loops(out)
    acc = w.new("acc")
    w(f"{acc} = {site.ctor}(0)")
    js = []
    for d, (na, nb) in enumerate(zip(A, B)):
        pos = k[d] if modes[d] == "full" else _affine(min(na, nb) - 1, 1, k[d])
        kk = w.new("k")
        w(f"{kk} = {pos}")
        js.append(w.loop(f"min({nb}, {kk} + 1)", f"max(0, {kk} - {na - 1})"))
        js[-1] = (js[-1], kk)
    ai = [f"{kk} - {j}" for j, kk in js]
    bi = [j for j, _ in js]
    w(f"{acc} += {cast(n.dtype, at(site.ins[0], A, ai), a.dtype)} * "
      f"{cast(n.dtype, at(site.ins[1], B, bi), b.dtype)}")
    w.end(len(js))
    w(f"{site.out}[{', '.join(k)}] = {acc}")
    w.end(len(out))
    return w.lines


# -- sorting -------------------------------------------------------------------------------------


def _lanes(site: Site, body: Callable[[Writer, str, str], None], out_dtype: str) -> list[str]:
    """A sort-like op along one axis (or of the flattened array): each lane copied into
    a contiguous buffer, ``body(w, buffer, result)`` writes the lane's result, which is
    copied back."""
    n, (x,) = site.node, site.args
    xs, w = _shape(x), Writer(site)
    axis = site.attrs.get("axis")
    if axis is None:
        buf = w.new("b")
        w(f"{buf} = np.ascontiguousarray({site.ins[0]}).reshape({math.prod(xs)})" if xs
          else f"{buf} = np.full(1, {site.ins[0]})")
        body(w, buf, site.out)
        return w.lines
    a = int(axis) % len(xs)
    w.alloc(site.out, _shape(n), out_dtype)
    idx = ["0"] * len(xs)
    for d in range(len(xs)):
        if d != a:
            idx[d] = w.loop(xs[d])
    lane = ", ".join(":" if d == a else idx[d] for d in range(len(xs)))
    buf, res = w.new("b"), w.new("s")
    w(f"{buf} = {site.ins[0]}[{lane}].copy()")
    body(w, buf, res)
    k = w.loop(xs[a])
    w(f"{site.out}[{', '.join(k if d == a else idx[d] for d in range(len(xs)))}] = {res}[{k}]")
    w.end(len(xs))
    return w.lines


def _sort(site: Site) -> list[str]:
    """np.sort (NaN last)."""
    return _lanes(site, lambda w, b, r: w(f"{r} = np.sort({b})"), site.node.dtype)


def _argsort(site: Site) -> list[str]:
    """np.argsort: a stable sort (equal elements keep their order; NumPy's quicksort leaves
    ties in an order of its own)."""
    return _lanes(site, lambda w, b, r: w(f"{r} = np.argsort({b}, kind='mergesort')"), "int64")


def _searchsorted(site: Site) -> list[str]:
    side = site.attrs["side"]
    v = site.args[1]
    text = f"np.searchsorted({site.ins[0]}, {site.ins[1]}, side={side!r})"
    return [f"{site.out} = np.int64({text})" if not v.shape else f"{site.out} = {text}"]


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
    return [f"{site.out} = np.full({_shape(n)!r}, {value}, dtype={site.ctor})"]


def _constant_of(site: Site) -> list[str]:
    """eye, arange, linspace: the op's own values (static), written as a literal array."""
    from ....ops import REGISTRY

    op = REGISTRY[site.node.op]
    value = np.asarray(op.impl(**{k: site.attrs[k] for k in site.attrs if k in _CONST_KEYS[
        site.node.op]}))
    items = ", ".join(scalar_source(v) for v in value.ravel().tolist())
    text = f"np.array([{items}], dtype={site.ctor})"
    return [f"{site.out} = {text}" if value.ndim == 1 else
            f"{site.out} = {text}.reshape({value.shape!r})"]


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
    **dict.fromkeys(("matmul", "dot"), _matmul), "outer": _outer, "einsum": _einsum,
    "multi_dot": _multi_dot, "matrix_power": _matrix_power, "trace": _trace,
    "convolution": _convolution,
    "sort": _sort, "argsort": _argsort, "searchsorted": _searchsorted,
    **dict.fromkeys(("zeros", "zeros_like"), _filled("0")),
    **dict.fromkeys(("ones", "ones_like"), _filled("1")), "full": _filled(None),
    **dict.fromkeys(("eye", "arange", "linspace"), _constant_of),
}

# the forms whose result may share memory with an operand (or be read only): a value
# that leaves the compiled function is copied first
VIEWS = frozenset({"transpose", "matrix_transpose", "reshape", "squeeze", "expand_dims",
                   "broadcast_to", "stop_gradient", "custom_vjp_call", "custom_jvp_call"})
