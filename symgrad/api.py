"""The public names of symgrad, loaded by ``symgrad/__init__.py`` on first use.

``import symgrad`` itself imports nothing heavy (``symgrad --version`` answers at once);
the first attribute read (``sg.var``, ``sg.grad``, ...) imports this module, which imports
the compiler's phases and fills the op registry. Every op of the registry is also a function
here (``sg.exp``, ``sg.sum(x, axis=1)``), so NumPy code written against a namespace
parameter traces unchanged: ``loss(W, x, np=sg)``.

>>> from symgrad import api
>>> api.evaluate(api.grad(api.sin(api.var("x")), "x"), {"x": 0.0})
1.0
"""

# ruff: noqa: F401  (every import here is a public name, re-exported by symgrad/__init__.py)
from __future__ import annotations

import math as _math
from typing import TYPE_CHECKING as _TYPE_CHECKING

from . import (
    numpy,  # symgrad.numpy: NumPy's names and meanings
    scipy,  # symgrad.scipy: SciPy's special functions, stats, linalg
)
from .backends import compile, evaluate, scipy_functions, to_source  # noqa: A004
from .base import tree_util
from .base.errors import (
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
from .frontend import function_for as _function_for
from .frontend import parse
from .frontend.control import cond, switch
from .frontend.custom import custom_jvp, custom_vjp
from .frontend.functions import traced_names as _traced_names
from .frontend.loops import fori_loop, scan
from .frontend.solvers import custom_linear_solve, custom_root
from .frontend.sympy_io import from_sympy, to_sympy
from .frontend.while_loops import while_loop
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
from .passes.simplify import simplify
from .printing import draw, listing, to_dot, to_html
from .printing.explain import explain
from .printing.latex import latex
from .printing.stats import stats
from .tools.testing import check_grads
from .transforms import derivative, hessian_sparsity, jacobian_sparsity

if _TYPE_CHECKING:
    from .passes.pattern import Pass as _Pass



def passes() -> list[_Pass]:
    """Every rewrite pass that runs anywhere, in the order they run: each has ``name``, a
    one-line ``doc`` and the ``stages`` that run it (:mod:`symgrad.passes.registry` says
    where each stage runs: ``"reverse"`` on B as it is built, ``"compile"``,
    ``"simplify"``, ...).

    >>> import symgrad as sg
    >>> [p.name for p in sg.passes()][:3]
    ['reductions', 'rolling', 'idioms']
    >>> [p.stages for p in sg.passes() if p.name == "fast_math"]
    [('fast_math',)]
    >>> print(next(p for p in sg.passes() if p.name == "negations"))
    negations          negations folded into sums, moved out of products: a + (-b) -> a - b (exact)
    """
    from .passes.registry import PASSES

    return list(PASSES)


pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None

for _name in _traced_names():
    if "." not in _name and _name not in globals():
        globals()[_name] = _function_for(_name)
