"""Indexing: ``x[key]`` as one ``index`` op, its scatter-add adjoint ``index_add``, ``take``.

:func:`getitem` turns a NumPy index key (ints, slices, ``None``, ``...``, integer arrays and
integer Exprs) into ONE ``index`` node whose operands are ``(x, *dynamic_indices)`` and whose
attribute ``key`` is a normalised, hashable tuple that is explicit over x's own axes:

* a non-negative ``int`` selects one position of an axis (negative ints are wrapped);
* a ``slice`` of ints (canonical: ``x[0:5]`` on a length-5 axis is ``slice(None)``);
* ``None`` inserts a new axis of length 1;
* ``"@"`` (:data:`DYN`) stands for the next integer-array operand (NumPy advanced indexing).

Advanced indices (integer arrays, and ints beside them) separated by a slice, ``None`` or
``...`` put their broadcast axes first, as NumPy's rule says: :func:`getitem` moves the axes
they index to the front (a ``transpose``) so that in the ``index`` node they are adjacent,
where they stay in place.

The key covers the op's own (trailing) axes only, so leading batch axes of the operand are
kept: ``impl`` and the emitted source prefix ``:`` for them. The adjoint of ``index`` is
``index_add`` (zeros of x's shape, then ``np.add.at``, so duplicate indices accumulate), and
the adjoint of ``index_add`` is ``index`` with the same key: derivatives of any order close.

Integer index operands get no gradient. Dynamic indices wrap negatives like NumPy; an
out-of-range dynamic index is an :class:`~symgrad.errors.EvaluationError` at run time, an
out-of-range static int a :class:`~symgrad.errors.ShapeError` at build time.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> y = sg.var("y", dtype="int64")
>>> sg.evaluate(x[y], {"x": [1.0, 2.0, 3.0], "y": 2})
3.0
>>> sg.evaluate(sg.grad(sg.sum(x[[0, 0, 2]]), x), {"x": [1.0, 2.0, 3.0]})
array([2., 0., 1.])
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..base.describe import describe
from ..base.errors import EvaluationError, ShapeError
from ..ir.expr import Expr, F, const
from ..ir.op import Op, register, sig
from ..ir.shapes import INTS, Shape, broadcast, fmt, norm_axis, result_dtype
from ..ir.values import exact, freeze
from .structure import gather_map, scatter_map
from .tangent import first, flatten, linear

DYN = "@"  # marks, in a normalised key, where the next integer-array operand goes


class IndexOutOfRangeError(EvaluationError, IndexError):
    """An integer index operand whose value is outside the indexed axis."""


def _guarded(fn):
    """Run an indexing impl; NumPy's bare IndexError becomes an IndexOutOfRangeError."""

    def impl(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except IndexError as e:
            raise IndexOutOfRangeError(str(e)) from None

    impl.__name__ = fn.__name__
    return impl


# -- from a Python key to a normalised one ------------------------------------------------


def getitem(x: Any, key: Any):
    """``x[key]`` with NumPy semantics, as one ``index`` node (or ``x`` itself if trivial).

    Supports ints, slices with int bounds and steps, ``None``, ``...``, tuples of these, and
    integer arrays, lists of ints or integer Exprs (advanced indexing: ``l[y]``). Boolean
    masks are refused (their result shape depends on the data; use ``sg.where``).

    >>> import symgrad as sg
    >>> A = sg.var("A", shape=(2, 3))
    >>> getitem(A, (slice(None), slice(1, None))).shape
    (2, 2)
    >>> A[None, ..., -1].shape
    (1, 2)
    """
    if type(x) is Expr:
        fast = _int_key(x, key)
        if fast is not None:
            return fast
    if not isinstance(x, Expr):
        x = const(x)
    entries, dynamic = _split_key(exact(key))
    explicit = _explicit(x.shape, entries)
    if not dynamic:
        explicit = canonical_key("index", x.shape, explicit, ())
        if all(e == slice(None) for e in explicit):
            return x  # x[:], x[...], x[0:n]: x itself, as NumPy's view of all of it
    x, explicit = _advanced_first(x, explicit, dynamic)
    _check_constant_indices(x.shape, explicit, dynamic)
    return F.index(x, *dynamic, key=explicit)


def _is_advanced(entry: Any) -> bool:
    return isinstance(entry, (int, str))  # an int beside an integer array is one (NumPy's)


def _advanced_first(x: Expr, key: tuple, dynamic: list) -> tuple[Expr, tuple]:
    """NumPy's rule for advanced indices (integer arrays, and ints beside them) separated by a
    slice, None or ``...``: their broadcast axes come first, then the other axes in order.
    Returns ``x`` with the axes they index moved to the front, and the key for it, in which
    they are adjacent (adjacent ones stay in place; ``index`` keeps them there)."""
    if not dynamic or broadcast("index", *(d.shape for d in dynamic)) == ():
        return x, key
    at = [i for i, e in enumerate(key) if _is_advanced(e)]
    if at[-1] - at[0] + 1 == len(at):
        return x, key
    axis_of = list(itertools.accumulate(e is not None for e in key))
    front = [axis_of[i] - 1 for i in at]
    rest = [axis_of[i] - 1 for i, e in enumerate(key) if e is not None and not _is_advanced(e)]
    moved = F.transpose(x, axes=tuple(front + rest))
    return moved, tuple(key[i] for i in at) + tuple(e for e in key if not _is_advanced(e))


_FULL = (slice(None),) * 64


def _int_key(x: Expr, key: Any) -> Expr | None:
    """``x[key]`` for a key of Python ints in range (an int or a tuple of them: ``obs[k, 0]``
    in a loop), its canonical attributes, shape and dtype written at once; None for any other
    key, which the general path checks and builds (the same node for the same key)."""
    t = type(key)
    if t is int:
        ints = (key,)
    elif t is tuple and key and all(type(e) is int for e in key):
        ints = key
    else:
        return None
    shape = x.shape
    m = len(ints)
    if m > len(shape) or 0 in shape[m:]:  # an error, or zero-length slices (canonical 0:0)
        return None
    out = []
    for k, n in zip(ints, shape):
        if not -n <= k < n:
            return None
        out.append(k % n)
    attrs = {"key": (*out, *_FULL[: len(shape) - m]), "batch": 0}  # what _index_prepare makes
    g = x.graph
    return Expr(g, g.add(_INDEX, (x.node,), attrs, freeze(attrs), (shape[m:], x.data.dtype)))


def _check_constant_indices(shape: Shape, key: tuple, dynamic: list) -> None:
    """Index arrays known now are checked now: an out-of-range entry is a ShapeError."""
    it = iter(dynamic)
    axis = 0
    for e in key:
        if e is None:
            continue
        if isinstance(e, str):
            d = next(it)
            if isinstance(d, np.ndarray) and d.size:
                size = shape[axis]
                bad = d[(d < -size) | (d >= size)]
                if bad.size:
                    raise ShapeError(f"index {int(bad.flat[0])} is out of bounds for axis "
                                     f"{axis} with size {size} (array shape {fmt(shape)})")
        axis += 1


def _split_key(key: Any) -> tuple[list, list]:
    """Raw key entries (ints, slices, None, Ellipsis, DYN) and the dynamic index operands."""
    items = key if isinstance(key, tuple) else (key,)
    entries: list = []
    dynamic: list = []
    for k in items:
        if isinstance(k, Expr):
            _check_index_dtype(k.dtype, "the index " + (f"'{k.name}'" if k.name else "expression"))
            entries.append(DYN)
            dynamic.append(k)
        elif isinstance(k, (bool, np.bool_)):
            raise ShapeError("indexing with a boolean is not supported; use sg.where(cond, a, b)")
        elif isinstance(k, (int, np.integer)):
            entries.append(int(k))
        elif isinstance(k, slice):
            entries.append(_check_slice(k))
        elif k is None or k is Ellipsis:
            entries.append(k)
        elif isinstance(k, (list, tuple, np.ndarray, range)):
            entries.append(DYN)
            dynamic.append(_index_array(np.arange(k.start, k.stop, k.step)
                                        if isinstance(k, range) else k))
        else:
            raise ShapeError(f"cannot index with {type(k).__name__} {_short(k)}: use ints, "
                             "slices, None, ..., or integer arrays / integer expressions")
    return entries, dynamic


def _short(value: Any) -> str:
    return "a symbolic expression" if isinstance(value, Expr) else describe(value, 40)


def _check_index_dtype(dtype: str, what: str) -> None:
    if dtype == "bool":
        raise ShapeError(f"boolean mask indexing is not supported ({what}): the result shape "
                         "would depend on the data; use sg.where(mask, x, 0.0) instead")
    if dtype not in INTS:
        raise ShapeError(f"{what} has dtype {dtype}; indices must be integers")


def _check_slice(s: slice) -> slice:
    for part in (s.start, s.stop, s.step):
        if part is not None and (
            isinstance(part, (bool, np.bool_)) or not isinstance(part, (int, np.integer))
        ):
            raise ShapeError(f"slice bounds must be Python ints or None, got {_short(part)} "
                             "(a symbolic bound would make the result shape depend on data)")
    if s.step == 0:
        raise ShapeError("slice step cannot be zero")
    return slice(*(None if p is None else int(p) for p in (s.start, s.stop, s.step)))


def _index_array(value: Any) -> np.ndarray:
    """A list / tuple / array used as an index: an int64 array (a constant operand)."""
    try:
        arr = np.asarray(value)
    except ValueError:
        raise ShapeError(f"cannot index with the ragged sequence {_short(value)}") from None
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # NumPy reads an empty list as an integer index
    if arr.dtype.kind not in "iu":
        kind = "bool" if arr.dtype.kind == "b" else str(arr.dtype)
        _check_index_dtype(kind, f"the index {_short(value)}")
    return arr.astype(np.int64)


def _explicit(shape: Shape, entries: list) -> tuple:
    """Resolve ``...`` and the implicit trailing ``:``: one entry per axis (plus Nones)."""
    if entries.count(Ellipsis) > 1:
        raise ShapeError("an index can only have a single ellipsis ('...')")
    used = sum(e is not None and e is not Ellipsis for e in entries)
    if used > len(shape):
        raise ShapeError(f"too many indices: the array has shape {fmt(shape)} (rank "
                         f"{len(shape)}) but the index has {used} entries")
    fill = [slice(None)] * (len(shape) - used)
    if Ellipsis not in entries:
        return tuple(entries + fill)
    at = entries.index(Ellipsis)
    return tuple(entries[:at] + fill + entries[at + 1:])


# -- the normalised key -------------------------------------------------------------------


def canonical_key(op: str, xshape: Shape, key: Any, dyn_shapes: tuple[Shape, ...]) -> tuple:
    """Validate an explicit key over the TRAILING axes of ``xshape``; canonical form.

    Negative ints are wrapped, out-of-range ints raise :class:`ShapeError` naming the axis,
    slices become canonical, advanced indices separated by slices/None are refused.
    """
    if not isinstance(key, tuple):
        raise ShapeError(f"{op}: key must be a tuple, got {_short(key)}")
    own = sum(e is not None for e in key)
    if own > len(xshape):
        raise ShapeError(f"{op}: the key indexes {own} axes but the operand has shape "
                         f"{fmt(xshape)}")
    if sum(isinstance(e, str) for e in key) != len(dyn_shapes):
        raise ShapeError(f"{op}: the key has {key.count(DYN)} index operands, "
                         f"got {len(dyn_shapes)}")
    batch = len(xshape) - own
    out, axis = [], batch
    for e in key:
        if e is None:
            out.append(None)
            continue
        size = xshape[axis]
        if isinstance(e, str) and e == DYN:
            out.append(DYN)
        elif isinstance(e, slice):
            out.append(_canonical_slice(_check_slice(e), size))
        elif isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)):
            if not -size <= e < size:
                raise ShapeError(f"index {int(e)} is out of range for axis {axis} with size "
                                 f"{size} (array shape {fmt(xshape)})")
            out.append(int(e) % size)
        else:
            raise ShapeError(f"{op}: invalid key entry {_short(e)}")
        axis += 1
    _check_adjacent(tuple(out), dyn_shapes)
    return tuple(out)


