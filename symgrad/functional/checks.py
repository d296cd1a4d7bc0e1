"""What the function transforms check of their arguments and of what the traced function
returns: a function where one is needed, ``argnums``, float arguments to differentiate, a
float scalar for ``grad``, a ``(value, aux)`` pair with ``has_aux``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.describe import describe, type_name
from ..base.errors import ArgumentError, DifferentiationError, InputError
from ..base.tree_util import tree_flatten
from ..ir.expr import Expr, const
from ..ir.shapes import fmt, is_float
from ..ir.values import exact


def is_expr(f: Any) -> bool:
    return isinstance(f, Expr)


def fun_name(fun: Any) -> str:
    return str(getattr(fun, "__name__", "fun"))


def check_function(what: str, f: Any, expr_form: str) -> None:
    if not callable(f):
        raise DifferentiationError(
            f"{what} takes a Python function (sg.{what}(fun, ...), as in JAX) or an "
            f"expression ({expr_form}); got {type_name(f)}")


def one_argnums(what: str, f: Any, wrt: Any, argnums: Any) -> Any:
    """``argnums`` of a function transform, given positionally (JAX) or by keyword."""
    check_function(what, f, f"sg.{what}(expr, wrt)")
    if wrt is not None and argnums is not None:
        raise DifferentiationError(f"give argnums once: sg.{what}(fun, 1) or "
                                   f"sg.{what}(fun, argnums=1)")
    given = wrt if wrt is not None else argnums
    if isinstance(given, (Expr, str)) or (isinstance(given, (list, tuple)) and given and any(
            isinstance(g, (Expr, str)) for g in given)):
        raise DifferentiationError(
            f"sg.{what}(fun, argnums) takes a Python function and argument numbers; "
            f"variables (wrt) go with an expression: sg.{what}(expr, wrt)")
    return checked_argnums(0 if given is None else given)


def checked_argnums(argnums: Any) -> int | tuple[int, ...]:
    def ok(k: Any) -> bool:
        return isinstance(k, (int, np.integer)) and not isinstance(k, bool)

    argnums = exact(argnums)
    if ok(argnums):
        return int(argnums)
    if isinstance(argnums, (tuple, list)) and argnums and all(ok(k) for k in argnums):
        out = tuple(int(k) for k in argnums)
        if len(set(out)) != len(out):
            raise DifferentiationError(f"argnums {describe(argnums)} lists an argument twice")
        return out
    raise DifferentiationError(f"argnums must be an int or a non-empty tuple of ints, got "
                               f"{describe(argnums)}")


def wrt_variables(fun: Callable, args: tuple, argnums: Any) -> tuple[list[Expr], Any]:
    """The variables of the differentiated arguments, and their structure."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    n = len(args)
    if any(not -n <= k < n for k in nums):
        raise InputError(f"{fun_name(fun)}: argnums {argnums!r} does not fit a call with "
                         f"{n} argument(s)")
    chosen = tuple(args[k] for k in nums) if isinstance(argnums, tuple) else args[argnums]
    leaves, tree = tree_flatten(chosen)
    for leaf in leaves:
        if not is_float(leaf.dtype):
            raise DifferentiationError(
                f"{fun_name(fun)}: an argument in argnums ('{_label(leaf)}') has dtype "
                f"{leaf.dtype}; gradients need float arguments (pass floats, or leave it out "
                "of argnums)")
    return leaves, tree


def _label(e: Expr) -> str:
    name = e.name or "?"
    return name if not name.startswith("_t") else "argument"


def split_aux(fun: Callable, result: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise DifferentiationError(f"{fun_name(fun)}: with has_aux=True the function must "
                                   "return a pair (value, aux)")
    return result[0], result[1]


def check_scalar(fun: Callable, value: Any, what: str) -> Expr:
    if not isinstance(value, Expr):
        try:
            value = const(float(value))  # a constant function: its derivatives are zero
        except (TypeError, ValueError):
            raise DifferentiationError(f"{fun_name(fun)}: {what} needs the function to "
                                       f"return a float scalar, got {type_name(value)}"
                                       ) from None
    if value.shape != () or not is_float(value.dtype):
        raise DifferentiationError(
            f"{fun_name(fun)}: the function must return a float scalar, got shape "
            f"{fmt(value.shape)} and dtype {value.dtype}; for vector outputs use "
            "sg.jacobian(fun) / sg.vjp(fun, ...)")
    return value


def as_output(fun: Callable, leaf: Any, like: list) -> Expr:
    """An output leaf as an Expr (a number or array becomes a constant)."""
    if isinstance(leaf, Expr):
        return leaf
    try:
        a = np.asarray(leaf, dtype=np.float64)
    except (TypeError, ValueError):
        raise DifferentiationError(f"{fun_name(fun)} returned {type_name(leaf)}, not an "
                                   "array") from None
    return const(a, like[0]) if like else const(a)


def tuple_args(what: str, value: Any, name: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        raise ArgumentError(f"{what}(fun, primals, tangents): {name} must be a tuple of "
                            f"arguments (as in JAX: (x,) for one), got {type_name(value)}")
    return tuple(value)
