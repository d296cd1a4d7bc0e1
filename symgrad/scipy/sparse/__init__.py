"""``symgrad.scipy.sparse``: SciPy's sparse matrices with symbolic values on a fixed pattern.

SciPy's names, signatures and meanings: ``csr_array((data, indices, indptr), shape=...)``,
``csr_matrix``, the CSC and COO forms (``(data, (row, col))``), ``diags``/``diags_array``,
``kron``, ``bmat``, ``hstack``, ``vstack``, ``block_diag``, ``eye``, ``identity``,
``issparse``; where ``data`` (or a diagonal, or a block's values) is an Expr, the result's
stored values are built from it, and derivatives with respect to ``data`` have its shape
(one entry per stored element). The index arrays are NumPy arrays: the pattern is fixed,
never a function of the values. What comes back is a
:class:`~symgrad.frontend.sparse.SparseArray` (a ``SparseMatrix`` from the ``*_matrix``
constructors and ``diags``, ``eye``, ``identity``, with ``spmatrix`` semantics), whose
methods are SciPy's (``@``, ``.T``, ``.multiply``, ``.sum(axis)``, ``.diagonal()``, ...).
``symgrad.scipy.sparse.linalg`` has the solvers. A dense symbolic argument stores every
entry (which of its values are zero is known only when it runs); ``format=None`` gives CSR
where SciPy would give DIA or BSR (symgrad's formats are CSR, CSC and COO).

>>> import numpy as np, symgrad as sg
>>> from symgrad.scipy import sparse
>>> k = sg.var("k", shape=(4,))                       # spring constants
>>> K = sparse.diags([k[:3] + k[1:], -k[1:3], -k[1:3]], [0, 1, -1])
>>> f = K @ np.ones(3)
>>> sg.evaluate(f, {"k": [1.0, 2.0, 3.0, 4.0]})
array([1., 0., 4.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as _numpy  # noqa: F401  (the ops and NumPy's names, registered first)
from ...base.errors import ShapeError, UnsupportedError
from ...frontend.numpy_define import as_expr
from ...frontend.sparse import SparseArray, SparseMatrix, full_pattern
from ...frontend.sparse_calls import as_sparse, is_sparse
from ...ir import sparse_pattern as pat
from ...ir.expr import Expr, F
from . import linalg

__all__ = ["block_diag", "bmat", "coo_array", "coo_matrix", "csc_array", "csc_matrix",
           "csr_array", "csr_matrix", "diags", "diags_array", "eye", "eye_array", "hstack",
           "identity", "issparse", "isspmatrix", "kron", "linalg", "vstack"]


def issparse(x: Any) -> bool:
    """Whether ``x`` is a sparse matrix (symgrad's or SciPy's), as SciPy's."""
    return is_sparse(x)


def isspmatrix(x: Any) -> bool:
    """Whether ``x`` is a sparse *matrix* (``*`` is the matrix product), as SciPy's."""
    return isinstance(x, SparseMatrix) or (is_sparse(x) and not isinstance(x, SparseArray)
                                           and _scipy_matrix(x))


def _scipy_matrix(x: Any) -> bool:
    import scipy.sparse

    return isinstance(x, scipy.sparse.spmatrix)


def _kind(matrix: bool) -> type[SparseArray]:
    return SparseMatrix if matrix else SparseArray


def _as(s: SparseArray, matrix: bool) -> SparseArray:
    return s if s._matrix == matrix else _kind(matrix)(s.data, s.pattern)


def _fixed(index: Any, what: str) -> np.ndarray:
    """An index array of the pattern: NumPy data, never symbolic."""
    if isinstance(index, Expr):
        raise UnsupportedError(f"the {what} of a sparse matrix must be NumPy arrays: the "
                               "pattern is fixed (its values may be symbolic)")
    return np.asarray(index)


