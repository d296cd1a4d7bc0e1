"""``symgrad.scipy.fft``: SciPy's FFT functions on symbolic values, with SciPy's names and
signatures. The transforms are ``numpy.fft``'s (:mod:`symgrad.frontend.numpy_fft`, the same
values); SciPy's keywords about memory and threads (``overwrite_x``, ``workers``) are
accepted and change nothing, and ``plan`` must be None, as SciPy requires.

>>> import numpy as np, symgrad as sg
>>> from symgrad.scipy import fft
>>> x = sg.var("x", shape=(4,))
>>> sg.evaluate(fft.rfft(x), {"x": np.array([1.0, 2.0, 3.0, 4.0])})
array([10.+0.j, -2.+2.j, -2.+0.j])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as _numpy  # noqa: F401  (the ops and NumPy's names, registered first)
from ..base.errors import UnsupportedError
from ..frontend import numpy_fft as _np_fft

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "next_fast_len", "rfft",
           "rfft2", "rfftfreq", "rfftn"]


def _scipy(fn: Callable) -> Callable:
    """SciPy's signature of ``fn``: its arguments, then ``overwrite_x``, ``workers`` (no
    effect) and ``plan`` (None only)."""
    @functools.wraps(fn)
    def call(*args: Any, overwrite_x: bool = False, workers: Any = None, plan: Any = None,
             **kwargs: Any) -> Any:
        if plan is not None:
            raise UnsupportedError(f"scipy.fft.{fn.__name__}: plan= is not supported (SciPy "
                                   "itself takes only None)")
        return fn(*args, **kwargs)

    return call


fft, ifft, fft2, ifft2, fftn, ifftn = (_scipy(f) for f in (
    _np_fft.fft, _np_fft.ifft, _np_fft.fft2, _np_fft.ifft2, _np_fft.fftn, _np_fft.ifftn))
rfft, irfft, rfft2, irfft2, rfftn, irfftn = (_scipy(f) for f in (
    _np_fft.rfft, _np_fft.irfft, _np_fft.rfft2, _np_fft.irfft2, _np_fft.rfftn,
    _np_fft.irfftn))
hfft, ihfft = _scipy(_np_fft.hfft), _scipy(_np_fft.ihfft)
fftshift, ifftshift = _np_fft.fftshift, _np_fft.ifftshift


def fftfreq(n: int, d: Any = 1.0, *, xp: Any = None, device: Any = None) -> Any:
    """SciPy's ``fft.fftfreq`` (``d`` may be symbolic)."""
    return _np_fft.fftfreq(n, d)


def rfftfreq(n: int, d: Any = 1.0, *, xp: Any = None, device: Any = None) -> Any:
    """SciPy's ``fft.rfftfreq`` (``d`` may be symbolic)."""
    return _np_fft.rfftfreq(n, d)


def next_fast_len(target: int, real: bool = False) -> int:
    """SciPy's ``fft.next_fast_len`` (a length, no symbolic value: SciPy's own answer)."""
    import scipy.fft

    return int(scipy.fft.next_fast_len(int(np.asarray(target)), real))
