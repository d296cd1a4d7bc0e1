"""Loops users write: ``sg.scan`` (``jax.lax.scan``'s signature and meaning) and
``sg.fori_loop`` on top of it.

The step function is traced once on fresh variables (:func:`symgrad.ir.body.trace`); the
loop is one ``scan`` op in the graph (:mod:`symgrad.ops.loops`), whatever its length, so
building, differentiating and emitting it cost the same for 10 steps or 10^5.

Carries, scanned inputs and per-step results are *pytrees*: an array (an Expr, a NumPy
array or a number), or tuples, lists and dicts of pytrees (dict keys sorted, as JAX does),
or ``None`` (nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.describe import describe, type_name
from ..base.errors import ShapeError, SymgradError, UnsupportedError
from ..ir.body import scan_call, trace
from ..ir.expr import TRACES, Expr
from ..ir.graph import Graph
from ..ir.limits import exceeded, limits
from ..ir.values import as_constant, exact, exact_int, stood_for

CHECKPOINTS: dict[str, Callable[..., Any]] = {}
"""``scan``'s ``checkpoint=`` schedules given by name ("binomial"), each set by the module that
builds it (:mod:`.while_loops`), which loops imports none of."""

Tree = Any


class LoopError(SymgradError):
    """A loop that cannot be traced: mismatched carries, lengths or step results."""


# -- pytrees ------------------------------------------------------------------------------

def flatten(tree: Tree, what: str, depth: int = 0) -> tuple[list[Any], Any]:
    """The leaves of ``tree`` in order, and its structure (for :func:`unflatten`)."""
    if depth > 64:
        raise LoopError(f"{what}: nested more than 64 levels deep")
    if tree is None:
        return [], None
    if type(tree) in (tuple, list):
        leaves, subs = [], []
        for item in tree:
            more, sub = flatten(item, what, depth + 1)
            leaves += more
            subs.append(sub)
        return leaves, (type(tree), tuple(subs))
    if type(tree) is dict:
        keys = sorted(tree, key=_key_order)
        leaves, subs = [], []
        for k in keys:
            more, sub = flatten(tree[k], what, depth + 1)
            leaves += more
            subs.append(sub)
        return leaves, (dict, tuple(zip(keys, subs)))
    if isinstance(tree, (Expr, np.ndarray, np.generic, int, float, bool)):
        return [stood_for((tree,))[0]], "leaf"  # an array filled with expressions: its value
    raise LoopError(f"{what}: a pytree holds arrays, numbers, tuples, lists, dicts and None; "
                    f"got {type_name(tree)}")


def _key_order(k: Any) -> tuple:
    if not isinstance(k, (str, int)) or isinstance(k, bool):
        raise LoopError(f"pytree dict keys must be strings or ints, got {describe(k)}")
    return (isinstance(k, str), exact(k))


def unflatten(structure: Any, leaves: list[Any]) -> Tree:
    """The pytree of ``structure`` holding ``leaves`` (consumed in order)."""
    return _build(structure, iter(leaves))


def _build(structure: Any, it: Any) -> Tree:
    if structure is None:
        return None
    if structure == "leaf":
        return next(it)
    kind, subs = structure
    if kind is dict:
        return {k: _build(s, it) for k, s in subs}
    return kind(_build(s, it) for s in subs)


def _leaf_aval(leaf: Any) -> tuple[tuple[int, ...], str]:
    if isinstance(leaf, Expr):
        return leaf.shape, leaf.dtype
    value = as_constant(leaf)
    return value.shape, value.dtype.name


# -- scan ---------------------------------------------------------------------------------

def scan(f: Callable[[Tree, Tree], tuple[Tree, Tree]], init: Tree, xs: Tree = None,
         length: int | None = None, reverse: bool = False,
         checkpoint: int | str | None = None, snapshots: int = 32) -> tuple[Tree, Tree]:
    """Loop ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``: returns the final
    carry and the per-step ``y`` stacked (``jax.lax.scan``'s meaning).

    ``init``, ``xs`` and the ``y`` are pytrees (arrays, or tuples/lists/dicts of them);
    ``length`` is the number of steps (needed when ``xs`` is None, else it must agree);
    ``reverse=True`` runs the steps from the last to the first (``ys`` stay in ``xs``'s
    order). The new carry must have the shapes and dtypes of ``init``. ``f`` is traced once:
    values it uses from outside (variables, arrays) are inputs of the loop, so every
    derivative sees them. Python control flow in ``f`` runs once, at trace time.

    ``checkpoint=k`` (an int >= 1): reverse mode stores every k-th carry and recomputes the
    others segment by segment (memory O(T/k + k) instead of O(T), about one more forward
    pass of work): the loop is a scan over segments of k steps, each a scan of its own.
    Values are the same bit for bit (derivatives too, as ``sg.evaluate`` runs them; compiled
    code may round them differently in the last bit); ``k`` near ``sqrt(T)`` is the usual
    choice.

    ``checkpoint="binomial"`` (with ``snapshots=s``): the loop is an ``sg.while_loop`` over
    the step index, reversed by binomial checkpointing (Revolve): memory ``s + 1`` carries
    whatever the length, each step run forward at most ``t`` times where ``C(s + t, t) >=
    length``; the gradient equals the plain scan's to rounding. ``f`` must return ``y=None``
    (stacked per-step results would be ``length`` values kept anyway), a second reverse
    sweep is refused (``sg.while_loop``'s rules) and the NumPy target runs it.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> total, partial = sg.scan(lambda c, xi: (c + xi, c + xi), 0.0, x)
    >>> sg.evaluate([total, partial], {"x": [1.0, 2.0, 3.0]})
    [6.0, array([1., 3., 6.])]
    >>> sg.evaluate(sg.grad(total * total, x), {"x": [1.0, 2.0, 3.0]})
    array([12., 12., 12.])
    """
    if not callable(f):
        raise LoopError(f"scan: f must be a function f(carry, x) -> (carry, y), got "
                        f"{type_name(f)}")
    reverse = _flag(reverse)
    c_leaves, c_tree = flatten(init, "scan: init")
    x_leaves, x_tree = flatten(xs, "scan: xs")
    c_leaves = [_value(v) for v in c_leaves]
    x_leaves = [_value(v) for v in x_leaves]
    steps = _length(x_leaves, length)
    if isinstance(checkpoint, str):
        return CHECKPOINTS["binomial"](f, init, x_leaves, x_tree, steps, reverse, checkpoint,
                                         snapshots)
    if checkpoint is not None and _segment(checkpoint) < steps:
        return _checkpointed(f, init, x_leaves, x_tree, steps, reverse, _segment(checkpoint))
    c_avals = [_leaf_aval(v) for v in c_leaves]
    x_avals = [(s[1:], d) for s, d in (_leaf_aval(v) for v in x_leaves)]
    y_tree: list[Any] = []

    def step(*v: Expr) -> list[Any]:
        carry = unflatten(c_tree, list(v[:len(c_leaves)]))
        x = unflatten(x_tree, list(v[len(c_leaves):]))
        result = f(carry, x)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise LoopError("scan: f must return a pair (new carry, y), got "
                            f"{type_name(result)}")
        new, y = result
        n_leaves, n_tree = flatten(new, "scan: the new carry")
        if n_tree != c_tree:
            raise LoopError("scan: the new carry must have the structure of init "
                            f"({_tree_text(c_tree)}), got {_tree_text(n_tree)}")
        n_leaves = [fit(a, b, k) for k, (a, b) in enumerate(zip(n_leaves, c_avals))]
        y_leaves, tree = flatten(y, "scan: y")
        y_tree.append(tree)
        return [*n_leaves, *y_leaves]

    body, captured = trace(step, c_avals + x_avals)
    graph = home_graph([*c_leaves, *x_leaves], captured)
    operands = [*c_leaves, *x_leaves, *captured]
    operands = [v if isinstance(v, Expr) else Expr(graph, graph.const(v)) for v in operands]
    nc = len(c_leaves)
    nodes = scan_call(graph, body, nc, len(x_leaves), steps, reverse, operands)
    return unflatten(c_tree, nodes[:nc]), unflatten(y_tree[0], nodes[nc:])


def _segment(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise LoopError(f"scan: checkpoint must be a positive int (steps per segment), got "
                        f"{describe(k)}")
    return exact_int(k, "scan: checkpoint")


def _checkpointed(f: Callable, init: Tree, x_leaves: list[Any], x_tree: Any, steps: int,
                  reverse: bool, k: int) -> tuple[Tree, Tree]:
    """``scan`` with ``checkpoint=k``: a scan over ``steps // k`` segments, each a scan of
    ``k`` steps, then one of the ``steps % k`` left (the first ones, when ``reverse``)."""
    from ..ir.expr import F

    segments, rest = divmod(steps, k)
    cut = rest if reverse else steps - rest  # where the segments and the rest meet
    main = slice(cut, None) if reverse else slice(None, cut)
    odd = slice(None, cut) if reverse else slice(cut, None)
    seg_xs = [F.reshape(_as_expr(x)[main], (segments, k, *_leaf_aval(x)[0][1:]))
              for x in x_leaves]
    rest_xs = [_as_expr(x)[odd] for x in x_leaves]

    def segment(c: Tree, xk: Any) -> tuple[Tree, Tree]:
        return scan(f, c, unflatten(x_tree, list(xk)) if x_leaves else None, length=k,
                    reverse=reverse)

    def tail(c: Tree) -> tuple[Tree, Tree]:
        return scan(f, c, unflatten(x_tree, rest_xs) if x_leaves else None, length=rest,
                    reverse=reverse)

    carry, ys_main = scan(segment, init, seg_xs or None, length=segments, reverse=reverse)
    carry, ys_rest = tail(carry) if rest else (carry, None)
    main_leaves, y_tree = flatten(ys_main, "scan: y")
    flat = [F.reshape(y, (segments * k, *y.shape[2:])) for y in main_leaves]
    if rest:
        rest_leaves, _ = flatten(ys_rest, "scan: y")
        pairs = zip(rest_leaves, flat) if reverse else zip(flat, rest_leaves)
        flat = [F.concatenate([a, b], axis=0) for a, b in pairs]
    return carry, unflatten(y_tree, flat)


def _as_expr(v: Any) -> Expr:
    from ..ir.expr import const

    return v if isinstance(v, Expr) else const(v)


def _value(v: Any) -> Any:
    return v if isinstance(v, Expr) else as_constant(v)


def _flag(v: Any) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise LoopError(f"scan: reverse must be True or False, got {describe(v)}")
    return bool(v)


def _length(x_leaves: list[Any], length: Any) -> int:
    if length is not None:
        if isinstance(length, Expr):
            raise UnsupportedError("scan: length must be a Python int (a symbolic trip "
                                   "count is not supported)")
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
            raise LoopError(f"scan: length must be a non-negative int, got {describe(length)}")
        length = exact_int(length, "scan: length")  # the plain int: no method of a subclass
        if length < 0:
            raise LoopError(f"scan: length must be a non-negative int, got {length}")
    sizes = {_leaf_aval(v)[0][:1] for v in x_leaves}
    if () in sizes:
        raise LoopError("scan: every leaf of xs needs a leading axis to scan over (got a 0-d "
                        "value)")
    found = {s[0] for s in sizes}
    if len(found) > 1:
        raise LoopError(f"scan: the leaves of xs have different lengths {sorted(found)}")
    if found and length is not None and found != {length}:
        raise LoopError(f"scan: length={length} but xs has length {found.pop()}")
    if not found and length is None:
        raise LoopError("scan: give length= when xs is None")
    return length if length is not None else found.pop()


def fit(new: Any, aval: tuple, k: int) -> Any:
    """The new carry leaf ``k``, checked against its init (Python numbers take its dtype)."""
    shape, dtype = aval
    if isinstance(new, Expr):
        got = (new.shape, new.dtype)
    else:
        if isinstance(new, (int, float)) and not isinstance(new, bool):
            new = np.asarray(exact(new), dtype=dtype)
        new = as_constant(new)
        got = (new.shape, new.dtype.name)
    if got != (shape, dtype):
        raise ShapeError(f"scan: carry leaf {k} enters the step as {_aval_text(aval)} but "
                         f"leaves it as {_aval_text(got)}; the new carry must keep init's "
                         "shape and dtype (cast it, or start from an init of that type)")
    return new


def _aval_text(aval: tuple) -> str:
    shape, dtype = aval
    return f"{dtype}{list(shape)}"


def _tree_text(tree: Any) -> str:
    if tree is None:
        return "None"
    if tree == "leaf":
        return "array"
    kind, subs = tree
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {_tree_text(s)}" for k, s in subs) + "}"
    inner = ", ".join(_tree_text(s) for s in subs)
    return f"({inner}{',' if len(subs) == 1 else ''})" if kind is tuple else f"[{inner}]"


def home_graph(values: list[Any], captured: list[Expr]) -> Graph:
    """The graph the loop's nodes go in: the loop being traced around this one, else the
    largest graph among the operands and the graphs the body captured values from."""
    if TRACES.graphs:
        return TRACES.graphs[-1]
    graphs = [v.graph for v in values if isinstance(v, Expr)]
    for c in captured:  # the body's graph imported them from these graphs
        graphs += c.graph.imported_from()
    return max(graphs, key=len) if graphs else Graph()


# -- fori_loop ----------------------------------------------------------------------------

def fori_loop(lower: int, upper: int, body_fun: Callable[[Expr, Tree], Tree],
              init_val: Tree) -> Tree:
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)`` (``jax.lax.fori_loop``):
    a ``scan`` over the indices, so it is differentiable in reverse mode too. ``i`` is an
    int64 scalar Expr (use it to index: ``x[i]``); the bounds must be Python ints.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(4,))
    >>> s = sg.fori_loop(0, 4, lambda i, acc: acc + x[i] ** 2, 0.0)
    >>> sg.evaluate(sg.grad(s, x), {"x": [1.0, 2.0, 3.0, 4.0]})
    array([2., 4., 6., 8.])
    """
    lo, hi = (_bound(b, name) for b, name in ((lower, "lower"), (upper, "upper")))
    if not callable(body_fun):
        raise LoopError(f"fori_loop: body_fun must be a function (i, val) -> val, got "
                        f"{type_name(body_fun)}")
    if hi - lo > limits.dense_elements:  # before NumPy is asked for the index array
        raise exceeded("dense_elements", f"fori_loop({lo}, {hi}): its {hi - lo:,} steps scan "
                       f"an array of as many indices, more than {limits.dense_elements:,}")
    steps = np.arange(lo, max(lo, hi), dtype=np.int64)
    carry, _ = scan(lambda val, i: (body_fun(i, val), None), init_val, steps)
    return carry


def _bound(b: Any, name: str) -> int:
    if isinstance(b, Expr):
        raise UnsupportedError(f"fori_loop: {name} must be a Python int (a symbolic trip "
                               "count is not supported)")
    if isinstance(b, bool) or not isinstance(b, (int, np.integer)):
        raise LoopError(f"fori_loop: {name} must be an int, got {describe(b)}")
    return exact_int(b, f"fori_loop: {name}")


__all__ = ["LoopError", "fori_loop", "scan"]
