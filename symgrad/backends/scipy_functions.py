"""``scipy_functions``: generated NumPy functions for ``scipy.optimize.minimize``.

One module holds ``fun`` (value and gradient), ``hessp`` (a Hessian-vector product) and,
when asked for, ``hess`` (the Hessian, dense or sparse from a colouring); each is a
:class:`~symgrad.backends.loaded.CompiledFunction` checking its inputs as ``sg.evaluate``
does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.errors import BackendError, DifferentiationError, SymgradError
from ..ir.expr import Expr
from ..ir.shapes import fmt
from ..ir.values import exact_choice
from ..transforms.derivatives import grad, hessian, hvp, resolve_wrt
from ..transforms.sparse import as_matrix
from .boundary import exact_names
from .loaded import CompiledFunction
from .naming import Namer
from .stages import Function, lower, numpy_request, pattern_constants, resolve_inputs
from .targets import target

__all__ = ["ScipyFunctions", "SparseHessian", "scipy_functions"]


@dataclass(frozen=True)
class ScipyFunctions:
    """``fun(x, *args) -> (value, gradient)``, ``hessp(x, p, *args)`` and, when asked for,
    ``hess(x, *args)`` for SciPy.

    Use as ``scipy.optimize.minimize(s.fun, x0, args=..., jac=True, hessp=s.hessp,
    method="trust-ncg")``, or ``hess=s.hess`` with ``method="trust-constr"``. ``args`` names
    the extra arguments in order; ``source`` is the module text (NumPy only).
    """

    fun: Callable
    hessp: Callable
    source: str
    args: tuple[str, ...]
    hess: Callable | None = None


def scipy_functions(f: Expr, wrt: Expr | str, inputs: Sequence[Expr | str] | None = None,
                    *, hess: str | None = None, backend: str = "numpy") -> ScipyFunctions:
    """Generated NumPy functions for ``scipy.optimize.minimize(jac=True, hessp=...)``.

    ``f`` is a scalar expression of one vector variable ``wrt``; its other variables become
    SciPy's extra ``args``, in the order ``inputs`` gives (default: the order they first
    appear in ``f``). The functions check their arguments' shapes and dtypes as
    :func:`compile`'s functions do. ``hess="sparse"`` adds ``hess(x, *args)`` returning a
    ``scipy.sparse.csr_matrix`` (emitted: the non-zeros from a colouring, the pattern as
    module constants ``HESS_ROWS``, ``HESS_COLS``, ``HESS_SHAPE``); ``hess="dense"`` one
    returning the dense array. ``backend="numba"``: the same functions with their fused
    loops compiled by Numba (see :func:`to_source`); SciPy calls them thousands of times.

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> s = sg.scipy_functions(sg.sum((x - 1.0) ** 2), x)
    >>> value, grad = s.fun(np.array([0.0, 3.0]))
    >>> float(value), grad
    (5.0, array([-2.,  4.]))
    >>> s.hessp(np.zeros(2), np.array([1.0, 0.0]))
    array([2., 0.])
    """
    hess = exact_choice(hess, "scipy_functions' hess", (None, "sparse", "dense"))
    tgt = target(backend)
    if not tgt.numpy_only:
        raise BackendError(f"scipy_functions emits NumPy code (backend='numpy' or 'numba'), "
                           f"not {tgt.name!r}: SciPy's optimizers pass NumPy arrays")

    if not isinstance(f, Expr) or f.shape != ():
        shape = fmt(f.shape) if isinstance(f, Expr) else type(f).__name__
        raise DifferentiationError(f"scipy_functions needs a scalar expression, got {shape}")
    x = resolve_wrt(f, wrt)
    inputs = exact_names(inputs, "inputs", exprs=True)
    if x.ndim != 1:
        raise DifferentiationError(
            f"scipy_functions needs a 1-D variable (SciPy optimises vectors); '{x.name}' has "
            f"shape {fmt(x.shape)}: declare it as a vector and reshape inside the expression"
        )
    graph = f.graph
    used = [i for i in graph.ancestors([f.node]) if graph.nodes[i].is_var and i != x.node]
    extra = resolve_inputs(graph, inputs, used, [f.node])
    if x.node in extra:
        raise SymgradError(f"'{x.name}' is the optimisation variable; do not list it in inputs")
    pname = Namer(graph.variables).fresh("p")
    g = grad(f, x)
    hv = hvp(f, x, pname)
    p = graph.variables[pname]
    extra_names = [graph.nodes[i].name for i in extra]
    h = hessian(f, x, sparse=hess == "sparse") if hess is not None else None
    args = (x.name, *extra_names)
    fns = [Function("fun", (f.node, g.node), args, False, ("value", "grad")),
           Function("hessp", (hv.node,), (x.name, graph.nodes[p].name, *extra_names), True,
                    ("hvp",))]
    pattern = ()
    if h is not None:
        sparse = hess == "sparse"
        fns.append(Function("hess", ((h.data if sparse else h).node,), args, True,
                            ("data" if sparse else "hess",)))
        pattern = pattern_constants(h, "HESS_") if sparse else ()
    source = lower(numpy_request(graph, fns, pattern, tgt)).source()
    namespace, filename = tgt.load(source, "scipy")
    nodes = graph.nodes
    fun = CompiledFunction(namespace["fun"], [nodes[i] for i in [x.node, *extra]], source,
                           filename)
    hessp = CompiledFunction(namespace["hessp"], [nodes[i] for i in [x.node, p, *extra]],
                             source, filename)
    hess_fn = None
    if h is not None:
        hess_fn = CompiledFunction(namespace["hess"], [nodes[i] for i in [x.node, *extra]],
                                   source, filename)
        if hess == "sparse":
            hess_fn = SparseHessian(hess_fn, h.pattern)
    return ScipyFunctions(fun, hessp, source, tuple(extra_names), hess_fn)


class SparseHessian:
    """``hess(x, *args)``: the generated ``data`` function's result as a CSR matrix."""

    def __init__(self, data: CompiledFunction, pattern: Any) -> None:
        self.data = data
        self.pattern = pattern
        self.source = data.source

    def __call__(self, *args: Any) -> Any:
        return as_matrix(self.data(*args), self.pattern)

    def __repr__(self) -> str:
        return f"<symgrad sparse Hessian {self.pattern.shape}, {self.pattern.nnz} entries>"
