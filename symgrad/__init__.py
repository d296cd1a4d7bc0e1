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

from . import (
    numpy,  # noqa: E402  (symgrad.numpy: NumPy's names and meanings)
    tree_util,
)
from .backends import compile, evaluate, scipy_functions, to_source  # noqa: A004
from .errors import (
    ArgumentError,
    BackendError,
    DifferentiationError,
    EvaluationError,
    InputError,
    LimitError,
    NameConflictError,
    ParseError,
    ShapeError,
    SymgradError,
    SymgradWarning,
    UnsupportedError,
)
from .explain import explain
from .frontend import function_for as _function_for
from .frontend import parse
from .functional import (
    grad,
    hessian,
    hvp,
    jacfwd,
    jacobian,
    jacrev,
    jit,
    jvp,
    linearize,
    value_and_grad,
    vjp,
    vmap,
)
from .ir.expr import Expr, const, var
from .ir.graph import Graph
from .ir.limits import limits
from .numpy import linalg
from .ops.indexing import getitem
from .passes import passes, simplify
from .printing import draw, listing, to_dot, to_html
from .stats import stats
from .sympy_io import from_sympy, latex, to_sympy
from .testing import check_grads
from .transforms import derivative, hessian_sparsity, jacobian_sparsity


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("symgrad")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None

for _name in numpy._names():
    if "." not in _name and _name not in globals():
        globals()[_name] = _function_for(_name)


def __getattr__(name: str) -> _Any:
    """Ops registered after import (``symgrad.extend.defop``) are functions here too;
    ``__version__`` is read on first use (importlib.metadata is slow to import), and
    ``symgrad.dask`` is imported on first use (it imports Dask)."""
    if name == "__version__":
        return _version()
    if name == "dask":  # symgrad.dask imports Dask: only on first use
        import importlib

        return importlib.import_module(".dask", __name__)
    if "." not in name and name in numpy._names():
        return _function_for(name)
    raise AttributeError(f"module 'symgrad' has no attribute {name!r}")


__all__ = [
    "ArgumentError", "UnsupportedError", "BackendError", "DifferentiationError",
    "EvaluationError", "Expr", "Graph", "InputError",
    "LimitError", "NameConflictError", "ParseError", "ShapeError", "SymgradError",
    "SymgradWarning", "const",
    "derivative", "evaluate", "getitem", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jvp",
    "var", "vjp", "linearize", "jacobian_sparsity", "hessian_sparsity", "pi", "e", "inf", "nan",
    "newaxis", "parse", "to_source", "compile", "scipy_functions",
    "to_dot", "draw", "listing", "explain", "check_grads", "simplify", "passes", "numpy",
    "linalg", "value_and_grad", "to_html", "to_sympy", "from_sympy", "latex", "__version__",
    "limits", "stats", "jacrev", "jit", "vmap", "tree_util",
]
