"""symgrad: a symbol-to-symbol differentiation compiler for NumPy expressions.

Parse or build an expression graph, append its derivative subgraph, then evaluate it or
emit standalone NumPy source. Every op of the registry is also a function here
(``sg.exp``, ``sg.sum(x, axis=1)``, ``sg.einsum("ij,j->i", A, x)``), so NumPy code written
against a namespace parameter traces unchanged: ``loss(W, x, np=sg)``.

The package is laid out as the compiler's phases: ``frontend/`` (text and Python) ->
``ir/`` (graph, Expr, op record) <- ``ops/`` (the stanzas) -> ``passes/`` (rewrites) ->
``transforms/`` (reverse mode) -> ``backends/`` (evaluate, NumPy source, compile), over the
ground floor ``base/`` (errors, progress, pytrees), with the function API (``functional/``),
the reports (``printing/``), the tools (``tools/``) and the command (``cli/``) on top. The
modules at this level are faces: ``symgrad.errors``, ``symgrad.testing``, ... re-export
what their folders define.

This file is the face only: the public names live in :mod:`symgrad.api`, imported on the
first attribute read, so ``import symgrad`` and ``symgrad --version`` cost next to nothing.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> f = sg.sin(x) * x
>>> sg.evaluate(sg.grad(f, x), {"x": 0.0})
0.0
"""

from __future__ import annotations

import importlib as _importlib
import os as _os
from typing import Any as _Any

__version__ = "0.1.0"  # the one place it is written (pyproject.toml reads it)

__all__ = [
    "scipy",
    "ArgumentError", "UnsupportedError", "BackendError", "DifferentiationError",
    "EvaluationError", "Expr", "Graph", "InputError",
    "LimitError", "NameConflictError", "ParseError", "ShapeError", "SymgradError",
    "SymgradWarning", "const",
    "derivative", "evaluate", "getitem", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jvp",
    "var", "vjp", "linearize", "jacobian_sparsity", "hessian_sparsity", "pi", "e", "inf", "nan",
    "newaxis", "parse", "to_source", "compile", "scipy_functions",
    "to_dot", "draw", "listing", "explain", "check_grads", "simplify", "passes", "numpy",
    "linalg", "value_and_grad", "to_html", "to_sympy", "from_sympy", "latex", "__version__",
    "limits", "stats", "scan", "fori_loop", "jacrev", "jit", "vmap", "tree_util",
    "stop_gradient", "custom_jvp", "custom_vjp", "cond", "switch", "while_loop",
    "flatten_util",
    "custom_root", "custom_linear_solve",
]


# the modules at this level that re-export a folder's code, by their public names
_FACES = ("dask", "errors", "extend", "flatten_util", "progress", "testing", "tree_util")

# ``sg.passes()`` is a function of the API named like the package ``symgrad.passes``. The
# package (its face imports nothing) is imported here and the name it bound is dropped, so
# no later import of the package rebinds ``sg.passes``: the name is looked up like every
# public name (the API's function), whatever was imported first.
from . import passes as _passes_package  # noqa: E402,F401

del globals()["passes"]
_FUNCTIONS = frozenset({"passes"})  # public functions named like a subpackage


def _load() -> _Any:
    """Import the public names (:mod:`symgrad.api`) into this module, once."""
    api = _importlib.import_module(".api", __name__)
    if "var" not in globals():
        globals().update((k, v) for k, v in vars(api).items() if not k.startswith("_"))
    return api


def _is_submodule(name: str) -> bool:
    """``from . import frontend`` asks for the attribute before importing the submodule."""
    # a plain loop: after _load, names such as ``any`` and ``all`` here are symgrad's ops
    for folder in __path__:
        for ext in (".py", "/__init__.py"):
            if _os.path.exists(_os.path.join(folder, name + ext)):
                return True
    return False


def __getattr__(name: str) -> _Any:
    """The public names on first use; ops registered later (``symgrad.extend.defop``) are
    functions here too; the public modules that are faces (``sg.testing``, ``sg.dask``...)
    are imported on first use (``symgrad.dask`` imports Dask)."""
    if name in _FACES:
        return _importlib.import_module(f".{name}", __name__)
    if name.startswith("__"):  # the import system's own look-ups
        raise AttributeError(f"module 'symgrad' has no attribute {name!r}")
    if name not in _FUNCTIONS and _is_submodule(name):  # sg.numpy, ``from . import ir``
        return _importlib.import_module(f".{name}", __name__)
    api = _load()
    if name in globals():
        return globals()[name]
    from .frontend.functions import traced_names  # (loaded with the API above)

    if "." not in name and name in traced_names():
        return api._function_for(name)
    raise AttributeError(f"module 'symgrad' has no attribute {name!r}")


def __dir__() -> list[str]:
    _load()
    from .frontend.functions import traced_names  # (loaded with the API above)

    return sorted({*globals(), *__all__, *(n for n in traced_names() if "." not in n)})
