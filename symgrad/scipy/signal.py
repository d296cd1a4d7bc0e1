"""``symgrad.scipy.signal``: SciPy's convolutions on symbolic values.

``convolve`` and ``correlate`` (N-d, modes ``full``, ``valid`` and ``same``), ``convolve2d``
and ``correlate2d`` (zero fill only), ``fftconvolve`` and ``oaconvolve`` with SciPy's
names, signatures and meanings for real arrays, so code written against
:mod:`scipy.signal` traces when it imports these instead. Each but ``fftconvolve`` (SciPy's
route through the FFT ops, of complex arrays too, with ``axes``) is the ``convolution`` op
(:mod:`symgrad.ops.signal`): differentiable in both operands to any order, its adjoint a
correlation with the other operand. ``method=`` (``auto``, ``direct``, ``fft``) is checked
and otherwise left to each backend, which computes the same values by its own route (the
NumPy backend: SciPy's ``convolve`` with ``method='auto'``). ``scipy.signal.convolve(x, ...)``
itself cannot take an expression (it converts its arguments to NumPy arrays): its message
names the function here.

>>> import numpy as np, symgrad as sg
>>> from symgrad.scipy.signal import convolve
>>> x = sg.var("x", shape=(3,))
>>> y = convolve(x, np.array([1.0, -1.0]), mode="valid")
>>> sg.evaluate(y, {"x": np.array([1.0, 4.0, 9.0])})
array([3., 5.])
"""

from __future__ import annotations

from typing import Any

from .. import numpy as _numpy  # noqa: F401  (the ops and NumPy's names, registered first)
from ..base.errors import ArgumentError, ShapeError
from ..frontend.numpy_define import as_expr, define
from ..ir.expr import Expr, F
from ..ir.shapes import fmt, is_complex

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve", "oaconvolve"]

_PREFIX = "scipy.signal."
_MODES = ("full", "valid", "same")
_METHODS = ("auto", "direct", "fft")


def _check(call: str, a: Expr, b: Expr, mode: Any, method: Any = "auto") -> None:
    """SciPy's argument checks, with its ValueErrors as ShapeError/ArgumentError."""
    if mode not in _MODES:
        raise ArgumentError(f"{call}: acceptable mode flags are 'valid', 'same', or 'full', "
                            f"got {mode!r}")
    if method not in _METHODS:
        raise ArgumentError(f"{call}: acceptable method flags are 'auto', 'direct', or "
                            f"'fft', got {method!r}")
    if a.ndim != b.ndim:
        raise ShapeError(f"{call}: in1 and in2 should have the same dimensionality, got "
                         f"shapes {fmt(a.shape)} and {fmt(b.shape)}")
    if mode == "valid":
        inside = all(n >= m for n, m in zip(a.shape, b.shape))
        outside = all(n <= m for n, m in zip(a.shape, b.shape))
        if not (inside or outside):
            raise ShapeError(f"{call}: for 'valid' mode, one must be at least as large as the "
                             f"other in every dimension (shapes {fmt(a.shape)} and "
                             f"{fmt(b.shape)})")


def _reversed(x: Expr) -> Expr:
    return x[(slice(None, None, -1),) * x.ndim] if x.ndim else x


