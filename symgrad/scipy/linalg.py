"""``symgrad.scipy.linalg``: SciPy's linear algebra on symbolic values, built from the ops of
``numpy.linalg`` (:mod:`symgrad.ops.numpy_linalg`) and ``expm``
(:mod:`symgrad.ops.matrix_functions`).

Signatures and meanings are SciPy's: ``cholesky`` gives the *upper* factor unless
``lower=True``; ``cho_factor`` returns ``(c, lower)`` for ``cho_solve``; ``solve_triangular``
reads only the triangle it is told to (the other one gets no gradient), with ``trans`` and
``unit_diagonal``. The keywords about memory and checks (``overwrite_a``, ``check_finite``)
are accepted and change nothing. A triangular solve is written as a general solve of the
masked matrix: the same numbers and derivatives (the emitted code needs only NumPy).

>>> import numpy as np, symgrad as sg
>>> from symgrad.scipy.linalg import cho_factor, cho_solve
>>> A, b = sg.var("A", shape=(2, 2)), sg.var("b", shape=(2,))
>>> x = cho_solve(cho_factor(A, lower=True), b)
>>> sg.evaluate(x, {"A": [[4.0, 2.0], [2.0, 3.0]], "b": [2.0, 1.0]})
array([0.5, 0. ])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as _numpy  # noqa: F401  (the ops and NumPy's names, registered first)
from ..base.errors import ShapeError, UnsupportedError
from ..frontend.numpy_define import as_expr
from ..ir.expr import Expr, F
from ..ops.matrix_functions import factored_matrix, lu_parts, sylvester

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "eigvalsh",
           "expm", "inv", "lu", "lu_factor", "lu_solve", "solve", "solve_banded",
           "solve_sylvester", "solve_triangular", "sqrtm", "svd", "svdvals"]

_NOT_YET: dict[str, str] = {}


def _triangle(a: Expr, lower: bool, unit_diagonal: bool = False) -> Expr:
    """The triangle of ``a`` SciPy reads (the diagonal as ones for ``unit_diagonal``)."""
    tri = F.band(a, None, 0) if lower else F.band(a, 0, None)
    if unit_diagonal:
        tri = F.band(tri, None, None, 0.0) + F.eye(a.shape[-1], dtype=a.dtype)
    return tri


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     check_finite: bool = True) -> Expr:
    """x with ``T x = b`` for the triangle ``T`` of ``a`` (lower or upper); ``trans`` 1 or
    ``'T'`` solves ``T^T x = b`` (``'C'`` too: values are real)."""
    a = as_expr(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ShapeError(f"solve_triangular: a must be a square matrix, got shape {a.shape}")
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise UnsupportedError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', "
                               f"got {trans!r}")
    tri = _triangle(a, bool(lower), bool(unit_diagonal))
    if trans not in (0, "N"):
        tri = F.matrix_transpose(tri)
    return F.solve(tri, as_expr(b))


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Expr:
    """The Cholesky factor of ``a``: upper (``U^T U = a``) unless ``lower=True``."""
    return F.cholesky(as_expr(a), upper=not lower)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Expr, bool]:
    """``(c, lower)``: the Cholesky factor for :func:`cho_solve` (the other triangle of
    ``c`` is zero here, where SciPy leaves what was in ``a``; cho_solve reads neither)."""
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Expr:
    """x with ``a x = b`` from ``cho_factor(a)``'s ``(c, lower)``: two triangular solves."""
    c, lower = c_and_lower
    if lower:
        return solve_triangular(c, solve_triangular(c, b, lower=True), trans="T", lower=True)
    return solve_triangular(c, solve_triangular(c, b, trans="T"), lower=False)


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, check_finite: bool = True, assume_a: Any = None,
          transposed: bool = False) -> Expr:
    """x with ``a x = b`` (``assume_a`` changes the LAPACK driver, not the answer; ``'pos'``
    and ``'sym'`` read the triangle ``lower`` names, as SciPy does)."""
    a = as_expr(a)
    if assume_a in ("sym", "her", "pos", "positive definite", "symmetric", "hermitian"):
        a = _symmetric(a, lower)
    elif assume_a not in (None, "gen", "general"):
        tri = {"lower triangular": True, "upper triangular": False}.get(assume_a)
        if tri is None:
            raise UnsupportedError(f"solve: assume_a={assume_a!r} is not supported")
        a = _triangle(a, tri)
    if transposed:
        a = F.matrix_transpose(a)
    return F.solve(a, as_expr(b))


