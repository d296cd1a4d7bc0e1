"""The sparse solves: ops on ``(data, pattern, b)`` (see :mod:`.sparse` for patterns).

* ``sparse_solve(data, b)``: ``A^-1 b`` along ``axis`` of ``b`` by SuperLU, SciPy's; one
  factorisation per distinct matrix, kept (by value) for the next solve with it or its
  transpose, so a value and its gradient cost one factorisation.
* ``sparse_iterative(data, b, x0)`` and ``sparse_iterative_info``: SciPy's ``cg``,
  ``gmres`` or ``bicgstab`` (``method``, from ``x0``) and its ``info``, one solve for both.

The rules are the implicit ones of the exact solution (Giles 2008): for ``x = A^-1 b`` the
adjoint is one solve with the transpose, ``l = A^-T g``, giving ``b`` the adjoint ``l`` and
``data`` ``-l[r_p] x[c_p]`` (:func:`~.sparse.sparse_sample`); forward mode solves
``A dx = db - dA x``. An iterative solve's derivative solves with the same method and
tolerances, checked: one that does not converge raises (its ``info`` is nobody's to read).

>>> import numpy as np, symgrad as sg
>>> from symgrad.ops import F
>>> from symgrad.ir.sparse_pattern import make_pattern
>>> p = make_pattern("csr", (2, 2), [0, 1, 2], [0, 1])            # diag(d0, d1)
>>> d, b = sg.var("d", shape=(2,)), sg.var("b", shape=(2,))
>>> x = F.sparse_solve(d, b, pattern=p)
>>> sg.evaluate(sg.grad(sg.sum(x), d), {"d": [2.0, 4.0], "b": [1.0, 1.0]})
array([-0.25  , -0.0625])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.errors import ArgumentError, ShapeError
from ..ir.expr import F
from ..ir.op import Op, register, sig
from ..ir.shapes import fmt, result_dtype
from ..ir.sparse_pattern import Pattern, coordinates, make_pattern, pattern_of
from .sparse import (
    AXIS,
    _sg_sparse_matrix,
    along,
    axis_prepare,
    data_lead,
    random_pattern,
    writer,
)
from .tangent import align, total

METHODS = ("cg", "gmres", "bicgstab")


# -- kernels (the interpreter's, and emitted as they are by the NumPy target) ----------------

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

def _square(name: str, pattern: Pattern) -> int:
    m, n = pattern[1]
    if m != n:
        raise ShapeError(f"{name}: the matrix must be square, got {m}x{n}")
    return n


def _solve_infer(shapes, dtypes, attrs):
    p, axis = attrs["pattern"], attrs["axis"]
    n = _square("sparse_solve", p)
    if data_lead("sparse_solve", shapes[0], p):
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
    if data_lead(attrs["method"], shapes[0], p):
        raise ShapeError(f"{attrs['method']}: one matrix (1-D data) at a time")
    b = shapes[1]
    if not b or b[-1] != n or shapes[2] != (n,):
        raise ShapeError(f"{attrs['method']}: a {n}x{n} matrix, a right-hand side of shape "
                         f"{fmt(b)} and x0 of shape {fmt(shapes[2])}")
    return b, result_dtype(*dtypes[:2], "float32")


def _info_infer(shapes, dtypes, attrs):
    return _iterative_infer(shapes, dtypes, attrs)[0][:-1], "int64"


# -- derivative rules ------------------------------------------------------------------------

def _solve_rule(n, g):
    data, _ = n.args
    a = n.attrs
    lam = F.sparse_solve(data, g, **along(a, transpose=not a["transpose"]))
    return (-F.sparse_sample(lam, n.out, **along(a)) if n.needs(0) else None, lam)


def _solve_forward(n, t):
    data, _ = n.args
    t0 = None if t[0] is None else align(t[0], data, len(n.shape) + n.attrs["axis"] + 1)
    rhs = total(t[1], None if t0 is None else -F.sparse_matmul(t0, n.out, **along(n.attrs)))
    return None if rhs is None else F.sparse_solve(data, rhs, **n.attrs)


def _krylov(n: Any, data: Any, rhs: Any, transpose: bool) -> Any:
    """The same solver on ``rhs`` (from zeros, SciPy's default start), checked."""
    attrs = {**n.attrs, "transpose": transpose, "checked": True}
    start = F.zeros(n.args[2].shape, dtype=n.args[2].dtype)
    return F.sparse_iterative(data, rhs, start, **attrs)


def _iterative_rule(n, g):
    data = n.args[0]
    lam = _krylov(n, data, g, not n.attrs["transpose"])
    sample = along({**n.attrs, "axis": -1})
    return (-F.sparse_sample(lam, n.out, **sample) if n.needs(0) else None, lam, None)


def _iterative_forward(n, t):
    data = n.args[0]
    sample = along({**n.attrs, "axis": -1})
    t0 = None if t[0] is None else align(t[0], data, len(n.shape))
    rhs = total(t[1], None if t0 is None else -F.sparse_matmul(t0, n.out, **sample))
    return None if rhs is None else _krylov(n, data, rhs, n.attrs["transpose"])


# -- examples for the registry-driven tests --------------------------------------------------

def _solve_examples(rng):
    out = []
    for kind, b_shape, axis, tr in [("csr", (4,), -1, False), ("csc", (4, 2), -2, True),
                                    ("coo", (2, 4), -1, False)]:
        p, _ = random_pattern(rng, 4, 4, kind, diagonal=True)
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
        p, _ = random_pattern(rng, 4, 4, "csr", density=density, diagonal=True)
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

register(Op(
    name="sparse_solve", signature=sig("data", "b", **AXIS), prepare=axis_prepare,
    infer=_solve_infer, impl=_sg_sparse_solve, backprop=_solve_rule, forward=_solve_forward,
    examples=_solve_examples, public=False, write=writer("solve({A}({0}), {1}{where})"),
    doc="x with A x = b for a sparse A (SuperLU), along an axis of b",
))

_KRYLOV = dict(pattern=None, method="cg", rtol=1e-5, atol=0.0, maxiter=None, restart=None,
               transpose=False, checked=False)

register(Op(
    name="sparse_iterative", signature=sig("data", "b", "x0", **_KRYLOV),
    prepare=_iterative_prepare, infer=_iterative_infer, impl=_sg_sparse_iterative,
    backprop=_iterative_rule, forward=_iterative_forward, examples=_iterative_examples,
    public=False, write=writer("{method}({A}({0}), {1})"),
    doc="x with A x = b for a sparse A by SciPy's cg, gmres or bicgstab",
))

register(Op(
    name="sparse_iterative_info", signature=sig("data", "b", "x0", **_KRYLOV),
    prepare=_iterative_prepare, infer=_info_infer, impl=_sg_sparse_iterative_info,
    differentiable=False, examples=_iterative_examples, public=False,
    write=writer("{method}_info({A}({0}), {1})"),
    doc="SciPy's info of the same Krylov solve: 0 when it converged",
))
