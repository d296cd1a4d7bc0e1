"""Sparse matrices on a fixed pattern: ops on ``(data, pattern)``.

A sparse matrix is its stored values ``data`` (an operand: 1-D, one entry per stored
element; derivatives may give it leading batch axes) on a *pattern*, a static attribute
made by :func:`make_pattern`: ``(format, (m, n), index_dtype, first, second)`` with
``format`` ``"csr"`` (``first`` the row pointers, ``second`` the column indices), ``"csc"``
(the same by columns) or ``"coo"`` (``first`` the rows, ``second`` the columns of the
entries), the index arrays as the little-endian bytes of ``index_dtype`` (``"int32"``
where it holds every index, as SciPy chooses, else ``"int64"``). Built-ins only: the
pattern is hashed and compared exactly, and emitted code holds it as module data (never a
live SciPy object, never a densified matrix). Duplicate entries add up, as in SciPy.

Ops (``A`` the matrix of ``data`` on ``pattern``, ``A.T`` where ``transpose``):

* ``sparse_matmul(data, x)``: ``A`` applied along axis ``axis`` (negative) of ``x``; ``A @ x``
  is ``axis=-1`` for a vector, ``-2`` for a matrix; ``x @ A`` is ``A.T`` along ``-1``.
* ``sparse_sample(u, v)``: ``z_p = sum u[.., r_p, ..] v[.., c_p, ..]`` over the axes after
  ``axis`` (``r, c`` the row and column of entry ``p``; swapped if ``transpose``): the
  sampled product (SDDMM), the adjoint of ``sparse_matmul`` with respect to ``data``.
* ``sparse_gather(d)``: ``d[.., r_p, c_p]`` (a length-1 axis of ``d`` broadcasts);
  ``sparse_scatter(data)``: the dense matrix (duplicates added), each the other's adjoint.
* ``sparse_solve(data, b)``: ``A^-1 b`` along ``axis`` of ``b`` (SuperLU: one factorisation
  per distinct matrix, kept for the next solve with it or its transpose).
* ``sparse_iterative(data, b, x0)`` and ``sparse_iterative_info``: SciPy's ``cg``,
  ``gmres`` or ``bicgstab`` (``method``, from ``x0``) and its ``info``, one solve for both.

The rules close over these ops (Giles 2008 for the solves): ``d(A x)`` is
``sparse_matmul(dA, x) + sparse_matmul(A, dx)``; the adjoint of ``x`` in ``y = A x`` is
``A.T g`` and of ``data`` the sampled product ``g[r_p] x[c_p]``; for ``x = A^-1 b`` the adjoint
is one solve with the transpose, ``l = A^-T g``, giving ``b`` the adjoint ``l`` and ``data``
``-l[r_p] x[c_p]``. Each is this module's ops again, so every order of derivative exists.

>>> import numpy as np, symgrad as sg
>>> from symgrad.ops import F
>>> p = make_pattern("csr", (2, 3), [0, 2, 3], [0, 2, 1])  # [[a, 0, b], [0, c, 0]]
>>> data, x = sg.var("data", shape=(3,)), sg.var("x", shape=(3,))
>>> y = F.sparse_matmul(data, x, pattern=p)
>>> sg.evaluate(y, {"data": [1.0, 2.0, 3.0], "x": [1.0, 1.0, 1.0]})
array([3., 3.])
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..base.errors import ArgumentError, LimitError, ShapeError
from ..ir.expr import F
from ..ir.op import Op, register, sig
from ..ir.shapes import fmt, is_float, result_dtype
from .structure import PAIR_LIMIT, dense_maps, gather_map
from .tangent import align, total

Pattern = tuple  # (format, (m, n), index dtype, first: bytes, second: bytes)
FORMATS = ("csr", "csc", "coo")
METHODS = ("cg", "gmres", "bicgstab")
_INT32_MAX = 2**31 - 1


# -- patterns --------------------------------------------------------------------------------

def make_pattern(format: str, shape: tuple[int, int], first: Any, second: Any,
                 check: bool = True) -> Pattern:
    """The pattern of a ``format`` matrix of ``shape`` from its index arrays (``indptr`` and
    ``indices`` for csr/csc, ``row`` and ``col`` for coo), checked: pointers from 0, never
    decreasing, ending at the number of entries; every index inside the shape
    (``check=False`` skips the checks: an op checks its pattern once when it is built).

    >>> make_pattern("coo", (2, 2), [0, 1], [1, 0])[:3]
    ('coo', (2, 2), 'int32')
    """
    if format not in FORMATS:
        raise ArgumentError(f"sparse pattern: format must be one of {FORMATS}, got {format!r}")
    m, n = (int(d) for d in shape)
    if m < 0 or n < 0:
        raise ShapeError(f"sparse pattern: invalid shape ({m}, {n})")
    a, b = _indices(first, "first"), _indices(second, "second")
    if check:
        _check(format, m, n, a, b)
    big = max(m, n, a.size, b.size) > _INT32_MAX
    dtype = np.dtype("<i8" if big else "<i4")
    return (format, (m, n), "int64" if big else "int32", a.astype(dtype, copy=False).tobytes(),
            b.astype(dtype, copy=False).tobytes())


def _check(format: str, m: int, n: int, a: np.ndarray, b: np.ndarray) -> None:
    if format == "coo":
        if a.size != b.size:
            raise ShapeError(f"sparse pattern: {a.size} rows but {b.size} columns")
        _within(a, m, "row"), _within(b, n, "column")
        return
    major, minor = (m, n) if format == "csr" else (n, m)
    if a.size != major + 1 or (a.size and (a[0] != 0 or a[-1] != b.size)):
        raise ShapeError(f"sparse pattern: {format} index pointers must have {major + 1} "
                         f"entries, from 0 to the {b.size} indices")
    if np.any(np.diff(a) < 0):
        raise ShapeError(f"sparse pattern: {format} index pointers decrease")
    _within(b, minor, "index")


def _indices(values: Any, what: str) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise ArgumentError(f"sparse pattern: the {what} index array must be 1-D integers, "
                            f"got an array of shape {a.shape} and dtype {a.dtype}")
    return a if a.size else a.astype(np.int64)


def _within(a: np.ndarray, size: int, what: str) -> None:
    if a.size and (int(a.min()) < 0 or int(a.max()) >= size):
        raise ShapeError(f"sparse pattern: a {what} index lies outside 0..{size - 1}")


def unpack(pattern: Pattern) -> tuple[str, tuple[int, int], np.ndarray, np.ndarray]:
    """``(format, (m, n), first, second)``, the index arrays read-only views of the bytes."""
    return _sg_sparse_arrays(pattern)


def nnz(pattern: Pattern) -> int:
    """The number of stored entries."""
    return len(pattern[4]) // np.dtype(pattern[2]).itemsize


def coordinates(pattern: Pattern) -> tuple[np.ndarray, np.ndarray]:
    """The row and column of every stored entry, in the order of ``data``."""
    return _sg_sparse_coords(pattern)


def transposed(pattern: Pattern) -> Pattern:
    """The pattern of the transpose with the same ``data``: csr and csc swap (the arrays
    stay), coo swaps its rows and columns."""
    kind, (m, n), dtype, first, second = pattern
    if kind == "coo":
        return ("coo", (n, m), dtype, second, first)
    return ("csc" if kind == "csr" else "csr", (n, m), dtype, first, second)


def describe(pattern: Pattern) -> str:
    """``csr 3x4, 7 stored``: a pattern as people read it."""
    kind, (m, n) = pattern[0], pattern[1]
    return f"{kind} {m}x{n}, {nnz(pattern)} stored"


@functools.lru_cache(maxsize=8)
def _checked(pattern: Any) -> Pattern:
    """``pattern`` if it is a pattern :func:`make_pattern` makes (checked once per pattern)."""
    ok = (type(pattern) is tuple and len(pattern) == 5 and pattern[0] in FORMATS
          and type(pattern[1]) is tuple and len(pattern[1]) == 2
          and all(type(d) is int for d in pattern[1]) and pattern[2] in ("int32", "int64")
          and type(pattern[3]) is bytes and type(pattern[4]) is bytes)
    if not ok:
        raise ArgumentError("a sparse op's pattern is the tuple make_pattern builds "
                            "(symgrad.scipy.sparse makes it); got something else")
    try:
        again = make_pattern(*_sg_sparse_arrays(pattern))
    except (ShapeError, ValueError) as e:
        raise ArgumentError(f"a sparse op's pattern is not one make_pattern builds: {e}"
                            ) from None
    if again[2:] != pattern[2:]:
        raise ArgumentError("a sparse op's pattern is not in make_pattern's normal form")
    return pattern


def pattern_of(attrs: dict) -> Pattern:
    """The checked pattern of a sparse op's attributes."""
    try:
        return _checked(attrs["pattern"])
    except TypeError:  # unhashable: not a pattern
        raise ArgumentError("a sparse op's pattern is the tuple make_pattern builds") from None


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


