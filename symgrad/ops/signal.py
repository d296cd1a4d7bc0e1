"""N-d convolution of real arrays, SciPy's ``scipy.signal.convolve`` with one mode per axis.

``convolution(a, b, modes)``: ``a`` and ``b`` have the same number of axes, ``modes`` names one
mode per axis (``"full,valid"``; a tuple is accepted and made that string); along an axis of
lengths ``n`` and ``m`` the result has ``n + m - 1`` entries (``"full"``: every overlap) or
``|n - m| + 1`` (``"valid"``: the overlaps where the shorter lies inside the longer; either
operand may be the longer, the convolution is commutative). ``out[k] = sum_j a[k - j] b[j]``
over every axis at once. SciPy's ``same`` mode, ``correlate``, NumPy's 1-D ``convolve``
and autograd's ``axes=``/``dot_axes=`` are built on it (:mod:`symgrad.scipy.signal`): a
length-1 axis of one operand against a length-``n`` axis of the other is a plain product
there (an outer product, or a batch axis of an adjoint), and a ``"valid"`` axis of two equal
lengths with one operand reversed is a dot product.

The adjoint of a convolution is a convolution with the other operand reversed (DLMF-free:
``dL/da[i] = sum_k g[i + k] b[k]``): along a ``"full"`` axis the adjoint's mode is
``"valid"``; along a ``"valid"`` axis it is ``"full"`` where the operand is the longer and
``"valid"`` where it is the shorter. The adjoint's extra leading (batch) axes become
``"full"`` axes against length-1 axes of the reversed operand. The rule is this op again,
so every order of derivative is available; the forward rule is bilinear (a convolution of
each tangent with the other operand).

>>> import numpy as np, symgrad as sg
>>> from symgrad.ops import F
>>> a = sg.var("a", shape=(3,))
>>> y = F.convolution(a, np.array([1.0, 2.0]), modes=("full",))
>>> sg.evaluate(y, {"a": np.array([1.0, 0.0, 0.0])})
array([1., 2., 0., 0.])
"""

from __future__ import annotations

from ..base.errors import ShapeError
from ..ir.expr import F
from ..ir.op import Op, register, sig
from ..ir.shapes import fmt, result_dtype
from . import series
from .tangent import any_batch, total

MODES = ("full", "valid")


def _sg_convolution(a, b, modes):
    """``a`` convolved with ``b``, mode ``modes.split(",")[d]`` along axis ``d``: SciPy's
    ``convolve`` (its ``valid`` directly where one operand contains the other, else its
    ``full`` and a slice)."""
    import numpy as np
    import scipy.signal

    a, b = np.asarray(a), np.asarray(b)
    modes = modes.split(",") if modes else []
    dtype = np.result_type(a, b)
    if a.ndim == 0:
        return np.asarray(a * b, dtype=dtype)
    bigger = all(n >= m for n, m in zip(a.shape, b.shape))
    smaller = all(n <= m for n, m in zip(a.shape, b.shape))
    if all(m == "valid" for m in modes) and (bigger or smaller):
        return np.asarray(scipy.signal.convolve(a, b, mode="valid"), dtype=dtype)
    out = scipy.signal.convolve(a, b, mode="full")
    key = tuple(slice(None) if m == "full" else slice(min(n, k) - 1, max(n, k))
                for m, n, k in zip(modes, a.shape, b.shape))
    return np.asarray(out[key], dtype=dtype)


def axis_modes(modes: str) -> tuple[str, ...]:
    """The modes, one per axis, of the op's ``modes`` attribute (``"full,valid"``)."""
    return tuple(modes.split(",")) if modes else ()


def _prepare(shapes, dtypes, attrs):
    modes = attrs["modes"]
    if modes is None:
        modes = ("full",) * len(shapes[0])
    elif isinstance(modes, str):
        modes = axis_modes(modes)
    if not isinstance(modes, (tuple, list)) or any(m not in MODES for m in modes):
        raise ShapeError(f"convolution: modes must be 'full' or 'valid', one per axis (a "
                         f"tuple, or one string 'full,valid'), got {modes!r}")
    return {"modes": ",".join(modes)}


def _infer(shapes, dtypes, attrs):
    a, b = shapes
    modes = axis_modes(attrs["modes"])
    if len(a) != len(b) or len(modes) != len(a):
        raise ShapeError(f"convolution: the operands must have the same number of axes, one "
                         f"mode each; got shapes {fmt(a)} and {fmt(b)} with modes {modes!r}")
    if 0 in a or 0 in b:
        raise ShapeError(f"convolution: an operand is empty (shapes {fmt(a)} and {fmt(b)})")
    dtype = result_dtype(*dtypes)
    if dtype == "bool":
        raise ShapeError("convolution: boolean operands (make them numbers first)")
    shape = tuple(n + m - 1 if mode == "full" else abs(n - m) + 1
                  for mode, n, m in zip(modes, a, b))
    return shape, dtype


def _reversed(x):
    """``x`` reversed along every axis."""
    return x[(slice(None, None, -1),) * x.ndim] if x.ndim else x


def _lead(x, lead: int):
    """``x`` with ``lead`` length-1 axes in front."""
    return F.reshape(x, (1,) * lead + x.shape) if lead else x


def _adjoint(g, own, other, modes, lead: int):
    """The adjoint for ``own`` from ``g`` (``lead`` batch axes in front): ``g`` convolved
    with ``other`` reversed."""
    new = tuple("valid" if m == "full" else "full" if n > k else "valid"
                for m, n, k in zip(modes, own.shape, other.shape))
    return F.convolution(g, _lead(_reversed(other), lead), modes=("full",) * lead + new)


def _rule(n, g):
    a, b = n.args
    modes = axis_modes(n.attrs["modes"])
    lead = g.ndim - len(n.shape)
    return (_adjoint(g, a, b, modes, lead) if n.needs(0) else None,
            _adjoint(g, b, a, modes, lead) if n.needs(1) else None)


def _forward(n, t):
    a, b = n.args
    modes = axis_modes(n.attrs["modes"])
    lead = len(any_batch(n, t))
    full = ("full",) * lead + modes
    return total(None if t[0] is None else F.convolution(t[0], _lead(b, lead), modes=full),
                 None if t[1] is None else F.convolution(_lead(a, lead), t[1], modes=full))


def _batch(args, batched, attrs, shape):
    a, b = args
    modes = axis_modes(attrs["modes"])
    if batched[0] and batched[1]:  # rows pair up, they do not convolve: one call per row
        return F.stack([F.convolution(a[i], b[i], modes=attrs["modes"])
                        for i in range(a.shape[0])])
    a, b = (a, _lead(b, 1)) if batched[0] else (_lead(a, 1), b)
    return F.convolution(a, b, modes=("full",) + modes)


def _examples(rng):
    cases = [((5,), (3,), "full"), ((5,), (3,), "valid"), ((2,), (4,), "valid"),
             ((3, 4), (2, 2), "full,valid"), ((2, 4), (3, 2), "valid,valid"),
             ((3, 1, 2), (1, 2, 2), "full,full,valid"), ((), (), "")]
    return [([rng.standard_normal(p), rng.standard_normal(q)], {"modes": m})
            for p, q, m in cases]


register(Op(
    name="convolution", signature=sig("a", "b", "=modes", modes=None, strings=("modes",)),
    prepare=_prepare,
    infer=_infer, impl=_sg_convolution, backprop=_rule, forward=_forward, batch=_batch,
    taylor=series.bilinear, examples=_examples,
    doc="N-d convolution of arrays with the same number of axes, 'full' or 'valid' per axis "
        "(scipy.signal.convolve's meaning)",
))
