"""Where a ``scipy.sparse`` matrix meets symgrad: it becomes a :class:`.sparse.SparseArray`.

* As an operand: an Expr's operators (``x @ A``, ``x * A``, ``A + x``; SciPy's own
  operators, ``A @ x``, hand an Expr over to Python's reflected operator, see
  :func:`~symgrad.ir.numpy_names.scipy_conversion`), symgrad's and NumPy's functions
  (``np.dot(A, x)``, ``symgrad.numpy.matmul``, ``sg.sum(A, axis=0)``): :func:`numpy_call`
  answers NumPy's function of that name on the sparse operand. ``sg.const(A)`` is one.
  Its values are a constant (a large one an input inside ``sg.grad(fun)``, as arrays are).
* As a pytree: SciPy's CSR, CSC and COO arrays and matrices are containers of their
  values (the pattern is their static part, as JAX's BCOO), so inside ``sg.grad(fun)`` a
  sparse argument, global or closed-over variable has its values as an input (read at
  every call; another pattern traces again), and a gradient with respect to one is a
  matrix of its class on its pattern.

>>> import numpy as np, scipy.sparse, symgrad as sg
>>> A = scipy.sparse.csr_array(np.array([[2.0, 0.0], [1.0, 3.0]]))
>>> x = sg.var("x", shape=(2,))
>>> sg.evaluate(A @ x, {"x": [1.0, 1.0]})
array([2., 4.])
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import numpy as np

from ..base import tree_util
from ..base.errors import UnsupportedError
from ..ir import sparse_pattern as pat
from ..ir.expr import Expr, const
from ..ir.op import SPARSE
from .sparse import ZERO_PRESERVING, SparseArray, SparseMatrix

__all__ = ["as_sparse", "from_scipy", "is_sparse", "numpy_call"]

_KNOWN: dict[type, bool] = {}
_MATRIX: dict[type, bool] = {}


def is_sparse(o: Any) -> bool:
    """Whether ``o`` is a sparse matrix: symgrad's, or SciPy's (any format)."""
    t = type(o)
    known = _KNOWN.get(t)
    if known is None:
        known = _KNOWN[t] = issubclass(t, SparseArray) or _scipy(t, "sparray", "spmatrix")
    return known


def star_is_matmul(o: Any) -> bool:
    """Whether ``*`` with ``o`` is the matrix product (SciPy's ``spmatrix`` classes)."""
    t = type(o)
    known = _MATRIX.get(t)
    if known is None:
        known = _MATRIX[t] = issubclass(t, SparseMatrix) or _scipy(t, "spmatrix")
    return known


def _scipy(t: type, *names: str) -> bool:
    sparse = sys.modules.get("scipy.sparse")  # no SciPy matrix exists before it is imported
    classes = tuple(getattr(sparse, n) for n in names if hasattr(sparse, n))
    return bool(classes) and issubclass(t, classes)


def as_sparse(o: Any) -> SparseArray:
    """``o`` as a :class:`SparseArray` (SciPy's matrix: its values a constant)."""
    return o if isinstance(o, SparseArray) else from_scipy(o)


def _parts(a: Any) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """``(format, data, first, second)`` of a SciPy CSR, CSC or COO matrix."""
    if a.format == "coo":
        return "coo", a.data, a.row, a.col
    return a.format, a.data, a.indptr, a.indices


def from_scipy(a: Any) -> SparseArray:
    """A SciPy sparse matrix as a :class:`SparseArray` (a ``SparseMatrix`` for SciPy's
    ``spmatrix`` classes) with its values as a constant; CSR, CSC and COO keep their
    format, other formats become CSR."""
    if a.ndim != 2:
        raise UnsupportedError(f"a {a.ndim}-D scipy.sparse array: symgrad's sparse "
                               "matrices have 2 axes")
    if a.format not in pat.FORMATS:
        a = a.tocsr()
    kind, data, first, second = _parts(a)
    cls = SparseMatrix if star_is_matmul(a) else SparseArray
    return cls(const(np.asarray(data)), pat.make_pattern(kind, a.shape, first, second))


# -- NumPy's functions (and symgrad's ops, by name) with a sparse operand ---------------------

def _matmul(a: Any, b: Any, **_: Any) -> Any:
    return a.__matmul__(b) if isinstance(a, SparseArray) else b.__rmatmul__(a)


def _multiply(a: Any, b: Any, **_: Any) -> Any:
    """SciPy's ``*``: elementwise for sparse arrays, the matrix product for its ``spmatrix``
    classes (an Expr's ``x * A`` reaches here as ``multiply``)."""
    return a.__mul__(b) if isinstance(a, SparseArray) else b.__rmul__(a)


def _add(a: Any, b: Any, **_: Any) -> Any:
    return a._sum(b, 1.0) if isinstance(a, SparseArray) else b._sum(a, 1.0)


def _subtract(a: Any, b: Any, **_: Any) -> Any:
    return a._sum(b, -1.0) if isinstance(a, SparseArray) else (-b)._sum(a, 1.0)


def _divide(a: Any, b: Any, **_: Any) -> Any:
    if not isinstance(a, SparseArray):
        raise UnsupportedError("dividing by a sparse matrix (its zeros) is not supported")
    return a / b


def _sum(a: SparseArray, axis: Any = None, dtype: Any = None, keepdims: bool = False,
         **_: Any) -> Expr:
    total = a.sum(axis, dtype)
    if not keepdims or a._matrix:
        return total
    m, n = a.shape
    shape = (1, 1) if axis is None else (1, n) if int(axis) % 2 == 0 else (m, 1)
    return total.reshape(shape)


def _mean(a: SparseArray, axis: Any = None, dtype: Any = None, **_: Any) -> Expr:
    return a.mean(axis, dtype)


def _diagonal(a: SparseArray, offset: int = 0, axis1: int = 0, axis2: int = 1,
              **_: Any) -> Expr:
    if (axis1 % 2, axis2 % 2) != (0, 1):
        return a.T.diagonal(offset)
    return a.diagonal(offset)


def _trace(a: SparseArray, offset: int = 0, **_: Any) -> Expr:
    return a.trace(offset)


def _transpose(a: SparseArray, axes: Any = None, **_: Any) -> SparseArray:
    return a.transpose(axes)


def _power(a: Any, b: Any, **_: Any) -> Any:
    if not isinstance(a, SparseArray):
        raise UnsupportedError("a number to the power of a sparse matrix fills every entry")
    return a.power(b)


def _method(name: str, a: SparseArray, **_: Any) -> SparseArray:
    return getattr(a, name)()


_CALLS = {
    "matmul": _matmul, "dot": _matmul, "multiply": _multiply, "add": _add,
    "subtract": _subtract, "divide": _divide, "true_divide": _divide, "sum": _sum,
    "mean": _mean, "diagonal": _diagonal, "trace": _trace, "transpose": _transpose,
    "matrix_transpose": _transpose, "permute_dims": _transpose, "power": _power, "pow": _power,
    "negative": lambda a, **_: -a, "positive": lambda a, **_: a,
    "square": lambda a, **_: a.power(2), "absolute": lambda a, **_: a.abs(),
    "const": lambda a, **_: a,
    **{name: partial(_method, name) for name in ZERO_PRESERVING},
}


def numpy_call(name: str, args: Any, kwargs: dict) -> Any:
    """NumPy's function ``name`` (or symgrad's op of that name, ``kwargs`` its attributes)
    on ``args``, one of which is a sparse matrix: SciPy's meaning for a sparse operand."""
    args = [as_sparse(a) if is_sparse(a) else a for a in args]
    fn = _CALLS.get(name)
    if fn is None:
        raise UnsupportedError(
            f"{name} of a sparse matrix is not supported: SciPy's sparse operations are "
            "(A @ x, x @ A, A.T, A.multiply, A + B, A.sum(axis), A.diagonal(), "
            "symgrad.scipy.sparse.linalg's solvers); A.toarray() makes it dense")
    return fn(*args, **kwargs)


# -- pytrees: SciPy's CSR, CSC and COO classes and symgrad's hold their values ----------------

def _flatten_scipy(a: Any) -> tuple[tuple[Any], tuple]:
    kind, data, first, second = _parts(a)
    return (data,), (type(a), pat.make_pattern(kind, a.shape, first, second, check=False))


def _flatten_symgrad(a: SparseArray) -> tuple[tuple[Any], tuple]:
    return (a.data,), (type(a), a.pattern)


def _unflatten(aux: tuple, children: Any) -> Any:
    """Symbolic values: a :class:`SparseArray`; an array of values: SciPy's matrix of the
    class, on the pattern; anything else (a Jacobian's block, a transform's placeholder)
    stands as it is."""
    cls, pattern = aux
    (data,) = children
    count = pat.nnz(pattern)
    matrix = cls._matrix if issubclass(cls, SparseArray) else _scipy(cls, "spmatrix")
    if isinstance(data, Expr) and data.shape == (count,):
        return (SparseMatrix if matrix else SparseArray)(data, pattern)
    if not isinstance(data, np.ndarray) or data.shape != (count,):
        return data
    import scipy.sparse

    kind, shape, first, second = pat.unpack(pattern)
    if issubclass(cls, SparseArray):
        cls = getattr(scipy.sparse, f"{kind}_{'matrix' if matrix else 'array'}")
    if kind == "coo":
        return cls((data, (first.copy(), second.copy())), shape=shape)
    return cls((data, second.copy(), first.copy()), shape=shape)


_SCIPY_CLASSES = ("csr_array", "csr_matrix", "csc_array", "csc_matrix", "coo_array",
                  "coo_matrix")


def _scipy_family(cls: type) -> tuple | None:
    """The pytree functions of SciPy's CSR, CSC and COO classes (arrays and matrices)."""
    sparse = sys.modules.get("scipy.sparse")
    known = tuple(getattr(sparse, n) for n in _SCIPY_CLASSES if hasattr(sparse, n))
    if not known or not issubclass(cls, known):
        return None
    return _flatten_scipy, _unflatten


tree_util.register_pytree_node(SparseArray, _flatten_symgrad, _unflatten)
tree_util.register_pytree_node(SparseMatrix, _flatten_symgrad, _unflatten)
tree_util.register_pytree_family("scipy.sparse", _scipy_family)

SPARSE.update({"is": is_sparse, "call": numpy_call, "as": as_sparse})
