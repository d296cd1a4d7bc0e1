"""``numpy.fft`` on symbolic values, with NumPy's names, arguments (``n``/``s``, ``axis``/
``axes``, ``norm``) and meanings: ``fft``, ``ifft``, ``fft2``, ``ifft2``, ``fftn``,
``ifftn``, ``rfft``, ``irfft``, ``rfft2``, ``irfft2``, ``rfftn``, ``irfftn``, ``hfft``,
``ihfft``, ``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift``.

Each pads or truncates its input to the lengths asked for and calls one of the transforms
of :mod:`symgrad.ops.fft` (whose derivative rules are their transposes, as JAX's).

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(4,))
>>> sg.evaluate(np.fft.fftshift(x), {"x": np.arange(4.0)})
array([2., 3., 0., 1.])
>>> y = sg.evaluate(np.fft.irfft(np.fft.rfft(x) * 2.0, n=4), {"x": np.arange(4.0)})
>>> np.round(y, 12) + 0.0
array([0., 2., 4., 6.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.errors import ShapeError
from ..ir.expr import Expr, F, const
from ..ir.shapes import complex_dtype, is_complex
from ..ir.values import describe
from .numpy_arrays import pad, roll
from .numpy_define import as_expr, axes_tuple, axis_int, define

_NORMS = {None: "backward", "backward": "backward", "ortho": "ortho", "forward": "forward"}
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


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


def _norm(name: str, norm: Any) -> str:
    if not (norm is None or isinstance(norm, str)) or norm not in _NORMS:
        raise ShapeError(f"{name}: norm must be None, 'backward', 'ortho' or 'forward', got "
                         f"{describe(norm)}")
    return _NORMS[norm]


def _axes(name: str, s: Any, axes: Any, ndim: int, default: tuple | None) -> tuple:
    """NumPy's ``(s, axes)`` rule: ``axes`` as given (in order), else the last ``len(s)``
    axes, else ``default`` (every axis when None)."""
    if axes is None:
        if s is not None:
            n = len(s)
            if n > ndim:
                raise ShapeError(f"{name}: s has {n} entries for a value of rank {ndim}")
            return tuple(range(ndim - n, ndim))
        return tuple(range(ndim)) if default is None else tuple(
            axis_int(name, a, ndim) for a in default)
    items = tuple(axes) if not isinstance(axes, (int, np.integer)) else (axes,)
    out = tuple(axis_int(name, a, ndim) for a in items)
    if not out:
        raise ShapeError(f"{name}: axes must name at least one axis")
    return out


def _lengths(name: str, s: Any, axes: tuple) -> tuple:
    if s is None:
        return (None,) * len(axes)
    s = tuple(s) if not isinstance(s, (int, np.integer)) else (s,)
    if len(s) != len(axes):
        raise ShapeError(f"{name}: s and axes have different lengths ({len(s)} and "
                         f"{len(axes)})")
    for n in s:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ShapeError(f"{name}: every length must be a positive int, got {describe(n)}")
    return tuple(int(n) for n in s)


def _resized(x: Expr, axis: int, n: int | None) -> Expr:
    """``x`` truncated or padded with zeros to ``n`` entries along ``axis`` (NumPy's)."""
    if n is None or n == x.shape[axis]:
        return x
    if n < x.shape[axis]:
        return x[(slice(None),) * axis + (slice(0, n),)]
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - x.shape[axis])
    return pad(x, widths)


def _c2c(name: str, a: Any, s: Any, axes: Any, norm: Any, inverse: bool,
         default: tuple | None = None) -> Expr:
    x = as_expr(a)
    norm = _norm(name, norm)
    axes = _axes(name, s, axes, x.ndim, default)
    for axis, n in zip(axes, _lengths(name, s, axes)):
        x = _resized(x, axis, n)
    if len(set(axes)) != len(axes):  # NumPy transforms a repeated axis twice
        for axis in axes:
            x = F.fftn(x, axes=(axis,), norm=norm, inverse=inverse)
        return x
    if not is_complex(x.data.dtype):
        x = F.astype(x, complex_dtype(x.data.dtype))
    return F.fftn(x, axes=axes, norm=norm, inverse=inverse)


def _r2c(name: str, a: Any, s: Any, axes: Any, norm: Any, default: tuple | None = None
         ) -> Expr:
    x = as_expr(a)
    if is_complex(x.data.dtype):
        raise ShapeError(f"{name} of a complex value: its input is real (NumPy's drops the "
                         "imaginary part with a warning); pass np.real(a), or use fftn")
    norm = _norm(name, norm)
    axes = _axes(name, s, axes, x.ndim, default)
    for axis, n in zip(axes, _lengths(name, s, axes)):
        x = _resized(x, axis, n)
    if x.data.dtype not in ("float64", "float32"):
        x = F.astype(x, "float64")
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{name}: repeated axes {describe(axes)}")
    return F.rfftn(x, axes=axes, norm=norm)