def _build(arg1: Any, shape: Any, dtype: Any, format: str, matrix: bool) -> SparseArray:
    """SciPy's constructor of ``format`` (``csr_array(arg1, shape, dtype)``)."""
    if is_sparse(arg1):
        out = as_sparse(arg1).asformat(format)
    elif isinstance(arg1, tuple) and len(arg1) == 2 and all(
            isinstance(d, (int, np.integer)) for d in arg1):
        m, n = (int(d) for d in arg1)  # an empty (M, N) matrix
        first = np.zeros(0) if format == "coo" else np.zeros((m if format == "csr" else n) + 1)
        kind = np.dtype(dtype or "float64").name
        out = SparseArray(F.zeros(shape=(0,), dtype=kind),
                          pat.make_pattern(format, (m, n), first.astype(int), np.zeros(0, int)))
    elif isinstance(arg1, tuple) and len(arg1) == 2:
        out = _from_coo(arg1, shape, format)
    elif isinstance(arg1, tuple) and len(arg1) == 3:
        out = _from_compressed(arg1, shape, format)
    else:
        out = _from_dense(arg1, format)
    if shape is not None and tuple(shape) != out.shape:
        raise ShapeError(f"{format}: the data make a {out.shape} matrix, not {tuple(shape)}")
    if dtype is not None:
        out = out.astype(dtype)
    return _as(out, matrix)


def _from_coo(arg1: tuple, shape: Any, format: str) -> SparseArray:
    data, ij = arg1
    if not isinstance(ij, (tuple, list)) or len(ij) != 2:
        raise ShapeError(f"{format}: (data, (row, col)) takes the rows and the columns")
    rows, cols = (_fixed(a, "rows and columns").astype(np.int64) for a in ij)
    if shape is None:
        shape = (int(rows.max()) + 1, int(cols.max()) + 1) if rows.size else (0, 0)
    data = as_expr(data)
    out = SparseArray(data, pat.make_pattern("coo", tuple(shape), rows, cols))
    return out if format == "coo" else out.asformat(format)


def _from_compressed(arg1: tuple, shape: Any, format: str) -> SparseArray:
    if format == "coo":
        raise ShapeError("coo: (data, indices, indptr) is the CSR or CSC form; COO takes "
                         "(data, (row, col))")
    data, indices, indptr = arg1
    indices, indptr = _fixed(indices, "indices"), _fixed(indptr, "index pointers")
    if shape is None:
        minor = int(indices.max()) + 1 if indices.size else 0
        major = indptr.size - 1
        shape = (major, minor) if format == "csr" else (minor, major)
    return SparseArray(as_expr(data), pat.make_pattern(format, tuple(shape), indptr, indices))


def _from_dense(arg1: Any, format: str) -> SparseArray:
    """A dense matrix: a constant keeps its nonzeros (SciPy's), a symbolic one stores
    every entry."""
    if isinstance(arg1, Expr):
        if arg1.ndim != 2:
            raise ShapeError(f"{format}: a dense matrix needs 2 axes, got {arg1.shape}")
        out = SparseArray(F.reshape(arg1, (arg1.size,)), full_pattern(arg1.shape))
        return out.asformat(format)
    dense = np.asarray(arg1)
    if dense.ndim != 2:
        raise ShapeError(f"{format}: a dense matrix needs 2 axes, got {dense.shape}")
    rows, cols = np.nonzero(dense)
    out = SparseArray(dense[rows, cols], pat.make_pattern("coo", dense.shape, rows, cols))
    return out.asformat(format)


def csr_array(arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False, *,
              maxprint: Any = None) -> SparseArray:
    """SciPy's ``csr_array``: ``(data, indices, indptr)``, ``(data, (row, col))`` (sorted,
    duplicates added), a dense or sparse matrix, or ``(M, N)`` (empty)."""
    return _build(arg1, shape, dtype, "csr", False)


def csr_matrix(arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False, *,
               maxprint: Any = None) -> SparseMatrix:
    """SciPy's ``csr_matrix`` (``*`` is the matrix product): as :func:`csr_array`."""
    return _build(arg1, shape, dtype, "csr", True)


def csc_array(arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False, *,
              maxprint: Any = None) -> SparseArray:
    """SciPy's ``csc_array``: ``(data, indices, indptr)`` by columns, or as csr_array."""
    return _build(arg1, shape, dtype, "csc", False)


def csc_matrix(arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False, *,
               maxprint: Any = None) -> SparseMatrix:
    """SciPy's ``csc_matrix``: as :func:`csc_array`."""
    return _build(arg1, shape, dtype, "csc", True)


def coo_array(arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False, *,
              maxprint: Any = None) -> SparseArray:
    """SciPy's ``coo_array``: ``(data, (row, col))`` as given (duplicates kept; they add
    up wherever the matrix is used), a dense or sparse matrix, or ``(M, N)``."""
    return _build(arg1, shape, dtype, "coo", False)


def coo_matrix(arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False, *,
               maxprint: Any = None) -> SparseMatrix:
    """SciPy's ``coo_matrix``: as :func:`coo_array`."""
    return _build(arg1, shape, dtype, "coo", True)


