"""Sparse matrices on a fixed pattern: ops on ``(data, pattern)``.

A sparse matrix is its stored values ``data`` (an operand: 1-D, one entry per stored
element; derivatives may give it leading batch axes) on a *pattern*, a static attribute
of built-ins (:mod:`symgrad.ir.sparse_pattern`: the format, the shape and the index arrays
as bytes), hashed and compared exactly, held by emitted code as module data (never a live
SciPy object, never a densified matrix). Duplicate entries add up, as in SciPy.

Ops (``A`` the matrix of ``data`` on ``pattern``, ``A.T`` where ``transpose``):

* ``sparse_matmul(data, x)``: ``A`` applied along axis ``axis`` (negative) of ``x``; ``A @ x``
  is ``axis=-1`` for a vector, ``-2`` for a matrix; ``x @ A`` is ``A.T`` along ``-1``.
* ``sparse_sample(u, v)``: ``z_p = sum u[.., r_p, ..] v[.., c_p, ..]`` over the axes after
  ``axis`` (``r, c`` the row and column of entry ``p``; swapped if ``transpose``): the
  sampled product (SDDMM), the adjoint of ``sparse_matmul`` with respect to ``data``.
* ``sparse_gather(d)``: ``d[.., r_p, c_p]`` (a length-1 axis of ``d`` broadcasts);
  ``sparse_scatter(data)``: the dense matrix (duplicates added), each the other's adjoint.
* the solves (:mod:`.sparse_solve`): ``sparse_solve`` (SuperLU), ``sparse_iterative`` and
  ``sparse_iterative_info`` (SciPy's Krylov solvers).

The rules close over these ops (Giles 2008 for the solves): ``d(A x)`` is
``sparse_matmul(dA, x) + sparse_matmul(A, dx)``; the adjoint of ``x`` in ``y = A x`` is
``A.T g`` and of ``data`` the sampled product ``g[r_p] x[c_p]``; for ``x = A^-1 b`` the adjoint
is one solve with the transpose, ``l = A^-T g``, giving ``b`` the adjoint ``l`` and ``data``
``-l[r_p] x[c_p]``. Each is this module's ops again, so every order of derivative exists.

>>> import numpy as np, symgrad as sg
>>> from symgrad.ops import F
>>> from symgrad.ir.sparse_pattern import make_pattern
>>> p = make_pattern("csr", (2, 3), [0, 2, 3], [0, 2, 1])  # [[a, 0, b], [0, c, 0]]
>>> data, x = sg.var("data", shape=(3,)), sg.var("x", shape=(3,))
>>> y = F.sparse_matmul(data, x, pattern=p)
>>> sg.evaluate(y, {"data": [1.0, 2.0, 3.0], "x": [1.0, 1.0, 1.0]})
array([3., 3.])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.errors import LimitError, ShapeError
from ..ir.expr import F
from ..ir.op import Op, register, sig
from ..ir.shapes import fmt, is_float, result_dtype
from ..ir.sparse_pattern import (
    Pattern,
    coordinates,
    describe,
    make_pattern,
    nnz,
    pattern_of,
)
from .structure import PAIR_LIMIT, dense_maps, gather_map
from .tangent import align, total

# -- kernels (the interpreter's, and emitted as they are by the NumPy target) ----------------

def _sg_sparse_arrays(pattern):
    """``(format, (m, n), first, second)`` of a sparse pattern, its index arrays read-only
    views of its bytes."""
    import numpy as np

    kind, shape, dtype, first, second = pattern
    dt = np.dtype(dtype).newbyteorder("<")
    return kind, shape, np.frombuffer(first, dt), np.frombuffer(second, dt)


def _sg_sparse_coords(pattern):
    """The row and column of each stored entry of a sparse pattern, in data order."""
    import numpy as np

    kind, (m, n), first, second = _sg_sparse_arrays(pattern)
    if kind == "coo":
        return first, second
    major = np.repeat(np.arange(first.size - 1, dtype=first.dtype), np.diff(first))
    return (major, second) if kind == "csr" else (second, major)


def _sg_sparse_matrix(pattern, data):
    """The SciPy sparse array of ``data`` on a sparse pattern (the index arrays shared)."""
    import scipy.sparse

    kind, shape, first, second = _sg_sparse_arrays(pattern)
    if kind == "coo":
        return scipy.sparse.coo_array((data, (first, second)), shape=shape)
    make = scipy.sparse.csr_array if kind == "csr" else scipy.sparse.csc_array
    return make((data, second, first), shape=shape)


def _sg_sparse_segments(rows, count, size):
    """The ``(count, size)`` 0/1 matrix adding entry ``p`` into row ``rows[p]``."""
    import numpy as np
    import scipy.sparse

    ones = np.ones(rows.size)
    return scipy.sparse.csr_array((ones, (rows, np.arange(rows.size))), shape=(count, size))


def _sg_sparse_matmul(data, x, pattern, transpose, axis):
    """``A @ x`` along ``axis`` of ``x`` (``A.T`` if ``transpose``), ``A`` the matrix of
    ``data`` on ``pattern``; leading axes of ``data`` are matrices of their own."""
    import numpy as np

    data, x = np.asarray(data), np.asarray(x)
    dtype = np.result_type(data, x)
    xt = np.moveaxis(x, axis, 0)
    cols = int(np.prod(xt.shape[1:], dtype=np.int64))
    if data.ndim == 1:
        a = _sg_sparse_matrix(pattern, data)
        a = a.T if transpose else a
        y = np.asarray(a @ xt.reshape(xt.shape[0], cols))
        y = y.reshape((y.shape[0],) + xt.shape[1:])
        return np.moveaxis(y, 0, axis).astype(dtype, copy=False)
    rows, picks = _sg_sparse_coords(pattern)
    size = pattern[1][1] if transpose else pattern[1][0]
    rows, picks = (picks, rows) if transpose else (rows, picks)
    trail = (1,) * (-axis - 1)
    z = data.reshape(data.shape + trail) * np.take(x, picks, axis=axis)
    z = np.moveaxis(z, axis, 0)
    y = _sg_sparse_segments(rows, size, rows.size) @ z.reshape(rows.size, -1)
    y = np.asarray(y).reshape((size,) + z.shape[1:])
    return np.moveaxis(y, 0, axis).astype(dtype, copy=False)


def _sg_sparse_sample(u, v, pattern, transpose, axis):
    """``z[.., p] = sum u[.., r_p, ..] v[.., c_p, ..]`` over the axes after ``axis``
    (``r`` and ``c`` swapped if ``transpose``): the sampled product of ``u`` and ``v``."""
    import numpy as np

    u, v = np.asarray(u), np.asarray(v)
    rows, cols = _sg_sparse_coords(pattern)
    rows, cols = (cols, rows) if transpose else (rows, cols)
    z = np.take(u, rows, axis=axis) * np.take(v, cols, axis=axis)
    trail = tuple(range(axis + 1, 0))
    z = z.sum(axis=trail) if trail else z
    return z.astype(np.result_type(u, v), copy=False)


def _sg_sparse_gather(d, pattern):
    """``d[.., r_p, c_p]`` for every stored entry ``p`` (a length-1 axis broadcasts)."""
    import numpy as np

    d = np.asarray(d)
    rows, cols = _sg_sparse_coords(pattern)
    rows = rows if d.shape[-2] != 1 else np.zeros_like(rows)
    cols = cols if d.shape[-1] != 1 else np.zeros_like(cols)
    return d[..., rows, cols]


def _sg_sparse_scatter(data, pattern, shape):
    """The dense ``shape`` matrix (``(m, n)``, or 1 for an axis summed over) of ``data`` on
    ``pattern``, duplicates added; leading axes of ``data`` kept."""
    import numpy as np

    data = np.asarray(data)
    rows, cols = _sg_sparse_coords(pattern)
    rows = rows if shape[0] != 1 else np.zeros_like(rows)
    cols = cols if shape[1] != 1 else np.zeros_like(cols)
    flat = rows.astype(np.int64) * shape[1] + cols
    size = shape[0] * shape[1]
    lead = data.shape[:-1]
    stack = data.reshape(-1, data.shape[-1]).T
    out = np.asarray(_sg_sparse_segments(flat, size, flat.size) @ stack)
    return out.T.reshape(lead + tuple(shape)).astype(data.dtype, copy=False)


# -- shape rules -----------------------------------------------------------------------------

def axis_prepare(shapes, dtypes, attrs):
    p = pattern_of(attrs)
    axis, ndim = attrs["axis"], len(shapes[1])
    if type(axis) is not int or not -ndim <= axis < 0:
        raise ShapeError(f"sparse op: axis must be a negative int within the operand's "
                         f"{ndim} axes, got {axis!r}")
    return {**attrs, "pattern": p, "transpose": bool(attrs["transpose"])}


def _sides(pattern: Pattern, transpose: bool) -> tuple[int, int]:
    """``(rows, columns)`` of ``A`` (of ``A.T`` if ``transpose``)."""
    m, n = pattern[1]
    return (n, m) if transpose else (m, n)


def _tail(shape: tuple, axis: int) -> tuple:
    """The axes of ``shape`` after (negative) ``axis``."""
    return shape[len(shape) + axis + 1:]


def _lead(name: str, *shapes: tuple) -> tuple:
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(f"{name}: leading axes {' and '.join(map(fmt, shapes))} do not "
                         "broadcast") from None


def data_lead(name: str, shape: tuple, pattern: Pattern) -> tuple:
    """The leading axes of ``data`` of ``shape``, checked against the pattern."""
    count = nnz(pattern)
    if not shape or shape[-1] != count:
        raise ShapeError(f"{name}: data of shape {fmt(shape)} for a pattern of {count} "
                         "stored entries (data's last axis holds them)")
    return shape[:-1]


def _number(name: str, *dtypes: str) -> str:
    dtype = result_dtype(*dtypes)
    if dtype == "bool":
        raise ShapeError(f"{name}: boolean operands (make them numbers first)")
    return dtype


def _matmul_infer(shapes, dtypes, attrs):
    p, axis = attrs["pattern"], attrs["axis"]
    rows, cols = _sides(p, attrs["transpose"])
    lead = data_lead("sparse_matmul", shapes[0], p)
    x = shapes[1]
    if x[axis] != cols:
        raise ShapeError(f"sparse_matmul: a {rows}x{cols} matrix times an operand of shape "
                         f"{fmt(x)} along axis {axis} (length {x[axis]})")
    shape = _lead("sparse_matmul", lead, x[:axis]) + (rows,) + _tail(x, axis)
    return shape, _number("sparse_matmul", *dtypes)


def _sample_infer(shapes, dtypes, attrs):
    p, axis = attrs["pattern"], attrs["axis"]
    rows, cols = _sides(p, attrs["transpose"])
    u, v = shapes
    if len(u) < -axis or u[axis] != rows or v[axis] != cols or _tail(u, axis) != _tail(v, axis):
        raise ShapeError(f"sparse_sample: operands of shapes {fmt(u)} and {fmt(v)} for a "
                         f"{rows}x{cols} pattern along axis {axis}")
    return _lead("sparse_sample", u[:axis], v[:axis]) + (nnz(p),), \
        _number("sparse_sample", *dtypes)


def _gather_prepare(shapes, dtypes, attrs):
    return {"pattern": pattern_of(attrs)}


def _gather_infer(shapes, dtypes, attrs):
    p, (d,) = attrs["pattern"], shapes
    m, n = p[1]
    if len(d) < 2 or d[-2] not in (1, m) or d[-1] not in (1, n):
        raise ShapeError(f"sparse_gather: an operand of shape {fmt(d)} for a {m}x{n} "
                         "pattern (its last two axes broadcast to it)")
    return d[:-2] + (nnz(p),), dtypes[0]


def _scatter_prepare(shapes, dtypes, attrs):
    shape = attrs["shape"]
    p = pattern_of(attrs)
    m, n = p[1]
    if (type(shape) is not tuple or len(shape) != 2 or shape[0] not in (1, m)
            or shape[1] not in (1, n)):
        raise ShapeError(f"sparse_scatter: shape must be ({m}, {n}) or 1 for a summed "
                         f"axis, got {shape!r}")
    return {"pattern": p, "shape": tuple(int(s) for s in shape)}


def _scatter_infer(shapes, dtypes, attrs):
    lead = data_lead("sparse_scatter", shapes[0], attrs["pattern"])
    return lead + attrs["shape"], dtypes[0]


# -- derivative rules ------------------------------------------------------------------------

def along(attrs: dict, **more: Any) -> dict:
    return {**{k: attrs[k] for k in ("pattern", "transpose", "axis")}, **more}


def _matmul_rule(n, g):
    data, x = n.args
    a = n.attrs
    return (F.sparse_sample(g, x, **along(a)) if n.needs(0) else None,
            F.sparse_matmul(data, g, **along(a, transpose=not a["transpose"]))
            if n.needs(1) else None)


def _matmul_forward(n, t):
    data, x = n.args
    k = len(n.shape) + n.attrs["axis"]  # the result's leading axes
    t0 = None if t[0] is None else align(t[0], data, k + 1)
    t1 = None if t[1] is None else align(t[1], x, len(n.shape))
    return total(None if t0 is None else F.sparse_matmul(t0, x, **along(n.attrs)),
                 None if t1 is None else F.sparse_matmul(data, t1, **along(n.attrs)))


def _sample_rule(n, g):
    u, v = n.args
    a = n.attrs
    return (F.sparse_matmul(g, v, **along(a)) if n.needs(0) else None,
            F.sparse_matmul(g, u, **along(a, transpose=not a["transpose"]))
            if n.needs(1) else None)


def _sample_forward(n, t):
    u, v = n.args
    full = len(n.shape) - 1 - n.attrs["axis"]  # the leading axes, then (rows,) + tail
    tu = None if t[0] is None else align(t[0], u, full)
    tv = None if t[1] is None else align(t[1], v, full)
    return total(None if tu is None else F.sparse_sample(tu, v, **along(n.attrs)),
                 None if tv is None else F.sparse_sample(u, tv, **along(n.attrs)))


def _gather_rule(n, g):
    d = n.args[0]
    return (F.sparse_scatter(g, pattern=n.attrs["pattern"], shape=d.shape[-2:]),)


def _gather_forward(n, t):
    return None if t[0] is None else F.sparse_gather(t[0], pattern=n.attrs["pattern"])


def _scatter_rule(n, g):
    return (F.sparse_gather(g, pattern=n.attrs["pattern"]),)


def _scatter_forward(n, t):
    return None if t[0] is None else F.sparse_scatter(t[0], **n.attrs)


# -- structural sparsity: each result element depends on the stored entries of its row -----

def _grid(lead: int, core: int, tail: int) -> np.ndarray:
    """Flat indices of an array of shape ``(lead, core, tail)``, as such."""
    return np.arange(lead * core * tail, dtype=np.int64).reshape(lead, core, tail)


def _budget(count: int, what: str) -> None:
    if count > PAIR_LIMIT:
        raise LimitError(f"sparsity: {what} has {count:,} (output, operand) element pairs, "
                         f"more than the limit of {PAIR_LIMIT:,}")


def _matmul_sparsity(n):
    """``y[l, i, r]`` reads ``x[l, j, r]`` and ``data[p]`` for each stored ``(i, j)`` =
    entry ``p`` (one matrix: data without leading axes; else dense)."""
    data, x = n.args
    if data.ndim != 1:
        return dense_maps(n)
    p, axis = n.attrs["pattern"], n.attrs["axis"]
    rows, cols = (c.astype(np.int64) for c in coordinates(p))
    rows, cols = (cols, rows) if n.attrs["transpose"] else (rows, cols)
    lead, tail = math.prod(x.shape[:axis]), math.prod(_tail(x.shape, axis))
    _budget(lead * rows.size * tail, "a sparse product")
    out = _grid(lead, n.shape[axis], tail)[:, rows, :]
    read = _grid(lead, x.shape[axis], tail)[:, cols, :]
    entry = np.broadcast_to(np.arange(rows.size)[None, :, None], out.shape)
    return ((out.ravel(), entry.ravel()) if is_float(data.data.dtype) else None,
            (out.ravel(), read.ravel()) if is_float(x.data.dtype) else None)


def _sample_sparsity(n):
    """``z[l, p]`` reads ``u[l, r_p, :]`` and ``v[l, c_p, :]`` (operands of one leading
    shape; else dense)."""
    u, v = n.args
    axis = n.attrs["axis"]
    if u.shape[:axis] != v.shape[:axis]:
        return dense_maps(n)
    rows, cols = (c.astype(np.int64) for c in coordinates(n.attrs["pattern"]))
    rows, cols = (cols, rows) if n.attrs["transpose"] else (rows, cols)
    lead, tail = math.prod(u.shape[:axis]), math.prod(_tail(u.shape, axis))
    _budget(lead * rows.size * tail * 2, "a sampled product")
    out = np.broadcast_to(_grid(lead, rows.size, 1), (lead, rows.size, tail))
    maps = []
    for arg, picks in ((u, rows), (v, cols)):
        read = _grid(lead, arg.shape[axis], tail)[:, picks, :]
        maps.append((out.ravel(), read.ravel()) if is_float(arg.data.dtype) else None)
    return tuple(maps)


def _scatter_sparsity(n):
    """Entry ``p`` of each matrix lands on its position (and nowhere else)."""
    data = n.args[0]
    shape = n.attrs["shape"]
    rows, cols = (c.astype(np.int64) for c in coordinates(n.attrs["pattern"]))
    rows = rows if shape[0] != 1 else rows * 0
    cols = cols if shape[1] != 1 else cols * 0
    lead, count, size = math.prod(data.shape[:-1]), rows.size, shape[0] * shape[1]
    base = np.arange(lead, dtype=np.int64)[:, None]
    out = base * size + (rows * shape[1] + cols)[None, :]
    return ((out.ravel(), (base * count + np.arange(count)[None, :]).ravel())
            if is_float(data.data.dtype) else None,)


# -- the text form (listings, docstrings): a pattern is described, never written out ---------

def writer(template: str):
    def write(marks: list[str], attrs: dict) -> str:
        p = attrs["pattern"]
        tr = ".T" if attrs.get("transpose") else ""
        where = f", axis={attrs['axis']}" if attrs.get("axis", -1) != -1 else ""
        return template.format(*marks, A=f"sparse[{describe(p)}]{tr}", where=where,
                               method=attrs.get("method", ""))
    return write


# -- examples for the registry-driven tests --------------------------------------------------

def random_pattern(rng, m: int, n: int, kind: str, density: float = 0.5,
                    diagonal: bool = False) -> tuple[Pattern, int]:
    mask = rng.random((m, n)) < density
    if diagonal:
        mask |= np.eye(m, n, dtype=bool)
    rows, cols = np.nonzero(mask)
    if kind == "coo":  # unsorted, with one duplicate
        order = rng.permutation(rows.size)
        rows, cols = np.append(rows[order], rows[0]), np.append(cols[order], cols[0])
        return make_pattern("coo", (m, n), rows, cols), rows.size
    if kind == "csc":
        order = np.lexsort((rows, cols))
        counts = np.bincount(cols, minlength=n)
        return make_pattern("csc", (m, n), np.r_[0, np.cumsum(counts)], rows[order]), rows.size
    counts = np.bincount(rows, minlength=m)
    return make_pattern("csr", (m, n), np.r_[0, np.cumsum(counts)], cols), rows.size


def _matmul_examples(rng):
    out = []
    for kind, x_shape, axis, tr, lead in [("csr", (4,), -1, False, ()),
                                          ("csc", (4, 2), -2, False, ()),
                                          ("coo", (2, 3), -1, True, ()),
                                          ("csr", (2, 4, 2), -2, False, ()),
                                          ("csr", (4,), -1, False, (2,)),
                                          ("coo", (2, 4), -1, False, (2, 1))]:
        p, count = random_pattern(rng, 3, 4, kind)
        x = rng.standard_normal(x_shape)
        out.append(([rng.standard_normal(lead + (count,)), x],
                    {"pattern": p, "transpose": tr, "axis": axis}))
    return out


def _sample_examples(rng):
    out = []
    for kind, u_shape, v_shape, axis, tr in [("csr", (3,), (4,), -1, False),
                                             ("csc", (3, 2), (4, 2), -2, False),
                                             ("coo", (2, 4), (3,), -1, True)]:
        p, _ = random_pattern(rng, 3, 4, kind)
        out.append(([rng.standard_normal(u_shape), rng.standard_normal(v_shape)],
                    {"pattern": p, "transpose": tr, "axis": axis}))
    return out


def _gather_examples(rng):
    out = []
    for kind, d_shape in [("csr", (3, 4)), ("coo", (2, 3, 4)), ("csc", (1, 4)), ("csr", (3, 1))]:
        p, _ = random_pattern(rng, 3, 4, kind)
        out.append(([rng.standard_normal(d_shape)], {"pattern": p}))
    return out


def _scatter_examples(rng):
    out = []
    for kind, shape, lead in [("csr", (3, 4), ()), ("coo", (3, 4), (2,)), ("csc", (1, 4), ()),
                              ("coo", (3, 1), ())]:
        p, count = random_pattern(rng, 3, 4, kind)
        out.append(([rng.standard_normal(lead + (count,))], {"pattern": p, "shape": shape}))
    return out


# -- the stanzas -----------------------------------------------------------------------------

AXIS = dict(pattern=None, transpose=False, axis=-1)

register(Op(
    name="sparse_matmul", signature=sig("data", "x", **AXIS), prepare=axis_prepare,
    infer=_matmul_infer, impl=_sg_sparse_matmul, backprop=_matmul_rule,
    forward=_matmul_forward, sparsity=_matmul_sparsity, examples=_matmul_examples, public=False,
    write=writer("{A}({0}) @ {1}{where}"),
    doc="A sparse matrix (its data on a static pattern) applied along an axis of x",
))

register(Op(
    name="sparse_sample", signature=sig("u", "v", **AXIS), prepare=axis_prepare,
    infer=_sample_infer, impl=_sg_sparse_sample, backprop=_sample_rule,
    forward=_sample_forward, sparsity=_sample_sparsity, examples=_sample_examples, public=False,
    write=writer("sample({0}, {1}; {A}{where})"),
    doc="The sampled product u[r_p] v[c_p] at each stored entry p of a pattern (SDDMM)",
))

register(Op(
    name="sparse_gather", signature=sig("d", pattern=None), prepare=_gather_prepare,
    infer=_gather_infer, impl=_sg_sparse_gather, backprop=_gather_rule,
    forward=_gather_forward, sparsity=gather_map, examples=_gather_examples, public=False,
    write=writer("{0}[{A}]"),
    doc="The entries of a dense matrix at the stored positions of a pattern",
))

register(Op(
    name="sparse_scatter", signature=sig("data", pattern=None, shape=None),
    prepare=_scatter_prepare, infer=_scatter_infer, impl=_sg_sparse_scatter,
    backprop=_scatter_rule, forward=_scatter_forward, sparsity=_scatter_sparsity,
    examples=_scatter_examples, public=False, write=writer("dense({A}({0}))"),
    doc="The dense matrix of data on a pattern (duplicates added)",
))
