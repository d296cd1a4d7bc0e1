"""Arguments of a traced function: arrays from user values, variable names from the
parameters (``model_W1`` for a dict entry), argument specs from ``shapes``/``dtypes``, and
the keys of the trace cache (static keywords by value and type)."""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from ..base.errors import InputError
from ..base.tree_util import tree_flatten
from ..frontend.capture import value_key
from ..ir.expr import Expr
from ..ir.shapes import DTYPES
from ..ir.values import exact

DTYPES_OK = frozenset(DTYPES)


CHARS = frozenset(np.dtype(n).char for n in DTYPES_OK)


def parameter_names(fun: Callable) -> list[str]:
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = []
    for p in params:
        if p.kind not in kinds:
            break
        name = str(p.name)
        ok = name.isidentifier() and not keyword.iskeyword(name) and name[:2] != "__"
        # np/numpy name the module in emitted code: the variable is np_ (the user chose the
        # parameter's name, not a variable's)
        names.append("arg" if not ok else f"{name}_" if name in ("np", "numpy") else name)
    return names


def leaf_names(treedef: Any, params: list[str]) -> list[str]:
    """Variable names for the leaves of the argument tuple: the parameter's name, with the
    dict key or position inside a container (``model_W1``)."""
    out: list[str] = []
    for k, child in enumerate(treedef.children):
        base = params[k] if k < len(params) else f"arg{k}"
        _name_leaves(child, base, out)
    return out


def _name_leaves(t: Any, base: str, out: list[str]) -> None:
    if t.kind == "leaf":
        out.append(base)
        return
    keys = t.aux if t.kind == "dict" or isinstance(t.aux, tuple) and len(t.aux) == len(
        t.children) else None
    if keys is None and hasattr(t.kind, "_fields"):
        keys = t.kind._fields
    for k, child in enumerate(t.children):
        part = str(keys[k]) if keys is not None else str(k)
        name = f"{base}_{part}"
        _name_leaves(child, name if name.isidentifier() else f"{base}_{k}", out)


def unique(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for k, n in enumerate(names):
        n = n if n not in seen else f"{n}_{k}"
        seen.add(n)
        out.append(n)
    return out


def flat_args(args: tuple, name: Callable[[int], str]) -> tuple[list, Any]:
    leaves, treedef = tree_flatten(exact(args))
    return [as_array(a, name(k)) for k, a in enumerate(leaves)], treedef


def as_array(value: Any, name: str) -> np.ndarray:
    if isinstance(value, Expr):
        raise InputError(f"argument '{name}' is a symgrad expression; this function takes "
                         "arrays (for expressions use sg.grad(expr, wrt))")
    if not isinstance(value, np.ndarray):
        value = exact(value)
    try:
        a = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise InputError(f"argument '{name}' is not an array: {e}") from None
    if a.dtype.kind not in "biuf":
        raise InputError(f"argument '{name}' has dtype {a.dtype}; pass numbers or arrays of "
                         "numbers (pytrees of them: dicts, lists, tuples, dataclasses)")
    if a.dtype.name not in DTYPES_OK:
        wide = np.float64 if a.dtype.kind == "f" else np.int64
        with np.errstate(over="ignore"):
            wraps = a.dtype.kind == "u" and a.size and a.max() > np.iinfo(np.int64).max or \
                a.dtype.kind == "f" and np.any(np.isfinite(a) & ~np.isfinite(a.astype(wide)))
        if wraps:
            raise InputError(f"argument '{name}' has values that do not fit {wide.__name__} "
                             f"(they would wrap around or overflow to inf); pass values in "
                             "range")
        a = a.astype(wide)
    return a


def declared(params: list[str], shapes: Any, dtypes: Any) -> list[tuple]:
    """Argument specs from ``shapes``/``dtypes`` given per position or by parameter name."""
    shapes, dtypes = exact(shapes), exact(dtypes)
    count = None
    for given in (shapes, dtypes):
        if isinstance(given, (list, tuple)):
            count = len(given)
    if count is None:
        count = len(params)
    out = []
    for k in range(count):
        name = params[k] if k < len(params) else None
        out.append((tuple(_pick(shapes, k, name, ())), str(_pick(dtypes, k, name, "float64"))))
    return out


def _pick(given: Any, k: int, name: str | None, default: Any) -> Any:
    if given is None:
        return default
    if isinstance(given, Mapping):
        return given.get(name, default) if name is not None else default
    if isinstance(given, (list, tuple)):
        return given[k] if k < len(given) else default
    raise InputError(f"shapes and dtypes are a list (one per argument) or a dict by "
                     f"parameter name, got {type(given).__name__}")


def static_key(static: Mapping[str, Any]) -> tuple:
    items = []
    for k, v in sorted(static.items()):
        if not isinstance(v, Hashable):
            raise InputError(f"keyword argument {k!r} is static (passed to the function as it "
                             f"is while tracing) and must be hashable, got {type(v).__name__}")
        items.append((k, value_key(v)))
    return tuple(items)
