"""How the front end adds a NumPy function that is not one op: ``@define(name, *spec)``.

A defined function builds graph from ops (so it is differentiable to any order with no rule
of its own) and is registered under NumPy's name in :data:`symgrad.ir.op.FUNCTIONS`, where
``symgrad.numpy``, the array protocols of Expr and the text parser find it. ``spec`` is its
signature in the registry's notation (``"a"`` an array, ``"=axis"`` a static argument,
``"*arys"`` any number of arrays, ``"[arrays]"`` a list of arrays); keyword defaults follow.
The parser reads the signature to tell literals (axes, ``ddof``) from expressions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.describe import describe
from ..base.errors import ArgumentError, ShapeError, SymgradError, UnsupportedError
from ..ir.expr import Expr, const
from ..ir.op import FUNCTIONS, SPARSE, sig
from ..ir.values import exact

Fn = Callable[..., Any]
_BARE = (TypeError, ValueError, ArithmeticError, IndexError, KeyError, AttributeError)


def define(name: str, *spec: str, aliases: tuple[str, ...] = (), strings: tuple[str, ...] = (),
           **defaults: Any) -> Callable[[Fn], Fn]:
    """Register the decorated function under NumPy's ``name`` (and ``aliases``)."""
    signature = sig(*spec, strings=strings, **defaults)

    def register(fn: Fn) -> Fn:
        @functools.wraps(fn)
        def exact_arguments(*args: Any, **kwargs: Any) -> Any:
            # a user's str/int/float subclass becomes the plain value before fn sees it
            args, kwargs = exact(args), {exact(k): exact(v) for k, v in kwargs.items()}
            if SPARSE and any(SPARSE["is"](a) for a in args):  # SciPy's meaning for it
                return SPARSE["call"](name, args, kwargs)
            try:
                return fn(*args, **kwargs)
            except SymgradError:
                raise
            except _BARE as e:  # arguments fn cannot use: say so as a SymgradError
                raise ArgumentError(f"{name}(): cannot use these arguments "
                                    f"({type(e).__name__}: {e})") from None

        exact_arguments.signature = signature  # type: ignore[attr-defined]
        exact_arguments.__name__ = exact_arguments.__qualname__ = name.rsplit(".", 1)[-1]
        for n in (name, *aliases):
            FUNCTIONS[n] = exact_arguments
        return exact_arguments

    return register


def as_expr(a: Any) -> Expr:
    """``a`` as an Expr (numbers and arrays become constants)."""
    return a if isinstance(a, Expr) else const(a)


def no_out(name: str, out: Any = None, where: Any = True) -> None:
    """NumPy's ``out=`` (and ``where=`` of ufuncs) have no meaning for symbolic values."""
    if out is not None:
        raise UnsupportedError(f"{name}: out= is not supported: symbolic values are never "
                               "written in place; use the returned value")
    if where is not True:
        raise UnsupportedError(f"{name}: where= is not supported (NumPy leaves the other "
                               "elements uninitialised); use sg.where(mask, result, other)")


def axis_int(name: str, axis: Any, ndim: int) -> int:
    """A single axis as a non-negative int, checked like NumPy."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ShapeError(f"{name}: axis must be an int, got {describe(axis)}")
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{name}: axis {axis} is out of range for an array of rank {ndim}")
    return int(axis) % ndim


def axes_tuple(name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int or a sequence) as sorted non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    items = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = sorted({axis_int(name, a, ndim) for a in items})
    if len(out) != len(items):
        raise ShapeError(f"{name}: repeated axis in {describe(axis)}")
    return tuple(out)
