"""Branches on symbolic values: ``sg.cond`` and ``sg.switch`` (``jax.lax.cond`` /
``jax.lax.switch``).

A graph has no branches: every branch is built and ``where`` picks each result, element by
element, so a branch that is not taken costs its work but never its values: its gradient is
an exact 0 even where it is inf or NaN (``where``'s rule). Where the predicate or index is a
Python value the branch is chosen while tracing and only it is built. (A loop whose trip
count depends on values, ``jax.lax.while_loop``: :mod:`.while_loops`.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.describe import describe, type_name
from ..base.errors import ArgumentError, ShapeError
from ..base.tree_util import tree_flatten, tree_unflatten
from ..ir.expr import Expr, F, const
from ..ir.values import exact, exact_int


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
        check_callable(f, f"cond: {name}")
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
        check_callable(f, f"switch: branches[{k}]")
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


def _is_int(dtype: str) -> bool:
    return np.dtype(dtype).kind in "iu"


def check_callable(f: Any, what: str) -> None:
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


__all__ = ["check_callable", "cond", "switch"]
