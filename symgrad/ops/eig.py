"""The eigendecomposition of a general square matrix: ``eig`` (one call, two results:
``(eigenvalues, eigenvectors)``) and ``eigvals``, as ``numpy.linalg``'s, with complex
results always (JAX's choice: NumPy's own are real when every eigenvalue is, a dtype that
depends on the values, which are not known while tracing).

Derivatives are JAX's: the eigenvalues' (``dw = diag(V^-1 dA V)``, so ``A_bar = V^-T
diag(w_bar) V^T``), to first order (their rule reads the eigenvectors, whose derivatives are
refused, as JAX refuses them: they depend on a normalisation NumPy does not fix).

>>> import numpy as np, symgrad as sg
>>> A = sg.var("A", shape=(2, 2))
>>> w = np.linalg.eigvals(A)
>>> sg.evaluate(w, {"A": [[0.0, -1.0], [1.0, 0.0]]})
array([0.+1.j, 0.-1.j])
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..base.errors import DifferentiationError
from ..ir.expr import Expr, F, call, const
from ..ir.op import Op, register, results_of
from ..ir.shapes import complex_dtype
from .numpy_linalg import mT, on_squares

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])

_VECTORS = ("the derivative of eig's eigenvectors is not defined by the matrix alone (each "
            "column's scale and phase are free; JAX refuses it too): differentiate functions "
            "of the eigenvalues (linalg.eigvals), or use linalg.eigh for a symmetric matrix")


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


def _eig_rule(n, g):
    gw, gv = g
    if gv is not None:
        raise DifferentiationError(f"eig: {_VECTORS}")
    return (_values_adjoint(n.results[1], gw),)


def _eig_forward(n, t):
    if t[0] is None:
        return None
    if n.wants(1):
        raise DifferentiationError(f"eig: {_VECTORS}")
    return _values_tangent(n.results[1], t[0]), None


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
