"""Shape and dtype rules shared by the op stanzas: broadcasting, promotion, axes."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..base.describe import describe
from ..base.errors import ShapeError

Shape = tuple[int, ...]
FLOATS = ("float64", "float32")  # the real floating dtypes
COMPLEXES = ("complex128", "complex64")
INEXACT = (*FLOATS, *COMPLEXES)  # the dtypes a gradient flows through
INTS = ("int64", "int32")
DTYPES = (*FLOATS, *INTS, "bool", *COMPLEXES)  # every dtype of an array value
TAPE = "object"  # a while_loop's tape: a Python list only its while_vjp reads, not an array
NODE_DTYPES = (*DTYPES, TAPE)  # every dtype a node may have (a call's: its results')
_REAL_OF = {"complex128": "float64", "complex64": "float32"}


def fmt(shape: Shape) -> str:
    """A shape as people read it: ``(3, 4)``, ``()`` for a scalar."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


_NAMES = {name: name for name in NODE_DTYPES}


def dtype_name(dtype: object) -> str:
    """NumPy's name of ``dtype``: a name (``"float64"``, ``"f4"``), a NumPy dtype or a scalar
    type. Every helper here reads its dtypes through it, so each takes any of those.

    >>> dtype_name("complex64"), dtype_name(np.dtype("complex64")), dtype_name(np.float32)
    ('complex64', 'complex64', 'float32')
    >>> dtype_name("f8"), dtype_name(bool)
    ('float64', 'bool')
    >>> dtype_name(None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symgrad.errors.ShapeError: None is not a dtype: pass a dtype's name ("float64"), ...
    """
    name = _known(dtype)
    if name is None:
        raise ShapeError(f"{describe(dtype)} is not a dtype: pass a dtype's name "
                         f'("float64"), a NumPy dtype or a scalar type')
    return name


def _known(dtype: object) -> str | None:
    """``dtype``'s name, None where it is no dtype (a call's :class:`~.op.Results`)."""
    if isinstance(dtype, str):
        name = _NAMES.get(dtype)
        if name is not None:
            return name
    elif not isinstance(dtype, (np.dtype, type)):
        return None
    return _numpy_name(dtype)


@lru_cache(maxsize=256)
def _numpy_name(dtype: str | np.dtype | type) -> str | None:
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None


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


def result_dtype(*dtypes: object) -> str:
    """NumPy's type promotion over dtypes (names, NumPy dtypes or scalar types).

    >>> result_dtype("int32", np.dtype("float32")), result_dtype(np.float32, "complex64")
    ('float64', 'complex64')
    """
    return _promoted(*map(dtype_name, dtypes))


@lru_cache(maxsize=1024)
def _promoted(*names: str) -> str:
    return np.result_type(*names).name


def float_dtype(dtype: object) -> str:
    """The inexact dtype a transcendental function returns for ``dtype`` (a complex dtype
    stays complex, as ``np.exp`` keeps it).

    >>> float_dtype("int32"), float_dtype("float32"), float_dtype(np.dtype("complex64"))
    ('float64', 'float32', 'complex64')
    """
    name = dtype_name(dtype)
    return name if name in INEXACT else "float64"


def is_float(dtype: object) -> bool:
    """Whether values of ``dtype`` can carry a gradient: a real or complex floating dtype
    (False for what is no dtype, such as a call's several results).

    >>> is_float("float32"), is_float(np.dtype("complex128")), is_float(np.int64)
    (True, True, False)
    """
    return _known(dtype) in INEXACT


def is_complex(dtype: object) -> bool:
    """Whether ``dtype`` is ``complex64`` or ``complex128`` (False for what is no dtype).

    >>> is_complex("complex64"), is_complex(np.dtype("complex128")), is_complex("float64")
    (True, True, False)
    """
    return _known(dtype) in COMPLEXES


def real_dtype(dtype: object) -> str:
    """The real dtype of ``dtype``'s parts: ``complex64`` -> ``float32``, ``complex128`` ->
    ``float64``; a real dtype as it is (what ``abs``, ``real`` and ``imag`` return).

    >>> real_dtype("complex64"), real_dtype("float64"), real_dtype(np.dtype("complex64"))
    ('float32', 'float64', 'float32')
    """
    name = dtype_name(dtype)
    return _REAL_OF.get(name, name)


def complex_dtype(dtype: object) -> str:
    """The complex dtype values of ``dtype`` become (``float32`` -> ``complex64``; other real
    dtypes -> ``complex128``), as NumPy's transforms (``np.fft.fft``) promote.

    >>> complex_dtype("float32"), complex_dtype("int64"), complex_dtype("complex64")
    ('complex64', 'complex128', 'complex64')
    >>> complex_dtype(np.dtype("complex64")), complex_dtype(np.float32)
    ('complex64', 'complex64')
    """
    name = dtype_name(dtype)
    if name in _REAL_OF:
        return name
    return "complex64" if name == "float32" else "complex128"


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
