"""NumPy's shaping and creation functions that are not one op, built from ops (transpose,
reshape, index, concatenate, where ...): ``moveaxis swapaxes ravel atleast_nd *stack split
tile repeat pad roll flip rot90 diag diagonal tril triu take_along_axis meshgrid array
asarray *_like linspace logspace`` and friends (``diff``, ``convolve`` ... are
:mod:`.numpy_calculus`'s, ``einsum`` :mod:`.numpy_einsum`'s).

Everything is static in shape: split points, repeats, pad widths and shifts are numbers.
Functions whose result shape depends on the *values* (``nonzero``, ``unique``, boolean
masks) raise :class:`~symgrad.errors.UnsupportedError` saying what to use instead.

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(2, 3))
>>> sg.numpy.moveaxis(x, 0, -1).shape, sg.numpy.pad(x, 1).shape, len(sg.numpy.split(x, 3, 1))
((3, 2), (4, 5), 3)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.errors import ShapeError, UnsupportedError
from ..ir.expr import Expr, F, const
from ..ir.op import UNSUPPORTED, SignatureError
from .numpy_define import as_expr, axes_tuple, axis_int, define, no_out


def _ints(name: str, what: str, value: Any) -> tuple[int, ...]:
    items = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
           for v in items):
        raise ShapeError(f"{name}: {what} must be ints, got {value!r}")
    return tuple(int(v) for v in items)


def slice_along(a: Expr, axis: int, item: Any) -> Expr:
    key = [slice(None)] * a.ndim
    key[axis] = item
    return a[tuple(key)]


# -- axes -------------------------------------------------------------------------------------


@define("moveaxis", "a", "=source", "=destination", source=None, destination=None)
def moveaxis(a, source, destination):
    a = as_expr(a)
    src = [axis_int("moveaxis", s, a.ndim) for s in _ints("moveaxis", "source", source)]
    dst = [axis_int("moveaxis", d, a.ndim) for d in _ints("moveaxis", "destination",
                                                        destination)]
    if len(src) != len(dst):
        raise ShapeError("moveaxis: source and destination need the same number of axes")
    order = [k for k in range(a.ndim) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a if order == list(range(a.ndim)) else F.transpose(a, tuple(order))


@define("swapaxes", "a", "=axis1", "=axis2", axis1=None, axis2=None)
def swapaxes(a, axis1, axis2):
    a = as_expr(a)
    i, j = axis_int("swapaxes", axis1, a.ndim), axis_int("swapaxes", axis2, a.ndim)
    order = list(range(a.ndim))
    order[i], order[j] = order[j], order[i]
    return a if i == j else F.transpose(a, tuple(order))


@define("rollaxis", "a", "=axis", "=start", axis=None, start=0)
def rollaxis(a, axis, start=0):
    a = as_expr(a)
    axis = axis_int("rollaxis", axis, a.ndim)
    if not -a.ndim <= start <= a.ndim:
        raise ShapeError(f"rollaxis: start {start} is out of range for rank {a.ndim}")
    start = start % (a.ndim + 1) if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


@define("permute_dims", "a", "=axes", axes=None)
def permute_dims(a, axes=None):
    return F.transpose(a, axes)


@define("ravel", "a", "=order", order="C", strings=("order",))
def ravel(a, order="C"):
    _c_order("ravel", order)
    a = as_expr(a)
    return a if a.ndim == 1 else F.reshape(a, (a.size,))


@define("reshape", "a", "=shape", "=order", shape=None, order="C", newshape=None, copy=None,
        src_ndim=None, strings=("order",))
def reshape(a, shape=None, order="C", *, newshape=None, copy=None, src_ndim=None):
    """NumPy's reshape (C order); ``src_ndim`` reshapes only that many trailing axes."""
    _c_order("reshape", order)
    return F.reshape(as_expr(a), newshape if shape is None else shape, src_ndim=src_ndim)


