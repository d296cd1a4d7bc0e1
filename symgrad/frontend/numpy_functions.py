"""NumPy's functions that are not one op, built from ops: statistics, NumPy's keyword
arguments on reductions and ufuncs, linear-algebra conveniences and the ``where``-family.

Each is registered under NumPy's name (``symgrad.numpy.var``, ``np.var`` on an Expr through
the array protocol, ``var(x)`` in text) and differentiates through the ops it builds.
Shaping and creation functions are in :mod:`.numpy_arrays`.

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(4,))
>>> v = sg.numpy.var(x, ddof=1)
>>> round(float(sg.evaluate(v, {"x": [1.0, 2.0, 4.0, 7.0]})), 6)
7.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.describe import describe
from ..base.errors import ShapeError, UnsupportedError
from ..ir.expr import Expr, F, function
from ..ir.op import FUNCTIONS, REGISTRY, SignatureError
from ..ir.shapes import FLOATS, is_complex
from .numpy_arrays import diagonal, moveaxis
from .numpy_define import as_expr, axes_tuple, axis_int, define, no_out


def _cast(a: Any, dtype: Any) -> Any:
    """``a`` converted to ``dtype`` first (NumPy's ``dtype=`` of ufuncs and reductions)."""
    if dtype is None:
        return a
    return F.astype(as_expr(a), np.dtype(dtype).name)


def _ufunc(name: str):
    """The op ``name`` taking NumPy's ufunc keywords (``out=`` and ``where=`` refused)."""
    op_function = function(name)

    def fn(*args: Any, out: Any = None, where: Any = True, dtype: Any = None,
           casting: str = "same_kind", order: str = "K", subok: bool = True) -> Expr:
        if out is not None or where is not True:
            no_out(name, out, where)
        if dtype is not None:
            args = tuple([_cast(a, dtype) for a in args])
        return op_function(*args)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = op_function.__doc__
    fn.signature = op_function.signature  # type: ignore[attr-defined]
    # fn(*operands), no keywords, is op_function(*operands): the same plain op, if it has one
    fn.plain_op = getattr(op_function, "plain_op", None)  # type: ignore[attr-defined]
    return fn


def register_ufuncs() -> None:
    """Every elementwise op (and alias) registered so far under its NumPy name, with NumPy's
    keywords; and NumPy 2's ``linalg`` spellings of ops. Run once the ops are registered."""
    from ..ir.op import ALIASES

    names = [n for n, op in REGISTRY.items() if op.elementwise and op.public]
    names += [a for a, n in ALIASES.items() if REGISTRY[n].elementwise and REGISTRY[n].public]
    for name in names:
        if isinstance(getattr(np, name, None), np.ufunc):  # NumPy's ufuncs take its keywords
            FUNCTIONS.setdefault(name, _ufunc(name))
    for name in ("matmul", "outer", "matrix_transpose"):
        if function(name) is not None:
            FUNCTIONS.setdefault(f"linalg.{name}", function(name))


# -- reductions with NumPy's keywords ------------------------------------------------------


def _reduction(name: str, op: str, identity: float | None, dtype_param: bool):
    """NumPy's ``sum``/``prod`` (``a, axis, dtype, out, keepdims``) and ``max``/``min``
    (``a, axis, out, keepdims``), with ``initial`` and ``where``."""
    spec = ("a", "=axis", "=dtype", "=out", "=keepdims") if dtype_param else \
        ("a", "=axis", "=out", "=keepdims")

    @define(name, *spec, axis=None, dtype=None, out=None, keepdims=False, initial=None,
            where=True, strings=("dtype",))
    def fn(a, axis=None, *args, **kwargs):
        params = ("dtype", "out", "keepdims") if dtype_param else ("out", "keepdims")
        if len(args) > len(params):
            raise SignatureError(f"{name}() takes at most {len(params) + 2} positional "
                                 "arguments")
        kwargs.update(zip(params, args))
        return _reduce(name, op, identity, a, axis, **kwargs)

    return fn


def _reduce(name, op, identity, a, axis, dtype=None, out=None, keepdims=False, initial=None,
            where=True):
    no_out(name, out)
    a = _cast(a, dtype)
    if where is not True:
        if identity is None and initial is None:
            raise UnsupportedError(f"{name}: where= needs initial= (an op without identity)")
        a = F.where(where, a, identity if initial is None else initial)
    r = getattr(F, op)(a, axis=axis, keepdims=keepdims)
    if initial is not None:
        combine = {"sum": F.add, "prod": F.multiply, "max": F.maximum, "min": F.minimum}
        r = combine[op](r, initial)
    return r


_reduction("sum", "sum", 0.0, True)
_reduction("prod", "prod", 1.0, True)
_reduction("max", "max", None, False)
_reduction("min", "min", None, False)
FUNCTIONS["amax"], FUNCTIONS["amin"] = FUNCTIONS["max"], FUNCTIONS["min"]


@define("mean", "a", "=axis", "=dtype", "=out", "=keepdims", axis=None, dtype=None, out=None,
        keepdims=False, where=True, strings=("dtype",))
def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    no_out("mean", out)
    a = _cast(a, dtype)
    if where is True:
        return F.mean(a, axis=axis, keepdims=keepdims)
    w = F.where(where, 1.0, 0.0)
    return (F.sum(F.where(where, a, 0.0), axis=axis, keepdims=keepdims)
            / F.sum(F.broadcast_to(w, as_expr(a).shape), axis=axis, keepdims=keepdims))


def _moments(name: str, a, axis, dtype, out, ddof, keepdims, where, mean_, correction):
    no_out(name, out, where)
    if correction is not None:
        ddof = correction
    a = _cast(as_expr(a), dtype)
    axes = axes_tuple(name, axis, a.ndim)
    count = math.prod(a.shape[k] for k in axes)
    m = F.mean(a, axis=axes, keepdims=True) if mean_ is None else mean_
    d = a - m
    sq = F.real(d * F.conj(d)) if is_complex(d.data.dtype) else d * d  # |d|^2, as NumPy's
    return F.sum(sq, axis=axes, keepdims=keepdims) / max(count - ddof, 0)


_MOMENT_SPEC = ("a", "=axis", "=dtype", "=out", "=ddof", "=keepdims")
_MOMENT_DEFAULTS = dict(axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
                        mean=None, correction=None)


@define("var", *_MOMENT_SPEC, strings=("dtype",), **_MOMENT_DEFAULTS)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    return _moments("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction)


@define("std", *_MOMENT_SPEC, strings=("dtype",), **_MOMENT_DEFAULTS)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    v = _moments("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    a = as_expr(a)
    count = math.prod(a.shape[k] for k in axes_tuple("std", axis, a.ndim))
    if count == 1 and mean is None and where is True:
        # the std of one element is identically 0: its derivative is 0 (sqrt'(0) * 0 is NaN)
        return v * 0.0
    return F.sqrt(v)


@define("ptp", "a", "=axis", "=out", "=keepdims", axis=None, out=None, keepdims=False)
def ptp(a, axis=None, out=None, keepdims=False):
    no_out("ptp", out)
    return F.max(a, axis=axis, keepdims=keepdims) - F.min(a, axis=axis, keepdims=keepdims)


@define("average", "a", "=axis", "?weights", "=returned", axis=None, returned=False,
        keepdims=False)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    a = as_expr(a)
    if weights is None:
        avg = F.mean(a, axis=axis, keepdims=keepdims)
        total = F.broadcast_to(as_expr(float(a.size if axis is None else
                                             math.prod(a.shape[k] for k in
                                                       axes_tuple("average", axis, a.ndim)))),
                               avg.shape)
    else:
        w = as_expr(weights)
        if w.shape != a.shape:
            if axis is None or w.ndim != 1:
                raise ShapeError(f"average: weights of shape {w.shape} do not fit an array "
                                 f"of shape {a.shape} (1-D weights need axis=)")
            k = axis_int("average", axis, a.ndim)
            w = F.reshape(w, tuple(-1 if i == k else 1 for i in range(a.ndim)))
        total = F.sum(F.broadcast_to(w, a.shape), axis=axis, keepdims=keepdims)
        avg = F.sum(a * w, axis=axis, keepdims=keepdims) / total
    return (avg, total) if returned else avg


@define("count_nonzero", "a", "=axis", axis=None, keepdims=False)
def count_nonzero(a, axis=None, *, keepdims=False):
    return F.sum(F.astype(as_expr(a) != 0, "int64"), axis=axis, keepdims=keepdims)


def _nan_reduction(name: str, op: str, fill: float):
    @define(name, "a", "=axis", "=dtype", "=out", "=keepdims", axis=None, dtype=None, out=None,
            keepdims=False, strings=("dtype",))
    def fn(a, axis=None, dtype=None, out=None, keepdims=False):
        no_out(name, out)
        a = _cast(as_expr(a), dtype)
        nan = F.isnan(a)
        out_ = getattr(F, op)(F.where(nan, fill, a), axis=axis, keepdims=keepdims)
        if op in ("max", "min"):  # a slice of NaNs only: its NaN, as NumPy's (which warns)
            out_ = F.where(F.all(nan, axis=axis, keepdims=keepdims),
                           getattr(F, op)(a, axis=axis, keepdims=keepdims), out_)
        return out_

    return fn


_nan_reduction("nansum", "sum", 0.0)
_nan_reduction("nanprod", "prod", 1.0)
_nan_reduction("nanmax", "max", -np.inf)
_nan_reduction("nanmin", "min", np.inf)


@define("nanmean", "a", "=axis", "=dtype", "=out", "=keepdims", axis=None, dtype=None,
        out=None, keepdims=False, strings=("dtype",))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    no_out("nanmean", out)
    a = _cast(as_expr(a), dtype)
    ok = ~F.isnan(a)
    return (F.sum(F.where(ok, a, 0.0), axis=axis, keepdims=keepdims)
            / F.sum(F.where(ok, 1.0, 0.0), axis=axis, keepdims=keepdims))


def _cumulative(name: str, op: str):
    @define(name, "a", "=axis", "=dtype", "=out", axis=None, dtype=None, out=None,
            strings=("dtype",))
    def fn(a, axis=None, dtype=None, out=None):
        no_out(name, out)
        return getattr(F, op)(_cast(a, dtype), axis=axis)

    return fn


_cumulative("cumsum", "cumsum")
_cumulative("cumprod", "cumprod")


@define("median", "a", "=axis", "=out", "=overwrite_input", "=keepdims", axis=None, out=None,
        overwrite_input=False, keepdims=False)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The middle of the sorted values (of complex ones in NumPy's lexicographic order); a
    slice holding NaN gives the last of its sorted values, a NaN, as NumPy's."""
    no_out("median", out)
    return _quantile(as_expr(a), 0.5, axis, keepdims)


@define("quantile", "a", "=q", "=axis", "=out", "=overwrite_input", "=method", "=keepdims",
        q=None, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
        strings=("method",))
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False):
    """Linear interpolation between the sorted values (NumPy's default ``method``); a NaN in
    a slice makes its quantile NaN, as in NumPy."""
    no_out("quantile", out)
    if method != "linear":
        raise UnsupportedError(f"quantile: method={describe(method)} is not supported "
                               "(only 'linear')")
    a = as_expr(a)
    if is_complex(a.data.dtype):
        raise UnsupportedError("quantile and percentile of complex values: NumPy's take "
                               "real numbers only; use np.real(a) or np.abs(a)")
    return _quantile(a, q, axis, keepdims)


def _quantile(a: Expr, q: Any, axis: Any, keepdims: bool) -> Expr:
    if isinstance(q, Expr):
        raise UnsupportedError("quantile: q must be numbers (the positions are static)")
    qs = np.asarray(q, dtype=np.float64)
    if np.any((qs < 0) | (qs > 1)):
        raise ShapeError(f"quantile: q must be in [0, 1], got {describe(q)}")
    flat = axis is None
    data = F.reshape(a, (a.size,)) if flat else a
    k = 0 if flat else axis_int("quantile", axis, a.ndim)
    s = F.sort(data, axis=k)
    n = data.shape[k]
    pos = qs * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = (pos - lo).reshape(qs.shape + (1,) * (data.ndim - 1))
    take = [moveaxis(F.take(s, lo.ravel(), axis=k), k, 0),
            moveaxis(F.take(s, hi.ravel(), axis=k), k, 0)]
    lo_v, hi_v = (F.reshape(t, qs.shape + t.shape[1:]) for t in take)
    out_ = lo_v + (hi_v - lo_v) * frac
    nan = F.any(F.isnan(data), axis=k)
    # NumPy's: the last sorted value where it is NaN (complex NaNs sort last, 1+nanj too)
    last = F.take(s, n - 1, axis=k) if is_complex(a.data.dtype) else np.nan
    out_ = F.where(nan, last, out_)
    if keepdims:
        shape = qs.shape + tuple(1 if (flat or i == k) else d for i, d in enumerate(a.shape))
        out_ = F.reshape(out_, shape)
    return out_


@define("percentile", "a", "=q", "=axis", "=out", "=overwrite_input", "=method", "=keepdims",
        q=None, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
        strings=("method",))
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False):
    return quantile(a, np.asarray(q, dtype=np.float64) / 100.0, axis=axis, out=out,
                    method=method, keepdims=keepdims)


# -- elementwise compositions ---------------------------------------------------------------


@define("fabs", "x")
def fabs(x, **kwargs):
    x = as_expr(x)
    if is_complex(x.data.dtype):
        raise UnsupportedError("fabs of complex values: NumPy's fabs is for real values; "
                               "use abs (the modulus)")
    return F.abs(x if x.dtype in FLOATS else F.astype(x, "float64"))


@define("positive", "x")
def positive(x, **kwargs):
    return as_expr(x)


@define("real", "val")
def real(val):
    """The real part (the values themselves for real values)."""
    val = as_expr(val)
    return F.real(val) if is_complex(val.data.dtype) else val


@define("imag", "val")
def imag(val):
    """The imaginary part (zeros for real values)."""
    val = as_expr(val)
    return F.imag(val) if is_complex(val.data.dtype) else F.zeros_like(val)


@define("conj", "x", aliases=("conjugate",))
def conj(x, **kwargs):
    """The complex conjugate (the values themselves for real values)."""
    x = as_expr(x)
    return F.conj(x) if is_complex(x.data.dtype) else x


@define("iscomplexobj", "x")
def iscomplexobj(x) -> bool:
    """Whether ``x`` has a complex dtype (known while tracing)."""
    return is_complex(as_expr(x).data.dtype)


@define("iscomplex", "x")
def iscomplex(x):
    """Where the imaginary part is not zero (all False for real values)."""
    x = as_expr(x)
    return F.imag(x) != 0 if is_complex(x.data.dtype) else F.zeros_like(x) != 0


@define("isreal", "x")
def isreal(x):
    """Where the imaginary part is zero (all True for real values)."""
    x = as_expr(x)
    return F.imag(x) == 0 if is_complex(x.data.dtype) else F.zeros_like(x) == 0


@define("isrealobj", "x")
def isrealobj(x) -> bool:
    """Whether ``x`` has a real dtype (known while tracing)."""
    return not is_complex(as_expr(x).data.dtype)


@define("clip", "a", "?a_min", "?a_max", out=None)
def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    """``minimum(maximum(a, a_min), a_max)``; at a bound the gradient is split equally."""
    no_out("clip", out)
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if lo is None and hi is None:
        raise ShapeError("clip: at least one of a_min and a_max is required")
    r = as_expr(a)
    if lo is not None:
        r = F.maximum(r, lo)
    if hi is not None:
        r = F.minimum(r, hi)
    return r


@define("nan_to_num", "x", "=copy", "=nan", copy=True, nan=0.0, posinf=None, neginf=None)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = as_expr(x)
    if is_complex(x.data.dtype):  # NumPy's: each part on its own
        parts = [nan_to_num(p, copy, nan, posinf, neginf) for p in (F.real(x), F.imag(x))]
        return parts[0] + parts[1] * 1j
    info = np.finfo(np.dtype(x.dtype)) if x.dtype in FLOATS else None
    if info is None:
        return x
    big = info.max if posinf is None else posinf
    small = -info.max if neginf is None else neginf
    r = F.where(F.isnan(x), nan, x)
    return F.where(r == np.inf, big, F.where(r == -np.inf, small, r))


@define("isclose", "a", "b", "=rtol", "=atol", "=equal_nan", rtol=1e-05, atol=1e-08,
        equal_nan=False)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = as_expr(a), as_expr(b)
    close = F.abs(a - b) <= atol + rtol * F.abs(b)
    close = close | (a == b)  # equal infinities
    return close | (F.isnan(a) & F.isnan(b)) if equal_nan else close


@define("allclose", "a", "b", "=rtol", "=atol", "=equal_nan", rtol=1e-05, atol=1e-08,
        equal_nan=False)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return F.all(isclose(a, b, rtol, atol, equal_nan))


@define("select", "[condlist]", "[choicelist]", "?default")
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ShapeError("select: condlist and choicelist must have the same length")
    out = as_expr(default) if isinstance(default, Expr) else default
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = F.where(cond, choice, out)
    return as_expr(out)


@define("polyval", "p", "x")
def polyval(p, x):
    """Horner's rule for the coefficients ``p`` (highest power first)."""
    coeffs = [p[k] for k in range(len(p))] if isinstance(p, Expr) else list(p)
    out = as_expr(x) * 0.0 + coeffs[0] if coeffs else as_expr(x) * 0.0
    for c in coeffs[1:]:
        out = out * x + c
    return out


# -- linear algebra conveniences -------------------------------------------------------------


def _letters(n: int, start: int = 0) -> str:
    return "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[start: start + n]


@define("tensordot", "a", "b", "=axes", axes=2, aliases=("linalg.tensordot",))
def tensordot(a, b, axes=2):
    a, b = as_expr(a), as_expr(b)
    if isinstance(axes, (int, np.integer)):
        k = int(axes)
        ax_a, ax_b = list(range(a.ndim - k, a.ndim)), list(range(k))
    else:
        ax_a, ax_b = ([axes[0]] if isinstance(axes[0], (int, np.integer)) else list(axes[0]),
                      [axes[1]] if isinstance(axes[1], (int, np.integer)) else list(axes[1]))
    ax_a = [axis_int("tensordot", x, a.ndim) for x in ax_a]
    ax_b = [axis_int("tensordot", x, b.ndim) for x in ax_b]
    if len(ax_a) != len(ax_b):
        raise ShapeError(f"tensordot: axes {describe(axes)} pair {len(ax_a)} with {len(ax_b)} axes")
    ta, tb = list(_letters(a.ndim)), list(_letters(b.ndim, a.ndim))
    for i, j in zip(ax_a, ax_b):
        tb[j] = ta[i]
    out = [c for i, c in enumerate(ta) if i not in ax_a] + \
          [c for j, c in enumerate(tb) if j not in ax_b]
    return F.einsum(f"{''.join(ta)},{''.join(tb)}->{''.join(out)}", a, b)


@define("inner", "a", "b")
def inner(a, b):
    a, b = as_expr(a), as_expr(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([-1], [-1]))


@define("vdot", "a", "b")
def vdot(a, b):
    a, b = conj(as_expr(a)), as_expr(b)  # NumPy's vdot conjugates its first argument
    return F.dot(F.reshape(a, (a.size,)), F.reshape(b, (b.size,)))


@define("vecdot", "x1", "x2", "=axis", axis=-1, aliases=("linalg.vecdot",))
def vecdot(x1, x2, axis=-1):
    return F.sum(conj(as_expr(x1)) * as_expr(x2), axis=axis)  # x1 conjugated, as NumPy's


@define("kron", "a", "b")
def kron(a, b):
    a, b = as_expr(a), as_expr(b)
    nd = max(a.ndim, b.ndim)
    a = F.reshape(a, (1,) * (nd - a.ndim) + a.shape) if a.ndim < nd else a
    b = F.reshape(b, (1,) * (nd - b.ndim) + b.shape) if b.ndim < nd else b
    ta, tb = _letters(nd), _letters(nd, nd)
    spec = f"{ta},{tb}->" + "".join(x + y for x, y in zip(ta, tb))
    return F.reshape(F.einsum(spec, a, b), tuple(p * q for p, q in zip(a.shape, b.shape)))


@define("cross", "a", "b", "=axisa", "=axisb", "=axisc", "=axis", axisa=-1, axisb=-1, axisc=-1,
        axis=None, aliases=("linalg.cross",))
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (or 2-vectors, as NumPy: the z component)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(as_expr(a), axisa, -1)
    b = moveaxis(as_expr(b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ShapeError(f"cross: vectors must have 2 or 3 components, got shapes {a.shape} "
                         f"and {b.shape}")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a0 * b1 - a1 * b0
    a2 = a[..., 2] if a.shape[-1] == 3 else 0.0
    b2 = b[..., 2] if b.shape[-1] == 3 else 0.0
    out = F.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(out, -1, axisc)


# -- trace with NumPy's keywords (the op is in ops/numpy_linalg.py) ------------------------


@define("trace", "a", "=offset", "=axis1", "=axis2", "=dtype", "=out", offset=0, axis1=0,
        axis2=1, dtype=None, out=None, strings=("dtype",))
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """NumPy's ``trace``: the sum of the offset diagonal of the (axis1, axis2) planes."""
    no_out("trace", out)
    return F.trace(_cast(a, dtype), offset=offset, axis1=axis1, axis2=axis2)


@define("linalg.trace", "x", offset=0, dtype=None, strings=("dtype",))
def linalg_trace(x, offset=0, dtype=None):
    """NumPy 2's ``linalg.trace``: the trace of each matrix of the last two axes."""
    return F.trace(_cast(x, dtype), offset=offset, axis1=-2, axis2=-1)


@define("linalg.cond", "x", "=p", p=None, strings=("p",))
def cond(x, p=None):
    """NumPy's ``linalg.cond``: the ratio of the extreme singular values (``p`` None, 2, -2),
    else ``norm(x, p) * norm(inv(x), p)`` (a singular matrix raises in ``inv``)."""
    x = as_expr(x)
    if p is None or p in (2, -2):
        s = F.svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    return (F.norm(x, ord=p, axis=(-2, -1)) * F.norm(F.inv(x), ord=p, axis=(-2, -1)))


__all__ = ["register_ufuncs"]


@define("fix", "x")
def fix(x, out=None):
    """Round toward zero (NumPy's fix is trunc for floats); its derivative is 0."""
    no_out("fix", out)
    return F.trunc(x)


@define("cov", "m", "?y", "=rowvar", "=bias", "=ddof", rowvar=True, bias=False, ddof=None,
        aweights=None, fweights=None, dtype=None, strings=("dtype",))
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """NumPy's covariance of the rows (or columns) of ``m``, unweighted."""
    if fweights is not None or aweights is not None:
        raise UnsupportedError("cov: fweights and aweights are not supported")
    x = as_expr(m)
    x = F.reshape(x, (1, x.shape[0])) if x.ndim == 1 else x
    if not rowvar:
        x = F.transpose(x)
    if y is not None:
        yy = as_expr(y)
        yy = F.reshape(yy, (1, yy.shape[0])) if yy.ndim == 1 else yy
        x = F.concatenate([x, yy if rowvar else F.transpose(yy)], axis=0)
    x = _cast(x, dtype)
    n = x.shape[1]
    d = x - F.mean(x, axis=1, keepdims=True)
    c = (d @ F.transpose(conj(d))) / float(max(n - (0 if bias else 1) if ddof is None else n - ddof,
                                         0))
    return F.reshape(c, ()) if c.shape == (1, 1) else c


@define("corrcoef", "x", "?y", "=rowvar", rowvar=True, dtype=None, strings=("dtype",))
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = F.sqrt(real(diagonal(c)))
    return c / F.outer(d, d)