# -- building matrices from pieces ----------------------------------------------------------

def _diagonals(diagonals: Any, offsets: Any) -> tuple[list, list[int]]:
    """SciPy's reading of ``diags``'s arguments: one diagonal, or one per offset."""
    single = np.ndim(offsets) == 0
    one = isinstance(diagonals, (Expr, np.ndarray)) and np.ndim(diagonals) == 1 or (
        isinstance(diagonals, (list, tuple)) and diagonals
        and not isinstance(diagonals[0], (Expr, np.ndarray, list, tuple)))
    if single and (one or (isinstance(diagonals, (list, tuple)) and not diagonals)):
        diagonals = [diagonals]
    offsets = [int(offsets)] if single else [int(o) for o in offsets]
    if len(diagonals) != len(offsets):
        raise ValueError("Different number of diagonals and offsets.")
    if len(set(offsets)) != len(offsets):
        raise ValueError("Offset appears twice")
    return [as_expr(d) for d in diagonals], offsets


def _diags(diagonals: Any, offsets: Any, shape: Any, format: Any, dtype: Any,
           matrix: bool) -> SparseArray:
    values, offsets = _diagonals(diagonals, offsets)
    if shape is None:
        size = values[0].shape[0] + abs(offsets[0])
        shape = (size, size)
    m, n = (int(d) for d in shape)
    rows, cols, parts = [], [], []
    for j, (d, k) in enumerate(zip(values, offsets)):
        length = min(m + k, n - k, min(m, n))
        if length < 0:
            raise ValueError(f"Offset {k} (index {j}) out of bounds")
        if d.ndim != 1 or (d.shape[0] < length and d.shape[0] != 1):
            raise ValueError(f"Diagonal length (index {j}: {d.shape[0] if d.ndim else 0} at "
                             f"offset {k}) does not agree with array size ({m}, {n}).")
        t = np.arange(length)
        rows.append(t - min(k, 0))
        cols.append(t + max(k, 0))
        parts.append(F.broadcast_to(d, (length,)) if d.shape[0] == 1 else d[:length])
    data = F.concatenate(parts) if parts else F.zeros(shape=(0,))
    out = SparseArray(data, pat.make_pattern("coo", (m, n), np.concatenate(rows or [[]]),
                                             np.concatenate(cols or [[]])))
    out = out.asformat(format or "csr")
    return _as(out if dtype is None else out.astype(dtype), matrix)


def diags_array(diagonals: Any, /, *, offsets: Any = 0, shape: Any = None, format: Any = None,
                dtype: Any = None) -> SparseArray:
    """SciPy's ``diags_array``: ``diagonals[j]`` on the ``offsets[j]``-th diagonal (a
    longer one is cut, a length-1 one broadcast); CSR unless ``format`` says."""
    return _diags(diagonals, offsets, shape, format, dtype, False)


def diags(diagonals: Any, offsets: Any = 0, shape: Any = None, format: Any = None,
          dtype: Any = None) -> SparseMatrix:
    """SciPy's ``diags`` (a sparse matrix): as :func:`diags_array`."""
    return _diags(diagonals, offsets, shape, format, dtype, True)


def eye_array(m: int, n: int | None = None, *, k: int = 0, dtype: Any = float,
              format: Any = None) -> SparseArray:
    """SciPy's ``eye_array``: ones on the ``k``-th diagonal."""
    n = m if n is None else n
    length = max(0, min(m + min(k, 0), n - max(k, 0)))
    return diags_array(np.ones(length, dtype=np.dtype(dtype)), offsets=k, shape=(m, n),
                       format=format)


def eye(m: int, n: int | None = None, k: int = 0, dtype: Any = float,
        format: Any = None) -> SparseMatrix:
    """SciPy's ``eye`` (a sparse matrix)."""
    return _as(eye_array(m, n, k=k, dtype=dtype, format=format), True)


def identity(n: int, dtype: Any = "d", format: Any = None) -> SparseMatrix:
    """SciPy's ``identity`` (a sparse matrix)."""
    return eye(n, dtype=dtype, format=format)


def _operand(b: Any) -> SparseArray:
    """A block or factor: sparse as it is, dense through :func:`coo_array`."""
    return as_sparse(b) if is_sparse(b) else coo_array(b)


