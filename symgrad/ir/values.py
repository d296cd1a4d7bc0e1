"""User values made exact: names, shapes, dtypes and constants checked and normalised once,
and the hashable key of an attribute value (``freeze``).

Every value a user hands to symgrad is first made *exact* (:func:`exact`): a ``str``,
``int`` or ``float`` subclass becomes the plain built-in with the same value, without
calling any of its methods (``str.__str__``, ``int.__index__`` and ``float.__float__`` of
the base type read the stored value), recursively through tuples, lists, dicts and
slices. Checks and the code emitter then only ever see built-ins, so an object whose
``__format__``, ``__repr__``, ``__index__``, ``__eq__`` or ``__hash__`` does something else
never runs and never reaches emitted source.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.describe import NUMPY_SCALARS, PLAIN, describe
from ..base.errors import (
    ArgumentError,
    NameConflictError,
    ShapeError,
    SymgradError,
    UnsupportedError,
)
from .shapes import DTYPES, Shape

_RESERVED = {"np", "numpy"}
INT64_MAX = 2**63 - 1
_MAX_NESTING = 64  # lists inside lists (NumPy arrays have at most 64 axes)


def exact(value: Any, depth: int = 0) -> Any:
    """``value`` with every ``str``/``int``/``float``/``complex`` (subclass) replaced by the
    exact built-in, through tuples, lists, dicts (keys too) and slices. Other objects
    (Exprs, arrays, NumPy scalars, dtypes) are returned as they are.

    >>> class Name(str):
    ...     def __str__(self):
    ...         return "something else"
    >>> v = exact([Name("x"), (True, 2.5)])
    >>> v, type(v[0]) is str
    (['x', (True, 2.5)], True)
    """
    t = type(value)
    if t in PLAIN:
        return value
    if depth > _MAX_NESTING:
        raise ShapeError(f"a value nested more than {_MAX_NESTING} levels deep")
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return value if t in NUMPY_SCALARS else float.__float__(value)
    if isinstance(value, complex):
        return complex(complex.real.__get__(value), complex.imag.__get__(value))
    if t is tuple:  # the common case: a shape, an axis tuple, an index key
        for v in value:
            if type(v) not in PLAIN:
                break
        else:
            return value
        items = [v if type(v) in PLAIN else exact(v, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else tuple(items)
    if isinstance(value, tuple):
        return tuple([exact(v, depth + 1) for v in tuple.__iter__(value)])
    if isinstance(value, list):
        return [exact(v, depth + 1) for v in list.__iter__(value)]
    if isinstance(value, dict):
        return {exact(k, depth + 1): exact(v, depth + 1) for k, v in dict.items(value)}
    if t is slice:
        return slice(exact(value.start, depth + 1), exact(value.stop, depth + 1),
                     exact(value.step, depth + 1))
    if isinstance(value, np.ndarray) and t is not np.ndarray:
        return np.ndarray.view(value, np.ndarray)
    return value


def plain(value: Any, what: str, depth: int = 0) -> Any:
    """``value`` as plain data, or an :class:`~symgrad.errors.ArgumentError` naming ``what``:
    None, a bool, int, float or str (subclasses and NumPy scalars become the exact
    built-in), ``...``, or a tuple, list, dict (string keys) or slice of such values. What
    a user-defined op's attributes may hold: nothing else is ever formatted into emitted
    source, a docstring or a page, so no object of the user's runs there.

    >>> plain((1, 2.5, "a"), "axis"), type(plain(np.int32(3), "axis")).__name__
    ((1, 2.5, 'a'), 'int')
    """
    t = type(value)
    if t in PLAIN and t is not complex:
        return value
    if depth > _MAX_NESTING:
        raise ShapeError(f"{what}: a value nested more than {_MAX_NESTING} levels deep")
    if t in NUMPY_SCALARS and isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    if isinstance(value, (str, int, float)) and not isinstance(value, np.generic):
        return exact(value)
    if t is slice:
        return slice(*(plain(v, what, depth + 1) for v in (value.start, value.stop,
                                                             value.step)))
    if isinstance(value, tuple):
        return tuple([plain(v, what, depth + 1) for v in tuple.__iter__(value)])
    if isinstance(value, list):
        return [plain(v, what, depth + 1) for v in list.__iter__(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in dict.keys(value)):
        return {str.__str__(k): plain(v, what, depth + 1) for k, v in dict.items(value)}
    raise ArgumentError(
        f"{what} cannot be {describe(value)}: an attribute is None, a bool, int, float or "
        "string, or a tuple, list, dict (string keys) or slice of them; pass arrays as "
        "operands")


def exact_str(value: Any, what: str) -> str:
    """``value`` as an exact ``str``, or a :class:`SymgradError` naming ``what``."""
    if not isinstance(value, str):
        raise SymgradError(f"{what} must be a string, got {describe(value)}")
    return str.__str__(value)


def exact_choice(value: Any, what: str, choices: tuple,
                 error: type[SymgradError] = ArgumentError) -> Any:
    """``value`` if it is one of ``choices`` (strings, None, bools), compared as an exact
    built-in (an array or a user object is refused, never compared with ``==``).

    >>> exact_choice("forward", "mode", (None, "forward", "reverse"))
    'forward'
    """
    value = exact(value)
    if type(value) in (str, bool, type(None)) and value in choices:
        return value
    if type(value) is np.bool_ and bool(value) in choices:
        return bool(value)
    shown = ", ".join(map(repr, choices))
    raise error(f"{what} must be one of {shown}, got {describe(value)}")


def exact_int(value: Any, what: str) -> int:
    """``value`` (an int, a NumPy integer, not a bool) as an exact ``int``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__index__(value)
    if type(value) in NUMPY_SCALARS and isinstance(value, np.integer):
        return int(value)
    raise SymgradError(f"{what} must be an int, got {describe(value)}")