def solve_banded(l_and_u: tuple[int, int], ab: Any, b: Any, overwrite_ab: bool = False,
                 overwrite_b: bool = False, check_finite: bool = True) -> Expr:
    """x with ``a x = b`` for the banded matrix ``a`` stored in SciPy's diagonal ordered
    form: ``ab[u + i - j, j] = a[i, j]`` for ``(l, u) = l_and_u`` (the entries of ``ab``
    outside the band are not read and get no gradient).

    The dense ``a`` is rebuilt from ``ab`` (a gather of its entries) and solved by
    ``linalg.solve``: SciPy's numbers up to rounding (LAPACK's ``gesv`` where SciPy calls
    ``gbsv``), with the solve's derivatives in ``ab`` and ``b``, any order, on every target.
    Memory and time are those of the dense ``n x n`` solve.

    >>> import numpy as np, symgrad as sg
    >>> ab, b = sg.var("ab", shape=(3, 3)), sg.var("b", shape=(3,))
    >>> x = solve_banded((1, 1), ab, b)
    >>> ab0 = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 0.0]])
    >>> np.round(sg.evaluate(x, {"ab": ab0, "b": [5.0, 6.0, 5.0]}), 12)
    array([1., 1., 1.])
    """
    try:
        lo, up = (int(k) for k in l_and_u)
    except (TypeError, ValueError):
        raise UnsupportedError(f"solve_banded: (l, u) must be two integers, got "
                               f"{l_and_u!r}") from None
    ab = as_expr(ab)
    if ab.ndim != 2 or ab.shape[0] != lo + up + 1 or lo < 0 or up < 0:
        raise ShapeError(f"solve_banded: ab must have shape (l + u + 1, n) = "
                         f"({lo + up + 1}, n) for (l, u) = ({lo}, {up}), got {ab.shape}")
    n = ab.shape[1]
    i, j = np.indices((n, n))
    row = up + i - j
    inside = (row >= 0) & (row <= lo + up)
    flat = np.where(inside, row, 0) * n + j
    dense = F.where(inside, F.take(F.reshape(ab, (-1,)), flat), 0.0)
    return F.solve(dense, as_expr(b))


def solve_sylvester(a: Any, b: Any, q: Any) -> Expr:
    """X with ``a X + X b = q`` (``a`` m x m, ``b`` n x n, ``q`` m x n), as SciPy's.

    Solved exactly as the Kronecker (vec) system ``(a (x) I + I (x) b^T) vec(X) = vec(q)``
    of size ``m n`` by ``linalg.solve``, so it runs on every target (JAX and PyTorch have
    no Sylvester solver) and its derivatives are the solve's, any order: ``dX`` solves
    ``a dX + dX b = dq - da X - X db``. The values are SciPy's (Bartels-Stewart) up to
    rounding. The system has ``(m n)^2`` entries: ``m n`` above
    ``symgrad.ops.matrix_functions.SYLVESTER_LIMIT`` (4096) raises
    :class:`~symgrad.errors.LimitError`. Complex matrices work as SciPy's.

    >>> import numpy as np, symgrad as sg
    >>> A, B, Q = (sg.var(k, shape=(2, 2)) for k in "ABQ")
    >>> X = solve_sylvester(A, B, Q)
    >>> at = {"A": np.diag([1.0, 2.0]), "B": np.diag([3.0, 4.0]), "Q": np.ones((2, 2))}
    >>> np.round(sg.evaluate(X, at), 12)
    array([[0.25      , 0.2       ],
           [0.2       , 0.16666667]])
    """
    a, b, q = as_expr(a), as_expr(b), as_expr(q)
    for name, x in (("a", a), ("b", b)):
        if x.ndim != 2 or x.shape[0] != x.shape[1]:
            raise ShapeError(f"solve_sylvester: {name} must be a square matrix, got shape "
                             f"{x.shape}")
    m, n = a.shape[0], b.shape[0]
    if q.shape != (m, n):
        raise ShapeError(f"solve_sylvester: q must have shape ({m}, {n}) for a {a.shape} "
                         f"and b {b.shape}, got {q.shape}")
    return sylvester(a, b, q)


def expm(A: Any) -> Expr:
    """The matrix exponential (of each matrix of the last two axes): the ``expm`` op, whose
    derivative is the Fréchet derivative (block-matrix formula)."""
    return F.expm(as_expr(A))


