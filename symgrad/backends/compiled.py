"""Generated source as callables: ``compile()`` and the SciPy helpers.

:mod:`symgrad.backends.source` writes the text; this module loads it as a fresh
module registered with ``linecache`` (so ``inspect.getsource``, tracebacks and pdb show the
generated code) and wraps it with the same input checks as ``sg.evaluate``.
"""

from __future__ import annotations

import builtins
import functools
import linecache
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.errors import BackendError, DifferentiationError, InputError, SymgradError
from ..base.progress import step
from ..ir.expr import Expr
from ..ir.shapes import fmt
from ..ir.values import exact, exact_choice
from .boundary import exact_flag, exact_names
from .interpreter import check_input, runtime_error
from .naming import Namer
from .stages import Function, lower, numpy_request, pattern_constants, request, resolve_inputs
from .target import target

__all__ = ["compile", "scipy_functions", "CompiledFunction", "ScipyFunctions"]


class CompiledFunction:
    """The callable ``compile()`` returns: checks and converts inputs, then calls ``raw``.

    Attributes: ``source`` (the module text), ``inputs`` (variable names in call order),
    ``raw`` (the generated function itself, without checks), ``filename``.
    """

    def __init__(self, raw: Callable, params: list, source: str, filename: str) -> None:
        self.raw = raw
        self.source = source
        self.filename = filename
        self._nodes = params
        self.inputs = tuple(n.name for n in params)
        self._index = {name: k for k, name in enumerate(self.inputs)}
        self._expect = tuple((n.shape, np.dtype(n.dtype)) for n in params)
        functools.update_wrapper(self, raw)

    #: NumPy arrays of the right shape and dtype go to ``raw`` unconverted (the NumPy target;
    #: the array targets convert every input to their library's arrays)
    _fast_path = True

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:  # an input may be named self
        if self._fast_path and not kwargs and len(args) == len(self._expect):
            for a, (shape, dtype) in zip(args, self._expect):
                if type(a) is not np.ndarray or a.dtype is not dtype or a.shape != shape:
                    break
            else:
                try:
                    return self.raw(*args)
                except (IndexError, ValueError, TypeError) as e:
                    raise runtime_error(e, f"{self.__name__}()") from None
        return self._checked(args, kwargs)

    def _checked(self, args: tuple, kwargs: dict) -> Any:
        if len(args) > len(self._nodes):
            raise InputError(f"{self.__name__}() takes {len(self._nodes)} inputs "
                             f"({', '.join(self.inputs)}), got {len(args)}")
        given = dict(zip(self.inputs, args))
        for k, v in kwargs.items():
            k = exact(k)
            if k not in self._index:
                raise InputError(f"{self.__name__}() has no input {k!r} "
                                 f"(inputs: {', '.join(self.inputs) or 'none'})")
            if k in given:
                raise InputError(f"{self.__name__}() got input {k!r} twice")
            given[k] = v
        values = [self._value(n, given) for n in self._nodes]
        try:
            return self.raw(*values)
        except (IndexError, ValueError, TypeError, MemoryError) as e:  # as evaluate does
            raise runtime_error(e, f"{self.__name__}()") from None

    def _value(self, node: Any, given: dict) -> Any:
        """The checked value of input ``node`` (a NumPy array)."""
        return check_input(node, given)

    def __repr__(self) -> str:
        return f"<symgrad compiled function {self.__name__}({', '.join(self.inputs)})>"


def _loader(tgt: Any) -> Callable[[str, str], tuple[dict, str]]:
    """How a NumPy-driver module is loaded: from its text (NumPy), or from a file in the
    cache folder, its kernels compiled or read from Numba's disk cache (Numba)."""
    if tgt.name == "numba":
        from .targets.numba.source import load

        return load
    return _load


def _load(source: str, tag: str) -> tuple[dict, str]:
    """Execute generated ``source`` as a fresh module registered with ``linecache``.

    A long module is compiled one top-level block (function, constant) at a time, each
    with its own line numbers: CPython's compiler then never holds the syntax tree of the
    whole text (its memory grows with the largest block, not the module).
    """
    import hashlib

    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<symgrad:{tag}-{digest}>"
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType(f"symgrad_generated_{tag}_{digest}")
    module.__file__ = filename
    with step("compile (CPython)", total=len(lines), unit="line") as s:
        for first, block in _blocks(lines, len(source)):
            code = builtins.compile("\n" * first + block, filename, "exec", dont_inherit=True)
            exec(code, module.__dict__)  # our own generated text: names, literals checked
            s.update(block.count("\n"))
    return module.__dict__, filename