def _canonical_slice(s: slice, n: int) -> slice:
    """The simplest slice selecting the same positions of a length-``n`` axis."""
    r = range(*s.indices(n))
    if len(r) == 0:
        return slice(0, 0)
    first, last, step = r[0], r[-1], r.step
    if step > 0:
        start = None if first == 0 else first
        stop = None if last + step >= n else last + 1
    else:
        start = None if first == n - 1 else first
        stop = None if last + step < 0 else last - 1
    return slice(start, stop, None if step == 1 else step)


def _check_adjacent(key: tuple, dyn_shapes: tuple[Shape, ...]) -> None:
    """Refuse advanced indices that NumPy would move to the front (they move batch axes)."""
    if not dyn_shapes or broadcast("index", *dyn_shapes) == ():
        return
    at = [i for i, e in enumerate(key) if isinstance(e, (int, str))]
    if at[-1] - at[0] + 1 != len(at):
        raise ShapeError(
            "integer-array indices separated by a slice, None or '...' are not supported "
            "(NumPy moves their axes to the front); index in two steps, e.g. x[i][:, j]"
        )


def index_shape(xshape: Shape, key: tuple, dyn_shapes: tuple[Shape, ...]) -> tuple[int, Shape]:
    """``(batch, result shape)`` of ``x[key]`` for a canonical key over x's trailing axes."""
    own = sum(e is not None for e in key)
    if own > len(xshape):
        raise ShapeError(f"index: the key indexes {own} axes but the operand has shape "
                         f"{fmt(xshape)}")
    batch = len(xshape) - own
    group = broadcast("index", *dyn_shapes) if dyn_shapes else None
    out, axis, placed = list(xshape[:batch]), batch, False
    for e in key:
        if e is None:
            out.append(1)
            continue
        if isinstance(e, slice):
            out.append(len(range(*e.indices(xshape[axis]))))
        elif group is not None and not placed:
            out.extend(group)
            placed = True
        axis += 1
    return batch, tuple(out)