def _c2r(name: str, a: Any, s: Any, axes: Any, norm: Any, default: tuple | None = None
         ) -> Expr:
    x = as_expr(a)
    norm = _norm(name, norm)
    axes = _axes(name, s, axes, x.ndim, default)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{name}: repeated axes {describe(axes)}")
    lengths = _lengths(name, s, axes)
    last = lengths[-1] if lengths[-1] is not None else 2 * (x.shape[axes[-1]] - 1)
    if last < 1:
        raise ShapeError(f"{name}: the output length along axis {axes[-1]} would be {last}; "
                         "pass n")
    for axis, n in zip(axes[:-1], lengths[:-1]):
        x = _resized(x, axis, n)
    x = _resized(x, axes[-1], last // 2 + 1)
    if not is_complex(x.data.dtype):
        x = F.astype(x, complex_dtype(x.data.dtype))
    if len(axes) > 1:
        x = F.fftn(x, axes=axes[:-1], norm=norm, inverse=True)
    return F.irfft(x, axis=axes[-1] - x.ndim, norm=norm, n=last)


@define("fft.fft", "a", "=n", "=axis", "=norm", n=None, axis=-1, norm=None)
def fft(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Expr:
    """NumPy's ``fft.fft``: the discrete Fourier transform along ``axis``."""
    return _c2c("fft.fft", a, None if n is None else (n,), (axis,), norm, False)


@define("fft.ifft", "a", "=n", "=axis", "=norm", n=None, axis=-1, norm=None)
def ifft(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Expr:
    """NumPy's ``fft.ifft``: the inverse discrete Fourier transform along ``axis``."""
    return _c2c("fft.ifft", a, None if n is None else (n,), (axis,), norm, True)


@define("fft.fft2", "a", "=s", "=axes", "=norm", s=None, axes=(-2, -1), norm=None)
def fft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None
         ) -> Expr:
    """NumPy's ``fft.fft2``: the transform over the last two axes (``axes``)."""
    return _c2c("fft.fft2", a, s, axes, norm, False)


@define("fft.ifft2", "a", "=s", "=axes", "=norm", s=None, axes=(-2, -1), norm=None)
def ifft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None
          ) -> Expr:
    """NumPy's ``fft.ifft2``: the inverse transform over the last two axes (``axes``)."""
    return _c2c("fft.ifft2", a, s, axes, norm, True)


@define("fft.fftn", "a", "=s", "=axes", "=norm", s=None, axes=None, norm=None)
def fftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Expr:
    """NumPy's ``fft.fftn``: the transform over ``axes`` (every axis by default)."""
    return _c2c("fft.fftn", a, s, axes, norm, False)


@define("fft.ifftn", "a", "=s", "=axes", "=norm", s=None, axes=None, norm=None)
def ifftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Expr:
    """NumPy's ``fft.ifftn``: the inverse transform over ``axes`` (every axis by default)."""
    return _c2c("fft.ifftn", a, s, axes, norm, True)


@define("fft.rfft", "a", "=n", "=axis", "=norm", n=None, axis=-1, norm=None)
def rfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Expr:
    """NumPy's ``fft.rfft``: the transform of real values, ``n // 2 + 1`` entries."""
    return _r2c("fft.rfft", a, None if n is None else (n,), (axis,), norm)


@define("fft.irfft", "a", "=n", "=axis", "=norm", n=None, axis=-1, norm=None)
def irfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Expr:
    """NumPy's ``fft.irfft``: the real signal of ``n`` entries (``2 (m - 1)`` by default)
    whose half spectrum is ``a``."""
    return _c2r("fft.irfft", a, None if n is None else (n,), (axis,), norm)


@define("fft.rfft2", "a", "=s", "=axes", "=norm", s=None, axes=(-2, -1), norm=None)
def rfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None
          ) -> Expr:
    """NumPy's ``fft.rfft2``."""
    return _r2c("fft.rfft2", a, s, axes, norm)


@define("fft.irfft2", "a", "=s", "=axes", "=norm", s=None, axes=(-2, -1), norm=None)
def irfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None
           ) -> Expr:
    """NumPy's ``fft.irfft2``."""
    return _c2r("fft.irfft2", a, s, axes, norm)


@define("fft.rfftn", "a", "=s", "=axes", "=norm", s=None, axes=None, norm=None)
def rfftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Expr:
    """NumPy's ``fft.rfftn``."""
    return _r2c("fft.rfftn", a, s, axes, norm)


@define("fft.irfftn", "a", "=s", "=axes", "=norm", s=None, axes=None, norm=None)
def irfftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None
           ) -> Expr:
    """NumPy's ``fft.irfftn``."""
    return _c2r("fft.irfftn", a, s, axes, norm)


@define("fft.hfft", "a", "=n", "=axis", "=norm", n=None, axis=-1, norm=None)
def hfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Expr:
    """NumPy's ``fft.hfft``: the real transform of a Hermitian-symmetric signal given by its
    first half (``irfft`` of its conjugate with the opposite normalisation)."""
    x = as_expr(a)
    x = F.conj(x) if is_complex(x.data.dtype) else x
    return _c2r("fft.hfft", x, None if n is None else (n,), (axis,),
                _SWAPPED[_norm("fft.hfft", norm)])


@define("fft.ihfft", "a", "=n", "=axis", "=norm", n=None, axis=-1, norm=None)
def ihfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Expr:
    """NumPy's ``fft.ihfft``: the inverse of :func:`hfft` (the conjugate of ``rfft`` with the
    opposite normalisation)."""
    return F.conj(_r2c("fft.ihfft", a, None if n is None else (n,), (axis,),
                       _SWAPPED[_norm("fft.ihfft", norm)]))


def _freq(name: str, n: Any, d: Any, values: np.ndarray) -> Expr:
    if isinstance(d, Expr):
        return const(values) / d
    return const(values / np.float64(d))


@define("fft.fftfreq", "=n", "?d", n=None)
def fftfreq(n: int, d: Any = 1.0, device: Any = None) -> Expr:
    """NumPy's ``fft.fftfreq``: the sample frequencies of ``fft`` (``d`` may be symbolic)."""
    return _freq("fft.fftfreq", n, d, np.fft.fftfreq(n, 1.0))


@define("fft.rfftfreq", "=n", "?d", n=None)
def rfftfreq(n: int, d: Any = 1.0, device: Any = None) -> Expr:
    """NumPy's ``fft.rfftfreq``: the sample frequencies of ``rfft`` (``d`` may be symbolic)."""
    return _freq("fft.rfftfreq", n, d, np.fft.rfftfreq(n, 1.0))
