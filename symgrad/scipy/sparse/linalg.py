"""``symgrad.scipy.sparse.linalg``: SciPy's sparse solvers on symbolic values, differentiable
to any order by one solve with the transpose.

``spsolve(A, b)``, ``splu(A).solve(b, trans)`` and ``factorized(A)`` solve with SuperLU
(SciPy's): one factorisation per distinct matrix, kept (by value) for the adjoint's solve
with the transpose and for further solves with the same matrix, so a value and its gradient
cost one factorisation. ``cg``, ``gmres`` and ``bicgstab`` take SciPy's keywords (``x0``,
``rtol``, ``atol``, ``maxiter``; ``restart`` for gmres) and return ``(x, info)``, both
from one call of SciPy's solver. ``spsolve_triangular`` and ``norm`` complete the set.

The derivatives are the implicit ones of the exact solution (Giles 2008): for ``x = A^-1 b``
the adjoint of ``b`` is ``l = A^-T g`` (one solve) and of the stored values ``-l[i] x[j]``
at each entry ``(i, j)``; forward mode solves ``A dx = db - dA x``. An iterative solver's
derivative solves with the same method and tolerances; one that does not converge there
raises (its ``info`` is nobody's to read), where the value's own ``info`` is returned.

>>> import numpy as np, symgrad as sg
>>> from symgrad.scipy.sparse import diags
>>> from symgrad.scipy.sparse.linalg import spsolve
>>> s = sg.var("s", shape=(3,))
>>> A = diags([2.0 + s, -np.ones(2), -np.ones(2)], [0, 1, -1])
>>> x = spsolve(A, np.ones(3))
>>> sg.evaluate([x, sg.grad(sg.sum(x), s)], {"s": np.zeros(3)})
[array([1.5, 2. , 1.5]), array([-2.25, -4.  , -2.25])]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...base.errors import ArgumentError, ShapeError, UnsupportedError
from ...frontend.numpy_define import as_expr
from ...frontend.sparse import SparseArray, canonical
from ...frontend.sparse_calls import as_sparse, is_sparse
from ...ir import sparse_pattern as pat
from ...ir.expr import Expr, F

__all__ = ["SuperLU", "bicgstab", "cg", "factorized", "gmres", "norm", "splu", "spsolve",
           "spsolve_triangular"]


def _matrix(A: Any, call: str) -> SparseArray:
    """The square sparse matrix of a solver (a dense Expr stores every entry)."""
    if is_sparse(A):
        a = as_sparse(A)
    elif isinstance(A, Expr) or isinstance(A, np.ndarray):
        from . import csr_array

        a = csr_array(A)
    else:
        raise UnsupportedError(f"{call}: A must be a sparse matrix (symgrad's or SciPy's) or "
                               f"an array; a LinearOperator cannot be traced")
    m, n = a.shape
    if m != n:
        raise ShapeError(f"{call}: the matrix must be square, got {a.shape}")
    return a


def _rhs(b: Any, n: int, call: str) -> tuple[Expr, bool]:
    """``b`` as an Expr, and whether it is a vector (shape ``(n,)`` or ``(n, 1)``)."""
    if is_sparse(b):
        raise UnsupportedError(f"{call}: a sparse right-hand side is not supported; pass "
                               "b.toarray()")
    b = as_expr(b)
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ShapeError(f"{call}: a {n}x{n} matrix and a right-hand side of shape {b.shape}")
    return b, b.ndim == 1 or b.shape[1] == 1


def _solve(a: SparseArray, b: Expr, transpose: bool = False) -> Expr:
    vector = b.ndim == 1
    return F.sparse_solve(a.data, b, pattern=a.pattern, transpose=transpose,
                          axis=-1 if vector else -2)


def spsolve(A: Any, b: Any, permc_spec: Any = None, use_umfpack: bool = True) -> Expr:
    """SciPy's ``spsolve``: ``x`` with ``A x = b`` (``b`` of shape ``(n,)``, ``(n, 1)`` —
    then ``x`` is a vector, as SciPy's — or ``(n, k)``), by SuperLU."""
    a = _matrix(A, "spsolve")
    b, vector = _rhs(b, a.shape[0], "spsolve")
    if vector and b.ndim == 2:
        b = F.reshape(b, (b.shape[0],))
    return _solve(a, b)


class SuperLU:
    """What :func:`splu` returns: ``solve(rhs, trans)`` solves with the matrix (``'N'``) or
    its transpose (``'T'``, ``'H'``), reusing one factorisation. The factors themselves
    (``L``, ``U``, ``perm_r``, ``perm_c``) depend on the values' pivoting and have no
    symbolic form."""

    def __init__(self, a: SparseArray) -> None:
        self._a = a
        self.shape = a.shape

    def solve(self, rhs: Any, trans: str = "N") -> Expr:
        if trans not in ("N", "T", "H"):
            raise ArgumentError(f"SuperLU.solve: trans must be 'N', 'T' or 'H', got {trans!r}")
        b, _ = _rhs(rhs, self.shape[0], "SuperLU.solve")
        return _solve(self._a, b, transpose=trans != "N")

    def __getattr__(self, name: str) -> Any:
        if name in ("L", "U", "perm_r", "perm_c", "nnz"):
            raise UnsupportedError(f"SuperLU.{name} depends on the pivoting of the values "
                                   "and has no symbolic form; use solve()")
        raise AttributeError(name)