def _convolve(call: str, in1: Any, in2: Any, mode: Any, method: Any = "auto",
              late: bool = False) -> Expr:
    a, b = as_expr(in1), as_expr(in2)
    _check(call, a, b, mode, method)
    if a.ndim == 0:
        return a * b
    out = F.convolution(a, b, modes=("valid" if mode == "valid" else "full",) * a.ndim)
    if mode != "same":
        return out
    # SciPy's 'same': the centre of the full result, in1's shape, from (m - 1) // 2 (m // 2
    # for correlate2d, ``late``: its centre is one later along an axis of even m)
    starts = [m // 2 if late else (m - 1) // 2 for m in b.shape]
    return out[tuple(slice(s, s + n) for s, n in zip(starts, a.shape))]


@define(_PREFIX + "convolve", "in1", "in2", "=mode", "=method", mode="full", method="auto",
        strings=("mode", "method"))
def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Expr:
    """scipy.signal.convolve: the N-d convolution of ``in1`` and ``in2`` (same number of
    axes); ``mode`` ``full`` (every overlap), ``valid`` (no zero padding: one operand must
    contain the other) or ``same`` (the centre of ``full``, ``in1``'s shape).

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> sg.evaluate(convolve(x, np.array([1.0, 1.0])), {"x": np.array([1.0, 2.0, 3.0])})
    array([1., 3., 5., 3.])
    """
    return _convolve(_PREFIX + "convolve", in1, in2, mode, method)


@define(_PREFIX + "correlate", "in1", "in2", "=mode", "=method", mode="full", method="auto",
        strings=("mode", "method"))
def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Expr:
    """scipy.signal.correlate: the N-d cross-correlation of real arrays, ``in1`` convolved
    with ``in2`` reversed along every axis (``mode`` as :func:`convolve`'s).

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> sg.evaluate(correlate(x, np.array([1.0, 2.0]), "valid"), {"x": np.arange(3.0)})
    array([2., 5.])
    """
    return _convolve(_PREFIX + "correlate", in1, _reversed(as_expr(in2)), mode, method)


def _fill_only(call: str, in1: Any, in2: Any, boundary: Any, fillvalue: Any) -> None:
    if boundary not in ("fill", "pad"):
        raise ArgumentError(f"{call}: boundary={boundary!r} is not supported (only 'fill', "
                            "zero padding); pad the array with symgrad.numpy.pad first")
    if isinstance(fillvalue, Expr) or fillvalue != 0:
        raise ArgumentError(f"{call}: fillvalue={fillvalue!r} is not supported (only 0)")
    if as_expr(in1).ndim != 2 or as_expr(in2).ndim != 2:
        raise ShapeError(f"{call}: in1 and in2 should be 2-D arrays")


@define(_PREFIX + "convolve2d", "in1", "in2", "=mode", "=boundary", "=fillvalue",
        mode="full", boundary="fill", fillvalue=0, strings=("mode", "boundary"))
def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
               fillvalue: Any = 0) -> Expr:
    """scipy.signal.convolve2d with zero fill (``boundary='fill'``, ``fillvalue=0``): the
    2-D :func:`convolve`.

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", shape=(2, 3))
    >>> sg.evaluate(convolve2d(x, np.array([[1.0, -1.0]]), "valid"),
    ...             {"x": np.arange(6.0).reshape(2, 3)})
    array([[1., 1.],
           [1., 1.]])
    """
    _fill_only(_PREFIX + "convolve2d", in1, in2, boundary, fillvalue)
    return _convolve(_PREFIX + "convolve2d", in1, in2, mode)


@define(_PREFIX + "correlate2d", "in1", "in2", "=mode", "=boundary", "=fillvalue",
        mode="full", boundary="fill", fillvalue=0, strings=("mode", "boundary"))
def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
                fillvalue: Any = 0) -> Expr:
    """scipy.signal.correlate2d with zero fill: the 2-D :func:`correlate`, but for its
    ``same`` mode, whose window SciPy centres one later along an axis of even length.

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", shape=(2, 3))
    >>> sg.evaluate(correlate2d(x, np.array([[1.0, -1.0]]), "valid"),
    ...             {"x": np.arange(6.0).reshape(2, 3)})
    array([[-1., -1.],
           [-1., -1.]])
    """
    _fill_only(_PREFIX + "correlate2d", in1, in2, boundary, fillvalue)
    return _convolve(_PREFIX + "correlate2d", in1, _reversed(as_expr(in2)), mode, late=True)


def _over_all_axes(call: str, axes: Any, ndim: int) -> None:
    if axes is not None and sorted(int(a) % max(ndim, 1) for a in (
            [axes] if isinstance(axes, int) else axes)) != list(range(ndim)):
        raise ArgumentError(f"{call}: axes={axes!r} (a convolution along some axes only) is "
                            "not supported: convolve along every axis")


def _conv_axes(call: str, a: Expr, b: Expr, mode: str, axes: Any) -> tuple[list[int], bool]:
    """SciPy's ``_init_freq_conv_axes``: the axes convolved (those where neither operand has
    length 1), the others checked to broadcast, and whether ``valid`` mode swaps the
    operands (``in2`` the larger)."""
    ndim = a.ndim
    given = range(ndim) if axes is None else [axes] if isinstance(axes, int) else list(axes)
    try:
        chosen = [int(ax) for ax in given]
    except (TypeError, ValueError):
        raise ArgumentError(f"{call}: axes must be None, an int or a sequence of ints, got "
                            f"{axes!r}") from None
    if any(not -ndim <= ax < ndim for ax in chosen):
        raise ShapeError(f"{call}: axes {axes!r} out of range for {ndim}-d inputs")
    chosen = [ax % ndim for ax in chosen]
    if len(set(chosen)) != len(chosen):
        raise ArgumentError(f"{call}: all axes must be unique, got {axes!r}")
    chosen = [ax for ax in chosen if a.shape[ax] != 1 and b.shape[ax] != 1]
    for ax in range(ndim):
        if ax not in chosen and a.shape[ax] != b.shape[ax] and 1 not in (a.shape[ax],
                                                                          b.shape[ax]):
            raise ShapeError(f"{call}: incompatible shapes for in1 and in2: {fmt(a.shape)} and "
                             f"{fmt(b.shape)}")
    swap = False
    if mode == "valid":
        check = chosen or range(ndim)
        first = all(a.shape[ax] >= b.shape[ax] for ax in check)
        if not (first or all(b.shape[ax] >= a.shape[ax] for ax in check)):
            raise ShapeError(f"{call}: for 'valid' mode, one must be at least as large as the "
                             f"other in every dimension (shapes {fmt(a.shape)} and "
                             f"{fmt(b.shape)})")
        swap = not first
    return chosen, swap


