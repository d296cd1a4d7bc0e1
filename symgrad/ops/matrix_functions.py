"""Matrix functions of SciPy's ``linalg``: ``expm``, the matrix exponential, and the LU
factors of ``lu_factor`` (one call: the packed factors, the pivots and the row order).

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

from ..base.errors import ShapeError, UnsupportedError
from ..ir.expr import Expr, F
from ..ir.op import RESULT, Op, register, results_of
from ..ir.shapes import float_dtype, fmt
from .numpy_linalg import _mT, _on_squares


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
    name="expm", infer=_on_squares("expm"), impl=_expm,
    backprop=lambda n, g: (_frechet(_mT(n.args[0]), g),),
    forward=lambda n, t: None if t[0] is None else _frechet(n.args[0], t[0]),
    examples=lambda rng: [([0.5 * rng.standard_normal((3, 3))], {}),
                          ([0.5 * rng.standard_normal((2, 2, 2))], {})],
    doc="the matrix exponential (stacked over leading axes), as scipy.linalg.expm",
))


# -- LU factors: scipy.linalg.lu_factor -----------------------------------------------------


def _sg_lu_factor(a):
    """``scipy.linalg.lu_factor(a)``'s packed factors and 0-based pivots (int64), and the
    row order ``perm`` with ``a[perm] = L @ U`` (LAPACK's pivots, row swaps applied in
    turn)."""
    import numpy as np
    import scipy.linalg

    lu, piv = scipy.linalg.lu_factor(a)
    perm = np.arange(piv.shape[-1], dtype=np.int64)
    for i, p in enumerate(piv.tolist()):
        perm[i], perm[p] = perm[p], perm[i]
    return lu, piv.astype(np.int64), perm


def _lu_infer(shapes, dtypes, attrs):
    shape = shapes[0]
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ShapeError(f"lu_factor: needs one square matrix, got shape {fmt(shape)}")
    return results_of([(shape, float_dtype(dtypes[0])), (shape[:1], "int64"),
                       (shape[:1], "int64")])


def lu_parts(factors: tuple[Expr, Expr, Expr]) -> tuple[Expr, Expr, Expr]:
    """The unit lower factor ``L``, the upper ``U`` and the row permutation matrix ``Pm``
    (``Pm @ a = L @ U``) of the results of one ``lu_factor`` call."""
    lu, _, perm = factors
    size = lu.shape[-1]
    eye = F.eye(size, dtype=lu.dtype)
    lower = F.band(lu, None, -1) + eye
    upper = F.band(lu, 0, None)
    return lower, upper, F.take(eye, perm, axis=0)


def _lu_rule(n, g):
    """A = P L U: A_bar = P L^-T (tril_-1(L^T L_bar) + triu(U_bar U^T)) U^-T, with L_bar and
    U_bar the strictly lower and upper parts of the packed adjoint (Murray 2016, sec. 3);
    the pivots and the row order are piecewise constant."""
    g = g[0]
    if g is None:
        return (None,)
    lower, upper, perm = lu_parts(n.results)
    inner = F.band(_mT(lower) @ F.band(g, None, -1), None, -1) \
        + F.band(F.band(g, 0, None) @ _mT(upper), 0, None)
    m = _mT(F.solve(upper, _mT(F.solve(_mT(lower), inner))))
    return (_mT(perm) @ m,)


def _lu_forward(n, t):
    """dL = L tril_-1(X), dU = triu(X) U with X = L^-1 (P^T dA) U^-1: the packed tangent."""
    if t[0] is None:
        return None
    lower, upper, perm = lu_parts(n.results)
    x = _mT(F.solve(_mT(upper), _mT(F.solve(lower, perm @ t[0]))))
    return lower @ F.band(x, None, -1) + F.band(x, 0, None) @ upper, None, None


def _lu_examples(rng):
    return [([rng.standard_normal((3, 3)) + 2 * np.eye(3)], {}),
            ([rng.standard_normal((4, 4))], {})]


register(Op(
    name="lu_factor", infer=_lu_infer, impl=_sg_lu_factor, backprop=_lu_rule,
    forward=_lu_forward, examples=_lu_examples,
    doc="scipy.linalg.lu_factor's packed LU factors (U on and above the diagonal, L with a "
        "unit diagonal below it) and 0-based pivots, and the row order perm with "
        "a[perm] = L @ U: one call",
))


def factored_matrix(piv: Expr) -> Expr | None:
    """The matrix ``a`` when ``piv`` is the pivots of ``lu_factor(a)`` (so its row order
    can be built), else None."""
    nodes = piv.graph.nodes
    node = nodes[piv.node]
    if node.op != RESULT or node.attrs["index"] != 1 or nodes[node.args[0]].op != "lu_factor":
        return None
    return Expr(piv.graph, nodes[node.args[0]].args[0])
