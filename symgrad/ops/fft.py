"""The discrete Fourier transform: ``fftn`` (complex to complex, forward or inverse),
``rfftn`` (real to half-spectrum) over ``axes``, and ``irfft`` (half-spectrum to real)
along one axis, with NumPy's ``norm``. ``numpy.fft``'s functions
(:mod:`symgrad.frontend.numpy_fft`) pad or truncate their input to ``n``/``s`` and call
these.

Each transform is linear, so its tangent is the transform of the tangent, and its
derivative rule is its transpose under the pairing ``Re(g * t)`` of
:mod:`symgrad.ops.complex` (JAX's rules):

* ``fftn``'s matrix ``exp(-+2 pi i jk / n)`` is symmetric: its transpose is itself;
* ``rfftn`` is ``fftn`` of the real input truncated to ``n // 2 + 1`` entries along the
  last axis: its transpose pads ``g`` with zeros back to ``n``, transforms, and keeps the
  real part;
* ``irfft`` reads each half-spectrum entry once and its mirror image implicitly
  (``c_k = 2``; ``c_k = 1`` for ``k = 0`` and, ``n`` even, ``k = n / 2``, whose imaginary
  parts it ignores): its transpose is ``c * ifft(g)`` truncated to the half spectrum.

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(4,))
>>> sg.evaluate(np.fft.rfft(x), {"x": np.array([1.0, 2.0, 3.0, 4.0])})
array([10.+0.j, -2.+2.j, -2.+0.j])
"""

from __future__ import annotations

import numpy as np

from ..base.errors import ShapeError
from ..ir.expr import F, const
from ..ir.op import Op, register, sig
from ..ir.shapes import complex_dtype, fmt, is_complex, real_dtype
from ..ir.values import describe
from .tangent import linear

NORMS = ("backward", "ortho", "forward")


def _prepare(name: str, real_input: bool = False):
    def prepare(shapes, dtypes, attrs):
        shape = shapes[0]
        if real_input and is_complex(dtypes[0]):
            raise ShapeError(f"{name} of a complex value ({dtypes[0]}): its input is real "
                             "(NumPy's would drop the imaginary part); use fftn")
        axes = attrs["axes"] if "axes" in attrs else (attrs["axis"],)
        if axes is None:
            axes = tuple(range(len(shape)))
        if not isinstance(axes, tuple) or not axes or not all(
                type(a) is int and -len(shape) <= a < len(shape) for a in axes):
            raise ShapeError(f"{name}: axes must be a non-empty tuple of axes of a value of "
                             f"shape {fmt(shape)}, got {describe(attrs['axes'])}")
        axes = tuple(a - len(shape) if a >= 0 else a for a in axes)
        if len(set(axes)) != len(axes):
            raise ShapeError(f"{name}: repeated axes {describe(attrs['axes'])}")
        if attrs["norm"] not in NORMS:
            raise ShapeError(f"{name}: norm must be one of {', '.join(NORMS)}, got "
                             f"{describe(attrs['norm'])}")
        if any(shape[a] < 1 for a in axes):
            raise ShapeError(f"{name}: every transformed axis needs an entry, got shape "
                             f"{fmt(shape)}")
        out = {**attrs, "axes": axes} if "axes" in attrs else {**attrs, "axis": axes[0]}
        if "n" in attrs:
            n = attrs["n"]
            if type(n) is not int or n < 1 or n // 2 + 1 != shape[axes[-1]]:
                raise ShapeError(f"{name}: n must be a length whose half spectrum (n // 2 + 1)"
                                 f" is the last axis' {shape[axes[-1]]} entries, got "
                                 f"{describe(n)}")
        return out
    return prepare


def _fftn_infer(shapes, dtypes, attrs):
    return shapes[0], complex_dtype(dtypes[0])


def _rfftn_infer(shapes, dtypes, attrs):
    shape = list(shapes[0])
    a = attrs["axes"][-1]
    shape[a] = shape[a] // 2 + 1
    return tuple(shape), complex_dtype(dtypes[0])


def _irfft_infer(shapes, dtypes, attrs):
    shape = list(shapes[0])
    shape[attrs["axis"]] = attrs["n"]
    return tuple(shape), real_dtype(complex_dtype(dtypes[0]))


def _fftn_impl(x, axes, norm, inverse):
    return (np.fft.ifftn if inverse else np.fft.fftn)(x, axes=axes, norm=norm)


def _rfftn_impl(x, axes, norm):
    return np.fft.rfftn(x, axes=axes, norm=norm)


def _irfft_impl(x, axis, norm, n):
    return np.fft.irfft(x, n=n, axis=axis, norm=norm)


def _along(e, axis: int, part: slice):
    """``e[..., part, :, ...]`` with ``part`` at negative ``axis``."""
    return e[(Ellipsis, part) + (slice(None),) * (-axis - 1)]


