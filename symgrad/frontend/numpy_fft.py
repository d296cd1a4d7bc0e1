"""``numpy.fft`` on symbolic values: the real-valued helpers ``fftshift`` and ``ifftshift``
(rolls by half of each axis), and clear refusals for the transforms themselves.

symgrad is real-valued: a discrete Fourier transform's values (``fft``, ``rfft``, ...) or
its input (``ifft``, ``irfft``, ``hfft``, ...) are complex, so ``np.fft.fft(x)`` on an Expr
raises an :class:`~symgrad.errors.UnsupportedError` that says so and names the real-valued
alternative (a product with the cosine and sine matrices).

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(4,))
>>> sg.evaluate(np.fft.fftshift(x), {"x": np.arange(4.0)})
array([2., 3., 0., 1.])
"""

from __future__ import annotations

from typing import Any

from ..ir.expr import Expr
from ..ir.op import UNSUPPORTED
from .numpy_arrays import roll
from .numpy_define import as_expr, axes_tuple, define


def _shift(name: str, x: Any, axes: Any, sign: int) -> Expr:
    x = as_expr(x)
    axes = axes_tuple(name, axes, x.ndim)
    if not axes:
        return x
    return roll(x, tuple(sign * (x.shape[a] // 2) for a in axes), axes)


@define("fft.fftshift", "x", "=axes", axes=None)
def fftshift(x: Any, axes: Any = None) -> Expr:
    """NumPy's ``fft.fftshift``: the zero-frequency entry moved to the centre (a roll by
    ``n // 2`` along each of ``axes``, every axis by default)."""
    return _shift("fft.fftshift", x, axes, 1)


@define("fft.ifftshift", "x", "=axes", axes=None)
def ifftshift(x: Any, axes: Any = None) -> Expr:
    """NumPy's ``fft.ifftshift``: the inverse of :func:`fftshift` (a roll by ``-(n // 2)``)."""
    return _shift("fft.ifftshift", x, axes, -1)


_COMPLEX = ("complex numbers are not supported (symgrad is real-valued) and this transform's "
            "{what} complex; for a real signal write the real and imaginary parts as products "
            "with cos(2 pi k n / N) and -sin(2 pi k n / N) matrices")
UNSUPPORTED.update({
    **{f"fft.{n}": _COMPLEX.format(what="values are") for n in (
        "fft", "fft2", "fftn", "rfft", "rfft2", "rfftn", "ifft", "ifft2", "ifftn", "ihfft")},
    **{f"fft.{n}": _COMPLEX.format(what="input is") for n in (
        "irfft", "irfft2", "irfftn", "hfft")},
})
