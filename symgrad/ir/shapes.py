"""Shape and dtype rules shared by the op stanzas: broadcasting, promotion, axes."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..base.describe import describe
from ..base.errors import ShapeError

Shape = tuple[int, ...]
FLOATS = ("float64", "float32")  # the dtypes a gradient flows through
INTS = ("int64", "int32")
DTYPES = (*FLOATS, *INTS, "bool")  # every dtype a node may have


def fmt(shape: Shape) -> str:
    """A shape as people read it: ``(3, 4)``, ``()`` for a scalar."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


@lru_cache(maxsize=4096)
def broadcast(op: str, *shapes: Shape) -> Shape:
    """NumPy broadcasting of ``shapes``; a :class:`ShapeError` naming ``op`` if impossible."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        dims = {s[i] for s in shapes if len(s) >= -i} - {1}
        if len(dims) > 1:
            listed = " and ".join(fmt(s) for s in shapes)
            raise ShapeError(f"{op}: shapes {listed} cannot be broadcast together")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


@lru_cache(maxsize=1024)
def result_dtype(*dtypes: str) -> str:
    """NumPy's type promotion over dtype names."""
    return np.result_type(*dtypes).name


def float_dtype(dtype: str) -> str:
    """The floating dtype a transcendental function returns for ``dtype``."""
    return dtype if dtype in FLOATS else "float64"


def is_float(dtype: str) -> bool:
    """Whether values of ``dtype`` can carry a gradient."""
    return dtype in FLOATS


def norm_axes(op: str, axis, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, int or tuple) as a sorted tuple of negative axes of an ``ndim`` array."""
    if axis is None:
        return tuple(range(-ndim, 0))
    if not isinstance(axis, (int, np.integer, tuple, list)):
        raise ShapeError(f"{op}: axis must be an int or a tuple of ints, got "
                         f"{describe(axis)}")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = set()
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise ShapeError(f"{op}: axis must be an int or a tuple of ints, got "
                             f"{describe(axis)}")
        if not -ndim <= a < ndim:
            raise ShapeError(f"{op}: axis {a} is out of range for an array of rank {ndim}")
        out.add(int(a) - ndim if a >= 0 else int(a))
    if len(out) != len(axes):
        raise ShapeError(f"{op}: repeated axis in {describe(axis)}")
    return tuple(sorted(out))


def norm_axis(op: str, axis, ndim: int) -> int:
    """A single axis as a negative int."""
    if axis is None or isinstance(axis, (tuple, list)):
        raise ShapeError(f"{op}: axis must be a single int, got {describe(axis)}")
    return norm_axes(op, axis, ndim)[0]


def reduced(shape: Shape, axes: tuple[int, ...], keepdims: bool) -> Shape:
    """The shape after reducing negative ``axes`` of ``shape``."""
    n = len(shape)
    keep = [1 if (i - n) in axes else d for i, d in enumerate(shape)]
    return tuple(keep) if keepdims else tuple(d for i, d in enumerate(shape) if (i - n) not in axes)


def check_int(op: str, what: str, value, lo: int = 0, hi: int = 1 << 31) -> int:
    """A static integer argument, range-checked (a ShapeError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value < hi:
        raise ShapeError(f"{op}: {what} must be an integer in [{lo}, {hi}), got {value!r}")
    return int(value)
