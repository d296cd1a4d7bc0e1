"""Complex numbers: ``real``, ``imag``, ``conj`` and ``angle``, and the conventions every
rule follows on complex values.

symgrad's derivatives of complex values are JAX's (and autograd's). A tangent is a complex
number like the value it moves; a cotangent ``g`` pairs with a tangent ``t`` through
``Re(g * t)`` (no conjugation), and a rule's contribution is the transpose of its tangent
map under that pairing. Hence:

* a holomorphic op (``exp``, ``sin``, ``*``, ``@``, the FFT, ...) keeps its real rules:
  ``g * f'(z)`` in reverse, ``t * f'(z)`` forward;
* a non-holomorphic op states its conjugations: ``conj``'s contribution is ``conj(g)``,
  ``real``'s is ``g``, ``imag``'s ``-1j * g``, ``abs``'s ``g * conj(z) / |z|``;
* a real operand of an op with a complex result takes the real part of its contribution
  (reverse mode does it once for every op, as it undoes broadcasting).

So the gradient of a real-valued ``f(z)``, ``z = x + iy``, is ``df/dx - i df/dy``: what
``jax.grad`` returns (the conjugate of the direction of steepest ascent), and for a
holomorphic ``f`` the gradient with ``holomorphic=True`` is ``f'(z)``.

>>> import numpy as np, symgrad as sg
>>> z = sg.var("z", dtype="complex128")
>>> g = sg.evaluate(sg.grad(sg.abs(z) ** 2, z), {"z": 3 + 4j})
>>> complex(round(g.real, 9), round(g.imag, 9))
(6-8j)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.expr import Expr, F
from ..ir.op import UNARY, Op, register
from ..ir.shapes import is_complex, real_dtype
from . import series
from .tangent import first


def conjugated(e: Expr) -> Expr:
    """``conj(e)``, or ``e`` itself where it is real (no node is built)."""
    return F.conj(e) if is_complex(e.data.dtype) else e


def real_part(e: Expr) -> Expr:
    """``real(e)``, or ``e`` itself where it is real (no node is built)."""
    return F.real(e) if is_complex(e.data.dtype) else e


def imag_part(e: Expr) -> Expr | None:
    """``imag(e)``, or None (a zero) where ``e`` is real."""
    return F.imag(e) if is_complex(e.data.dtype) else None


def _parts(shapes, dtypes, attrs):
    return shapes[0], real_dtype(dtypes[0])


def _same(shapes, dtypes, attrs):
    return shapes[0], dtypes[0]


def _complex_examples(rng: Any) -> list:
    shape = (3, 4)
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return [([z], {}), ([z.astype(np.complex64)], {}), ([z[0, 0]], {})]


def _imag_rule(n, g):
    return (g * -1j,)


def _angle_rule(n, g):
    # d angle = Im(dz / z): the transpose of t -> Im(t / z) under Re(g * t) is -1j * g / z
    return (g * (-1j / n.args[0]),)


register(Op(
    name="real", infer=_parts, impl=np.real, backprop=lambda n, g: (g,),
    forward=first(lambda n, t: real_part(t)), signature=UNARY, elementwise=True,
    taylor=series.piecewise_linear, complex=True, domain=None, examples=_complex_examples,
    doc="the real part of z (z itself for real values)",
))
register(Op(
    name="imag", infer=_parts, impl=np.imag, backprop=_imag_rule,
    forward=first(lambda n, t: imag_part(t)), signature=UNARY, elementwise=True,
    taylor=series.piecewise_linear, complex=True, domain=None, examples=_complex_examples,
    doc="the imaginary part of z (zeros for real values)",
))
register(Op(
    name="conj", infer=_same, impl=np.conjugate, backprop=lambda n, g: (conjugated(g),),
    forward=first(lambda n, t: conjugated(t)), signature=UNARY, elementwise=True,
    taylor=series.piecewise_linear, complex=True, domain=None, aliases=("conjugate",),
    examples=_complex_examples, doc="the complex conjugate of z (z itself for real values)",
))
register(Op(
    name="angle", infer=_parts, impl=np.angle, backprop=_angle_rule,
    forward=first(lambda n, t: F.imag(t / n.args[0])), signature=UNARY, elementwise=True,
    complex=True, domain=None, examples=lambda rng: _complex_examples(rng)[:2],
    doc="the angle of z in radians, arctan2(imag(z), real(z))",
))
