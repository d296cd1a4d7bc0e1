"""Matrix functions of SciPy's ``linalg``: ``expm``, the matrix exponential.

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

from ..errors import UnsupportedError
from ..ir.expr import F
from ..ir.op import Op, register
from .decompositions import _mT, _on_squares


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