def _sg_sparse_lu(pattern, data, _held=[]):  # noqa: B006 - the last factorisations, by value
    """SuperLU's factorisation of the matrix of ``data`` on ``pattern``: the last two are
    kept (by value: a matrix whose entries changed is factorised again), so the adjoint's
    solve with the transpose, and the next solves with the same matrix, reuse it."""
    import numpy as np
    import scipy.sparse.linalg

    for entry in _held:
        p, d, lu = entry
        if (p is pattern or p == pattern) and d.dtype == data.dtype and np.array_equal(d, data):
            return lu
    a = _sg_sparse_matrix(pattern, data).tocsc(copy=True)
    try:
        lu = scipy.sparse.linalg.splu(a)
    except RuntimeError as e:  # SuperLU: "Factor is exactly singular"
        raise np.linalg.LinAlgError(f"Singular matrix ({e})") from None
    _held[:] = [(pattern, data.copy(), lu), *_held[:1]]
    return lu


def _sg_sparse_solve(data, b, pattern, transpose, axis):
    """``A^-1 b`` along ``axis`` of ``b`` (``A^-T`` if ``transpose``), other axes columns."""
    import numpy as np

    data, b = np.asarray(data), np.asarray(b)
    dtype = np.result_type(data, b, np.float32)
    bt = np.moveaxis(b, axis, 0)
    if bt.size == 0:
        return np.zeros(b.shape, dtype)
    lu = _sg_sparse_lu(pattern, data.astype(dtype, copy=False))
    cols = np.ascontiguousarray(bt.reshape(bt.shape[0], -1), dtype=dtype)
    x = lu.solve(cols, trans="T" if transpose else "N")
    return np.moveaxis(np.asarray(x, dtype).reshape(bt.shape), 0, axis)