def splu(A: Any, permc_spec: Any = None, diag_pivot_thresh: Any = None, relax: Any = None,
         panel_size: Any = None, options: Any = None) -> SuperLU:
    """SciPy's ``splu``: factor once, solve many (``lu.solve(b)``, ``lu.solve(b, 'T')``)."""
    return SuperLU(_matrix(A, "splu"))


def factorized(A: Any) -> Any:
    """SciPy's ``factorized``: the function ``b -> A^-1 b``."""
    return splu(A).solve


def spsolve_triangular(A: Any, b: Any, lower: bool = True, overwrite_A: bool = False,
                       overwrite_b: bool = False, unit_diagonal: bool = False) -> Expr:
    """SciPy's ``spsolve_triangular``: the solve with the triangle of ``A`` it names (the
    other entries get no gradient), with ones on the diagonal for ``unit_diagonal``."""
    a = _matrix(A, "spsolve_triangular")
    b, _ = _rhs(b, a.shape[0], "spsolve_triangular")
    rows, cols = (c.astype(np.int64) for c in pat.coordinates(a.pattern))
    keep = np.flatnonzero(rows > cols if lower else rows < cols) if unit_diagonal else \
        np.flatnonzero(rows >= cols if lower else rows <= cols)
    values = a.data[keep]
    rows, cols = rows[keep], cols[keep]
    if unit_diagonal:
        n = a.shape[0]
        values = F.concatenate([values, F.ones(shape=(n,), dtype=a.dtype.name)])
        rows, cols = np.r_[rows, np.arange(n)], np.r_[cols, np.arange(n)]
    data, pattern = canonical(rows, cols, values, a.shape)
    return _solve(SparseArray(data, pattern), b)


def _iterative(method: str, A: Any, b: Any, x0: Any, rtol: Any, atol: Any, maxiter: Any,
               M: Any, callback: Any, restart: Any = None) -> tuple[Expr, Expr]:
    a = _matrix(A, method)
    if M is not None or callback is not None:
        raise UnsupportedError(f"{method}: M= and callback= are not supported on symbolic "
                               "values (a preconditioner changes the iterates, not the "
                               "solution: leave it out)")
    n = a.shape[0]
    b, vector = _rhs(b, n, method)
    if not vector:
        raise ShapeError(f"{method}: b has shape (n,) or (n, 1), got {b.shape}")
    b = F.reshape(b, (n,)) if b.ndim == 2 else b
    start = F.zeros(shape=(n,), dtype=b.dtype.name) if x0 is None else as_expr(x0)
    if start.shape != (n,):
        start = F.reshape(start, (n,)) if start.size == n else start
    attrs = {"pattern": a.pattern, "method": method, "rtol": _tolerance(rtol, "rtol", method),
             "atol": _tolerance(atol, "atol", method), "maxiter": maxiter, "restart": restart,
             "transpose": False, "checked": False}
    return (F.sparse_iterative(a.data, b, start, **attrs),
            F.sparse_iterative_info(a.data, b, start, **attrs))


def _tolerance(value: Any, what: str, method: str) -> float:
    if isinstance(value, Expr) or isinstance(value, bool) or not isinstance(
            value, (int, float, np.number)):
        raise ArgumentError(f"{method}: {what} must be a number, not a symbolic value")
    return float(value)


def cg(A: Any, b: Any, x0: Any = None, *, rtol: Any = 1e-5, atol: Any = 0.0,
       maxiter: Any = None, M: Any = None, callback: Any = None) -> tuple[Expr, Expr]:
    """SciPy's ``cg`` (``A`` symmetric positive definite): ``(x, info)``, ``info`` 0 when
    ``|A x - b| <= max(rtol |b|, atol)`` was reached."""
    return _iterative("cg", A, b, x0, rtol, atol, maxiter, M, callback)


def gmres(A: Any, b: Any, x0: Any = None, *, rtol: Any = 1e-5, atol: Any = 0.0,
          restart: Any = None, maxiter: Any = None, M: Any = None, callback: Any = None,
          callback_type: Any = None) -> tuple[Expr, Expr]:
    """SciPy's ``gmres``: ``(x, info)``."""
    return _iterative("gmres", A, b, x0, rtol, atol, maxiter, M, callback, restart)


def bicgstab(A: Any, b: Any, x0: Any = None, *, rtol: Any = 1e-5, atol: Any = 0.0,
             maxiter: Any = None, M: Any = None, callback: Any = None) -> tuple[Expr, Expr]:
    """SciPy's ``bicgstab``: ``(x, info)``."""
    return _iterative("bicgstab", A, b, x0, rtol, atol, maxiter, M, callback)


def norm(x: Any, ord: Any = None, axis: Any = None) -> Expr:
    """SciPy's sparse ``norm``: the Frobenius norm (duplicates added first); ``ord=1`` and
    ``ord=inf`` the largest column and row sums of absolute values."""
    a = as_sparse(x).tocsr()
    if axis is not None:
        raise UnsupportedError("norm(axis=...) of a sparse matrix is not supported")
    if ord in (None, "fro", "f"):
        return F.sqrt(F.sum(a.data * a.data))
    if ord in (1, math.inf):
        return F.max(abs(a).sum(axis=0 if ord == 1 else 1))
    raise UnsupportedError(f"norm(ord={ord!r}) of a sparse matrix: None/'fro', 1 or inf")
