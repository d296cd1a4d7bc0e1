"""The Python front end's functions: one per NumPy name symgrad covers (``sg.exp``,
``sg.sum(x, axis=1)``, ``symgrad.numpy.linalg.solve``), so NumPy code written against a
namespace parameter traces. Ops are their own functions (read from their signatures);
:mod:`.numpy_functions` adds the NumPy functions that are not one op."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UnsupportedError
from ..ir.expr import Expr, function


def function_for(name: str) -> Callable[..., Expr]:
    """The user-facing function of NumPy name ``name`` (an op, an alias or a composite).

    >>> import symgrad as sg
    >>> sg.sum.__doc__
    'sum(x, axis, keepdims): sum over axis (all axes when None)'
    """
    fn = function(name)
    if fn is None:
        raise UnsupportedError(f"symgrad has no function {name!r}")
    return fn