def numpy_key(key: tuple, indices: tuple, batch: int) -> tuple:
    """The NumPy index for ``key`` with batch axes kept and the operands substituted."""
    it = iter(indices)
    return (slice(None),) * batch + tuple(next(it) if isinstance(e, str) else e for e in key)


def key_source(key: tuple, names: list[str], batch: int) -> str:
    """Key text such as ``:, 1:, None, y`` from literal ints/slices and operand names."""
    it = iter(names)
    parts = [":"] * batch
    for e in key:
        if e is None:
            parts.append("None")
        elif isinstance(e, str):
            parts.append(next(it))
        elif isinstance(e, slice):
            text = ":".join("" if p is None else str(int(p)) for p in (e.start, e.stop))
            parts.append(text if e.step is None else f"{text}:{int(e.step)}")
        else:
            parts.append(str(int(e)))
    while parts and parts[-1] == ":":  # trailing full slices are implicit in NumPy
        parts.pop()
    return ", ".join(parts) if parts else "..."


def index_along(x, own_shape: Shape, axis: int, item: int | slice):
    """``x`` indexed by ``item`` on (negative) ``axis`` of its trailing ``own_shape`` part."""
    entries = [slice(None)] * len(own_shape)
    entries[len(own_shape) + axis] = item
    return F.index(x, key=tuple(entries))


