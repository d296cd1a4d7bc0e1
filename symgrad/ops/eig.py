"""The eigendecomposition of a general square matrix: ``eig`` (one call, two results:
``(eigenvalues, eigenvectors)``) and ``eigvals``, as ``numpy.linalg``'s, with complex
results always (JAX's choice: NumPy's own are real when every eigenvalue is, a dtype that
depends on the values, which are not known while tracing).

Derivatives: the eigenvalues' are JAX's (``dw = diag(V^-1 dA V)``, so ``A_bar = V^-T
diag(w_bar) V^T``). The eigenvectors' are those of NumPy's own eigenvectors, whose gauge
LAPACK's ``geev`` fixes: each column has unit Euclidean norm and its component of largest
modulus real. With ``P = V^-1 dA V`` and ``F_ij = 1 / (w_j - w_i)`` (0 on the diagonal) the
raw derivative is ``dV0 = V (F o P)``; the gauge-fixed one is ``dV = dV0 + V diag(a)`` with,
for column ``j`` and its largest component ``k`` (locally constant), ``Re a_j = -Re(v_j^H
dV0_j)`` (the norm stays 1) and ``Im a_j = -Im(dV0_kj) / V_kj`` (that component stays real).
So every function of the eigenvectors gets its true derivative, phase-dependent ones too
(JAX refuses eigenvector derivatives by default, and with ``enable_eigvec_derivs`` is right
only for phase-free functions). Both rules are built from ops: every order is available.
Repeated eigenvalues (``w_i = w_j``) make ``F`` infinite: the eigenvectors' derivatives are
then inf or NaN, as ``eigh``'s (the eigenvectors are not differentiable there); the
eigenvalues' stay finite while ``V`` is invertible.

>>> import numpy as np, symgrad as sg
>>> A = sg.var("A", shape=(2, 2))
>>> w = np.linalg.eigvals(A)
>>> sg.evaluate(w, {"A": [[0.0, -1.0], [1.0, 0.0]]})
array([0.+1.j, 0.-1.j])
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..ir.expr import Expr, F, call, const
from ..ir.op import Op, register, results_of
from ..ir.shapes import complex_dtype
from .numpy_linalg import adjoint_pairing, gap_inverse, mH, mT, on_squares

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])

def _complex(r: np.ndarray) -> np.ndarray:
    return np.asarray(r, dtype=np.result_type(r, 1j))


def _sg_eig(a):
    return tuple(_complex(r) for r in np.linalg.eig(a))


def _eig_infer(shapes, dtypes, attrs):
    values, vectors = on_squares("eig", 1)(shapes, dtypes, attrs), on_squares("eig")(
        shapes, dtypes, attrs)
    return results_of([(values[0], complex_dtype(values[1])),
                       (vectors[0], complex_dtype(vectors[1]))])


def _eigvals_infer(shapes, dtypes, attrs):
    shape, dtype = on_squares("eigvals", 1)(shapes, dtypes, attrs)
    return shape, complex_dtype(dtype)


def _values_adjoint(v, gw):
    """``A_bar = V^-T diag(w_bar) V^T``."""
    vt = mT(v)
    return F.solve(vt, vt * F.expand_dims(gw, axis=-1))


def _values_tangent(v, t):
    """``dw = diag(V^-1 dA V)``, as ``sum(solve(V, dA) * V^T, -1)``."""
    t = F.astype(t, v.data.dtype) if t.data.dtype != v.data.dtype else t
    return F.sum(F.solve(v, t) * mT(v), axis=-1)


def _largest(v: Expr) -> tuple[Expr, Expr]:
    """The one-hot mask (same shape as ``v``) of each column's component of largest
    modulus, LAPACK's real one, and that component's (real) value per column."""
    n = v.shape[-1]
    k = F.argmax(F.abs(v), axis=-2)
    rows = F.reshape(F.arange(n), (n, 1))
    mask = F.astype(rows == F.expand_dims(k, axis=-2), v.data.dtype)
    return mask, F.real(F.sum(mask * v, axis=-2))


def _columns(x: Expr) -> Expr:
    """``x[..., None, :]``: a value per column, ready to scale the columns of a matrix."""
    return F.expand_dims(x, axis=-2)


def _vectors_tangent(w: Expr, v: Expr, t: Expr) -> Expr:
    """``dV = dV0 + V diag(a)``, ``dV0 = V (F o V^-1 dA V)``, ``a`` keeping each column's
    norm 1 and its largest component real (LAPACK's gauge)."""
    dv0 = v @ (gap_inverse(w) * F.solve(v, t @ v))
    mask, top = _largest(v)
    along = F.real(F.sum(F.conj(v) * dv0, axis=-2))
    turn = F.imag(F.sum(mask * dv0, axis=-2)) / top
    return dv0 - v * _columns(along + turn * 1j)


def _vectors_adjoint_textbook(w: Expr, v: Expr, gw: Expr | None, gv: Expr) -> Expr:
    """The adjoint of ``(w, V)`` for the pairing ``Re tr(G^H dA)``: ``V^-H (diag(w_bar) +
    conj(F) o (V^H G0)) V^H``, ``G0`` the eigenvectors' cotangent with the gauge's
    projections taken out (the transpose of :func:`_vectors_tangent`)."""
    mask, top = _largest(v)
    s = F.sum(F.conj(v) * gv, axis=-2)
    g0 = gv - v * _columns(F.real(s)) - mask * _columns(F.imag(s) / top * 1j)
    inner = F.conj(gap_inverse(w)) * (mH(v) @ g0)
    if gw is not None:
        inner = inner + F.expand_dims(gw, axis=-1) * F.eye(w.shape[-1], dtype=v.data.dtype)
    return F.solve(mH(v), inner @ mH(v))


_vectors_adjoint = adjoint_pairing(
    lambda n, g: (_vectors_adjoint_textbook(n.results[0], n.results[1], *g),))


def _eig_rule(n, g):
    gw, gv = g
    if gv is None:
        return (_values_adjoint(n.results[1], gw),)
    return _vectors_adjoint(n, g)


def _eig_forward(n, t):
    if t[0] is None:
        return None
    w, v = n.results
    tv = F.astype(t[0], v.data.dtype) if t[0].data.dtype != v.data.dtype else t[0]
    values = _values_tangent(v, tv) if n.wants(0) else None
    return values, _vectors_tangent(w, v, tv) if n.wants(1) else None


def _vectors(a):
    return call("eig", a)[1]


def eig(a) -> EigResult:
    """``(eigenvalues, eigenvectors)`` of a square matrix, as ``numpy.linalg.eig``, complex.

    >>> import symgrad as sg
    >>> w, v = sg.eig(sg.var("A", shape=(2, 2)))
    >>> str(w.dtype), str(v.dtype)
    ('complex128', 'complex128')
    """
    return EigResult(*call("eig", a if isinstance(a, Expr) else const(a)))


def _examples(rng) -> list:
    rotation = np.array([[0.3, -1.2, 0.1], [1.0, 0.2, 0.4], [0.0, 0.5, -0.7]])
    return [([rotation + 0.1 * rng.standard_normal((3, 3))], {}),
            ([rng.standard_normal((2, 3, 3))], {}),
            ([rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))], {})]


register(Op(
    name="eig", infer=_eig_infer, impl=_sg_eig, backprop=_eig_rule, forward=_eig_forward,
    aliases=("linalg.eig",), front=eig, complex=True, examples=_examples,
    doc="(eigenvalues, eigenvectors in columns) of a square matrix, complex, one call",
))
register(Op(
    name="eigvals", infer=_eigvals_infer, impl=lambda a: _complex(np.linalg.eigvals(a)),
    backprop=lambda n, g: (_values_adjoint(_vectors(n.args[0]), g),),
    forward=lambda n, t: None if t[0] is None else _values_tangent(_vectors(n.args[0]), t[0]),
    aliases=("linalg.eigvals",), complex=True, examples=_examples,
    doc="the eigenvalues of a square matrix, complex (eig's first result, no eigenvectors)",
))