def _sequence(name: str, arrays: Any) -> list[Expr]:
    """A non-empty list or tuple of arrays; an array of one axis or more is the list of its
    rows (NumPy iterates it: ``vstack(x)``)."""
    if isinstance(arrays, (Expr, np.ndarray)) and np.ndim(arrays) >= 1 and len(arrays):
        return [as_expr(a) for a in arrays]
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise SignatureError(f"{name}() takes a non-empty list of arrays")
    return [as_expr(a) for a in arrays]


def _along(name: str, a: Any, axis: Any) -> tuple[Expr, int]:
    """The array and a checked axis; ``axis=None`` means the flattened array, as in NumPy."""
    a = as_expr(a)
    if axis is None:
        return ravel(a), 0
    return a, axis_int(name, axis, a.ndim)


def _c_order(name: str, order: str) -> None:
    if order not in ("C", "A", "K", None):  # None: the default, as in NumPy
        raise UnsupportedError(f"{name}: order={order!r} is not supported (only C order)")


_ATLEAST = {  # (rank wanted, rank given) -> where the old axes go
    (1, 0): lambda s: (1,), (2, 0): lambda s: (1, 1), (2, 1): lambda s: (1, *s),
    (3, 0): lambda s: (1, 1, 1), (3, 1): lambda s: (1, *s, 1), (3, 2): lambda s: (*s, 1),
}


def _atleast(name: str, nd: int):
    @define(name, "*arys")
    def fn(*arys):
        out = [as_expr(a) for a in arys]
        out = [F.reshape(a, _ATLEAST[nd, a.ndim](a.shape)) if a.ndim < nd else a for a in out]
        return out[0] if len(out) == 1 else out

    return fn


atleast_1d = _atleast("atleast_1d", 1)
atleast_2d = _atleast("atleast_2d", 2)
atleast_3d = _atleast("atleast_3d", 3)


# -- joining and splitting -------------------------------------------------------------------


@define("concatenate", "[arrays]", "=axis", axis=0, out=None, dtype=None, casting="same_kind",
        aliases=("concat",), strings=("dtype", "casting"))
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    no_out("concatenate", out)
    arrays = _sequence("concatenate", arrays)
    if dtype is not None:
        arrays = [F.astype(a, np.dtype(dtype).name) for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    return arrays[0] if len(arrays) == 1 else F.concatenate(arrays, axis=axis)


@define("stack", "[arrays]", "=axis", axis=0, out=None, dtype=None, casting="same_kind",
        strings=("dtype", "casting"))
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    no_out("stack", out)
    arrays = _sequence("stack", arrays)
    if dtype is not None:
        arrays = [F.astype(a, np.dtype(dtype).name) for a in arrays]
    return F.stack(arrays, axis=axis)


@define("vstack", "[tup]", aliases=("row_stack",), dtype=None, casting="same_kind")
def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in _sequence("vstack", tup)], axis=0, dtype=dtype)


@define("hstack", "[tup]", dtype=None, casting="same_kind")
def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in _sequence("hstack", tup)]
    return concatenate(arrs, axis=0 if all(a.ndim == 1 for a in arrs) else 1, dtype=dtype)


@define("dstack", "[tup]")
def dstack(tup):
    return concatenate([atleast_3d(a) for a in _sequence("dstack", tup)], axis=2)


@define("column_stack", "[tup]")
def column_stack(tup):
    cols = _sequence("column_stack", tup)  # one 1-D array: its elements, each a 1x1 column
    return concatenate([F.reshape(c, (c.size, 1)) if c.ndim < 2 else c for c in cols],
                       axis=1)


@define("block", "[arrays]")
def block(arrays):
    """Nested lists joined innermost-last, as NumPy's block (arrays of equal rank)."""
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) else 0

    def join(x, level, total):
        if not isinstance(x, list):
            return as_expr(x)
        parts = [join(p, level + 1, total) for p in x]
        nd = max(total, max(p.ndim for p in parts))
        parts = [F.reshape(p, (1,) * (nd - p.ndim) + p.shape) if p.ndim < nd else p
                 for p in parts]
        return concatenate(parts, axis=-(total - level))

    return join(arrays, 0, depth(arrays))


