"""symgrad: a symbol-to-symbol differentiation compiler for NumPy expressions.

Parse or build an expression graph, append its derivative subgraph, then evaluate it or
emit standalone NumPy source. Every op of the registry is also a function here
(``sg.exp``, ``sg.sum(x, axis=1)``, ``sg.einsum("ij,j->i", A, x)``), so NumPy code written
against a namespace parameter traces unchanged: ``loss(W, x, np=sg)``.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> f = sg.sin(x) * x
>>> sg.evaluate(sg.grad(f, x), {"x": 0.0})
0.0
"""

from __future__ import annotations

import math as _math

from . import ops as _ops
from .derivatives import derivative, grad, hessian, hvp, jacobian, vjp
from .errors import (
    DifferentiationError,
    EvaluationError,
    InputError,
    LimitError,
    NameConflictError,
    ParseError,
    ShapeError,
    SymgradError,
)
from .evaluate import evaluate
from .graph import Expr, Graph, const, var
from .ops.indexing import getitem
from .ops.registry import function_for

pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None

for _name in [*_ops.REGISTRY, *_ops.ALIASES]:
    _op = _ops.lookup(_name)
    if _op.public and _name not in globals():
        globals()[_name] = function_for(_name)

# Bound after the submodules load, so ``sg.parse`` is the function, not the module. None of
# these imports sympy, matplotlib or hypothesis at import time.
from .codegen import to_source  # noqa: E402
from .compiled import compile, scipy_functions  # noqa: E402, A004
from .explain import explain  # noqa: E402
from .parse import parse  # noqa: E402
from .printing import draw, listing, to_dot  # noqa: E402
from .simplify import simplify  # noqa: E402
from .testing import check_grads  # noqa: E402

__all__ = [
    "DifferentiationError", "EvaluationError", "Expr", "Graph", "InputError", "LimitError",
    "NameConflictError", "ParseError", "ShapeError", "SymgradError", "const", "derivative",
    "evaluate", "getitem", "grad", "hessian", "hvp", "jacobian", "var", "vjp", "pi", "e",
    "inf", "nan", "newaxis", "parse", "to_source", "compile", "scipy_functions",
    "to_dot", "draw", "listing", "explain", "check_grads", "simplify",
]