def _sg_sparse_krylov(data, b, x0, pattern, method, rtol, atol, maxiter, restart, transpose,
                      _held=[]):  # noqa: B006 - the last solves, by value
    """``(x, info)`` of SciPy's Krylov solver ``method`` on each system ``A x = b[k]`` (the
    last axis of ``b``; ``A.T`` if ``transpose``). The last solves are kept by value, so the
    solution and its ``info`` come from one solve."""
    import numpy as np
    import scipy.sparse.linalg

    data, b = np.asarray(data), np.asarray(b)
    dtype = np.result_type(data, b, np.float32)
    key = (pattern, method, rtol, atol, maxiter, restart, transpose, dtype.str, b.shape,
           data.astype(dtype).tobytes(), b.astype(dtype).tobytes(),
           np.asarray(x0, dtype).tobytes())
    for k, value in _held:
        if k == key:
            return value
    a = _sg_sparse_matrix(pattern, data.astype(dtype))
    a = (a.T if transpose else a).tocsr()
    solve = getattr(scipy.sparse.linalg, method)
    extra = {"restart": restart} if method == "gmres" else {}
    rhs = b.reshape(-1, b.shape[-1]).astype(dtype)
    xs, infos = np.zeros(rhs.shape, dtype), np.zeros(rhs.shape[0], np.int64)
    for k, row in enumerate(rhs):
        start = np.asarray(x0, dtype)
        xs[k], infos[k] = solve(a, row, x0=start, rtol=rtol, atol=atol, maxiter=maxiter, **extra)
    value = (xs.reshape(b.shape), infos.reshape(b.shape[:-1]))
    _held[:] = [(key, value), *_held[:3]]
    return value


