"""Python's :mod:`math` in a traced function: while ``sg.grad(fun)`` (or any function
transform) traces ``fun``, the ``math`` module its globals and closed-over cells hold, and
the ``math`` functions they hold (``from math import exp``), are read as functions that take
symbolic scalars too (:mod:`symgrad.frontend.capture` asks :func:`counterpart`). So scalar
code written with ``math.exp``/``math.sqrt`` differentiates as written (JAX refuses it: a
tracer is not a float).

* on numbers each function is ``math``'s own (the same float, the same errors);
* on a scalar expression it is the op of the same meaning (``math.atan2`` is
  ``arctan2``, ``math.lgamma`` is ``gammaln``, ``math.log(x, b)`` is ``log(x) / log(b)``);
* on an array expression it refuses, as ``math`` refuses an array, naming NumPy's function;
* what has no meaning on symbolic values (``math.floor`` gives an ``int``,
  ``math.isclose`` a ``bool``) stays ``math``'s, which raises the error naming the fix.

>>> import math, numpy as np, symgrad as sg
>>> def f(x):
...     return math.exp(x[0]) * math.sin(x[1]) + math.log(x[0], 2)
>>> g = sg.grad(f)(np.array([1.0, 0.5]))
>>> bool(np.allclose(g, [math.e * math.sin(0.5) + 1 / math.log(2), math.e * math.cos(0.5)]))
True
"""

from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable
from typing import Any

from ..base.errors import UnsupportedError
from ..ir.expr import Expr, F

__all__ = ["MATH", "counterpart"]

# math's name -> the op of the same meaning on one scalar (or two: atan2, copysign, pow)
OPS = {
    "exp": "exp", "expm1": "expm1", "exp2": "exp2", "log1p": "log1p", "log2": "log2",
    "log10": "log10", "sqrt": "sqrt", "cbrt": "cbrt", "sin": "sin", "cos": "cos",
    "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh",
    "atanh": "arctanh", "fabs": "abs", "copysign": "copysign", "pow": "power",
    "erf": "erf", "erfc": "erfc", "lgamma": "gammaln", "gamma": "gamma",
    "degrees": "rad2deg", "radians": "deg2rad",
}


def _scalars(name: str, args: tuple) -> bool:
    """Whether any argument is an expression (each one a scalar, as ``math`` takes)."""
    symbolic = False
    for a in args:
        if isinstance(a, Expr):
            if a.shape:
                raise UnsupportedError(
                    f"math.{name} takes a number, and the expression given has shape "
                    f"{a.shape}; use NumPy's function (np.{OPS.get(name, name)}), which "
                    "works on arrays")
            symbolic = True
    return symbolic


def _op(name: str) -> Callable[..., Any]:
    real, op = getattr(math, name), OPS[name]

    @functools.wraps(real)
    def fn(*args: Any) -> Any:
        if not _scalars(name, args):
            return real(*args)
        return getattr(F, op)(*args)

    return fn


def _log(x: Any, base: Any = None) -> Any:
    """``math.log(x[, base])``."""
    args = (x,) if base is None else (x, base)
    if not _scalars("log", args):
        return math.log(*args)
    out = F.log(x)
    return out if base is None else out / F.log(base)


def _hypot(*coordinates: Any) -> Any:
    """``math.hypot(*coordinates)``: the Euclidean norm."""
    if not _scalars("hypot", coordinates):
        return math.hypot(*coordinates)
    if len(coordinates) == 2:
        return F.hypot(*coordinates)
    return F.sqrt(sum(F.square(c) for c in coordinates))


def _fsum(values: Any) -> Any:
    """``math.fsum(values)`` (a symbolic sum is an ordinary sum)."""
    values = list(values)
    return sum(values, 0.0) if _scalars("fsum", tuple(values)) else math.fsum(values)


def _prod(values: Any, *, start: Any = 1) -> Any:
    """``math.prod(values, start=1)``."""
    values = list(values)
    if not _scalars("prod", (*values, start)):
        return math.prod(values, start=start)
    return functools.reduce(lambda a, b: a * b, values, start)


OURS: dict[str, Callable[..., Any]] = {name: _op(name) for name in OPS if hasattr(math, name)}
OURS.update(log=_log, hypot=_hypot, fsum=_fsum, prod=_prod)
for _name, _fn in (("log", _log), ("hypot", _hypot), ("fsum", _fsum), ("prod", _prod)):
    _fn.__name__ = _name

_BY_ID = {id(getattr(math, name)): fn for name, fn in OURS.items()}


class _MathModule(types.ModuleType):
    """``math`` as a traced function sees it: the functions above, ``math``'s otherwise."""

    def __init__(self) -> None:
        super().__init__("math", math.__doc__)

    def __getattr__(self, name: str) -> Any:
        found = OURS.get(name)
        return found if found is not None else getattr(math, name)

    def __repr__(self) -> str:
        return "<module 'math' (traced: symbolic scalars too)>"


MATH = _MathModule()


def counterpart(value: Any) -> Any:
    """What ``value`` is read as in a trace: :data:`MATH` for the ``math`` module, the
    function above for one of ``math``'s, else None."""
    if value is math:
        return MATH
    if type(value) is types.BuiltinFunctionType:
        return _BY_ID.get(id(value))
    return None
