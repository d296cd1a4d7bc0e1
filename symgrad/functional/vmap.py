"""JAX's ``vmap``: a function mapped over an axis of its arguments, as one batched graph
(:mod:`symgrad.transforms.batching`) where the rows stay apart, else one call per example."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.describe import describe
from ..base.errors import ArgumentError
from ..base.tree_util import tree_flatten, tree_unflatten
from ..frontend.capture import rebound
from ..ir.expr import Expr, F, const, var
from ..ir.values import exact
from ..transforms.batching import Unbatchable, batched
from .builders import call_make
from .checks import check_function
from .traced import FRESH, Make, Transformed, cached


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """JAX's ``vmap``: ``fun`` mapped over an axis of its arguments (``in_axes``: an int,
    None for an argument that is not mapped, or one entry per argument) and the results
    stacked along ``out_axes`` (arguments and results are pytrees).

    ``fun`` is traced once for one example and its graph rebuilt with a leading batch axis
    (:mod:`symgrad.transforms.batching`): one compiled call computes the whole batch. Where
    an op of ``fun`` cannot keep the rows apart (``x[0]``, a ``reshape`` to a fixed shape,
    a custom rule), ``fun`` is compiled for one example and run once per example (the
    loop; unrolled when called on expressions, inside a transform). ``mapped.vectorised(
    *args)`` says which one runs for such arguments.

    >>> import numpy as np, symgrad as sg
    >>> per_row = sg.vmap(lambda w, x: np.tanh(x @ w), in_axes=(None, 0))
    >>> [round(float(v), 6) for v in per_row(np.array([0.5, -1.0]), np.eye(2))]
    [0.462117, -0.761594]
    >>> per_row.vectorised(np.array([0.5, -1.0]), np.eye(2))
    True
    """
    check_function("vmap", fun, "an expression with a leading batch axis")
    if any(a is None or isinstance(a, bool) or not isinstance(a, (int, np.integer))
           for a in (out_axes if isinstance(out_axes, (list, tuple)) else [out_axes])):
        raise ArgumentError(f"vmap: out_axes must be an int or one int per output, got "
                            f"{describe(out_axes)} (an unmapped output, out_axes=None, is "
                            "not supported: return it from outside the mapped function)")
    inner = fun if isinstance(fun, Transformed) else cached(
        fun, "callFalse", lambda: Transformed(fun, call_make, "jit"))
    whole = Transformed(fun, _vmap_make(in_axes, out_axes), "vmap")
    rows: set = set()  # argument specs whose trace could not be batched
    by_keywords: dict = {}  # (keyword names, argument count) -> the mapped function

    def key(args: tuple) -> tuple:
        leaves, tree = tree_flatten(args)
        return (tree, tuple((np.shape(x), getattr(x, "dtype", type(x))) for x in leaves))

    def mapped(*args: Any, **kwargs: Any) -> Any:
        if kwargs:  # JAX maps keyword arguments along their leading axis
            return _with_keywords(fun, in_axes, out_axes, args, kwargs, by_keywords)
        if any(isinstance(x, Expr) for x in tree_flatten(args)[0]):
            try:
                return _vectorised(rebound(fun), args, in_axes, out_axes)
            except Unbatchable:
                return _vmap_call(inner, args, in_axes, out_axes)
        k = key(args)
        if k not in rows:
            try:
                return whole(*args)
            except Unbatchable:
                rows.add(k)
        return _vmap_call(inner, args, in_axes, out_axes)

    def vectorised(*args: Any) -> bool:
        """Whether calls with arguments like ``args`` run as one batched call."""
        if key(args) not in rows:
            try:
                whole.compiled(*args)
            except Unbatchable:
                rows.add(key(args))
        return key(args) not in rows

    mapped.__name__ = f"vmap_{getattr(fun, '__name__', 'fun')}"
    mapped.vectorised = vectorised  # type: ignore[attr-defined]
    return mapped


def _with_keywords(fun: Callable, in_axes: Any, out_axes: Any, args: tuple,
                   kwargs: dict, table: dict) -> Any:
    """``vmap(fun)(*args, **kwargs)``: the keyword arguments mapped along axis 0, as JAX
    maps them (``fun`` called with them by name)."""
    names = sorted(kwargs)
    axes = _axes_per_arg(in_axes, len(args))

    def positional(*values: Any) -> Any:
        return fun(*values[:len(args)], **dict(zip(names, values[len(args):])))

    positional.__name__ = getattr(fun, "__name__", "fun")
    key = (tuple(names), len(args))
    inner = table.get(key)
    if inner is None:
        inner = table[key] = vmap(positional, tuple(axes) + (0,) * len(names), out_axes)
    return inner(*args, *(kwargs[n] for n in names))



def _vmap_make(in_axes: Any, out_axes: Any) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        if static:
            raise ArgumentError("vmap: the mapped function takes positional arguments only")
        return _vectorised(fun, args, in_axes, out_axes)

    return make


def _vectorised(fun: Callable, args: tuple, in_axes: Any, out_axes: Any) -> Any:
    """``fun`` traced once for one example, its graph rebuilt for the batch (raises
    :class:`~symgrad.transforms.batching.Unbatchable`)."""
    axes = _axes_per_arg(in_axes, len(args))
    size = _batch_size(args, axes)
    tag = next(FRESH)
    pairs: list[tuple[Expr, Expr]] = []
    one = []
    for a, ax in zip(args, axes):
        if ax is None:
            one.append(a)
            continue
        leaves, tree = tree_flatten(a)
        single = []
        for leaf in leaves:
            e = leaf if isinstance(leaf, Expr) else const(np.asarray(leaf))
            e = _move(e, ax % e.ndim, 0)
            v = var(f"_vm{tag}_{len(pairs)}", e.shape[1:], e.dtype)
            pairs.append((v, e))
            single.append(v)
        one.append(tree_unflatten(tree, single))
    out_leaves, out_def = tree_flatten(fun(*one))
    oaxes = _axes_per_arg(out_axes, out_def.num_leaves, "out_axes") \
        if isinstance(out_axes, (list, tuple)) else [out_axes] * out_def.num_leaves
    at = [k for k, e in enumerate(out_leaves) if isinstance(e, Expr)]
    if at:
        graph = max((out_leaves[k].graph for k in at), key=len)
        outs = [Expr(graph, graph.find(out_leaves[k])) for k in at]
        new = batched(outs, {v.name: e for v, e in pairs}, size)
        for k, e in zip(at, new):
            out_leaves[k] = e
    for k, e in enumerate(out_leaves):
        if isinstance(e, Expr):
            out_leaves[k] = _move(e, 0, oaxes[k] % e.ndim)
        else:
            a = np.asarray(e)
            out_leaves[k] = np.stack([a] * size, axis=oaxes[k] % (a.ndim + 1))
    return tree_unflatten(out_def, out_leaves)


def _move(e: Expr, source: int, destination: int) -> Expr:
    if source == destination:
        return e
    perm = [k for k in range(e.ndim) if k != source]
    perm.insert(destination, source)
    return F.transpose(e, tuple(perm))


def _batch_size(args: tuple, axes: list) -> int:
    size = None
    for a, ax in zip(args, axes):
        if ax is None:
            continue
        for leaf in tree_flatten(a)[0]:
            rank = np.ndim(leaf) if not isinstance(leaf, Expr) else leaf.ndim
            if not -rank <= ax < rank:
                raise ArgumentError(
                    f"vmap: in_axes {ax} maps an argument along axis {ax}, but its rank is "
                    f"{rank} (shape {np.shape(leaf) if not isinstance(leaf, Expr) else leaf.shape})"
                    "; map an axis it has")
            n = (np.shape(leaf) if not isinstance(leaf, Expr) else leaf.shape)[ax]
            if size is not None and n != size:
                raise ArgumentError(f"vmap: mapped axes have different sizes: {size} and {n}")
            size = n
    if size is None:
        raise ArgumentError("vmap needs at least one mapped argument (in_axes not all None)")
    return size


def _vmap_call(inner: Callable, args: tuple, in_axes: Any, out_axes: Any) -> Any:
    axes = _axes_per_arg(in_axes, len(args))
    size = _batch_size(args, axes)
    symbolic = any(isinstance(x, Expr) for a in args for x in tree_flatten(a)[0])
    results = []
    for b in range(size):
        sliced = [a if ax is None else _take(a, ax, b) for a, ax in zip(args, axes)]
        results.append(inner(*sliced))
    leaves_per = [tree_flatten(r)[0] for r in results]
    out_def = tree_flatten(results[0])[1]
    oaxes = _axes_per_arg(out_axes, out_def.num_leaves, "out_axes") \
        if isinstance(out_axes, (list, tuple)) else [out_axes] * out_def.num_leaves
    stacked = []
    for k in range(out_def.num_leaves):
        column = [lv[k] for lv in leaves_per]
        if symbolic or any(isinstance(c, Expr) for c in column):
            stacked.append(F.stack([c if isinstance(c, Expr) else const(c) for c in column],
                                   axis=oaxes[k]))
        else:
            stacked.append(np.stack([np.asarray(c) for c in column], axis=oaxes[k]))
    return tree_unflatten(out_def, stacked)


def _take(tree: Any, axis: int, b: int) -> Any:
    def one(x: Any) -> Any:
        if isinstance(x, Expr):
            key = (slice(None),) * (axis % x.ndim) + (b,)
            return x[key]
        return np.take(np.asarray(x), b, axis=axis)

    leaves, tdef = tree_flatten(tree)
    return tree_unflatten(tdef, [one(x) for x in leaves])


def _axes_per_arg(axes: Any, n: int, what: str = "in_axes") -> list:
    axes = exact(axes)
    if axes is None or isinstance(axes, int) and not isinstance(axes, bool):
        return [axes] * n
    if isinstance(axes, (list, tuple)) and len(axes) == n and all(
            a is None or isinstance(a, int) and not isinstance(a, bool) for a in axes):
        return list(axes)
    raise ArgumentError(f"vmap: {what} must be an int, None, or one int/None per "
                        f"{'argument' if what == 'in_axes' else 'output'} ({n}), got {axes!r}")
