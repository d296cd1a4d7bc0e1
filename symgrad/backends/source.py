"""Standalone source for symgrad graphs (``to_source``); ``compile`` loads it.

The front of the emitter's stages: the call becomes a :class:`~.stages.Request`
(:mod:`.stages`), lowered once through the compile passes, and printed by the target's
printer (:mod:`.targets`: NumPy, scalar ``math``, the array API, JAX, torch, Numba),
which writes each op from its table, names from :mod:`.plan`, constants as its target
writes them (:mod:`.literals`), docstrings from :mod:`.docstring`.

For NumPy (the default) the emitted module imports only ``numpy as np`` and defines one
straight-line function: one
assignment per node of the outputs' ancestors, in id order (a topological order), so every
forward value is computed once and reused by the adjoint lines. Names are readable and never
spliced from user text without checking: user variables keep their names when those are safe
identifiers (else they are renamed deterministically), the adjoint of variable ``x`` is
``dx``, the adjoint of temporary ``t3`` is ``d_t3``, other temporaries are ``t1, t2, ...``.
Every adjoint line carries a comment naming the forward line it differentiates.

Small 0-d constants are inlined as exact literals; array constants are hoisted to module
level (built once at import, read-only). Large temporaries are released with ``del`` after
their last use. The text depends only on the graph: no set order, no hash seed, no addresses.

>>> import symgrad as sg
>>> x, y = sg.var("x"), sg.var("y")
>>> f = x * y + sg.sin(x)
>>> fn = sg.compile([f, *sg.grad(f, [x, y])])
>>> [round(float(v), 6) for v in fn(2.0, 3.0)]
[6.909297, 2.583853, 2.0]
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.expr import Expr
from .naming import is_safe_name
from .stages import lower, request

__all__ = ["to_source", "is_safe_name"]


def to_source(outputs: Expr | Sequence[Expr], inputs: Sequence[Expr | str] | None = None,
              name: str = "f", *, output_names: Sequence[str] | None = None,
              scalars: str = "math", optimize: bool = True, fast_math: bool = False,
              backend: str = "numpy") -> str:
    """The text of a module, importing only NumPy, that defines ``def name(*inputs)``.

    The function returns the outputs (a tuple when a list was given, one value when one
    Expr was given). ``inputs`` are variable Exprs or names in call order (default: every
    variable the outputs use, in the order they first appear when the outputs are read left
    to right, like the signature you would write: ``V @ tanh(W @ x + b)`` gives
    ``(V, W, x, b)``). ``output_names`` optionally names the results
    in the code (otherwise: ``dx`` for the adjoint of ``x``, ``t1, t2, ...`` for the rest).

    ``scalars="math"`` (the default): a function whose every value is a float scalar is
    emitted over Python floats with the standard ``math`` module (several times faster than
    NumPy scalars; ``math`` and NumPy may differ in the last bit of ``tanh``, ``**``, ...),
    with the NumPy version as the fallback wherever ``math`` raises (overflow, domain
    errors); results are NumPy scalars. ``scalars="numpy"``: NumPy everywhere.

    ``optimize`` (default): the graph is first rebuilt through the exact passes
    (the ``compile`` stage of :mod:`symgrad.passes.registry`: the results are what the graph
    computes, bit for bit); ``fast_math=True`` also applies rewrites that are not IEEE-exact
    (the ``fast_math`` stage: ``a - a -> 0``, the idioms as ops, ...).

    ``backend``: ``"numpy"`` (the default), ``"array_api"`` (the Python array API standard
    only; the function takes its namespace from its inputs with
    ``array_api_compat.array_namespace``, so it runs on NumPy, CuPy, PyTorch, JAX, Dask
    arrays), ``"jax"`` (``jax.numpy``, functional updates; ``compile`` wraps it in
    ``jax.jit``) or ``"torch"`` (PyTorch through ``array_api_compat.torch``). ``scalars``
    applies to ``"numpy"`` only; the others emit array code throughout. See
    :mod:`symgrad.backends.targets`.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> f = sg.sum(sg.sin(x))
    >>> src = sg.to_source([f, sg.grad(f, x)], name="sin_and_grad")
    >>> print(src.split('"' * 3)[-1].strip())
    t1 = np.sin(x)
        value = np.add.reduce(t1, axis=(-1,), keepdims=False)
        dx = np.cos(x)  # backprop of: t1 = np.sin(x)
        return value, dx
    """
    return lower(request(outputs, inputs, name, output_names=output_names, scalars=scalars,
                         optimize=optimize, fast_math=fast_math, backend=backend)).source()
