"""Branches on symbolic values: ``sg.cond`` and ``sg.switch`` (``jax.lax.cond`` /
``jax.lax.switch``).

A graph has no branches: every branch is built and ``where`` picks each result, element by
element, so a branch that is not taken costs its work but never its values: its gradient is
an exact 0 even where it is inf or NaN (``where``'s rule). Where the predicate or index is a
Python value the branch is chosen while tracing and only it is built. A loop whose trip
count depends on values (``jax.lax.while_loop``) is one ``while_loop`` call whose two functions the
emitted code runs in a Python loop (:mod:`symgrad.ops.while_loop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.describe import describe, type_name
from ..base.errors import ArgumentError, ShapeError
from ..base.tree_util import tree_flatten, tree_unflatten
from ..ir.body import trace
from ..ir.expr import Expr, F, const
from ..ir.values import as_constant, exact, exact_int
from ..ops.while_loop import DEFAULT_SNAPSHOTS, while_call
from .loops import _fit as fit
from .loops import flatten, home_graph, unflatten


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``true_fun(*operands)`` where ``pred`` holds, else ``false_fun(*operands)``
    (``jax.lax.cond``).

    Both branches must return pytrees of the same structure, shapes and dtypes. A symbolic
    ``pred`` (a bool or integer scalar Expr; an integer means ``pred != 0``) builds both and
    selects with ``where``; a Python or NumPy ``pred`` calls only the chosen branch.

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> y = sg.cond(x > 0, lambda v: v ** 2, lambda v: -v, x)
    >>> [float(sg.evaluate(e, {"x": 3.0})) for e in (y, sg.grad(y, x))]
    [9.0, 6.0]
    >>> [float(sg.evaluate(e, {"x": -3.0})) for e in (y, sg.grad(y, x))]
    [3.0, -1.0]
    """
    for f, name in ((true_fun, "true_fun"), (false_fun, "false_fun")):
        _callable(f, f"cond: {name}")
    if not isinstance(pred, Expr):
        return (true_fun if _concrete_bool(exact(pred)) else false_fun)(*operands)
    p = _predicate(pred)
    outs = [true_fun(*operands), false_fun(*operands)]
    return _select(outs, lambda leaves: F.where(p, leaves[0], leaves[1]), "cond",
                   ("true_fun", "false_fun"))


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """``branches[index](*operands)``, ``index`` clamped to the branches
    (``jax.lax.switch``).

    A symbolic ``index`` (an integer scalar Expr) builds every branch and selects with
    ``where``; a Python or NumPy int calls only the chosen one.

    >>> import symgrad as sg
    >>> k, x = sg.var("k", dtype="int64"), sg.var("x")
    >>> y = sg.switch(k, [lambda v: v, lambda v: v * v, lambda v: v * v * v], x)
    >>> [float(sg.evaluate(y, {"k": i, "x": 2.0})) for i in (-1, 0, 1, 2, 5)]
    [2.0, 2.0, 4.0, 8.0, 8.0]
    """
    if isinstance(branches, (str, bytes)) or not isinstance(branches, Sequence):
        raise ArgumentError(f"switch: branches must be a list of functions, got "
                            f"{type_name(branches)}")
    if not branches:
        raise ArgumentError("switch: branches is empty; give at least one function")
    for k, f in enumerate(branches):
        _callable(f, f"switch: branches[{k}]")
    last = len(branches) - 1
    if not isinstance(index, Expr):
        return branches[min(max(_concrete_int(exact(index)), 0), last)](*operands)
    if index.shape != () or not _is_int(index.dtype):
        raise ArgumentError(f"switch: index must be an integer scalar, got {index.dtype} "
                            f"of shape {index.shape}")
    at = F.minimum(F.maximum(index, 0), last)
    outs = [f(*operands) for f in branches]

    def pick(leaves: list) -> Expr:
        out = leaves[last]
        for k in range(last - 1, -1, -1):
            out = F.where(at == k, leaves[k], out)
        return out

    return _select(outs, pick, "switch", tuple(f"branches[{k}]" for k in range(last + 1)))


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
    alongside; reverse mode (``sg.grad``, ``sg.vjp``) runs the forward loop again and
    reverses it by binomial checkpointing (Revolve) with at most ``snapshots`` carries
    stored, the others recomputed: memory ``snapshots + 1`` carries for any trip count, about
    ``t`` extra forward passes where ``t`` is the smallest with ``C(snapshots + t, t) >=``
    the trip count (``t = 6`` for 10^5 steps and 20 snapshots). A second derivative in
    reverse mode is refused. The trip count has no derivative: it is piecewise constant.

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
    _callable(cond_fun, "while_loop: cond_fun")
    _callable(body_fun, "while_loop: body_fun")
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
    from .loops import fori_loop

    out = fori_loop(0, max_steps, lambda i, c: cond(cond_fun(c), body_fun, lambda v: v, c),
                    init_val)
    still = cond_fun(out)
    leaves, tree = flatten(out, "while_loop: the result")
    nan = const(np.float64(np.nan))
    leaves = [F.where(still, F.astype(nan, v.dtype), v)
              if isinstance(v, Expr) and np.dtype(v.dtype).kind in "fc" else v for v in leaves]
    return unflatten(tree, leaves)


def _is_int(dtype: str) -> bool:
    return np.dtype(dtype).kind in "iu"


def _callable(f: Any, what: str) -> None:
    if not callable(f):
        raise ArgumentError(f"{what} must be a function, got {type_name(f)}")


def _concrete_bool(pred: Any) -> bool:
    value = np.asarray(pred)
    if value.shape != () or value.dtype.kind not in "biu":
        raise ArgumentError(f"cond: pred must be a boolean or integer scalar, got "
                            f"{describe(pred)}")
    return bool(value)


def _concrete_int(index: Any) -> int:
    if isinstance(index, bool) or np.asarray(index).dtype.kind not in "iu":
        raise ArgumentError(f"switch: index must be an integer, got {describe(index)}")
    return exact_int(index, "switch: index")


def _predicate(pred: Expr) -> Expr:
    if pred.shape != ():
        raise ArgumentError(f"cond: pred must be a scalar, got shape {pred.shape}; for "
                            "elementwise choices use sg.where(c, a, b)")
    if pred.dtype == "bool":
        return pred
    if _is_int(pred.dtype):
        return pred != 0
    raise ArgumentError(f"cond: pred must be boolean or an integer, got {pred.dtype}; "
                        "compare it first (x > 0)")


def _select(outs: list, pick: Callable[[list], Expr], what: str, names: tuple) -> Any:
    """The branches' results, leaf by leaf through ``pick``, checked to match."""
    flat = [tree_flatten(o) for o in outs]
    structure = flat[0][1]
    for (_, tree), name in zip(flat[1:], names[1:]):
        if tree != structure:
            raise ShapeError(f"{what}: {names[0]} returns {structure}, {name} returns {tree}; "
                             "every branch must return the same structure")
    picked = []
    for j, column in enumerate(zip(*(leaves for leaves, _ in flat))):
        values = [v if isinstance(v, Expr) else const(np.asarray(exact(v))) for v in column]
        kinds = {(v.shape, v.dtype) for v in values}
        if len(kinds) > 1:
            got = ", ".join(f"{n}: {v.dtype}{list(v.shape)}" for n, v in zip(names, values))
            raise ShapeError(f"{what}: result {j} differs between branches ({got}); every "
                             "branch must give the same shapes and dtypes")
        picked.append(pick(values))
    return tree_unflatten(structure, picked)


__all__ = ["cond", "switch", "while_loop"]