def freeze(value: Any) -> Any:
    """A hashable key for an attribute value that tells 1 from 1.0 and 0.0 from -0.0."""
    t = type(value)  # exact types first: this runs for every node built
    if t is int:
        return ("i", value)
    if t is float:
        return ("f", value.hex())
    if t is tuple:
        for v in value:
            if type(v) is not int:
                return ("tuple", *[("i", v) if type(v) is int else freeze(v) for v in value])
        return ("ints", value)  # a shape, axes, a key of ints: equal only to the same ints
    if t is str or value is None:
        return value
    if t is dict:
        return tuple([(k, freeze(value[k])) for k in sorted(value)])
    if isinstance(value, np.ndarray):
        return ("nd", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (bool, np.bool_)):
        return ("b", bool(value))
    if isinstance(value, (float, np.floating)):
        return ("f", float(value).hex())
    if isinstance(value, (complex, np.complexfloating)):
        return ("c", float(value.real).hex(), float(value.imag).hex())
    if isinstance(value, (int, np.integer)):
        return ("i", int(value))
    if isinstance(value, dict):
        return tuple((k, freeze(v)) for k, v in sorted(value.items()))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(freeze(v) for v in value)
    if isinstance(value, slice):
        return ("slice", freeze(value.start), freeze(value.stop), freeze(value.step))
    return value


def check_name(name: Any) -> str:
    """A variable name as an exact ``str``: a Python identifier, not a keyword or dunder."""
    if not isinstance(name, str):
        raise NameConflictError(
            f"{describe(name)} is not a valid variable name (use a Python identifier)")
    name = str.__str__(name)  # an exact str: a subclass's methods never run again
    if not name.isidentifier() or keyword.iskeyword(name):
        raise NameConflictError(f"{name!r} is not a valid variable name (use a Python identifier)")
    if name.startswith("__") or name in _RESERVED:
        raise NameConflictError(f"{name!r} is reserved; choose another variable name")
    return name


