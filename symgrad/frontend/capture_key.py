"""The cache key of a traced function's state: what it read (its watches), read again at
every call, and each value's key part (a number by value, an array by shape and dtype, its
values an input, a container by structure and leaves, anything else by identity)."""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.errors import ArgumentError
from ..base.tree_util import LEAF, tree_flatten
from ..ir import shapes
from ..ir.graph import LIFT_MIN
from .capture_objects import MISSING, class_lookup, raw_attr, user_object

__all__ = ["CHARS", "DTYPES", "Held", "SCALARS", "Watch", "array_count", "flat",
           "is_dataclass", "part", "state", "supported", "value_key"]

DTYPES = frozenset(shapes.DTYPES)
CHARS = frozenset(np.dtype(n).char for n in DTYPES)
SCALARS = frozenset({float, int, bool, complex, str, bytes, type(None)})
_BY_IDENTITY = frozenset({types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                          types.MethodType, type, np.ufunc, functools.partial})


def value_key(v: Any) -> Any:
    """A key equal only for values that trace alike: the type in it, a float by its bits
    (``0.0`` and ``-0.0`` apart, a NaN equal to itself), through tuples and frozensets.

    >>> value_key(0.0) == value_key(-0.0), value_key(1) == value_key(True)
    (False, False)
    """
    t = type(v)
    if t is float:
        return ("float", v.hex())
    if t is complex:
        return ("complex", v.real.hex(), v.imag.hex())
    if isinstance(v, np.generic):
        return ("numpy", v.dtype.str, v.tobytes())
    if t is tuple:
        return ("tuple", *[value_key(x) for x in v])
    if t is frozenset:
        return ("frozenset", frozenset(value_key(x) for x in v))
    return (t.__module__, t.__qualname__, v)


class Watch:
    """One value a traced function reads, found again at every call: by ``get()`` for a
    root (a global, a closed-over cell, a default argument, an object fixed for the
    function's life), by ``get(parent_value)`` for a step from another watch's value (an
    attribute, a container's leaf, a ``partial``'s argument, a bound method's ``self``)."""

    __slots__ = ("parent", "get", "label", "base", "names", "index", "part", "fixed")

    def __init__(self, parent: Watch | None, get: Callable, label: str, base: str,
                 part: Callable | None = None) -> None:
        self.parent, self.get, self.label, self.base = parent, get, label, base
        self.names: list[str] = []  # the variables of its array leaves at the last trace
        self.index = 0  # its position in the capture's list (parents come first)
        self.part = part  # its cache-key part, if not the value's usual one
        self.fixed: Any = MISSING  # the value, where it cannot change (not read again)

    def read(self) -> Any:
        """The value now (``MISSING`` when the path no longer leads anywhere)."""
        if self.fixed is not MISSING:
            return self.fixed
        if self.parent is None:
            return _get(self.get)
        v = self.parent.read()
        return MISSING if v is MISSING else _get(self.get, v)


def _get(get: Callable, *args: Any) -> Any:
    try:
        return get(*args)
    except Exception:  # an attribute deleted, a list shortened: the path is gone
        return MISSING


class Held(Watch):
    """An array reached otherwise (a library object's): held by reference."""

    __slots__ = ()


def state(watches: list[Watch]) -> tuple[tuple, list[np.ndarray], list]:
    """The cache-key part of the watched values now, their array leaves in order, and the
    values themselves (a cache entry keeps them: the objects keyed by identity stay alive)."""
    parts: list[Any] = []
    arrays: list[np.ndarray] = []
    values: list[Any] = []
    for w in watches:
        v = w.fixed
        if v is not MISSING:  # the function's own object, a bound method's self: no key
            values.append(v)
            continue
        p = w.parent
        if p is None:
            try:
                v = w.get()
            except Exception:
                v = MISSING
        else:
            v = values[p.index]
            if v is not MISSING:
                try:
                    v = w.get(v)
                except Exception:
                    v = MISSING
        values.append(v)
        t = type(v)
        if w.part is not None:
            parts.append(w.part(v))
        elif t is np.ndarray and v.dtype.char in CHARS:
            parts.append((v.shape, v.dtype.char))
            arrays.append(v)
        elif t is float:
            parts.append(v.hex())
        elif t in SCALARS:
            parts.append((t, v))
        elif KINDS.get(t) == "id":
            parts.append(id(v))
        else:
            parts.append(part(v, arrays))
    return tuple(parts), arrays, values