# -- index --------------------------------------------------------------------------------


def _index_prepare(shapes, dtypes, attrs):
    key = canonical_key("index", shapes[0], attrs["key"], shapes[1:])
    return {"key": key, "batch": len(shapes[0]) - sum(e is not None for e in key)}


def _index_infer(shapes, dtypes, attrs):
    for d in dtypes[1:]:
        _check_index_dtype(d, "an index operand")
    return index_shape(shapes[0], attrs["key"], shapes[1:])[1], dtypes[0]


@_guarded
def _index_impl(x, *indices, key, batch):
    return np.asarray(x[numpy_key(key, indices, batch)])


def _index_write(marks, attrs):
    return f"{marks[0]}[{key_source(attrs['key'], marks[1:], attrs['batch'])}]"


def _index_rule(n, g):
    x = n.args[0]
    gx = F.index_add(g, *n.args[1:], key=n.attrs["key"], shape=x.shape[n.attrs["batch"]:])
    return (gx,) + (None,) * (len(n.args) - 1)


def _examples_index(rng):
    x = rng.normal(size=(4, 3))
    return [
        ([x], {"key": (slice(1, None), slice(None))}),
        ([x], {"key": (slice(None, None, -1), 2)}),
        ([x], {"key": (None, 0, slice(None, 2))}),
        ([x, np.array([0, 0, 3, 1])], {"key": (DYN, slice(None))}),
        ([x, np.array([[2, 2], [0, 1]])], {"key": (slice(None), DYN)}),
        ([x, np.array(3), np.array([1, 1, 0])], {"key": (DYN, DYN)}),
    ]