def check_shape(shape: Any, what: str) -> Shape:
    """A shape as a tuple of non-negative ints (an int is a 1-tuple); its element count
    must fit an int64, as NumPy requires.

    >>> check_shape(3, "x"), check_shape([2, 3], "x")
    ((3,), (2, 3))
    """
    if isinstance(shape, str) or not isinstance(shape, (int, np.integer, tuple, list)):
        raise ShapeError(f"{what}: shape must be an int or a tuple of ints, got "
                         f"{describe(shape)}")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = exact(shape)
    if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) for d in shape):
        raise ShapeError(f"{what}: shape must be a tuple of ints, got {describe(shape)}")
    out = tuple(int(d) for d in shape)
    if any(d < 0 for d in out) or len(out) > 32:
        raise ShapeError(f"{what}: invalid shape {describe(shape)} (sizes must be "
                         "non-negative, at most 32 axes)")
    if math.prod(out) > INT64_MAX:
        raise ShapeError(f"{what}: shape {describe(shape)} has more than 2**63 - 1 elements")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_dtype(dtype: Any, what: str) -> str:
    """A supported dtype's name (``"float64"``, ...)."""
    dtype = exact(dtype)
    try:
        name = np.dtype(dtype).name
    except (TypeError, ValueError):
        name = str(dtype) if isinstance(dtype, str) else ""
    if name not in DTYPES:
        raise ShapeError(f"{what}: dtype must be one of {', '.join(DTYPES)}, got "
                         f"{describe(dtype)}")
    return name


def stood_for(operands: Sequence[Any]) -> Sequence[Any]:
    """``operands`` with each that stands for an expression (an object with
    ``__sg_value__``: an array a traced function filled with expressions) as that
    expression."""
    out = None
    for k, o in enumerate(operands):
        t = type(o)
        if t is not float and t is not int and hasattr(t, "__sg_value__"):
            v = o.__sg_value__()
            if v is not None:
                out = list(operands) if out is None else out
                out[k] = v
    return operands if out is None else out


def as_constant(value: Any) -> np.ndarray:
    """A constant's canonical value: a read-only NumPy array of a supported dtype (float64,
    float32, int64, int32, bool, complex128, complex64; other floats, ints and complex
    numbers become float64, int64 and complex128).

    >>> as_constant([1, 2]).dtype, as_constant(2.5).shape
    (dtype('int64'), ())
    """
    if hasattr(type(value), "__sg_value__") and value.__sg_value__() is not None:
        raise UnsupportedError(
            "an array filled with expressions (out[i] = expr) reached a place that takes "
            "numbers only; pass it through a NumPy operation first (e.g. out * 1.0), or build "
            "it with out.at[i].set(expr) on sg.zeros")
    value = exact(value)
    try:
        arr = np.array(value)
    except (ValueError, TypeError, OverflowError) as e:
        why = ("the nested lists have different lengths (a constant must be rectangular)"
               if _ragged(value) else str(e))
        raise ShapeError(f"cannot use {describe(value)} as a constant: {why}") from None
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float64 if arr.dtype != np.float32 else np.float32, copy=False)
    elif arr.dtype.kind == "u":
        if arr.size and int(arr.max()) > INT64_MAX:
            raise ShapeError(f"cannot use {describe(value)} as a constant: it does not fit "
                             "int64, the integer dtype symgrad uses")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "i":
        arr = arr.astype(np.int64 if arr.dtype != np.int32 else np.int32, copy=False)
    elif arr.dtype.kind == "c":
        arr = arr.astype(np.complex128 if arr.dtype != np.complex64 else np.complex64,
                         copy=False)
    elif arr.dtype.kind != "b":
        raise ShapeError(f"cannot use {describe(value)} as a constant (dtype "
                         f"{arr.dtype}; numbers and arrays of int, float, complex or bool "
                         "only)")
    arr.setflags(write=False)
    return arr


def weak(o: int | float | complex | bool, strong: list[str] | tuple[str, ...] | None) -> Any:
    """The constant a Python number makes beside operands of dtypes ``strong``: NEP 50's
    "weak" number takes their type (``2.0 * x`` keeps float32; ``1j * x`` of float32 is
    complex64), or the number as it is.

    >>> weak(2.0, ["float32"]).dtype, weak(2, ["int32"]).dtype, weak(2, None)
    (dtype('float32'), dtype('int32'), 2)
    >>> weak(1j, ["float32"]).dtype, weak(1j, ["int64"]).dtype
    (dtype('complex64'), dtype('complex128'))
    """
    if strong and type(o) in (int, float, complex):
        kind = np.result_type(*strong, o)
        value = np.asarray(o)  # int64 or float64, unless that would change the result type
        if np.result_type(*strong, value.dtype) != kind:
            try:
                value = np.asarray(o, dtype=kind)
            except OverflowError:
                raise ShapeError(f"the Python integer {o} does not fit the operands' dtype "
                                 f"{kind.name}") from None
        return value
    return o


def _ragged(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple)) for v in value)
