"""symgrad: a symbol-to-symbol differentiation compiler for NumPy expressions.

Parse or build an expression graph, append its derivative subgraph, then evaluate it or
emit standalone NumPy source. Every op of the registry is also a function here
(``sg.exp``, ``sg.sum(x, axis=1)``, ``sg.einsum("ij,j->i", A, x)``), so NumPy code written
against a namespace parameter traces unchanged: ``loss(W, x, np=sg)``.

The package is laid out as the compiler's phases: ``frontend/`` (text and Python) ->
``ir/`` (graph, Expr, op record) <- ``ops/`` (the stanzas) -> ``passes/`` (rewrites) ->
``transforms/`` (reverse mode) -> ``backends/`` (evaluate, NumPy source, compile), with the
tools for people on top (``printing/``, ``explain``, ``testing``, ``extend``, ``cli``).

>>> import symgrad as sg
>>> x = sg.var("x")
>>> f = sg.sin(x) * x
>>> sg.evaluate(sg.grad(f, x), {"x": 0.0})
0.0
"""

from __future__ import annotations

import math as _math
from typing import Any as _Any

from . import ops as _ops
from .backends import compile, evaluate, scipy_functions, to_source  # noqa: A004
from .errors import (
    DifferentiationError,
    EvaluationError,
    InputError,
    LimitError,
    NameConflictError,
    ParseError,
    ShapeError,
    SymgradError,
    SymgradWarning,
)
from .explain import explain
from .frontend import function_for as _function_for
from .frontend import parse
from .ir.graph import Expr, Graph, const, var
from .ir.limits import limits
from .ops.indexing import getitem
from .passes import passes, simplify
from .printing import draw, listing, to_dot
from .testing import check_grads
from .transforms import derivative, grad, hessian, hvp, jacobian, vjp

pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None

for _name in [*_ops.REGISTRY, *_ops.ALIASES]:
    if _ops.lookup(_name).public and _name not in globals():
        globals()[_name] = _function_for(_name)


def __getattr__(name: str) -> _Any:
    """Ops registered after import (``symgrad.extend.defop``) are functions here too."""
    if name in _ops.REGISTRY or name in _ops.ALIASES:
        if _ops.lookup(name).public:
            return _function_for(name)
    raise AttributeError(f"module 'symgrad' has no attribute {name!r}")


__all__ = [
    "DifferentiationError", "EvaluationError", "Expr", "Graph", "InputError", "LimitError",
    "NameConflictError", "ParseError", "ShapeError", "SymgradError", "SymgradWarning", "const",
    "derivative",
    "evaluate", "getitem", "grad", "hessian", "hvp", "jacobian", "var", "vjp", "pi", "e",
    "inf", "nan", "newaxis", "parse", "to_source", "compile", "scipy_functions",
    "to_dot", "draw", "listing", "explain", "check_grads", "simplify", "passes", "limits",
]