def _any_array(items: list) -> bool:
    """SciPy's rule: the result is a sparse array if any operand is one."""
    import sys

    scipy_sparse = sys.modules.get("scipy.sparse")
    return any(isinstance(b, SparseArray) and not b._matrix or (
        scipy_sparse is not None and isinstance(b, scipy_sparse.sparray)) for b in items)


def kron(A: Any, B: Any, format: Any = None) -> SparseArray:
    """SciPy's ``kron``: every product ``A[i, j] B[k, l]`` of stored entries at
    ``(i * p + k, j * q + l)`` (COO unless ``format`` says)."""
    a, b = _operand(A), _operand(B)
    (m, n), (p, q) = a.shape, b.shape
    ra, ca = pat.coordinates(a.pattern)
    rb, cb = pat.coordinates(b.pattern)
    rows = (ra.astype(np.int64)[:, None] * p + rb[None, :]).ravel()
    cols = (ca.astype(np.int64)[:, None] * q + cb[None, :]).ravel()
    data = F.reshape(F.outer(a.data, b.data), (a.nnz * b.nnz,))
    out = SparseArray(data, pat.make_pattern("coo", (m * p, n * q), rows, cols))
    return _as(out.asformat(format or "coo"), not _any_array([A, B]))


def bmat(blocks: Any, format: Any = None, dtype: Any = None) -> SparseArray:
    """SciPy's ``bmat``: a matrix of blocks (``None`` for a zero block), each block row of
    one height and each block column of one width."""
    grid = [list(row) for row in blocks]
    if not grid or not all(len(row) == len(grid[0]) for row in grid):
        raise ValueError("blocks must be 2-D")
    parts = [[None if b is None else _operand(b) for b in row] for row in grid]
    heights = [_size({b.shape[0] for b in row if b is not None}, "row", i)
               for i, row in enumerate(parts)]
    widths = [_size({row[j].shape[1] for row in parts if row[j] is not None}, "column", j)
              for j in range(len(parts[0]))]
    top, left = np.r_[0, np.cumsum(heights)], np.r_[0, np.cumsum(widths)]
    rows, cols, values = [], [], []
    for i, row in enumerate(parts):
        for j, b in enumerate(row):
            if b is not None and b.nnz:
                r, c = pat.coordinates(b.pattern)
                rows.append(r.astype(np.int64) + top[i])
                cols.append(c.astype(np.int64) + left[j])
                values.append(b.data)
    shape = (int(top[-1]), int(left[-1]))
    data = F.concatenate(values) if values else F.zeros(shape=(0,))
    out = SparseArray(data, pat.make_pattern("coo", shape, np.concatenate(rows or [[]]),
                                             np.concatenate(cols or [[]])))
    out = out.asformat(format or "coo")
    flat = [b for row in grid for b in row if b is not None]
    return _as(out if dtype is None else out.astype(dtype), not _any_array(flat))


def _size(sizes: set, what: str, k: int) -> int:
    if len(sizes) != 1:
        raise ValueError(f"blocks[{k}] has {'no' if not sizes else 'mismatched'} {what} "
                         "size" + ("" if sizes else " (a whole block row or column of None)"))
    return sizes.pop()


def hstack(blocks: Any, format: Any = None, dtype: Any = None) -> SparseArray:
    """SciPy's ``hstack``: blocks side by side."""
    return bmat([list(blocks)], format=format, dtype=dtype)


def vstack(blocks: Any, format: Any = None, dtype: Any = None) -> SparseArray:
    """SciPy's ``vstack``: blocks one above the other."""
    return bmat([[b] for b in blocks], format=format, dtype=dtype)


def block_diag(mats: Any, format: Any = None, dtype: Any = None) -> SparseArray:
    """SciPy's ``block_diag``: the blocks on the diagonal, zeros elsewhere."""
    mats = list(mats)
    parts = [_operand(b) for b in mats]
    rows, cols, values, top, left = [], [], [], 0, 0
    for b in parts:
        r, c = pat.coordinates(b.pattern)
        rows.append(r.astype(np.int64) + top)
        cols.append(c.astype(np.int64) + left)
        values.append(b.data)
        top, left = top + b.shape[0], left + b.shape[1]
    data = F.concatenate(values) if any(b.nnz for b in parts) else F.zeros(shape=(0,))
    out = SparseArray(data, pat.make_pattern("coo", (top, left), np.concatenate(rows or [[]]),
                                             np.concatenate(cols or [[]])))
    out = out.asformat(format or "coo")
    return _as(out if dtype is None else out.astype(dtype), not _any_array(mats))