def _sg_sparse_iterative(data, b, x0, *, pattern, method, rtol, atol, maxiter, restart,
                         transpose, checked):
    """The solution of SciPy's Krylov solver ``method`` (see :func:`_sg_sparse_krylov`);
    ``checked``: a solve that did not converge raises (a derivative's solve, whose ``info``
    nobody sees)."""
    x, info = _sg_sparse_krylov(data, b, x0, pattern, method, rtol, atol, maxiter, restart,
                                transpose)
    if checked and info.any():
        import numpy as np

        code = int(info[info != 0].flat[0])
        raise np.linalg.LinAlgError(
            f"{method} in a derivative did not converge (SciPy's info {code}): the "
            "derivative of an iterative solve is a solve with the transpose by the same "
            "method; loosen rtol, raise maxiter, or use spsolve")
    return x


def _sg_sparse_iterative_info(data, b, x0, *, pattern, method, rtol, atol, maxiter,
                              restart, transpose, checked):
    """SciPy's ``info`` of the same solve: 0 when it converged, else its iteration count."""
    return _sg_sparse_krylov(data, b, x0, pattern, method, rtol, atol, maxiter, restart,
                             transpose)[1]


# -- shape rules -----------------------------------------------------------------------------

def _axis_prepare(shapes, dtypes, attrs):
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


def _data_of(name: str, shape: tuple, pattern: Pattern) -> tuple:
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
    lead = _data_of("sparse_matmul", shapes[0], p)
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
    lead = _data_of("sparse_scatter", shapes[0], attrs["pattern"])
    return lead + attrs["shape"], dtypes[0]


def _square(name: str, pattern: Pattern) -> int:
    m, n = pattern[1]
    if m != n:
        raise ShapeError(f"{name}: the matrix must be square, got {m}x{n}")
    return n


def _solve_infer(shapes, dtypes, attrs):
    p, axis = attrs["pattern"], attrs["axis"]
    n = _square("sparse_solve", p)
    if _data_of("sparse_solve", shapes[0], p):
        raise ShapeError("sparse_solve: one matrix (1-D data) at a time")
    b = shapes[1]
    if b[axis] != n:
        raise ShapeError(f"sparse_solve: a {n}x{n} matrix and a right-hand side of shape "
                         f"{fmt(b)} along axis {axis}")
    return b, result_dtype(*dtypes, "float32")


def _iterative_prepare(shapes, dtypes, attrs):
    p = pattern_of(attrs)
    method = attrs["method"]
    if method not in METHODS:
        raise ArgumentError(f"sparse_iterative: method must be one of {METHODS}, got "
                            f"{method!r}")
    out = {"pattern": p, "method": method, "transpose": bool(attrs["transpose"]),
           "checked": bool(attrs["checked"])}
    for k in ("rtol", "atol"):
        v = attrs[k]
        if type(v) not in (int, float) or not math.isfinite(v) or v < 0:
            raise ArgumentError(f"{method}: {k} must be a finite number >= 0, got {v!r}")
        out[k] = float(v)
    for k in ("maxiter", "restart"):
        v = attrs[k]
        if v is not None and (type(v) is not int or v < 1):
            raise ArgumentError(f"{method}: {k} must be a positive int or None, got {v!r}")
        out[k] = v
    return out


