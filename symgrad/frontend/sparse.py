"""Sparse matrices in traced code: :class:`SparseArray`, a matrix whose stored values are an
Expr (``data``) on a fixed pattern, built from the ops of :mod:`symgrad.pat.sparse`.

It is what a ``scipy.sparse`` matrix (CSR, CSC, COO; other formats through CSR) becomes
where symgrad meets one (:mod:`.sparse_calls`), and what ``symgrad.scipy.sparse``'s
constructors build with symbolic values. Its methods and operators are SciPy's, with
SciPy's meanings: ``A @ x``, ``x @ A``, ``A.T``, ``A.dot``, ``A.multiply``, ``A * B`` (the
elementwise product of sparse arrays, the matrix product of sparse matrices), ``A + B``,
``A.sum(axis)``, ``A.mean``, ``A.diagonal(k)``, ``A.trace``, ``A.toarray()``,
``A.tocsr()``/``tocsc()``/``tocoo()``, ``A.power``, ``A @ B`` of two sparse matrices. No
method densifies the matrix except ``toarray``/``todense`` (and ``A + dense``, whose
result SciPy makes dense too); the products, sums and diagonals work on the stored
entries, with the pattern's index arrays computed once, while tracing.

Derivatives with respect to ``data`` have ``data``'s shape: one entry per stored element.

>>> import numpy as np, symgrad as sg
>>> from symgrad.scipy.sparse import csr_array
>>> d = sg.var("d", shape=(3,))
>>> A = csr_array((d, [1, 0, 1], [0, 1, 3]), shape=(2, 2))   # [[0, d0], [d1, d2]]
>>> y = A @ np.array([1.0, 2.0])
>>> sg.evaluate(sg.grad(sg.sum(y ** 2), d), {"d": [1.0, 1.0, 1.0]})
array([ 8.,  6., 12.])
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..base.errors import LimitError, ShapeError, UnsupportedError
from ..ir import sparse_pattern as pat
from ..ir.expr import Expr, F
from ..ir.op import SPARSE
from ..ir.values import describe
from .numpy_define import as_expr

__all__ = ["SparseArray", "SparseMatrix", "as_sparse", "canonical", "full_pattern", "product"]

PAIR_LIMIT = 50_000_000  # products of entries one sparse-sparse product may form


class SparseArray:
    """A sparse array whose stored values are an Expr (see the module docstring): SciPy's
    ``sparray`` semantics (``*`` is elementwise, ``sum(axis)`` is 1-D)."""

    __array_priority__ = 10_000.0  # NumPy arrays and Exprs defer to its operators
    _matrix: ClassVar[bool] = False

    def __init__(self, data: Any, pattern: tuple) -> None:
        pattern = pat.pattern_of({"pattern": pattern})
        data = as_expr(data)
        if data.shape != (pat.nnz(pattern),):
            raise ShapeError(f"a sparse matrix of {pat.describe(pattern)} entries needs data "
                             f"of shape ({pat.nnz(pattern)},), got {data.shape}")
        self._data, self._pattern = data, pattern

    # -- what it is ------------------------------------------------------------------------

    @property
    def data(self) -> Expr:
        """The stored values, in the pattern's order."""
        return self._data

    @property
    def pattern(self) -> tuple:
        """The pattern (:func:`symgrad.pat.sparse.make_pattern`'s tuple)."""
        return self._pattern

    @property
    def format(self) -> str:
        return self._pattern[0]

    @property
    def shape(self) -> tuple[int, int]:
        return self._pattern[1]

    ndim = 2

    @property
    def nnz(self) -> int:
        """The number of stored entries (duplicates and explicit zeros counted), as SciPy."""
        return pat.nnz(self._pattern)

    size = nnz

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def indices(self) -> np.ndarray:
        return self._arrays("indices")[1]

    @property
    def indptr(self) -> np.ndarray:
        return self._arrays("indptr")[0]

    @property
    def row(self) -> np.ndarray:
        return self._arrays("row", coo=True)[0]

    @property
    def col(self) -> np.ndarray:
        return self._arrays("col", coo=True)[1]

    @property
    def coords(self) -> tuple[np.ndarray, np.ndarray]:
        return self._arrays("coords", coo=True)

    def _arrays(self, name: str, coo: bool = False) -> tuple[np.ndarray, np.ndarray]:
        if (self.format == "coo") != coo:
            raise AttributeError(f"a {self.format} matrix has no {name!r}")
        return pat.unpack(self._pattern)[2:]

    def getnnz(self, axis: Any = None) -> int:
        if axis is not None:
            raise UnsupportedError("getnnz(axis=...) of a symbolic sparse matrix")
        return self.nnz

    def __repr__(self) -> str:
        kind = "matrix" if self._matrix else "array"
        return (f"<symgrad sparse {kind} {pat.describe(self._pattern)}, "
                f"{self._data.dtype}>")

    def _like(self, data: Expr, pattern: tuple | None = None) -> SparseArray:
        """A sparse object of this kind (array or matrix)."""
        return type(self)(data, self._pattern if pattern is None else pattern)

    # -- products --------------------------------------------------------------------------

    def __matmul__(self, other: Any) -> Any:
        if _scalar(other):
            raise ValueError("Scalar operands are not allowed, use '*' instead")
        if _is_sparse(other):
            return self._like(*product(self, as_sparse(other)))
        return self._apply(as_expr(other), left=False)

    def __rmatmul__(self, other: Any) -> Any:
        if _scalar(other):
            raise ValueError("Scalar operands are not allowed, use '*' instead")
        if _is_sparse(other):
            return self._like(*product(as_sparse(other), self))
        return self._apply(as_expr(other), left=True)

    def dot(self, other: Any) -> Any:
        """The matrix product (a scalar: the product with it), as SciPy's ``dot``."""
        return self * other if _scalar(other) else self @ other

    def _apply(self, x: Expr, left: bool) -> Expr:
        """``A @ x`` (``x @ A`` if ``left``) for a dense ``x`` of one or more axes."""
        m, n = self.shape
        if x.ndim == 0:
            raise ValueError("Scalar operands are not allowed, use '*' instead")
        axis = -1 if left or x.ndim == 1 else -2
        want = m if left else n
        if x.shape[axis] != want:
            raise ShapeError(f"matmul: a sparse matrix of shape {self.shape} and an operand "
                             f"of shape {x.shape} do not multiply")
        return F.sparse_matmul(self._data, x, pattern=self._pattern, transpose=left,
                               axis=axis)

    def __mul__(self, other: Any) -> Any:
        if self._matrix and not _scalar(other):
            return self @ other
        return self.multiply(other)

    def __rmul__(self, other: Any) -> Any:
        if self._matrix and not _scalar(other):
            return other @ self if _is_sparse(other) else self.__rmatmul__(other)
        return self.multiply(other)

    def multiply(self, other: Any) -> SparseArray:
        """The elementwise product: by a number, by a dense array that broadcasts to the
        matrix (a sparse result on this pattern), or by a sparse matrix (their common
        entries)."""
        if _is_sparse(other):
            return self._like(*_common(self, as_sparse(other)))
        other = as_expr(other)
        if other.ndim == 0:
            return self._like(self._data * other)
        if other.ndim == 1:
            other = F.reshape(other, (1,) + other.shape)
        try:
            fits = np.broadcast_shapes(other.shape, self.shape) == self.shape
        except ValueError:
            fits = False
        if other.ndim != 2 or not fits:
            raise ShapeError(f"multiply: a sparse matrix of shape {self.shape} and an array "
                             f"of shape {other.shape} (it must broadcast to the matrix)")
        return self._like(self._data * F.sparse_gather(other, pattern=self._pattern))

    def __truediv__(self, other: Any) -> SparseArray:
        if _is_sparse(other):
            raise UnsupportedError("dividing by a sparse matrix (its zeros) is not supported")
        other = as_expr(other)
        if other.ndim == 0:
            return self._like(self._data / other)
        return self.multiply(1.0 / other)

    def __neg__(self) -> SparseArray:
        return self._like(-self._data)

    def __pos__(self) -> SparseArray:
        return self

    def __add__(self, other: Any) -> Any:
        return self._sum(other, 1.0)

    def __radd__(self, other: Any) -> Any:
        return self._sum(other, 1.0)

    def __sub__(self, other: Any) -> Any:
        return self._sum(other, -1.0)

    def __rsub__(self, other: Any) -> Any:
        return (-self)._sum(other, 1.0)

    def _sum(self, other: Any, sign: float) -> Any:
        """``self + sign * other``: sparse for a sparse ``other`` (the union of the
        entries), dense for a dense one (as SciPy), refused for a nonzero number."""
        if _is_sparse(other):
            b = as_sparse(other)
            if b.shape != self.shape:
                raise ShapeError(f"add: sparse matrices of shapes {self.shape} and {b.shape}")
            rows, cols = _coo(self._pattern)
            rb, cb = _coo(b._pattern)
            values = F.concatenate([self._data, b._data if sign > 0 else -b._data])
            return self._like(*canonical(np.r_[rows, rb], np.r_[cols, cb], values, self.shape))
        if _scalar(other) and not isinstance(other, Expr) and other == 0:
            return self
        if _scalar(other):
            raise UnsupportedError("adding a nonzero scalar to a sparse matrix is not "
                                   "supported (it would fill every entry; as in SciPy)")
        dense = self.toarray()
        return dense + other if sign > 0 else dense - other

    def __pow__(self, n: Any) -> SparseArray:
        if not self._matrix:
            return self.power(n)
        if type(n) is not int or n < 1:
            raise UnsupportedError("the power of a sparse matrix: a positive int")
        out = self
        for _ in range(n - 1):
            out = out @ self
        return out

    def power(self, n: Any) -> SparseArray:
        """The stored entries to the power ``n`` (a number), as SciPy's ``power``."""
        if not _scalar(n):
            raise UnsupportedError("power: the exponent is a number")
        return self._like(self._data ** n)

    # -- reductions ------------------------------------------------------------------------

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Expr:
        """The sum of the entries, or along ``axis`` (a matrix: a 2-D result, as SciPy's)."""
        if out is not None:
            raise UnsupportedError("sum: out= is not supported on symbolic values")
        data = self._data if dtype is None else F.astype(self._data, np.dtype(dtype).name)
        axis = _axis(axis)
        if axis is None:
            return F.sum(data)
        m, n = self.shape
        ones = F.ones(shape=(n if axis == 1 else m,), dtype=data.dtype.name)
        total = F.sparse_matmul(data, ones, pattern=self._pattern, transpose=axis == 0)
        if not self._matrix:
            return total
        return F.reshape(total, (1, n) if axis == 0 else (m, 1))

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Expr:
        """The mean over all ``m * n`` entries (stored or not), or along ``axis``."""
        total = self.sum(axis, dtype, out)
        m, n = self.shape
        count = m * n if _axis(axis) is None else (m if _axis(axis) == 0 else n)
        return total / count

    def diagonal(self, k: int = 0) -> Expr:
        """The ``k``-th diagonal (its stored entries added, zeros elsewhere)."""
        m, n = self.shape
        k = int(k)
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        rows, cols = _coo(self._pattern)
        pick = np.flatnonzero(cols.astype(np.int64) - rows == k)
        zeros = F.zeros(shape=(length,), dtype=self._data.dtype.name)
        if pick.size == 0:
            return zeros
        where = (rows if k >= 0 else cols)[pick].astype(np.int64)
        return zeros.at[where].add(self._data[pick])

    def trace(self, offset: int = 0) -> Expr:
        return F.sum(self.diagonal(offset))

    # -- conversions -----------------------------------------------------------------------

    def toarray(self, order: Any = None, out: Any = None) -> Expr:
        """The dense matrix (the only conversion that densifies)."""
        return F.sparse_scatter(self._data, pattern=self._pattern, shape=self.shape)

    todense = toarray

    @property
    def T(self) -> SparseArray:
        return self._like(self._data, pat.transposed(self._pattern))

    def transpose(self, axes: Any = None, copy: bool = False) -> SparseArray:
        if axes is not None and tuple(axes) != (1, 0):
            raise ValueError("Sparse matrices do not support an 'axes' parameter other than "
                             "(1, 0)")
        return self.T

    def astype(self, dtype: Any, casting: str = "unsafe", copy: bool = True) -> SparseArray:
        return self._like(F.astype(self._data, np.dtype(dtype).name))

    def copy(self) -> SparseArray:
        return self

    def conj(self, copy: bool = True) -> SparseArray:
        return self

    conjugate = conj

    def tocsr(self, copy: bool = False) -> SparseArray:
        """CSR: the entries sorted by row and column, duplicates added (as SciPy's)."""
        if self.format == "csr":
            return self
        return self._like(*canonical(*_coo(self._pattern), self._data, self.shape))

    def tocsc(self, copy: bool = False) -> SparseArray:
        """CSC: the transpose's CSR, transposed back."""
        if self.format == "csc":
            return self
        return self.T.tocsr().T

    def tocoo(self, copy: bool = False) -> SparseArray:
        """COO: the same entries in the same order."""
        if self.format == "coo":
            return self
        return self._like(self._data, pat.make_pattern("coo", self.shape, *_coo(self._pattern)))

    def asformat(self, format: Any, copy: bool = False) -> SparseArray:
        if format is None or format == self.format:
            return self
        convert = {"csr": self.tocsr, "csc": self.tocsc, "coo": self.tocoo}.get(format)
        if convert is None:
            raise UnsupportedError(f"asformat({format!r}): symgrad's sparse matrices are "
                                   "'csr', 'csc' or 'coo'")
        return convert()

    # -- what a symbolic matrix cannot do --------------------------------------------------

    def count_nonzero(self, axis: Any = None) -> int:
        raise UnsupportedError("count_nonzero of a symbolic sparse matrix: which stored "
                               "values are zero is known only when it is evaluated (nnz "
                               "counts the stored entries)")

    def __len__(self) -> int:
        raise TypeError("sparse array length is ambiguous; use getnnz() or shape[0]")

    def __bool__(self) -> bool:
        raise UnsupportedError("the truth value of a symbolic sparse matrix is unknown "
                               "while tracing")

    def __getitem__(self, key: Any) -> Any:
        raise UnsupportedError("indexing a symbolic sparse matrix is not supported: multiply "
                               "it (A @ x, A.T @ y), or make it dense with A.toarray()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        from ..ir.numpy_names import scipy_conversion

        refusal = scipy_conversion()
        if refusal == "":  # SciPy's A @ S: "not an array", so Python asks S.__rmatmul__
            return np.empty((), dtype=object)
        raise UnsupportedError(refusal or "a symbolic sparse matrix cannot become a NumPy "
                               "array: A.toarray() is its dense matrix (an Expr)")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from ..ir.numpy_names import ufunc_name

        if method != "__call__":
            raise UnsupportedError(f"numpy.{ufunc.__name__}.{method} of a sparse matrix")
        return SPARSE["call"](ufunc_name(ufunc), inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        from ..ir.numpy_names import numpy_name

        return SPARSE["call"](numpy_name(func), args, kwargs)


class SparseMatrix(SparseArray):
    """SciPy's ``spmatrix`` semantics: ``*`` is the matrix product, ``sum(axis)`` is 2-D."""

    _matrix = True


# the zero-preserving elementwise functions SciPy's sparse classes have as methods
ZERO_PRESERVING = ("sin", "tan", "arcsin", "arctan", "sinh", "tanh", "arcsinh", "sqrt",
                   "expm1", "log1p", "rint", "floor", "ceil", "trunc", "sign", "deg2rad",
                   "rad2deg", "abs")


def _elementwise(name: str) -> Any:
    def method(self: SparseArray) -> SparseArray:
        return self._like(getattr(F, name)(self._data))

    method.__name__ = name
    method.__doc__ = f"``{name}`` of the stored entries (0 stays 0), as SciPy's."
    return method


for _name in ZERO_PRESERVING:
    setattr(SparseArray, _name, _elementwise(_name))
SparseArray.__abs__ = SparseArray.abs  # type: ignore[attr-defined]


# -- the structure of products, sums and conversions, computed while tracing ----------------

def _coo(pattern: tuple) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = pat.coordinates(pattern)
    return rows.astype(np.int64), cols.astype(np.int64)


def canonical(rows: np.ndarray, cols: np.ndarray, values: Expr, shape: tuple[int, int]
              ) -> tuple[Expr, tuple]:
    """``(data, pattern)`` of the CSR matrix with ``values`` at ``(rows, cols)``: sorted by
    row and column, duplicates added (SciPy's canonical form)."""
    m, n = shape
    key = rows * n + cols
    unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if unique.size == key.size:
        order = np.argsort(key, kind="stable")
        data = values if np.array_equal(order, np.arange(key.size)) else values[order]
    else:
        zeros = F.zeros(shape=(unique.size,), dtype=values.dtype.name)
        data = zeros.at[inverse.ravel()].add(values)
    out_rows, out_cols = unique // n, unique % n
    indptr = np.r_[0, np.cumsum(np.bincount(out_rows, minlength=m))]
    return data, pat.make_pattern("csr", shape, indptr, out_cols)


def product(a: SparseArray, b: SparseArray) -> tuple[Expr, tuple]:
    """``(data, pattern)`` of ``a @ b`` in CSR: each product ``a_ik b_kj`` of stored
    entries formed once, added into its ``(i, j)``."""
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ShapeError(f"matmul: sparse matrices of shapes {a.shape} and {b.shape}")
    ra, ca = _coo(a._pattern)
    rb, cb = _coo(b._pattern)
    order = np.argsort(rb, kind="stable")
    counts = np.bincount(rb, minlength=k)
    starts = np.r_[0, np.cumsum(counts)][:-1]
    per = counts[ca]
    total = int(per.sum())
    if total > PAIR_LIMIT:
        raise LimitError(f"a product of sparse matrices forms {total:,} products of entries, "
                         f"more than the limit of {PAIR_LIMIT:,}")
    pa = np.repeat(np.arange(ra.size), per)
    offsets = np.arange(total) - np.repeat(np.cumsum(per) - per, per)
    qb = order[np.repeat(starts[ca], per) + offsets]
    values = a._data[pa] * b._data[qb] if total else F.zeros(shape=(0,),
                                                               dtype=_dtype(a, b))
    return canonical(ra[pa], cb[qb], values, (m, n))


def _common(a: SparseArray, b: SparseArray) -> tuple[Expr, tuple]:
    """``(data, pattern)`` of the elementwise product: the entries both store."""
    if a.shape != b.shape:
        raise ShapeError(f"multiply: sparse matrices of shapes {a.shape} and {b.shape}")
    a, b = a.tocsr(), b.tocsr()
    if a._pattern == b._pattern:
        return a._data * b._data, a._pattern
    n = a.shape[1]
    ka, kb = [r * n + c for r, c in (_coo(a._pattern), _coo(b._pattern))]
    both, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    values = a._data[ia] * b._data[ib] if both.size else F.zeros(shape=(0,),
                                                                 dtype=_dtype(a, b))
    return canonical(both // n, both % n, values, a.shape)


def _dtype(a: SparseArray, b: SparseArray) -> str:
    return np.result_type(a.dtype, b.dtype).name


def _axis(axis: Any) -> int | None:
    if axis is None:
        return None
    if isinstance(axis, tuple):
        if sorted(int(a) % 2 for a in axis) == [0, 1]:
            return None
        if len(axis) != 1:
            raise ValueError(f"invalid axis {describe(axis)} for a sparse matrix")
        axis = axis[0]
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -2 <= axis < 2:
        raise ValueError(f"axis out of range for a sparse matrix: {describe(axis)}")
    return int(axis) % 2


def _scalar(o: Any) -> bool:
    if isinstance(o, Expr):
        return o.ndim == 0
    return isinstance(o, (int, float, np.number, np.bool_)) or (
        isinstance(o, np.ndarray) and o.ndim == 0)


def _is_sparse(o: Any) -> bool:
    return SPARSE["is"](o)


def as_sparse(o: Any) -> SparseArray:
    """``o`` as a :class:`SparseArray` (a SciPy matrix becomes one with constant values)."""
    return SPARSE["as"](o)


def full_pattern(shape: tuple[int, int]) -> tuple:
    """The pattern storing every entry of a ``shape`` matrix (CSR, row by row)."""
    m, n = shape
    return pat.make_pattern("csr", shape, np.arange(m + 1) * n, np.tile(np.arange(n), m))
