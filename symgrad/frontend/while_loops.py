"""Loops whose trip count is a run-time value: ``sg.while_loop`` (``jax.lax.while_loop``),
one ``while_loop`` call whose two functions the emitted code runs in a Python loop
(:mod:`symgrad.ops.while_loop`), and ``sg.scan(..., checkpoint="binomial")``, a
``while_loop`` over the step index whose reverse sweep stores ``snapshots`` carries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.describe import describe, type_name
from ..base.errors import ArgumentError, ShapeError
from ..ir.body import DEFAULT_SNAPSHOTS, trace, while_call
from ..ir.expr import Expr, F, const
from ..ir.values import as_constant, exact, exact_int
from .control import check_callable, cond
from .loops import CHECKPOINTS, LoopError, Tree, fit, flatten, fori_loop, home_graph, unflatten

__all__ = ["while_loop"]


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any,
               *, snapshots: int = DEFAULT_SNAPSHOTS, max_steps: int | None = None) -> Any:
    """``val = body_fun(val)`` while ``cond_fun(val)`` holds, from ``init_val``
    (``jax.lax.while_loop``): the final ``val``.

    ``init_val`` is a pytree (arrays, or tuples/lists/dicts of them); ``body_fun`` must
    return one of its structure, shapes and dtypes, ``cond_fun`` a boolean scalar. Both are
    traced once; the values they use from outside are inputs of the loop. The number of
    steps is a run-time value: the loop runs in Python on the NumPy target (and the
    interpreter), calling the two as functions.

    Derivatives, unlike JAX's: forward mode (``sg.jvp``, ``sg.jacfwd``) carries tangents
    alongside; in reverse mode (``sg.grad``, ``sg.vjp``) the forward loop stores at most
    ``snapshots`` of its carries, placed online (dynamic checkpointing), and the reverse
    sweep recomputes the others from them by binomial checkpointing (Revolve): memory
    ``snapshots + 1`` carries for any trip count, each step run forward about ``t`` times
    where ``t`` is the smallest with ``C(snapshots + 1 + t, t) >=`` the trip count (``t =
    6`` for 10^5 steps and 20 snapshots). A second derivative in reverse mode is refused.
    The trip count has no derivative: it is piecewise constant.

    ``max_steps=N`` writes the loop as a scan of ``N`` steps that stop changing the carry
    once ``cond_fun`` fails (every target, JAX and PyTorch included, and derivatives of any
    order); float leaves of the result are NaN where ``cond_fun`` still holds after ``N``
    steps, never a silently truncated value.

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> def newton(c):                        # sqrt(x) by Newton's iteration
    ...     return 0.5 * (c + x / c)
    >>> r = sg.while_loop(lambda c: sg.abs(c * c - x) > 1e-12 * x, newton, x)
    >>> [round(float(v), 10) for v in sg.evaluate([r, sg.grad(r, x)], {"x": 2.0})]
    [1.4142135624, 0.3535533906]
    """
    check_callable(cond_fun, "while_loop: cond_fun")
    check_callable(body_fun, "while_loop: body_fun")
    snapshots = _count(snapshots, "snapshots")
    if max_steps is not None:
        return _bounded(cond_fun, body_fun, init_val, _count(max_steps, "max_steps", 0))
    leaves, tree = flatten(init_val, "while_loop: init_val")
    leaves = [v if isinstance(v, Expr) else as_constant(v) for v in leaves]
    if not leaves:
        raise ArgumentError("while_loop: init_val holds no array; give the loop a carry")
    avals = [(v.shape, v.dtype) if isinstance(v, Expr) else (v.shape, v.dtype.name)
             for v in leaves]

    def step(*v: Expr) -> list[Any]:
        new_leaves, new_tree = flatten(body_fun(unflatten(tree, list(v))),
                                       "while_loop: body_fun's result")
        if new_tree != tree:
            raise ShapeError("while_loop: body_fun must return a value of init_val's "
                             "structure, shapes and dtypes")
        try:
            return [fit(a, b, k) for k, (a, b) in enumerate(zip(new_leaves, avals))]
        except ShapeError as e:
            raise ShapeError(str(e).replace("scan:", "while_loop: body_fun:", 1)) from None

    def test(*v: Expr) -> list[Any]:
        p = cond_fun(unflatten(tree, list(v)))
        p = p if isinstance(p, Expr) else as_constant(exact(p))
        if p.shape != () or p.dtype != "bool":
            raise ArgumentError(f"while_loop: cond_fun must return a boolean scalar, got "
                                f"{describe(p)}; compare it (c < 10)")
        return [p]

    body, body_captured = trace(step, avals)
    cond, cond_captured = trace(test, avals)
    graph = home_graph(leaves, body_captured + cond_captured)
    operands = [v if isinstance(v, Expr) else Expr(graph, graph.const(v))
                for v in [*leaves, *body_captured, *cond_captured]]
    results = while_call(graph, cond, body, len(leaves), operands, snapshots)
    return unflatten(tree, list(results[:len(leaves)]))


def _count(value: Any, name: str, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ArgumentError(f"while_loop: {name} must be an int >= {least}, got "
                            f"{describe(value)}")
    return exact_int(value, f"while_loop: {name}")


def _bounded(cond_fun: Callable, body_fun: Callable, init_val: Any, max_steps: int) -> Any:
    """``while_loop`` with ``max_steps``: a ``fori_loop`` whose step keeps the carry once
    ``cond_fun`` fails; float leaves NaN where it still holds at the end."""
    out = fori_loop(0, max_steps, lambda i, c: cond(cond_fun(c), body_fun, lambda v: v, c),
                    init_val)
    still = cond_fun(out)
    leaves, tree = flatten(out, "while_loop: the result")
    nan = const(np.float64(np.nan))
    leaves = [F.where(still, F.astype(nan, v.dtype), v)
              if isinstance(v, Expr) and np.dtype(v.dtype).kind in "fc" else v for v in leaves]
    return unflatten(tree, leaves)


def _binomial(f: Callable, init: Tree, x_leaves: list[Any], x_tree: Any, steps: int,
              reverse: bool, kind: str, snapshots: int) -> tuple[Tree, None]:
    """``scan`` with ``checkpoint="binomial"``: a ``while_loop`` over ``(t, carry)``."""
    if kind != "binomial":
        raise LoopError(f"scan: checkpoint must be an int or 'binomial', got {kind!r}")
    xs = [x if isinstance(x, Expr) else const(x) for x in x_leaves]

    def step(c: tuple) -> tuple:
        t, carry = c
        at = steps - 1 - t if reverse else t
        x = unflatten(x_tree, [v[at] for v in xs]) if xs else None
        result = f(carry, x)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise LoopError("scan: f must return a pair (new carry, y), got "
                            f"{type_name(result)}")
        if flatten(result[1], "scan: y")[0]:
            raise LoopError("scan: checkpoint='binomial' needs f to return y=None (per-step "
                            "results are kept for every step anyway); use checkpoint=k")
        return t + 1, result[0]

    _, carry = while_loop(lambda c: c[0] < steps, step, (np.int64(0), init),
                          snapshots=snapshots)
    return carry, None


CHECKPOINTS["binomial"] = _binomial
