"""``compile()``: generated source as a callable.

:mod:`symgrad.backends.source` writes the text; the target loads it
(:meth:`~symgrad.backends.target.Target.load`) and wraps its function with the same input
checks as ``sg.evaluate`` (:meth:`~symgrad.backends.target.Target.wrap`,
:class:`~symgrad.backends.loaded.CompiledFunction`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ..ir.expr import Expr
from .boundary import exact_flag
from .stages import lower, request

__all__ = ["compile"]


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
    req, name, params = lowered.request, lowered.functions[0].name, lowered.params()
    tgt = req.target
    printer = tgt.printer(lowered)
    source = printer.module()
    clock.append(time.perf_counter())
    namespace, filename = tgt.load(source, name)
    fn = tgt.wrap(namespace[name], params, source, filename, check_inputs)
    stats = printer.stats()
    if stats is not None:  # what was compiled, what NumPy runs, the phases
        clock.append(time.perf_counter())
        fn.kernels, fn.numpy_ops, fn.numpy_why = stats
        fn.build_seconds = dict(zip(("passes", "emit", "native compile"),
                                    (b - a for a, b in zip(clock, clock[1:]))))
        tgt.review(fn)
    if req.pattern is not None:  # a sparse derivative's pattern, for its callers
        fn.rows, fn.cols, fn.shape = (namespace[c] for c in req.pattern)
    return fn