def sqrtm(A: Any, disp: Any = None, blocksize: Any = None) -> Expr:
    """The principal square root ``X`` of ``A`` (``X @ X = A``, the eigenvalues of ``X`` in
    the right half-plane), SciPy's values (its Schur method), of each matrix of the last
    two axes. The result is complex always, as JAX's (SciPy's is real where the root is,
    a dtype that depends on the values): take ``.real`` where the root is known to be real.

    Its derivative solves the Sylvester equation ``X dX + dX X = dA`` (the adjoint solves
    ``X^T G_A + G_A X^T = G``), by :func:`solve_sylvester`'s Kronecker system: every order,
    every target that evaluates ``sqrtm`` (SciPy on the NumPy target, JAX's own there);
    ``n^2`` above ``SYLVESTER_LIMIT`` raises :class:`~symgrad.errors.LimitError` when
    differentiated (the values have no limit). ``disp`` and ``blocksize`` change nothing here.

    >>> import numpy as np, symgrad as sg
    >>> A = sg.var("A", shape=(2, 2))
    >>> X = sqrtm(A)
    >>> np.round(sg.evaluate(X, {"A": [[4.0, 0.0], [0.0, 9.0]]}), 12)
    array([[2.+0.j, 0.+0.j],
           [0.+0.j, 3.+0.j]])
    """
    return F.sqrtm(as_expr(A))


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Expr, Expr]:
    """``(lu, piv)``: SciPy's packed LU factors (``L`` unit lower below the diagonal, ``U``
    on and above it) and 0-based pivots, LAPACK's partial pivoting."""
    a = as_expr(a)
    return F.lu_factor(a), F.lu_pivots(a)


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True,
       p_indices: bool = False) -> tuple[Expr, ...]:
    """``(p, l, u)`` with ``a = p @ l @ u`` (``l`` unit lower, ``u`` upper, LAPACK's partial
    pivoting, as :func:`lu_factor`); ``permute_l=True`` gives ``(p @ l, u)``;
    ``p_indices=True`` gives ``p`` as int32 row indices (``a = l[p] @ u``). ``l`` and ``u``
    are differentiable (through ``lu_factor``'s rule), ``p`` is piecewise constant. Square
    matrices only (SciPy's rectangular and stacked forms are refused).

    >>> import numpy as np, symgrad as sg
    >>> A = sg.var("A", shape=(2, 2))
    >>> p, l, u = lu(A)
    >>> sg.evaluate(p @ l @ u, {"A": [[1.0, 2.0], [3.0, 4.0]]})
    array([[1., 2.],
           [3., 4.]])
    """
    a = as_expr(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ShapeError(f"lu: a must be one square matrix (SciPy's rectangular and stacked "
                         f"forms are not supported), got shape {a.shape}")
    lower, upper, rows = lu_parts(a, F.lu_factor(a))
    if p_indices:
        p = F.astype(F.argsort(F.lu_permutation(a)), "int32")
        return (F.take(lower, p, axis=0), upper) if permute_l else (p, lower, upper)
    p = F.matrix_transpose(rows)
    return (p @ lower, upper) if permute_l else (p, lower, upper)


def _row_order(lu: Expr, piv: Any) -> Any:
    """The row order ``perm`` (``a[perm] = L U``) for pivots ``piv``: from the matrix
    ``lu_factor`` factored when ``piv`` is its ``lu_pivots``, or computed from constants."""
    if isinstance(piv, Expr):
        a = factored_matrix(piv)
        if a is None:
            raise UnsupportedError("lu_solve: piv must come from symgrad.scipy.linalg."
                                   "lu_factor, or be constant pivots")
        return F.lu_permutation(a)
    order = list(range(lu.shape[-1]))
    for i, p in enumerate(np.asarray(piv).tolist()):
        order[i], order[p] = order[p], order[i]
    return np.asarray(order, dtype=np.int64)


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: Any = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Expr:
    """x with ``a x = b`` (``trans`` 1 or ``'T'``: ``a^T x = b``) from ``lu_factor(a)``."""
    lu, piv = lu_and_piv
    lu, b = as_expr(lu), as_expr(b)
    perm = _row_order(lu, piv)
    if trans in (0, "N"):
        y = solve_triangular(lu, F.take(b, perm, axis=0), lower=True, unit_diagonal=True)
        return solve_triangular(lu, y, lower=False)
    z = solve_triangular(lu, solve_triangular(lu, b, trans="T"), trans="T", lower=True,
                         unit_diagonal=True)
    rows = F.take(F.eye(lu.shape[-1], dtype=lu.dtype), perm, axis=0)
    return F.matrix_transpose(rows) @ z


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Expr:
    """The inverse of ``a``."""
    return F.inv(as_expr(a))


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Expr:
    """The determinant of ``a``."""
    return F.det(as_expr(a))


def eigh(a: Any, b: Any = None, *, lower: bool = True, eigvals_only: bool = False,
         type: int = 1, subset_by_index: Any = None, subset_by_value: Any = None,
         **ignored: Any) -> Any:
    """Eigenvalues (ascending) and eigenvectors of the symmetric matrix ``a`` (its ``lower``
    triangle is read): ``(w, v)``, or ``w`` with ``eigvals_only=True``.

    With ``b`` (symmetric positive definite, the same triangle read), the generalised
    problem of ``type`` 1 (``a v = w b v``), 2 (``a b v = w v``) or 3 (``b a v = w v``),
    reduced to a standard one through the Cholesky factor ``b = L L^T`` as LAPACK's
    ``sygvd`` does: ``C = L^-1 a L^-T`` (type 1) or ``L^T a L`` (2, 3), ``v = L^-T y``
    (1, 2) or ``L y`` (3), so ``v^T b v = I`` (``v^T b^-1 v = I`` for type 3), SciPy's
    normalisation. Built from ``cholesky``, triangular solves and ``eigh``, so both values
    and vectors are differentiable in ``a`` and ``b``. Each vector's sign is LAPACK's
    choice, which may differ between libraries.

    >>> import numpy as np, symgrad as sg
    >>> A, B = sg.var("A", shape=(2, 2)), sg.var("B", shape=(2, 2))
    >>> w = eigh(A, B, eigvals_only=True)
    >>> sg.evaluate(w, {"A": np.diag([2.0, 6.0]), "B": np.diag([1.0, 2.0])})
    array([2., 3.])
    """
    for key, value in (("subset_by_index", subset_by_index),
                       ("subset_by_value", subset_by_value)):
        if value is not None:
            raise UnsupportedError(f"eigh: {key} is not supported; take the slice of the "
                                   f"full result (w[lo:hi + 1], v[:, lo:hi + 1])")
    uplo = "L" if lower else "U"
    a = as_expr(a)
    if b is None:
        w, v = F.eigh(a, UPLO=uplo)
        return w if eigvals_only else (w, v)
    if type not in (1, 2, 3):
        raise UnsupportedError(f"eigh: type must be 1, 2 or 3, got {type!r}")
    b = as_expr(b)
    if a.ndim != 2 or b.shape != a.shape or a.shape[0] != a.shape[1]:
        raise ShapeError(f"eigh(a, b): a and b must be square matrices of one shape, got "
                         f"{a.shape} and {b.shape}")
    a, b = _symmetric(a, lower), _symmetric(b, lower)
    chol = F.cholesky(b)  # lower: b = L L^T
    if type == 1:  # L^-1 a L^-T
        inner = solve_triangular(chol, solve_triangular(chol, a, lower=True).T, lower=True)
    else:
        inner = chol.T @ a @ chol
    w, y = F.eigh(inner)
    if eigvals_only:
        return w
    return w, (chol @ y if type == 3 else solve_triangular(chol, y, trans="T", lower=True))


def _symmetric(a: Expr, lower: bool) -> Expr:
    """The symmetric matrix whose ``lower`` (or upper) triangle is that of ``a``."""
    tri = _triangle(a, lower)
    strict = F.band(tri, None, -1) if lower else F.band(tri, 1, None)
    return tri + F.matrix_transpose(strict)


def eigvalsh(a: Any, b: Any = None, *, lower: bool = True, type: int = 1,
             **ignored: Any) -> Expr:
    """The eigenvalues of the symmetric matrix ``a`` (of the pencil ``(a, b)`` with ``b``),
    ascending."""
    return eigh(a, b, lower=lower, eigvals_only=True, type=type)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:
    """``(U, s, Vh)`` (or ``s``): NumPy's SVD, SciPy's signature."""
    from ..ir.expr import function

    return function("linalg.svd")(as_expr(a), full_matrices=full_matrices,
                                  compute_uv=compute_uv)


def svdvals(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Expr:
    """The singular values of ``a``, descending."""
    return F.svdvals(as_expr(a))


def block_diag(*arrs: Any) -> Expr:
    """The block-diagonal matrix of ``arrs`` (scalars and vectors count as 1-row blocks)."""
    if not arrs:
        raise ShapeError("block_diag() needs at least one block (SciPy's empty case is "
                         "a 1 x 0 array)")
    blocks = []
    for a in arrs:
        a = as_expr(a)
        if a.ndim > 2:
            raise ShapeError(f"block_diag: blocks must be at most 2-D, got shape {a.shape}")
        blocks.append(F.reshape(a, (1, -1) if a.ndim < 2 else a.shape))
    cols = sum(b.shape[1] for b in blocks)
    dtype = _numpy.result_type(*[b.dtype for b in blocks])
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [F.zeros((r, left), dtype=dtype.name)] if left else []
        parts.append(F.astype(b, dtype.name) if b.dtype != dtype.name else b)
        if cols - left - c:
            parts.append(F.zeros((r, cols - left - c), dtype=dtype.name))
        rows.append(F.concatenate(parts, axis=1) if len(parts) > 1 else parts[0])
        left += c
    return F.concatenate(rows, axis=0) if len(rows) > 1 else rows[0]


def __getattr__(name: str) -> Any:
    why = _NOT_YET.get(name, "it is not covered yet (symgrad.scipy.linalg.__all__ lists "
                             "what is)")
    raise AttributeError(f"symgrad.scipy.linalg has no {name!r}: {why}")
