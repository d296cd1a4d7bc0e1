"""User values made exact: names, shapes, dtypes and constants checked and normalised once,
and the hashable key of an attribute value (``freeze``)."""

from __future__ import annotations

import keyword
from typing import Any

import numpy as np

from ..errors import NameConflictError, ShapeError
from .shapes import DTYPES, Shape

_RESERVED = {"np", "numpy"}


def freeze(value: Any) -> Any:
    """A hashable key for an attribute value that tells 1 from 1.0 and 0.0 from -0.0."""
    if isinstance(value, np.ndarray):
        return ("nd", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (bool, np.bool_)):
        return ("b", bool(value))
    if isinstance(value, (float, np.floating)):
        return ("f", float(value).hex())
    if isinstance(value, (int, np.integer)):
        return ("i", int(value))
    if isinstance(value, dict):
        return tuple((k, freeze(v)) for k, v in sorted(value.items()))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(freeze(v) for v in value)
    if isinstance(value, slice):
        return ("slice", freeze(value.start), freeze(value.stop), freeze(value.step))
    return value


def check_name(name: Any) -> None:
    """Variable names are Python identifiers, not keywords, not dunders."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise NameConflictError(f"{name!r} is not a valid variable name (use a Python identifier)")
    if name.startswith("__") or name in _RESERVED:
        raise NameConflictError(f"{name!r} is reserved; choose another variable name")


def check_shape(shape: Any, what: str) -> Shape:
    """A shape as a tuple of non-negative ints (an int is a 1-tuple)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        out = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise ShapeError(f"{what}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out) or len(out) > 32:
        raise ShapeError(f"{what}: invalid shape {shape!r}")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_dtype(dtype: Any, what: str) -> str:
    """A supported dtype's name (``"float64"``, ...)."""
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = str(dtype)
    if name.startswith("complex"):
        raise ShapeError(f"{what}: complex dtypes are not supported (symgrad differentiates "
                         f"real-valued functions); use {', '.join(DTYPES)}")
    if name not in DTYPES:
        raise ShapeError(f"{what}: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return name


def as_constant(value: Any) -> np.ndarray:
    """A constant's canonical value: a read-only NumPy array of a supported dtype (float64,
    float32, int64, int32, bool; other floats and ints become float64 and int64)."""
    try:
        arr = np.array(value)
    except (ValueError, TypeError):
        raise ShapeError(f"cannot use {type(value).__name__} {_short(value)} as a constant "
                         "(a ragged or mixed sequence?)") from None
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float64 if arr.dtype != np.float32 else np.float32)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64 if arr.dtype != np.int32 else np.int32)
    elif arr.dtype.kind == "c":
        raise ShapeError(f"complex numbers are not supported (got {_short(value)}): symgrad "
                         "differentiates real-valued functions")
    elif arr.dtype.kind != "b":
        raise ShapeError(f"cannot use {type(value).__name__} {_short(value)} as a constant")
    arr.setflags(write=False)
    return arr