def part(v: Any, arrays: list) -> Any:
    t = type(v)
    kind = KINDS.get(t)
    if kind is None:
        kind = _kind(v)
        if len(KINDS) < 4096:
            KINDS[t] = kind
    if kind == "id":
        return id(v)
    if kind == "scalar":
        return value_key(v)
    if kind == "array":
        if v.dtype.kind in "biuf":
            a = supported(v)
            arrays.append(a)
            return (a.shape, a.dtype.char)
        return id(v)
    leaves, treedef = flat(v)
    if treedef is not LEAF:
        return (treedef, tuple([part(x, arrays) for x in leaves]))
    if t is dict:  # not a pytree (keys of mixed types: a registry by type)
        return ("dict", tuple([(part(k, arrays), part(x, arrays)) for k, x in v.items()]))
    if t is set or t is frozenset:
        return ("set", frozenset(part(x, arrays) for x in v))
    return id(v)


KINDS: dict[type, str] = {}


def _kind(v: Any) -> str:
    """How a value of ``v``'s type is keyed: by value (a scalar), shape and dtype (an array
    whose values are an input), structure and leaves (a container), or identity."""
    if type(v) in SCALARS or isinstance(v, np.generic):
        return "scalar"
    if isinstance(v, np.ndarray):
        return "array" if not isinstance(v, np.matrix) else "id"
    if isinstance(v, (dict, list, tuple, set, frozenset)):
        return "container"
    if is_dataclass(v):
        return "id" if user_object(v) else "container"  # the user's: seen through a view
    if type(v) in PYTREE_TYPES or flat(v)[1] is not LEAF:  # registered: SciPy's sparse
        return "container"
    return "id"


def is_dataclass(v: Any) -> bool:
    return dataclasses.is_dataclass(type(v))  # asked of the class: no __getattr__ runs


PYTREE_TYPES: set[type] = set()  # registered pytree classes met while lifting


def flat(v: Any) -> tuple[list, Any]:
    """``tree_flatten(v)``, or no leaves for a container that is not a pytree (a dict keyed
    by types, as a library's registry is): such an object is kept as it is."""
    try:
        return tree_flatten(v)
    except ArgumentError:
        return [], LEAF


def supported(a: np.ndarray) -> np.ndarray:
    if a.dtype.name in DTYPES or a.dtype.kind not in "biuf":
        return a
    return a.astype(np.float64 if a.dtype.kind == "f" else np.int64)


def array_count(v: Any) -> int:
    arrays: list = []
    if type(v) is np.ndarray and v.dtype.char in CHARS:
        return 1
    part(v, arrays)
    return len(arrays)


def cell_reader(cell: types.CellType) -> Callable[[], Any]:
    return lambda: cell.cell_contents


def default_reader(fun: types.FunctionType, k: int) -> Callable[[], Any]:
    return lambda: fun.__defaults__[k]


def kwdefault_reader(fun: types.FunctionType, name: str) -> Callable[[], Any]:
    return lambda: fun.__kwdefaults__[name]


def leaf_reader(k: int) -> Callable[[Any], Any]:
    return lambda v: flat(v)[0][k]


def arg_reader(k: int) -> Callable[[Any], Any]:
    return lambda v: v.args[k]


def keyword_reader(name: str) -> Callable[[Any], Any]:
    return lambda v: v.keywords[name]


def class_reader(name: str) -> Callable[[Any], Any]:
    return lambda cls: class_lookup(cls, name)


def content_key(v: Any) -> Any:
    """A class attribute's key: a small array by its bytes (it becomes a literal), a large
    one by identity (an input read by reference), anything else as usual."""
    if isinstance(v, np.ndarray):
        if v.size < LIFT_MIN:
            return (v.shape, v.dtype.str, v.tobytes())
        return id(v)
    return part(v, [])


def attrgetter(name: str) -> Callable[[Any], Any]:
    return lambda v: object.__getattribute__(v, name)


def attr_reader(name: str) -> Callable[[Any], Any]:
    return lambda obj: raw_attr(obj, name)