def _iterative_infer(shapes, dtypes, attrs):
    p = attrs["pattern"]
    n = _square(attrs["method"], p)
    if _data_of(attrs["method"], shapes[0], p):
        raise ShapeError(f"{attrs['method']}: one matrix (1-D data) at a time")
    b = shapes[1]
    if not b or b[-1] != n or shapes[2] != (n,):
        raise ShapeError(f"{attrs['method']}: a {n}x{n} matrix, a right-hand side of shape "
                         f"{fmt(b)} and x0 of shape {fmt(shapes[2])}")
    return b, result_dtype(*dtypes[:2], "float32")


def _info_infer(shapes, dtypes, attrs):
    return _iterative_infer(shapes, dtypes, attrs)[0][:-1], "int64"


# -- derivative rules ------------------------------------------------------------------------

def _at(attrs: dict, **more: Any) -> dict:
    return {**{k: attrs[k] for k in ("pattern", "transpose", "axis")}, **more}


def _matmul_rule(n, g):
    data, x = n.args
    a = n.attrs
    return (F.sparse_sample(g, x, **_at(a)) if n.needs(0) else None,
            F.sparse_matmul(data, g, **_at(a, transpose=not a["transpose"]))
            if n.needs(1) else None)


def _matmul_forward(n, t):
    data, x = n.args
    k = len(n.shape) + n.attrs["axis"]  # the result's leading axes
    t0 = None if t[0] is None else align(t[0], data, k + 1)
    t1 = None if t[1] is None else align(t[1], x, len(n.shape))
    return total(None if t0 is None else F.sparse_matmul(t0, x, **_at(n.attrs)),
                 None if t1 is None else F.sparse_matmul(data, t1, **_at(n.attrs)))


def _sample_rule(n, g):
    u, v = n.args
    a = n.attrs
    return (F.sparse_matmul(g, v, **_at(a)) if n.needs(0) else None,
            F.sparse_matmul(g, u, **_at(a, transpose=not a["transpose"]))
            if n.needs(1) else None)


def _sample_forward(n, t):
    u, v = n.args
    full = len(n.shape) - 1 - n.attrs["axis"]  # the leading axes, then (rows,) + tail
    tu = None if t[0] is None else align(t[0], u, full)
    tv = None if t[1] is None else align(t[1], v, full)
    return total(None if tu is None else F.sparse_sample(tu, v, **_at(n.attrs)),
                 None if tv is None else F.sparse_sample(u, tv, **_at(n.attrs)))


def _gather_rule(n, g):
    d = n.args[0]
    return (F.sparse_scatter(g, pattern=n.attrs["pattern"], shape=d.shape[-2:]),)


def _gather_forward(n, t):
    return None if t[0] is None else F.sparse_gather(t[0], pattern=n.attrs["pattern"])


def _scatter_rule(n, g):
    return (F.sparse_gather(g, pattern=n.attrs["pattern"]),)


def _scatter_forward(n, t):
    return None if t[0] is None else F.sparse_scatter(t[0], **n.attrs)


def _solve_rule(n, g):
    data, _ = n.args
    a = n.attrs
    lam = F.sparse_solve(data, g, **_at(a, transpose=not a["transpose"]))
    return (-F.sparse_sample(lam, n.out, **_at(a)) if n.needs(0) else None, lam)


def _solve_forward(n, t):
    data, _ = n.args
    t0 = None if t[0] is None else align(t[0], data, len(n.shape) + n.attrs["axis"] + 1)
    rhs = total(t[1], None if t0 is None else -F.sparse_matmul(t0, n.out, **_at(n.attrs)))
    return None if rhs is None else F.sparse_solve(data, rhs, **n.attrs)


def _krylov(n: Any, data: Any, rhs: Any, transpose: bool) -> Any:
    """The same solver on ``rhs`` (from zeros, SciPy's default start), checked."""
    attrs = {**n.attrs, "transpose": transpose, "checked": True}
    start = F.zeros(n.args[2].shape, dtype=n.args[2].dtype)
    return F.sparse_iterative(data, rhs, start, **attrs)