_INDEX = register(Op(
    name="index", complex=True, signature=sig("x", "*indices", key=()), prepare=_index_prepare,
    infer=_index_infer, impl=_index_impl, backprop=_index_rule, forward=linear,
    sparsity=gather_map, examples=_examples_index,
    front=getitem, write=_index_write, public=False, domain=None,
    doc="x[key]: basic and integer-array indexing; build it with x[...] or sg.getitem",
))


# -- index_add: the adjoint of index ------------------------------------------------------


def _scatter_prepare(shapes, dtypes, attrs):
    shape = attrs["shape"]
    if shape is None:
        raise ShapeError("index_add: the shape of the result is required")
    shape = tuple(int(d) for d in shape)
    key = canonical_key("index_add", shape, attrs["key"], shapes[1:])
    _, part = index_shape(shape, key, shapes[1:])
    batch = len(shapes[0]) - len(part)
    if batch < 0 or tuple(shapes[0][batch:]) != part:
        raise ShapeError(f"index_add: the values have shape {fmt(shapes[0])}, but indexing "
                         f"shape {fmt(shape)} by this key gives {fmt(part)}")
    # only index arrays can repeat a position; a caller that knows they do not says unique
    accumulate = any(len(s) > 0 for s in shapes[1:]) and not attrs.get("unique", False)
    return {"key": key, "shape": shape, "batch": batch, "accumulate": accumulate}


def _scatter_infer(shapes, dtypes, attrs):
    for d in dtypes[1:]:
        _check_index_dtype(d, "an index operand")
    _, part = index_shape(attrs["shape"], attrs["key"], shapes[1:])
    batch = attrs["batch"]
    if batch < 0 or tuple(shapes[0][batch:]) != part or len(shapes[0]) != batch + len(part):
        raise ShapeError(f"index_add: the values have shape {fmt(shapes[0])}, but indexing "
                         f"shape {fmt(attrs['shape'])} by this key gives {fmt(part)}")
    return tuple(shapes[0][:batch]) + attrs["shape"], dtypes[0]


def _sg_index_add(g, key, shape, accumulate):
    z = np.zeros(shape, np.result_type(g))
    if accumulate:
        np.add.at(z, key, g)  # duplicate indices accumulate
    else:
        z[key] = g  # this key never selects a position twice
    return z


@_guarded
def _scatter_impl(g, *indices, key, shape, batch, accumulate):
    g = np.asarray(g)
    return _sg_index_add(g, numpy_key(key, indices, batch), g.shape[:batch] + shape, accumulate)


def _scatter_rule(n, g):
    gg = F.index(g, *n.args[1:], key=n.attrs["key"])
    return (gg,) + (None,) * (len(n.args) - 1)


def _scatter_sparsity(n):
    attrs = {"key": n.attrs["key"], "batch": n.attrs["batch"]}
    index_ops = tuple(range(1, len(n.args)))
    return (scatter_map(n, _index_impl, attrs, 0, index_ops),) + (None,) * len(index_ops)


def _examples_scatter(rng):
    return [
        ([rng.normal(size=(3, 3))], {"key": (slice(1, None), slice(None)), "shape": (4, 3)}),
        ([rng.normal(size=(1, 2))], {"key": (None, 1, slice(None, None, -2)), "shape": (2, 4)}),
        ([rng.normal(size=(5, 2)), np.array([0, 0, 3, 1, 0])],
         {"key": (DYN, slice(None)), "shape": (4, 2)}),
    ]


