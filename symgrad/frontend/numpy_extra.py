"""More of NumPy's names, for code written against NumPy (HIPS autograd's own test suite):
``dot`` of arrays of any rank, ``angle`` and ``real_if_close``, and the
index tricks ``r_`` and ``c_`` (as ``symgrad.numpy.r_``: NumPy's own ``np.r_`` converts its
items to arrays before any protocol can see them).

>>> import numpy as np, symgrad as sg, symgrad.numpy as snp
>>> a, b = sg.var("a", shape=(2, 3, 4)), sg.var("b", shape=(5, 4, 6))
>>> snp.dot(a, b).shape == np.dot(np.ones((2, 3, 4)), np.ones((5, 4, 6))).shape
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.errors import UnsupportedError
from ..ir.expr import Expr, F, call
from ..ir.shapes import FLOATS, is_complex
from .numpy_arrays import atleast_1d, concatenate
from .numpy_define import as_expr, define, no_out


@define("dot", "a", "b", out=None)
def dot(a: Any, b: Any, out: Any = None) -> Expr:
    """NumPy's ``dot``: of arrays of any rank, ``tensordot(a, b, ([-1], [-2]))`` beyond 2-D
    (the sum over the last axis of ``a`` and the second-to-last of ``b``)."""
    no_out("dot", out)
    a, b = as_expr(a), as_expr(b)
    if a.ndim <= 2 and b.ndim <= 2:
        return call("dot", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    from ..ir.expr import function

    return function("tensordot")(a, b, axes=([-1], [-2 if b.ndim > 1 else -1]))


@define("angle", "z", "=deg", deg=False)
def angle(z: Any, deg: bool = False) -> Expr:
    """The angle of complex values (``arctan2(imag, real)``); of real values 0 for x >= +0,
    pi for x < 0 and -0.0 (NumPy's ``arctan2(0, x)``), NaN for NaN, locally constant, so
    its derivative is 0."""
    z = as_expr(z)
    if is_complex(z.data.dtype):
        return F.angle(z) * (180.0 / math.pi) if deg else F.angle(z)
    if z.dtype not in FLOATS:
        z = F.astype(z, "float64")
    half = 180.0 if deg else math.pi
    return F.where(F.isnan(z), z, F.where(F.signbit(z), half, 0.0) * F.ones_like(z))


@define("real_if_close", "a", "=tol", tol=100)
def real_if_close(a: Any, tol: Any = 100) -> Expr:
    """Real values are returned as they are; complex values are refused: the result's dtype
    would depend on the values, which are not known while tracing."""
    a = as_expr(a)
    if is_complex(a.data.dtype):
        raise UnsupportedError("real_if_close of complex values: its result is real or "
                               "complex depending on the values, unknown while tracing; "
                               "use np.real(a) (symgrad.numpy.real)")
    return a


class _Concatenator:
    """``r_[...]`` / ``c_[...]`` over arrays, numbers and slices (``1:4`` and ``0:1:5j``)."""

    def __init__(self, name: str, columns: bool) -> None:
        self.name, self.columns = name, columns

    def __getitem__(self, key: Any) -> Expr:
        items = key if isinstance(key, tuple) else (key,)
        parts = []
        for item in items:
            if isinstance(item, str):
                raise UnsupportedError(f"{self.name}[...]: string directives are not supported;"
                                       " use concatenate or stack")
            if isinstance(item, slice):
                item = _range(item)
            parts.append(atleast_1d(item))
        if not self.columns:
            return concatenate(parts, axis=0)
        cols = [F.reshape(p, (-1, 1)) if p.ndim == 1 else p for p in parts]
        return concatenate(cols, axis=-1)

    def __repr__(self) -> str:
        return f"symgrad.numpy.{self.name}"


def _range(s: slice) -> Any:
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):  # 0:1:5j: five points, end included
        return np.linspace(start, s.stop, int(abs(step)))
    return np.arange(start, s.stop, step)


r_ = _Concatenator("r_", False)
c_ = _Concatenator("c_", True)

