"""The backends' entry: every user value of a request made exact before anything checks or
emits it (see :mod:`symgrad.ir.values`), so only built-in ``str``/``int`` values reach the
emitter and the emitted text."""

from __future__ import annotations

from typing import Any

from ..base.describe import describe
from ..base.errors import SymgradError
from ..ir.expr import Expr
from ..ir.values import exact, exact_str


def exact_names(items: Any, what: str, exprs: bool = False) -> list | None:
    """A list of exact strings (and Exprs if ``exprs``) from a str, an Expr or a sequence."""
    if items is None:
        return None
    if isinstance(items, str) or isinstance(items, Expr):
        items = [items]
    elif not isinstance(items, (list, tuple)):
        raise SymgradError(f"{what} must be a list of names, got {describe(items)}")
    out = []
    for item in list(items):
        if isinstance(item, str):
            out.append(str.__str__(item))
        elif exprs and isinstance(item, Expr):
            out.append(item)
        else:
            kinds = "variable Exprs or names" if exprs else "names (strings)"
            raise SymgradError(f"{what} must be {kinds}, got {describe(item)}")
    return out


def emit_request(name: Any, inputs: Any, output_names: Any, scalars: Any
                 ) -> tuple[str, list | None, list[str] | None, str]:
    """``to_source``/``compile``'s arguments, exact: ``(name, inputs, output_names,
    scalars)``."""
    return (exact_str(name, "the function name"), exact_names(inputs, "inputs", exprs=True),
            exact_names(output_names, "output_names"), exact_str(scalars, "scalars"))


def exact_flag(value: Any, what: str) -> bool:
    """A yes/no argument as an exact ``bool`` (``True``/``False``, ``0``/``1``)."""
    value = exact(value)
    if type(value) not in (bool, int) or value not in (0, 1):
        raise SymgradError(f"{what} must be True or False, got {describe(value)}")
    return bool(value)