def _padded(g, axis: int, length: int):
    """``g`` with zeros appended along negative ``axis`` up to ``length`` entries."""
    extra = length - g.shape[axis]
    if extra == 0:
        return g
    shape = list(g.shape)
    shape[axis] = extra
    zeros = F.broadcast_to(const(np.zeros((), g.data.dtype), g), tuple(shape))
    return F.concatenate([g, zeros], axis=axis)


def _fftn_rule(n, g):
    return (F.fftn(g, axes=n.attrs["axes"], norm=n.attrs["norm"],
                   inverse=n.attrs["inverse"]),)


def _rfftn_rule(n, g):
    axes = n.attrs["axes"]
    full = _padded(g, axes[-1], n.args[0].shape[axes[-1]])
    return (F.real(F.fftn(full, axes=axes, norm=n.attrs["norm"], inverse=False)),)


def _irfft_rule(n, g):
    axis, length = n.attrs["axis"], n.attrs["n"]
    half = n.args[0].shape[axis]
    c = np.full(half, 2.0)
    c[0] = 1.0
    if length % 2 == 0:
        c[-1] = 1.0
    c = c.reshape((half,) + (1,) * (-axis - 1)).astype(real_dtype(n.args[0].data.dtype))
    spectrum = F.fftn(F.astype(g, complex_dtype(g.data.dtype)), axes=(axis,),
                      norm=n.attrs["norm"], inverse=True)
    return (_along(spectrum, axis, slice(0, half)) * const(c, g),)


def _signal(rng, shape, kind):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if kind == "c" else x


def _fftn_examples(rng) -> list:
    return [([_signal(rng, (5,), "c")], {"axes": (-1,), "norm": "backward", "inverse": False}),
            ([_signal(rng, (3, 4), "c")], {"axes": (0,), "norm": "ortho", "inverse": True}),
            ([_signal(rng, (3, 4), "c")], {"axes": None, "norm": "forward", "inverse": False}),
            ([_signal(rng, (2, 3, 4), "c").astype(np.complex64)],
             {"axes": (-1, -3), "norm": "backward", "inverse": True}),
            ([_signal(rng, (4, 3), "r")], {"axes": (-2,), "norm": "ortho", "inverse": False})]


def _rfftn_examples(rng) -> list:
    return [([_signal(rng, (6,), "r")], {"axes": (-1,), "norm": "backward"}),
            ([_signal(rng, (5, 3), "r")], {"axes": (0,), "norm": "ortho"}),
            ([_signal(rng, (3, 5), "r")], {"axes": None, "norm": "forward"}),
            ([_signal(rng, (2, 3, 4), "r").astype(np.float32)],
             {"axes": (-1, 0), "norm": "backward"})]


def _irfft_examples(rng) -> list:
    return [([_signal(rng, (4,), "c")], {"axis": -1, "norm": "backward", "n": 6}),
            ([_signal(rng, (4,), "c")], {"axis": -1, "norm": "ortho", "n": 7}),
            ([_signal(rng, (3, 4), "c")], {"axis": 0, "norm": "forward", "n": 5}),
            ([_signal(rng, (3, 4), "r")], {"axis": 1, "norm": "backward", "n": 6}),
            ([_signal(rng, (2, 3, 2), "c").astype(np.complex64)],
             {"axis": -3, "norm": "ortho", "n": 3})]


register(Op(
    name="fftn", signature=sig("x", "=axes", "=norm:str", "=inverse", axes=None,
                               norm="backward", inverse=False),
    prepare=_prepare("fftn"), infer=_fftn_infer, impl=_fftn_impl, backprop=_fftn_rule,
    forward=linear, examples=_fftn_examples, complex=True, public=False, domain=None,
    doc="the n-dimensional discrete Fourier transform (inverse: its inverse) over axes",
))
register(Op(
    name="rfftn", signature=sig("x", "=axes", "=norm:str", axes=None, norm="backward"),
    prepare=_prepare("rfftn", real_input=True), infer=_rfftn_infer, impl=_rfftn_impl,
    backprop=_rfftn_rule, forward=linear, examples=_rfftn_examples, public=False,
    domain=None,
    doc="the Fourier transform of a real value over axes, n // 2 + 1 entries along the last",
))
register(Op(
    name="irfft", signature=sig("x", "=axis", "=norm:str", "=n", axis=-1, norm="backward",
                                n=None),
    prepare=_prepare("irfft"), infer=_irfft_infer, impl=_irfft_impl,
    backprop=_irfft_rule, forward=linear, examples=_irfft_examples, complex=True,
    public=False, domain=None,
    doc="the real inverse of the half spectrum along axis: n real entries",
))