register(Op(
    name="index_add", signature=sig("g", "*indices", key=(), shape=None, unique=False),
    complex=True,
    prepare=_scatter_prepare, infer=_scatter_infer, impl=_scatter_impl,
    backprop=_scatter_rule, forward=linear, sparsity=_scatter_sparsity,
    examples=_examples_scatter, public=False, domain=None,
    doc="zeros of `shape` with g added at [key] (np.add.at: duplicate indices accumulate)",
))


# -- scatter_sum: several index_adds into one buffer ---------------------------------------
#
# Inside B, ``index_add(a, k1) + index_add(b, k2)`` (the adjoint of x where x[k1] and x[k2]
# are both used) would allocate a full-size array per use and add them: O(uses * size).
# The adjoint cleanup pass turns such sums into one ``scatter_sum``, which writes every part
# into one buffer. Its operands are the parts' values and index operands, concatenated;
# ``parts`` holds ``(key, number of index operands, accumulate)`` for each.


def _sg_scatter_sum(shape, parts):
    z = np.zeros(shape, np.result_type(*[g for g, _, _ in parts]))
    for g, key, accumulate in parts:
        if accumulate:
            np.add.at(z, key, g)  # duplicate indices accumulate
        else:
            z[key] += g
    return z


def _scatter_sum_infer(shapes, dtypes, attrs):
    batch, shape = attrs["batch"], attrs["shape"]
    full = None
    for (g, dyn), (key, _, _) in zip(split_parts(list(range(len(shapes))), attrs["parts"]),
                                     attrs["parts"]):
        for d in dyn:
            _check_index_dtype(dtypes[d], "an index operand")
        _, part = index_shape(shape, key, tuple(shapes[d] for d in dyn))
        if tuple(shapes[g][batch:]) != part or len(shapes[g]) != batch + len(part):
            raise ShapeError(f"scatter_sum: a part of shape {fmt(shapes[g])} does not fit "
                             f"shape {fmt(shape)} indexed by its key")
        full = full or tuple(shapes[g][:batch]) + shape
    return full, result_dtype(*(dtypes[g] for g, _ in split_parts(list(range(len(shapes))),
                                                                    attrs["parts"])))


@_guarded
def _scatter_sum_impl(*args, parts, shape, batch):
    pieces = split_parts(args, parts)
    lead = np.shape(pieces[0][0])[:batch]
    return _sg_scatter_sum(lead + shape, [
        (g, numpy_key(key, dyn, batch), acc) for (g, dyn), (key, _, acc) in zip(pieces, parts)])


def split_parts(args, parts):
    """The operands of each part: ``[(g, dyn_indices), ...]``."""
    out, k = [], 0
    for _, n_dyn, _ in parts:
        out.append((args[k], tuple(args[k + 1: k + 1 + n_dyn])))
        k += 1 + n_dyn
    return out


def _scatter_sum_rule(n, g):
    out = []
    for (_g, dyn), (key, _, _) in zip(split_parts(n.args, n.attrs["parts"]), n.attrs["parts"]):
        out += [F.index(g, *dyn, key=key)] + [None] * len(dyn)
    return tuple(out)


def _scatter_sum_forward(n, t):
    """The scatter of the parts' tangents (parts without one are left out)."""
    operands, parts, k = [], [], 0
    extra = 0
    for (g, dyn), part in zip(split_parts(n.args, n.attrs["parts"]), n.attrs["parts"]):
        tg = t[k]
        k += 1 + len(dyn)
        if tg is not None:
            extra = tg.ndim - g.ndim
            operands += [tg, *dyn]
            parts.append(part)
    if not parts:
        return None
    return F.scatter_sum(*operands, parts=tuple(parts), shape=n.attrs["shape"],
                         batch=n.attrs["batch"] + extra)


def _scatter_sum_sparsity(n):
    out, k = [], 0
    batch = n.attrs["batch"]
    for (_g, dyn), (key, _, _) in zip(split_parts(n.args, n.attrs["parts"]), n.attrs["parts"]):
        index_ops = tuple(range(k + 1, k + 1 + len(dyn)))
        out += [scatter_map(n, _index_impl, {"key": key, "batch": batch}, k, index_ops)]
        out += [None] * len(dyn)
        k += 1 + len(dyn)
    return tuple(out)