def _fast_length(n: int, real: bool) -> int:
    """SciPy's ``next_fast_len`` (the transform length its fftconvolve pads to)."""
    try:
        import scipy.fft
    except ImportError:  # pragma: no cover - SciPy is installed with symgrad[test]
        return n
    return int(scipy.fft.next_fast_len(n, real))


def _centred(x: Expr, shape: list[int]) -> Expr:
    """SciPy's ``_centered``: the centre of ``x`` of ``shape``."""
    starts = [(n - m) // 2 for n, m in zip(x.shape, shape)]
    if all(s == 0 for s in starts) and list(x.shape) == list(shape):
        return x
    return x[tuple(slice(s, s + m) for s, m in zip(starts, shape))]


@define(_PREFIX + "fftconvolve", "in1", "in2", "=mode", "=axes", mode="full", axes=None,
        strings=("mode",))
def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Expr:
    """scipy.signal.fftconvolve: the convolution along ``axes`` (every axis by default; the
    others broadcast) through the FFT, as SciPy computes it: ``rfftn``/``irfftn`` of real
    operands, ``fftn``/``ifftn`` where one is complex, each axis padded to SciPy's fast
    length; its derivatives are the transforms'. ``mode`` as :func:`convolve`'s.

    >>> import numpy as np, symgrad as sg
    >>> y = sg.var("y", shape=(3,))
    >>> out = sg.evaluate(fftconvolve(y, np.array([1.0, 1.0])), {"y": np.array([1.0, 2.0, 3.0])})
    >>> np.round(out, 12)
    array([1., 3., 5., 3.])
    """
    from ..frontend import numpy_fft as fft

    call = _PREFIX + "fftconvolve"
    a, b = as_expr(in1), as_expr(in2)
    _check(call, a, b, "full" if mode == "valid" else mode)  # valid: along `axes` only
    if a.ndim == 0:
        return a * b
    if 0 in a.shape or 0 in b.shape:
        raise ShapeError(f"{call}: an empty operand (shapes {fmt(a.shape)} and "
                         f"{fmt(b.shape)}): SciPy returns an empty array of no fixed shape")
    chosen, swap = _conv_axes(call, a, b, mode, axes)
    if swap:
        a, b = b, a
    s1, s2 = a.shape, b.shape
    if not chosen:
        ret = a * b
    else:
        shape = [s1[i] + s2[i] - 1 for i in chosen]
        real = not (is_complex(a.dtype) or is_complex(b.dtype))
        fshape = [_fast_length(n, real) for n in shape]
        if real:
            spectrum = fft.rfftn(a, fshape, chosen) * fft.rfftn(b, fshape, chosen)
            ret = fft.irfftn(spectrum, fshape, chosen)
        else:
            ret = fft.ifftn(fft.fftn(a, fshape, chosen) * fft.fftn(b, fshape, chosen),
                            fshape, chosen)
        full = [s1[i] + s2[i] - 1 if i in chosen else ret.shape[i] for i in range(a.ndim)]
        if list(ret.shape) != full:  # the padding to the fast lengths cut from the end
            ret = ret[tuple(slice(0, n) for n in full)]
    if mode == "full":
        return ret
    if mode == "same":
        return _centred(ret, list(s1))
    return _centred(ret, [s1[i] - s2[i] + 1 if i in chosen else ret.shape[i]
                          for i in range(a.ndim)])


@define(_PREFIX + "oaconvolve", "in1", "in2", "=mode", "=axes", mode="full", axes=None,
        strings=("mode",))
def oaconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Expr:
    """scipy.signal.oaconvolve: :func:`convolve` (overlap-add is a route, not a meaning);
    ``axes`` may only name every axis.

    >>> import numpy as np, symgrad as sg
    >>> y = sg.var("y", shape=(3,))
    >>> sg.evaluate(oaconvolve(y, np.array([0.5, 0.5]), "valid"),
    ...             {"y": np.array([1.0, 2.0, 3.0])})
    array([1.5, 2.5])
    """
    _over_all_axes(_PREFIX + "oaconvolve", axes, as_expr(in1).ndim)
    return _convolve(_PREFIX + "oaconvolve", in1, in2, mode)