def _iterative_rule(n, g):
    data = n.args[0]
    lam = _krylov(n, data, g, not n.attrs["transpose"])
    sample = _at({**n.attrs, "axis": -1})
    return (-F.sparse_sample(lam, n.out, **sample) if n.needs(0) else None, lam, None)


def _iterative_forward(n, t):
    data = n.args[0]
    sample = _at({**n.attrs, "axis": -1})
    t0 = None if t[0] is None else align(t[0], data, len(n.shape))
    rhs = total(t[1], None if t0 is None else -F.sparse_matmul(t0, n.out, **sample))
    return None if rhs is None else _krylov(n, data, rhs, n.attrs["transpose"])


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

def _writer(template: str):
    def write(marks: list[str], attrs: dict) -> str:
        p = attrs["pattern"]
        tr = ".T" if attrs.get("transpose") else ""
        where = f", axis={attrs['axis']}" if attrs.get("axis", -1) != -1 else ""
        return template.format(*marks, A=f"sparse[{describe(p)}]{tr}", where=where,
                               method=attrs.get("method", ""))
    return write


# -- examples for the registry-driven tests --------------------------------------------------

def _random_pattern(rng, m: int, n: int, kind: str, density: float = 0.5,
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
        p, count = _random_pattern(rng, 3, 4, kind)
        x = rng.standard_normal(x_shape)
        out.append(([rng.standard_normal(lead + (count,)), x],
                    {"pattern": p, "transpose": tr, "axis": axis}))
    return out


def _sample_examples(rng):
    out = []
    for kind, u_shape, v_shape, axis, tr in [("csr", (3,), (4,), -1, False),
                                             ("csc", (3, 2), (4, 2), -2, False),
                                             ("coo", (2, 4), (3,), -1, True)]:
        p, _ = _random_pattern(rng, 3, 4, kind)
        out.append(([rng.standard_normal(u_shape), rng.standard_normal(v_shape)],
                    {"pattern": p, "transpose": tr, "axis": axis}))
    return out


def _gather_examples(rng):
    out = []
    for kind, d_shape in [("csr", (3, 4)), ("coo", (2, 3, 4)), ("csc", (1, 4)), ("csr", (3, 1))]:
        p, _ = _random_pattern(rng, 3, 4, kind)
        out.append(([rng.standard_normal(d_shape)], {"pattern": p}))
    return out


def _scatter_examples(rng):
    out = []
    for kind, shape, lead in [("csr", (3, 4), ()), ("coo", (3, 4), (2,)), ("csc", (1, 4), ()),
                              ("coo", (3, 1), ())]:
        p, count = _random_pattern(rng, 3, 4, kind)
        out.append(([rng.standard_normal(lead + (count,))], {"pattern": p, "shape": shape}))
    return out


def _solve_examples(rng):
    out = []
    for kind, b_shape, axis, tr in [("csr", (4,), -1, False), ("csc", (4, 2), -2, True),
                                    ("coo", (2, 4), -1, False)]:
        p, _ = _random_pattern(rng, 4, 4, kind, diagonal=True)
        rows, cols = coordinates(p)
        data = rng.standard_normal(rows.size) * 0.3 + np.where(rows == cols, 3.0, 0.0)
        out.append(([data, rng.standard_normal(b_shape)],
                    {"pattern": p, "transpose": tr, "axis": axis}))
    return out


def _iterative_examples(rng):
    """A symmetric positive definite matrix for cg (a coo pattern with both triangles); for
    gmres a sparse one; for bicgstab every entry stored (on small sparse systems SciPy's
    bicgstab often breaks down on the unit right-hand sides the Jacobian tests solve)."""
    out = []
    for method, density, with_x0, tr in [("cg", 0.5, False, False), ("gmres", 0.5, True, True),
                                         ("bicgstab", 1.0, False, False)]:
        p, _ = _random_pattern(rng, 4, 4, "csr", density=density, diagonal=True)
        rows, cols = coordinates(p)
        off = rng.standard_normal(rows.size) * 0.3
        if method == "cg":
            p = make_pattern("coo", (4, 4), np.r_[rows, cols], np.r_[cols, rows])
            rows, cols, off = np.r_[rows, cols], np.r_[cols, rows], np.r_[off, off]
        values = off + np.where(rows == cols, 3.0, 0.0)
        x0 = rng.standard_normal(4) if with_x0 else np.zeros(4)
        out.append(([values, rng.standard_normal(4), x0],
                    {"pattern": p, "method": method, "rtol": 1e-14, "atol": 0.0,
                     "maxiter": 200, "restart": None, "transpose": tr, "checked": False}))
    return out


# -- the stanzas -----------------------------------------------------------------------------

_AXIS = dict(pattern=None, transpose=False, axis=-1)

register(Op(
    name="sparse_matmul", signature=sig("data", "x", **_AXIS), prepare=_axis_prepare,
    infer=_matmul_infer, impl=_sg_sparse_matmul, backprop=_matmul_rule,
    forward=_matmul_forward, sparsity=_matmul_sparsity, examples=_matmul_examples, public=False,
    write=_writer("{A}({0}) @ {1}{where}"),
    doc="A sparse matrix (its data on a static pattern) applied along an axis of x",
))

register(Op(
    name="sparse_sample", signature=sig("u", "v", **_AXIS), prepare=_axis_prepare,
    infer=_sample_infer, impl=_sg_sparse_sample, backprop=_sample_rule,
    forward=_sample_forward, sparsity=_sample_sparsity, examples=_sample_examples, public=False,
    write=_writer("sample({0}, {1}; {A}{where})"),
    doc="The sampled product u[r_p] v[c_p] at each stored entry p of a pattern (SDDMM)",
))

register(Op(
    name="sparse_gather", signature=sig("d", pattern=None), prepare=_gather_prepare,
    infer=_gather_infer, impl=_sg_sparse_gather, backprop=_gather_rule,
    forward=_gather_forward, sparsity=gather_map, examples=_gather_examples, public=False,
    write=_writer("{0}[{A}]"),
    doc="The entries of a dense matrix at the stored positions of a pattern",
))

register(Op(
    name="sparse_scatter", signature=sig("data", pattern=None, shape=None),
    prepare=_scatter_prepare, infer=_scatter_infer, impl=_sg_sparse_scatter,
    backprop=_scatter_rule, forward=_scatter_forward, sparsity=_scatter_sparsity,
    examples=_scatter_examples, public=False, write=_writer("dense({A}({0}))"),
    doc="The dense matrix of data on a pattern (duplicates added)",
))

register(Op(
    name="sparse_solve", signature=sig("data", "b", **_AXIS), prepare=_axis_prepare,
    infer=_solve_infer, impl=_sg_sparse_solve, backprop=_solve_rule, forward=_solve_forward,
    examples=_solve_examples, public=False, write=_writer("solve({A}({0}), {1}{where})"),
    doc="x with A x = b for a sparse A (SuperLU), along an axis of b",
))

_KRYLOV = dict(pattern=None, method="cg", rtol=1e-5, atol=0.0, maxiter=None, restart=None,
               transpose=False, checked=False)

register(Op(
    name="sparse_iterative", signature=sig("data", "b", "x0", **_KRYLOV),
    prepare=_iterative_prepare, infer=_iterative_infer, impl=_sg_sparse_iterative,
    backprop=_iterative_rule, forward=_iterative_forward, examples=_iterative_examples,
    public=False, write=_writer("{method}({A}({0}), {1})"),
    doc="x with A x = b for a sparse A by SciPy's cg, gmres or bicgstab",
))

register(Op(
    name="sparse_iterative_info", signature=sig("data", "b", "x0", **_KRYLOV),
    prepare=_iterative_prepare, infer=_info_infer, impl=_sg_sparse_iterative_info,
    differentiable=False, examples=_iterative_examples, public=False,
    write=_writer("{method}_info({A}({0}), {1})"),
    doc="SciPy's info of the same Krylov solve: 0 when it converged",
))