def scatter_parts(node) -> tuple[list, tuple, Shape, int] | None:
    """An index_add or scatter_sum node as ``(operands, parts, buffer shape, batch)``; None
    for any other node. Two scatters into buffers of one shape are one scatter_sum of their
    parts (the adjoint cleanup pass merges them)."""
    if node.op == "index_add":
        part = (node.attrs["key"], len(node.args) - 1, node.attrs["accumulate"])
        return list(node.args), (part,), node.attrs["shape"], node.attrs["batch"]
    if node.op == "scatter_sum":
        return list(node.args), node.attrs["parts"], node.attrs["shape"], node.attrs["batch"]
    return None


def _examples_scatter_sum(rng):
    parts = ((slice(1, None),), 0, False), ((slice(None, -1),), 0, False), ((DYN,), 1, True)
    return [([rng.normal(size=3), rng.normal(size=3), rng.normal(size=2), np.array([0, 0])],
             {"parts": parts, "shape": (4,), "batch": 0})]


register(Op(
    name="scatter_sum", complex=True, signature=sig("*operands", parts=(), shape=None, batch=0),
    infer=_scatter_sum_infer, impl=_scatter_sum_impl, backprop=_scatter_sum_rule,
    forward=_scatter_sum_forward, sparsity=_scatter_sum_sparsity,
    examples=_examples_scatter_sum, public=False, domain=None,
    doc="the sum of several index_adds of one shape, written into one buffer",
))


# -- take ---------------------------------------------------------------------------------


def _take_prepare(shapes, dtypes, attrs):
    axis = attrs["axis"]
    return {"axis": None if axis is None else norm_axis("take", axis, len(shapes[0]))}


def _take_infer(shapes, dtypes, attrs):
    _check_index_dtype(dtypes[1], "take: the indices")
    xs, axis = shapes[0], attrs["axis"]
    if axis is None:
        return tuple(shapes[1]), dtypes[0]
    at = len(xs) + axis
    return tuple(xs[:at]) + tuple(shapes[1]) + tuple(xs[at + 1:]), dtypes[0]


def _take_key(axis: int) -> tuple:
    return (DYN,) + (slice(None),) * (-axis - 1)


def _take_rule(n, g):
    x, idx = n.args
    axis = n.attrs["axis"]
    if axis is None:
        flat = F.index_add(g, idx, key=(DYN,), shape=(x.size,))
        return F.reshape(flat, shape=x.shape, src_ndim=1), None
    return F.index_add(g, idx, key=_take_key(axis), shape=x.shape[axis:]), None


def _take_forward(n, t):
    x, idx = n.args
    if n.attrs["axis"] is None:
        return F.take(flatten(t, x), idx, axis=-1)
    return F.take(t, idx, axis=n.attrs["axis"])


def _examples_take(rng):
    x = rng.normal(size=(3, 4))
    return [([x, np.array([3, 0, 3])], {"axis": 1}), ([x, np.array([[1, 11]])], {"axis": None})]


register(Op(
    name="take", signature=sig("x", "indices", "=axis", axis=None), prepare=_take_prepare,
    complex=True,
    infer=_take_infer, impl=_guarded(lambda x, indices, axis: np.take(x, indices, axis=axis)),
    backprop=_take_rule, forward=first(_take_forward), sparsity=gather_map,
    examples=_examples_take, domain=None,
    doc="elements of x at integer `indices` along `axis` (x flattened when axis is None)",
))


def static_key(node: Any) -> tuple | None:
    """The key of ``node`` when it is ``x[key]`` with static basic indexing only (ints,
    slices, None) over all of ``x``'s axes (no batch axes), else None: what a loop's
    per-step slice looks like (symgrad.passes.rolling and .reductions)."""
    if node.op != "index" or len(node.args) != 1 or node.attrs["batch"] != 0:
        return None
    key = node.attrs["key"]
    return None if any(isinstance(e, str) for e in key) else key