def _blocks(lines: list[str], size: int, whole: int = 1 << 20):
    """``(first line index, text)`` of the top-level blocks of generated source: a block
    starts at each unindented ``def``/``class``. Sources under ``whole`` bytes: one block."""
    if size < whole:
        yield 0, "".join(lines)
        return
    start = 0
    for k, line in enumerate(lines):
        if k > start and line.startswith(("def ", "class ")):
            yield start, "".join(lines[start:k])
            start = k
    yield start, "".join(lines[start:])


def compile(outputs: Expr | Sequence[Expr], inputs: Sequence[Expr | str] | None = None,
            name: str = "f", check_inputs: bool = True, *,
            output_names: Sequence[str] | None = None, scalars: str = "math",
            optimize: bool = True, fast_math: bool = False, backend: str = "numpy") -> Callable:
    """Emit the source of ``outputs`` (see :func:`to_source`) and load it as a function.

    The source is registered under a fake filename, so ``inspect.getsource``, tracebacks
    and pdb show the generated code. A sparse derivative (``sg.hessian(..., sparse=True)``)
    compiles to a function returning its ``data``; the function's ``rows``, ``cols`` and
    ``shape`` are the pattern. With ``check_inputs`` the returned callable checks each
    input's shape and dtype (like ``sg.evaluate``) and converts lists; ``fn.raw`` is the
    unchecked generated function (fastest; pass NumPy arrays). ``scalars``, ``optimize``,
    ``fast_math`` and ``backend``: as in :func:`to_source`. With ``backend="jax"`` the
    function is ``jax.jit`` of the generated one; with ``"array_api"`` and ``"torch"``
    arrays of the backend's library pass through unconverted (see
    :mod:`symgrad.backends.targets.array_api.loader`).

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> fn = sg.compile(sg.grad(sg.sum(x * x), x))
    >>> fn([1.0, 2.0, 3.0])
    array([2., 4., 6.])
    >>> fn.inputs
    ('x',)
    """
    check_inputs = exact_flag(check_inputs, "check_inputs")
    clock = [time.perf_counter()]
    lowered = lower(request(outputs, inputs, name, output_names=output_names,
                            scalars=scalars, optimize=optimize, fast_math=fast_math,
                            backend=backend))
    clock.append(time.perf_counter())
    tgt, name, params = lowered.request.target, lowered.functions[0].name, lowered.params()
    printer = tgt.printer(lowered)
    source = printer.module()
    clock.append(time.perf_counter())
    if not tgt.printer.numpy_only:
        from .targets.array_api.loader import load_array_function

        return load_array_function(tgt, source, name, params, check_inputs, _load)
    namespace, filename = _loader(tgt)(source, name)
    raw = namespace[name]
    raw.source, raw.inputs, raw.filename = source, tuple(n.name for n in params), filename
    fn = raw if not check_inputs else CompiledFunction(raw, params, source, filename)
    if not check_inputs:
        raw.raw = raw
    if hasattr(printer, "stats"):  # Numba: what was compiled, what NumPy runs, the phases
        clock.append(time.perf_counter())
        fn.kernels, fn.numpy_ops = printer.stats()
        fn.build_seconds = dict(zip(("passes", "emit", "native compile"),
                                    (b - a for a, b in zip(clock, clock[1:]))))
    if "ROWS" in dict(lowered.request.constants):  # a sparse pattern, for its callers
        fn.rows, fn.cols, fn.shape = namespace["ROWS"], namespace["COLS"], namespace["SHAPE"]
    return fn


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
    if tgt.name not in ("numpy", "numba"):
        raise BackendError(f"scipy_functions emits NumPy code (backend='numpy' or 'numba'), "
                           f"not {tgt.name!r}: SciPy's optimizers pass NumPy arrays")
    from ..transforms.derivatives import grad, hessian, hvp, wrt_variable

    if not isinstance(f, Expr) or f.shape != ():
        shape = fmt(f.shape) if isinstance(f, Expr) else type(f).__name__
        raise DifferentiationError(f"scipy_functions needs a scalar expression, got {shape}")
    x = wrt_variable(f, wrt)
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
    namespace, filename = _loader(tgt)(source, "scipy")
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
            hess_fn = _SparseHessian(hess_fn, h.pattern)
    return ScipyFunctions(fun, hessp, source, tuple(extra_names), hess_fn)


class _SparseHessian:
    """``hess(x, *args)``: the generated ``data`` function's result as a CSR matrix."""

    def __init__(self, data: CompiledFunction, pattern: Any) -> None:
        self.data = data
        self.pattern = pattern
        self.source = data.source

    def __call__(self, *args: Any) -> Any:
        from ..transforms.sparse import as_matrix

        return as_matrix(self.data(*args), self.pattern)

    def __repr__(self) -> str:
        return f"<symgrad sparse Hessian {self.pattern.shape}, {self.pattern.nnz} entries>"