def _split_points(name: str, n: int, spec: Any, even: bool) -> list[int]:
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        k = int(spec)
        if k <= 0:
            raise ShapeError(f"{name}: the number of sections must be positive, got {k}")
        if even and n % k:
            raise ShapeError(f"{name}: an axis of size {n} cannot be split into {k} equal "
                             "parts (use array_split)")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        return list(np.cumsum(sizes[:-1]).tolist())
    return list(_ints(name, "split points", spec))


def _split(name: str, ary: Any, spec: Any, axis: int, even: bool) -> list[Expr]:
    a = as_expr(ary)
    axis = axis_int(name, axis, a.ndim)
    n = a.shape[axis]
    cuts = [0, *(min(max(c, 0), n) if c >= 0 else max(n + c, 0)
                 for c in _split_points(name, n, spec, even)), n]
    return [slice_along(a, axis, slice(lo, max(lo, hi))) for lo, hi in zip(cuts, cuts[1:])]


@define("split", "ary", "=indices_or_sections", "=axis", indices_or_sections=None, axis=0)
def split(ary, indices_or_sections, axis=0):
    return _split("split", ary, indices_or_sections, axis, True)


@define("array_split", "ary", "=indices_or_sections", "=axis", indices_or_sections=None,
        axis=0)
def array_split(ary, indices_or_sections, axis=0):
    return _split("array_split", ary, indices_or_sections, axis, False)


@define("hsplit", "ary", "=indices_or_sections", indices_or_sections=None)
def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=1 if as_expr(ary).ndim > 1 else 0)


@define("vsplit", "ary", "=indices_or_sections", indices_or_sections=None)
def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=0)


@define("dsplit", "ary", "=indices_or_sections", indices_or_sections=None)
def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=2)


@define("append", "arr", "values", "=axis", axis=None)
def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


@define("delete", "arr", "=obj", "=axis", obj=None, axis=None)
def delete(arr, obj, axis=None):
    a, axis = _along("delete", arr, axis)
    n = a.shape[axis]
    drop = np.arange(n)[obj] if isinstance(obj, slice) else np.asarray(obj, dtype=np.int64)
    keep = np.setdiff1d(np.arange(n), np.asarray(drop) % n if n else drop)
    return slice_along(a, axis, keep)


# -- repeating, padding, rolling, flipping -------------------------------------------------------


@define("tile", "A", "=reps", reps=None)
def tile(A, reps):
    a = as_expr(A)
    reps = _ints("tile", "reps", reps)
    nd = max(a.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    a = F.reshape(a, (1,) * (nd - a.ndim) + a.shape) if a.ndim < nd else a
    inter = tuple(x for r, d in zip(reps, a.shape) for x in (r, d))
    spread = F.broadcast_to(F.reshape(a, tuple(x for d in a.shape for x in (1, d))), inter)
    return F.reshape(spread, tuple(r * d for r, d in zip(reps, a.shape)))


@define("repeat", "a", "=repeats", "=axis", repeats=None, axis=None)
def repeat(a, repeats, axis=None):
    a, axis = _along("repeat", a, axis)
    counts = np.broadcast_to(np.asarray(_ints("repeat", "repeats", repeats)), (a.shape[axis],))
    return slice_along(a, axis, np.repeat(np.arange(a.shape[axis]), counts))


def _pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """The source index of each position of a padded axis, for the gather-type modes."""
    pos = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(pos, 0, n - 1)
    if mode == "wrap":
        return pos % n
    period = 2 * n - 2 if mode == "reflect" else 2 * n
    if period == 0:
        return np.zeros_like(pos)
    p = pos % period
    return np.where(p < n, p, period - p - (0 if mode == "reflect" else 1))


@define("pad", "array", "=pad_width", "=mode", pad_width=None, mode="constant",
        constant_values=0, strings=("mode",))
def pad(array, pad_width, mode="constant", *, constant_values=0, **kwargs):
    a = as_expr(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (a.ndim, 2)).tolist()
    if any(w < 0 for pair in widths for w in pair):
        raise ShapeError(f"pad: widths must be non-negative, got {pad_width!r}")
    if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise UnsupportedError(f"pad: mode={mode!r} is not supported (constant, edge, "
                               "reflect, symmetric, wrap)")
    values = np.broadcast_to(np.asarray(constant_values, dtype=np.float64), (a.ndim, 2))
    for axis, (before, after) in enumerate(widths):
        n = a.shape[axis]
        if before == after == 0:
            continue
        if mode == "constant":
            parts = []
            for width, value in ((before, values[axis, 0]), (after, values[axis, 1])):
                shape = a.shape[:axis] + (width,) + a.shape[axis + 1:]
                parts.append(F.full(shape, float(value), dtype=a.dtype) if width else None)
            a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], axis=axis)
        else:
            if n == 0:
                raise ShapeError(f"pad: mode {mode!r} cannot pad an empty axis")
            a = slice_along(a, axis, _pad_index(n, before, after, mode))
    return a


