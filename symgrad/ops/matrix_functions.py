"""Matrix functions of SciPy's ``linalg``: ``expm``, the matrix exponential, ``sqrtm``, the
principal square root, and the LU factors of ``lu_factor`` (``lu_factor`` packed,
``lu_pivots``, and the row permutation).

Its derivative is the Fréchet derivative ``L(A, E)``, the upper-right block of the
exponential of the block matrix ``[[A, E], [0, A]]`` (Higham, *Functions of Matrices*,
2008, Thm. 3.6 / eq. 10.15 style block formula); the adjoint of ``L(A, .)`` is ``L(A^T, .)``
(Al-Mohy & Higham 2009). Both rules are written with ``expm`` itself, so every order is
available. SciPy's ``expm`` is the interpreter's implementation (imported on first use).

>>> import numpy as np, symgrad as sg
>>> A = sg.var("A", shape=(2, 2))
>>> g = sg.grad(sg.sum(sg.expm(A)), A)
>>> np.round(sg.evaluate(g, {"A": np.zeros((2, 2))}), 12)
array([[1., 1.],
       [1., 1.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.errors import LimitError, ShapeError, UnsupportedError
from ..ir.expr import Expr, F
from ..ir.op import Op, register
from ..ir.shapes import complex_dtype, float_dtype, fmt
from .numpy_linalg import mT, on_squares
from .tangent import first


def _linalg() -> Any:
    try:
        import scipy.linalg
    except ImportError:  # pragma: no cover - SciPy is installed with symgrad[test]
        raise UnsupportedError("evaluating expm needs SciPy: pip install scipy") from None
    return scipy.linalg


def _expm(a):
    return _linalg().expm(a)


def _frechet(a, e):
    """L(a, e): the derivative of expm at ``a`` in direction ``e`` (``e`` may carry extra
    leading batch axes)."""
    n = a.shape[-1]
    a = F.broadcast_to(a, e.shape) if a.shape != e.shape else a
    top = F.concatenate([a, e], axis=-1)
    bottom = F.concatenate([F.zeros_like(a), a], axis=-1)
    return F.expm(F.concatenate([top, bottom], axis=-2))[..., :n, n:]


register(Op(
    name="expm", complex=True, infer=on_squares("expm"), impl=_expm,
    backprop=lambda n, g: (_frechet(mT(n.args[0]), g),),
    forward=lambda n, t: None if t[0] is None else _frechet(n.args[0], t[0]),
    examples=lambda rng: [([0.5 * rng.standard_normal((3, 3))], {}),
                          ([0.5 * rng.standard_normal((2, 2, 2))], {}),
                          ([0.5 * (rng.standard_normal((3, 3))
                                   + 1j * rng.standard_normal((3, 3)))], {})],
    doc="the matrix exponential (stacked over leading axes), as scipy.linalg.expm",
))


# -- the Sylvester equation and sqrtm ------------------------------------------------------


# a Sylvester equation's Kronecker system has (m n)^2 entries: m n above this is refused
SYLVESTER_LIMIT = 4096


def sylvester(a: Expr, b: Expr, q: Expr) -> Expr:
    """X with ``a X + X b = q`` (``a`` m x m, ``b`` n x n, ``q`` m x n, leading batch axes
    broadcast), exactly as the Kronecker (vec) system ``(a (x) I + I (x) b^T) vec(X) =
    vec(q)`` of size ``m n``, solved by ``solve``: built from ops, so its derivatives are
    the solve's, any order, on every target. Memory ``(m n)^2`` per matrix: ``m n`` above
    :data:`SYLVESTER_LIMIT` raises :class:`~symgrad.errors.LimitError`."""
    m, n = a.shape[-1], b.shape[-1]
    if m * n > SYLVESTER_LIMIT:
        raise LimitError(f"sylvester: the Kronecker system of a {m} x {m} and a {n} x {n} "
                         f"matrix has {(m * n) ** 2:,} entries (m n = {m * n} > symgrad.ops."
                         f"matrix_functions.SYLVESTER_LIMIT = {SYLVESTER_LIMIT}); raise the "
                         f"limit if that memory is fine")
    dtype = str(np.result_type(a.dtype, b.dtype, q.dtype))
    # kron(a, I)[i n + k, j n + l] = a[i, j] I[k, l]; kron(I, b^T) likewise
    left = F.reshape(a, a.shape[:-2] + (m, 1, m, 1)) \
        * F.reshape(F.eye(n, dtype=dtype), (1, n, 1, n))
    right = F.reshape(F.eye(m, dtype=dtype), (m, 1, m, 1)) \
        * F.reshape(mT(b), b.shape[:-2] + (1, n, 1, n))
    system = F.reshape(left, left.shape[:-4] + (m * n, m * n)) \
        + F.reshape(right, right.shape[:-4] + (m * n, m * n))
    x = F.solve(system, F.reshape(q, q.shape[:-2] + (m * n, 1)))
    return F.reshape(x, x.shape[:-2] + (m, n))


def _sqrtm(a):
    out = _linalg().sqrtm(a)
    return np.asarray(out, dtype=np.result_type(a.dtype, np.complex64))


def _sqrtm_infer(shapes, dtypes, attrs):
    shape, dtype = on_squares("sqrtm")(shapes, dtypes, attrs)
    return shape, complex_dtype(dtype)


register(Op(
    name="sqrtm", complex=True, infer=_sqrtm_infer, impl=_sqrtm,
    # X dX + dX X = dA; the adjoint solves X^T G_A + G_A X^T = G (holomorphic: the real rule)
    backprop=lambda n, g: (sylvester(mT(n.out), mT(n.out), g),),
    forward=lambda n, t: None if t[0] is None else sylvester(n.out, n.out, t[0]),
    examples=lambda rng: [([rng.standard_normal((3, 3)) + 3.0 * np.eye(3)], {}),
                          ([rng.standard_normal((2, 3, 3))], {}),
                          ([rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))],
                           {})],
    doc="the principal square root of a square matrix (stacked over leading axes), as "
        "scipy.linalg.sqrtm, complex always",
))


# -- LU factors: scipy.linalg.lu_factor -----------------------------------------------------


def _sg_lu_permutation(a):
    """The row order ``perm`` of ``lu_factor(a)``: ``a[perm] = L @ U`` (LAPACK's pivots,
    row swaps applied in turn)."""
    import numpy as np
    import scipy.linalg

    piv = scipy.linalg.lu_factor(a)[1]
    perm = np.arange(piv.shape[-1], dtype=np.int64)
    for i, p in enumerate(piv.tolist()):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _lu_square(name: str, dtype_of):
    def infer(shapes, dtypes, attrs):
        shape = shapes[0]
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ShapeError(f"{name}: needs one square matrix, got shape {fmt(shape)}")
        return dtype_of(shape, dtypes[0])

    return infer


def lu_parts(a, lu):
    """The unit lower factor ``L``, the upper ``U`` and the row permutation matrix ``Pm``
    (``Pm @ a = L @ U``) of ``lu = lu_factor(a)``."""
    size = a.shape[-1]
    eye = F.eye(size, dtype=lu.dtype)
    lower = F.band(lu, None, -1) + eye
    upper = F.band(lu, 0, None)
    return lower, upper, F.take(eye, F.lu_permutation(a), axis=0)


def _lu_rule(n, g):
    """A = P L U: A_bar = P L^-T (tril_-1(L^T L_bar) + triu(U_bar U^T)) U^-T, with L_bar and
    U_bar the strictly lower and upper parts of the packed adjoint (Murray 2016, sec. 3)."""
    lower, upper, perm = lu_parts(n.args[0], n.out)
    inner = F.band(mT(lower) @ F.band(g, None, -1), None, -1) \
        + F.band(F.band(g, 0, None) @ mT(upper), 0, None)
    m = mT(F.solve(upper, mT(F.solve(mT(lower), inner))))
    return (mT(perm) @ m,)


def _lu_forward(n, t):
    """dL = L tril_-1(X), dU = triu(X) U with X = L^-1 (P^T dA) U^-1: the packed tangent."""
    lower, upper, perm = lu_parts(n.args[0], n.out)
    x = mT(F.solve(mT(upper), mT(F.solve(lower, perm @ t))))
    return lower @ F.band(x, None, -1) + F.band(x, 0, None) @ upper


def _lu_examples(rng):
    return [([rng.standard_normal((3, 3)) + 2 * np.eye(3)], {}),
            ([rng.standard_normal((4, 4))], {})]


register(Op(
    name="lu_factor", infer=_lu_square("lu_factor", lambda s, d: (s, float_dtype(d))),
    impl=lambda a: _linalg().lu_factor(a)[0], backprop=_lu_rule,
    forward=first(_lu_forward), examples=_lu_examples,
    doc="the packed LU factors of scipy.linalg.lu_factor: U on and above the diagonal, "
        "L (unit diagonal) below it",
))
register(Op(
    name="lu_pivots", infer=_lu_square("lu_pivots", lambda s, d: (s[:1], "int64")),
    impl=lambda a: _linalg().lu_factor(a)[1].astype(np.int64), differentiable=False,
    examples=_lu_examples, doc="the pivot indices of scipy.linalg.lu_factor (0-based)",
))
register(Op(
    name="lu_permutation", infer=_lu_square("lu_permutation", lambda s, d: (s[:1], "int64")),
    impl=_sg_lu_permutation, differentiable=False, examples=_lu_examples, public=False,
    doc="the row order of lu_factor: a[perm] = L @ U",
))


def factored_matrix(piv: Expr) -> Expr | None:
    """The matrix ``a`` when ``piv`` is ``lu_pivots(a)`` (so its row order can be built),
    else None."""
    node = piv.graph.nodes[piv.node]
    return Expr(piv.graph, node.args[0]) if node.op == "lu_pivots" else None
