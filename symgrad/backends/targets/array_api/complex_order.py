"""NumPy's order of complex values in the array API standard's functions: the helpers of
:data:`~.table.COMPLEX_ORDER`, written into a module that orders complex values (the standard
leaves their order unspecified; PyTorch has none, JAX's NaN order is not NumPy's).

Real parts first, then imaginary parts, with npy_math's NaN rules: a comparison with a NaN
imaginary part fails its first test; ``maximum``/``max`` give the (first) NaN, ``fmax`` the
other operand; ``argmax`` the first NaN; a sort puts ``R + nanj`` (by real part), then
``nan + Rj`` (by imaginary part), then ``nan + nanj`` after the rest.

>>> import numpy as np
>>> z = np.array([1 + 2j, 1 + 3j, complex(np.nan, 0.0)])
>>> _sg_xp_cmax(np, z, None, False, True), _sg_xp_cargmax(np, z[:2], None, False, True)
(array(nan+0.j), array(1))
"""

from __future__ import annotations

import math

from .helpers import _sg_xp_device


def _sg_xp_cnan(xp, z):
    """Where complex ``z`` has a NaN in either part."""
    return xp.isnan(xp.real(z)) | xp.isnan(xp.imag(z))


def _sg_xp_cpair(xp, a, b):
    """``a`` and ``b`` (one may be a Python number) as arrays of one complex dtype: the
    array's for a number beside it, so that a literal is not rounded first."""
    dev = _sg_xp_device(a, b)
    if not hasattr(a, "dtype"):
        a = xp.asarray(a, dtype=b.dtype if xp.isdtype(b.dtype, "complex floating") else None,
                       device=dev)
    if not hasattr(b, "dtype"):
        b = xp.asarray(b, dtype=a.dtype if xp.isdtype(a.dtype, "complex floating") else None,
                       device=dev)
    dtype = xp.result_type(a, b)
    return xp.astype(a, dtype), xp.astype(b, dtype)


def _sg_xp_cless(xp, a, b, op):
    """NumPy's comparison ``op`` (``"<"``, ``"<="``, ``">"``, ``">="``) of complex values
    (npy_math's CLT, CLE, CGT, CGE): real parts first, then imaginary parts; a NaN imaginary
    part fails the first test."""
    a, b = _sg_xp_cpair(xp, a, b)
    ar, ai, br, bi = xp.real(a), xp.imag(a), xp.real(b), xp.imag(b)
    first, second = {"<": (ar < br, ai < bi), "<=": (ar < br, ai <= bi),
                     ">": (ar > br, ai > bi), ">=": (ar > br, ai >= bi)}[op]
    return (first & ~xp.isnan(ai) & ~xp.isnan(bi)) | ((ar == br) & second)


def _sg_xp_cmaximum(xp, a, b, op, skip_nan):
    """NumPy's maximum (``op`` ``">="``) or minimum (``"<="``) of complex values: the NaN
    operand (the first if both); fmax and fmin (``skip_nan``): the other one."""
    a, b = _sg_xp_cpair(xp, a, b)
    first = _sg_xp_cnan(xp, b if skip_nan else a) | _sg_xp_cless(xp, a, b, op)
    return xp.where(first, a, b)


def _sg_xp_cflat(xp, z, axis):
    """``z`` with the axes ``axis`` (an int, a tuple of them, or None: all) moved last and
    flattened into one, in C order; and the shape the reduction keeps them as (1s)."""
    nd = z.ndim
    picked = range(nd) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    axes = sorted(int(a) % nd for a in picked)
    rest = [k for k in range(nd) if k not in axes]
    moved = xp.permute_dims(z, tuple(rest + axes)) if rest + axes != list(range(nd)) else z
    flat = xp.reshape(moved, tuple(z.shape[k] for k in rest) + (-1,))
    return flat, tuple(1 if k in axes else z.shape[k] for k in range(nd))


def _sg_xp_cpick(xp, flat, largest):
    """The index NumPy's argmax (``largest``) or argmin picks in each row of complex
    ``flat``: the first NaN of a row holding one, else the first extreme (real parts first,
    then imaginary parts)."""
    r, i = xp.real(flat), xp.imag(flat)
    nan = xp.isnan(r) | xp.isnan(i)
    extreme = xp.max if largest else xp.min
    cand = r == extreme(r, axis=-1, keepdims=True)
    fill = xp.asarray(-math.inf if largest else math.inf, dtype=r.dtype, device=_sg_xp_device(r))
    hit = cand & (i == extreme(xp.where(cand, i, fill), axis=-1, keepdims=True))
    first_nan = xp.argmax(xp.astype(nan, xp.int8), axis=-1)
    return xp.where(xp.any(nan, axis=-1), first_nan, xp.argmax(xp.astype(hit, xp.int8), axis=-1))


def _sg_xp_cargmax(xp, z, axis, keepdims, largest):
    """NumPy's argmax (``largest``) or argmin of complex ``z``."""
    flat, kept = _sg_xp_cflat(xp, z, axis)
    idx = _sg_xp_cpick(xp, flat, largest)
    return xp.reshape(idx, kept) if keepdims else idx


def _sg_xp_cmax(xp, z, axis, keepdims, largest):
    """NumPy's max (``largest``) or min of complex ``z`` over ``axis``: the element
    :func:`_sg_xp_cpick` finds."""
    flat, kept = _sg_xp_cflat(xp, z, axis)
    idx = xp.reshape(_sg_xp_cpick(xp, flat, largest), flat.shape[:-1] + (1,))
    out = xp.take_along_axis(flat, idx, axis=-1)
    return xp.reshape(out, kept if keepdims else flat.shape[:-1])


def _sg_xp_cargsort(xp, z, axis):
    """The order NumPy sorts complex ``z`` in along ``axis`` (None: flattened): no NaN
    first, lexicographically; then ``R + nanj`` by real part, ``nan + Rj`` by imaginary
    part, ``nan + nanj`` last. Three stable sorts, the last by the class."""
    if axis is None:
        z, axis = xp.reshape(z, (-1,)), -1
    r, i = xp.real(z), xp.imag(z)
    rn, im = xp.isnan(r), xp.isnan(i)
    zero = xp.zeros_like(r)
    cls = xp.astype(rn, xp.int8) * 2 + xp.astype(im, xp.int8)
    keys = (xp.where(rn | im, zero, i), xp.where(rn, xp.where(im, zero, i), r), cls)
    order = None
    for key in keys:
        key = key if order is None else xp.take_along_axis(key, order, axis=axis)
        step = xp.argsort(key, axis=axis, stable=True)
        order = step if order is None else xp.take_along_axis(order, step, axis=axis)
    return order


def _sg_xp_csort(xp, z, axis):
    """NumPy's sort of complex ``z`` (:func:`_sg_xp_cargsort`'s order)."""
    order = _sg_xp_cargsort(xp, z, axis)
    if axis is None:
        z, axis = xp.reshape(z, (-1,)), -1
    return xp.take_along_axis(z, order, axis=axis)