@define("roll", "a", "=shift", "=axis", shift=None, axis=None)
def roll(a, shift, axis=None):
    a = as_expr(a)
    if axis is None:
        return F.reshape(roll(ravel(a), shift, 0), a.shape)
    shifts, axes = _ints("roll", "shift", shift), _ints("roll", "axis", axis)
    shifts = shifts * len(axes) if len(shifts) == 1 else shifts
    for s, ax in zip(shifts, axes):
        ax = axis_int("roll", ax, a.ndim)
        n = a.shape[ax]
        if n:
            a = slice_along(a, ax, (np.arange(n) - s) % n)
    return a


@define("flip", "m", "=axis", axis=None)
def flip(m, axis=None):
    m = as_expr(m)
    key = [slice(None)] * m.ndim
    for ax in axes_tuple("flip", axis, m.ndim):
        key[ax] = slice(None, None, -1)
    return m[tuple(key)]


@define("fliplr", "m")
def fliplr(m):
    return flip(m, 1)


@define("flipud", "m")
def flipud(m):
    return flip(m, 0)


@define("rot90", "m", "=k", "=axes", k=1, axes=(0, 1))
def rot90(m, k=1, axes=(0, 1)):
    m = as_expr(m)
    a0, a1 = (axis_int("rot90", x, m.ndim) for x in axes)
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    return swapaxes(flip(m, a1), a0, a1) if k == 1 else flip(swapaxes(m, a0, a1), a1)


# -- diagonals and triangles --------------------------------------------------------------------


@define("diagonal", "a", "=offset", "=axis1", "=axis2", offset=0, axis1=0, axis2=1,
        aliases=("linalg.diagonal",))
def diagonal(a, offset=0, axis1=0, axis2=1):
    a = as_expr(a)
    i, j = axis_int("diagonal", axis1, a.ndim), axis_int("diagonal", axis2, a.ndim)
    if i == j:
        raise ShapeError("diagonal: axis1 and axis2 cannot be the same")
    a = moveaxis(a, (i, j), (-2, -1))
    rows, cols = a.shape[-2:]
    start_r, start_c = max(-offset, 0), max(offset, 0)
    n = max(0, min(rows - start_r, cols - start_c))
    r = np.arange(n) + start_r
    return a[..., r, r - start_r + start_c] if n else a[..., :0, 0]


@define("diag", "v", "=k", k=0)
def diag(v, k=0):
    v = as_expr(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ShapeError(f"diag: input must be 1-D or 2-D, got shape {v.shape}")
    n = v.shape[0] + abs(k)
    rows = np.arange(v.shape[0]) + max(-k, 0)
    cols = np.arange(v.shape[0]) + max(k, 0)
    return F.index_add(v, rows, cols, key=("@", "@"), shape=(n, n))


@define("diagflat", "v", "=k", k=0)
def diagflat(v, k=0):
    return diag(ravel(v), k)


def _tri_mask(rows: int, cols: int, k: int, lower: bool) -> np.ndarray:
    mask = np.tri(rows, cols, k, dtype=bool)
    return mask if lower else ~np.tri(rows, cols, k - 1, dtype=bool)


@define("tril", "m", "=k", k=0)
def tril(m, k=0):
    m = as_expr(m)
    return F.where(_tri_mask(*m.shape[-2:], k, True), m, np.zeros((), m.dtype))


@define("triu", "m", "=k", k=0)
def triu(m, k=0):
    m = as_expr(m)
    return F.where(_tri_mask(*m.shape[-2:], k, False), m, np.zeros((), m.dtype))


@define("tri", "=N", "=M", "=k", N=None, M=None, k=0, dtype=float)
def tri(N, M=None, k=0, dtype=float):
    return const(np.tri(N, M, k, dtype=dtype))


# -- gathering ------------------------------------------------------------------------------


@define("take_along_axis", "arr", "indices", "=axis", axis=-1)
def take_along_axis(arr, indices, axis=-1):
    a, axis = _along("take_along_axis", arr, axis)
    idx = indices if isinstance(indices, Expr) else np.asarray(indices)
    if idx.ndim != a.ndim:
        raise ShapeError(f"take_along_axis: indices must have the array's rank {a.ndim}, got "
                         f"{idx.ndim}")
    key = tuple(idx if k == axis else np.arange(d).reshape((-1,) + (1,) * (a.ndim - 1 - k))
                for k, d in enumerate(a.shape))
    return a[key]


@define("where", "condition", "x", "y")
def where(condition, x=None, y=None):
    if (x is None) != (y is None):
        raise SignatureError(f"where() is missing its argument '{'y' if y is None else 'x'}' "
                             "(give both x and y)")
    if x is None:
        raise UnsupportedError("where(condition) with one argument returns the indices of the "
                               "true elements, whose number depends on the data; use "
                               "where(condition, x, y) or multiply by the mask")
    return F.where(condition, x, y)


@define("meshgrid", "*xi", copy=True, sparse=False, indexing="xy", strings=("indexing",))
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    xs = [ravel(x) for x in xi]
    n = len(xs)
    out = []
    for k, x in enumerate(xs):
        shape = [1] * n
        shape[k] = x.shape[0]
        if indexing == "xy" and n > 1 and k < 2:
            shape[0], shape[1] = shape[1], shape[0]
        out.append(F.reshape(x, tuple(shape)))
    if indexing == "xy" and n > 1:
        full = (xs[1].shape[0], xs[0].shape[0]) + tuple(x.shape[0] for x in xs[2:])
    else:
        full = tuple(x.shape[0] for x in xs)
    return out if sparse else [F.broadcast_to(o, full) for o in out]


@define("broadcast_arrays", "*args")
def broadcast_arrays(*args):
    exprs = [as_expr(a) for a in args]
    shape = np.broadcast_shapes(*(e.shape for e in exprs))
    return [e if e.shape == shape else F.broadcast_to(e, shape) for e in exprs]


# -- creation ----------------------------------------------------------------------------------


def _nested(obj: Any) -> bool:
    return isinstance(obj, Expr) or (isinstance(obj, (list, tuple)) and any(map(_nested, obj)))


def _build_array(obj: Any) -> Expr:
    if isinstance(obj, (list, tuple)):
        if not obj:
            return const(np.zeros(0))
        return F.stack([_build_array(o) for o in obj], axis=0)
    return as_expr(obj)


@define("array", "object", dtype=None, copy=True, order="K", subok=False, ndmin=0,
        aliases=("asarray", "asanyarray", "ascontiguousarray", "copy"), strings=("dtype",))
def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, **kwargs):
    """A nested list of Exprs and numbers as one Expr (stacked); dtype converts."""
    out = _build_array(object) if _nested(object) else const(np.array(object))
    if dtype is not None:
        name = np.dtype(dtype).name
        out = out if out.dtype == name else F.astype(out, name)
    if out.ndim < ndmin:
        out = F.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def _like(name: str, fill: Any):
    @define(name, "a", "=dtype", dtype=None, order="K", subok=True, shape=None,
            strings=("dtype",))
    def fn(a, dtype=None, order="K", subok=True, shape=None):
        a = as_expr(a)
        dtype = a.dtype if dtype is None else np.dtype(dtype).name
        return F.full(a.shape if shape is None else shape, fill, dtype=dtype)

    return fn


_like("zeros_like", 0)
_like("ones_like", 1)
_like("empty_like", 0)


@define("full_like", "a", "=fill_value", "=dtype", fill_value=None, dtype=None, order="K",
        subok=True, shape=None, strings=("dtype",))
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    a = as_expr(a)
    target = a.shape if shape is None else shape
    if isinstance(fill_value, Expr):
        return F.broadcast_to(fill_value, target)
    return F.full(target, fill_value, dtype=a.dtype if dtype is None else np.dtype(dtype).name)


@define("empty", "=shape", "=dtype", shape=None, dtype=None, strings=("dtype",))
def empty(shape, dtype=None, **kwargs):
    return F.zeros(shape, dtype=dtype)


@define("linspace", "start", "stop", "=num", "=endpoint", "=retstep", "=dtype", "=axis",
        num=50, endpoint=True, retstep=False, dtype=None, axis=0, strings=("dtype",))
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """Numbers: NumPy's exact values (a constant-maker op). Expressions: start + step * i."""
    if not isinstance(start, Expr) and not isinstance(stop, Expr) and np.ndim(start) == 0 \
            and np.ndim(stop) == 0:
        out = F.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
        step = (stop - start) / max(num - 1 if endpoint else num, 1)
        return (out, step) if retstep else out
    start, stop = as_expr(start), as_expr(stop)
    div = max(num - 1 if endpoint else num, 1)
    base = np.broadcast_shapes(start.shape, stop.shape)
    k = axis % (len(base) + 1)
    t = np.arange(num, dtype=np.float64).reshape((num,) + (1,) * (len(base) - k))
    step = (stop - start) / float(div)
    out = moveaxis(F.expand_dims(start, 0) + F.expand_dims(step, 0) * t, 0, k) if base else \
        start + step * t.reshape(num)
    if dtype is not None:
        out = F.astype(out, np.dtype(dtype).name)
    return (out, step) if retstep else out


@define("logspace", "start", "stop", "=num", "=endpoint", "=base", "=dtype", "=axis", num=50,
        endpoint=True, base=10.0, dtype=None, axis=0, strings=("dtype",))
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    out = F.power(base, linspace(start, stop, num, endpoint=endpoint, axis=axis))
    return out if dtype is None else F.astype(out, np.dtype(dtype).name)


@define("shape", "a")
def shape(a):
    return as_expr(a).shape


@define("ndim", "a")
def ndim(a):
    return as_expr(a).ndim


@define("size", "a", "=axis", axis=None)
def size(a, axis=None):
    a = as_expr(a)
    return a.size if axis is None else a.shape[axis_int("size", axis, a.ndim)]


# -- what cannot be traced -------------------------------------------------------------------------

_UNSUPPORTED = {
    "nonzero": "the number of nonzero elements depends on the data; use a mask with where",
    "argwhere": "the result's length depends on the data; use a mask with where",
    "flatnonzero": "the result's length depends on the data; use a mask with where",
    "unique": "the number of unique values depends on the data",
    "compress": "the result's length depends on the data; use where(mask, x, 0)",
    "extract": "the result's length depends on the data; use where(mask, x, 0)",
    "trim_zeros": "the result's length depends on the data",
    "histogram": "bin counts are piecewise constant (zero gradient) and data-sized",
    "put": "in-place writes are not traced; use x.at[index].set(values)",
    "putmask": "in-place writes are not traced; use where(mask, values, x)",
    "place": "in-place writes are not traced; use where(mask, values, x)",
    "fill_diagonal": "in-place writes are not traced; use x.at[rows, cols].set(values)",
    "copyto": "in-place writes are not traced; use where(mask, src, dst)",
    "insert": "not supported yet; use concatenate of slices",
    "resize": "not supported; use tile or reshape",
}
UNSUPPORTED.update(_UNSUPPORTED)
