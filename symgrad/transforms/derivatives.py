"""grad, vjp, jvp, jacobian (jacfwd / reverse), hessian, hvp and derivative(n), on top of
:mod:`.reverse` and :mod:`.forward`.

Every function returns Exprs in the output's graph, so results can be evaluated, printed,
turned into source, or differentiated again.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..base.describe import describe, type_name
from ..base.errors import DifferentiationError, LimitError
from ..ir.expr import Expr, F
from ..ir.graph import Graph
from ..ir.limits import exceeded, limits
from ..ir.shapes import fmt, is_float
from ..ir.values import exact, exact_choice, exact_str
from ..passes.pipeline import loop_stage
from .custom import as_differentiated
from .forward import tangents as forward_pass
from .reverse import backprop
from .sparse import Plan, SparseExpr, as_pattern, compressed, hessian_plan, jacobian_plan, seeds
from .sparsity import NNZ_LIMIT, hessian_pattern, jacobian_pattern, pair_limit
from .taylor import Declined, series_of

Wrt = Expr | str
MODES = (None, "forward", "reverse")
SPARSE_MIN = 32  # variables from which hessian() considers the sparse path by itself
SPARSE_GAIN = 4  # ... and takes it when the colours are at most this fraction of them
# derivative(f, x, n) of a scalar x for TAYLOR_FROM <= n <= TAYLOR_UP_TO: Taylor mode (beyond,
# its O(n^2) work per op is too much; repeated reverse mode finds derivatives that repeat)
TAYLOR_FROM, TAYLOR_UP_TO = 2, 512


def grad(f: Expr, wrt: Wrt | Sequence[Wrt], *, cleanup: bool = True) -> Expr | tuple[Expr, ...]:
    """The gradient of scalar ``f`` with respect to one variable or a list of them.

    ``wrt`` may be Exprs or variable names. A variable ``f`` does not depend on gets zeros.
    ``cleanup=False`` keeps B exactly as the backprop rules write it (no reverse-mode
    passes: see ``sg.passes()``).

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> dx = sg.grad(sg.sin(x) * x, x)
    >>> round(sg.evaluate(dx, {"x": 1.0}), 6)
    1.381773
    """
    _check_output(f, "grad")
    cleanup = _flag(cleanup, "grad: cleanup")
    if f.shape != ():
        raise DifferentiationError(
            f"grad needs a scalar output, but f has shape {fmt(f.shape)}; use "
            "sg.jacobian(f, wrt) for the full derivative or sg.vjp(f, wrt, g) for a product"
        )
    (f,) = loop_stage([f])  # before the seed: it is built for f
    with _budget(f, "grad"):
        return vjp(f, wrt, _seed(np.ones((), f.dtype), f), cleanup=cleanup)


def vjp(f: Expr, wrt: Wrt | Sequence[Wrt], g: Expr | str | Any, *,
        cleanup: bool = True) -> Expr | tuple[Expr, ...]:
    """The vector-Jacobian product ``g^T (df/dwrt)``: the adjoint of ``wrt`` for seed ``g``.

    ``g`` (an Expr, an array, or the name of a new variable) has ``f``'s shape, or extra
    leading axes that are carried through as a batch; a number stands for an array of
    ``f``'s shape filled with it.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> sg.evaluate(sg.vjp(x * x, x, "g"), {"x": [1.0, 2.0, 3.0], "g": [1.0, 0.0, 1.0]})
    array([2., 0., 6.])
    """
    _check_output(f, "vjp")
    cleanup = _flag(cleanup, "vjp: cleanup")
    (f,) = loop_stage([f])
    many = isinstance(wrt, (list, tuple))
    targets = [resolve_wrt(f, w) for w in (exact(wrt) if many else [wrt])]
    if isinstance(g, str):
        g = _var_like(f, g, f.shape)
    elif isinstance(g, (int, float)) and not isinstance(g, bool):
        g = np.full(f.shape, exact(g), dtype=f.dtype)
    g = _join(f, g)
    if g.shape[g.ndim - f.ndim:] != f.shape:
        raise DifferentiationError(
            f"the cotangent has shape {fmt(g.shape)}; it must end with f's shape {fmt(f.shape)}"
        )
    batch = g.shape[: g.ndim - f.ndim]
    with _budget(f, "vjp"):
        result = backprop(f, targets, g, cleanup)
    out = []
    for w in targets:
        node = result.adjoint_of.get(w.node)
        out.append(Expr(f.graph, node) if node is not None else _zeros(w, batch + w.shape))
    out = as_differentiated(out, targets)  # custom rules: what the next transform sees
    return tuple(out) if many else out[0]


def jvp(f: Expr | Sequence[Expr], wrt: Wrt | Sequence[Wrt], tangents: Any, *,
        cleanup: bool = True) -> Expr | tuple[Expr, ...]:
    """The Jacobian-vector product ``(df/dwrt) v`` by forward mode: the tangent of ``f``.

    ``f`` is an Expr or a list of Exprs (one graph); ``wrt`` one variable or a list, and
    ``tangents`` one tangent per variable (a list when ``wrt`` is): an Expr, an array, or
    the name of a new variable of the wrt's shape. Tangents may carry the same extra leading
    axes, which are carried through as a batch (one pass for many directions). The result
    has ``f``'s structure, each ``batch + f.shape``; an ``f`` that does not depend on
    ``wrt`` gets zeros. ``cleanup=False`` builds the tangents as the rules write them.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> sg.evaluate(sg.jvp(sg.sum(x * x), x, [1.0, 0.0, 1.0]), {"x": [1.0, 2.0, 3.0]})
    8.0
    """
    many_out = isinstance(f, (list, tuple))
    outs = list(f) if many_out else [f]
    if not outs or not all(isinstance(o, Expr) for o in outs):
        raise DifferentiationError("jvp needs an Expr or a non-empty list of Exprs")
    cleanup = _flag(cleanup, "jvp: cleanup")
    graph = max((o.graph for o in outs), key=len)
    outs = loop_stage([o if o.graph is graph else Expr(graph, graph.find(o)) for o in outs])
    many = isinstance(wrt, (list, tuple))
    targets = [resolve_wrt(outs[0], w) for w in (exact(wrt) if many else [wrt])]
    if not targets:
        raise DifferentiationError("jvp needs at least one variable to differentiate by")
    given = list(tangents) if many else [tangents]
    if many and len(given) != len(targets):
        raise DifferentiationError(f"jvp: {len(targets)} variables but {len(given)} tangents")
    seeds = [_tangent_seed(outs[0], w, t) for w, t in zip(targets, given)]
    batch = seeds[0].shape[: seeds[0].ndim - targets[0].ndim]
    for w, t in zip(targets, seeds):
        if t.shape[: t.ndim - w.ndim] != batch:
            raise DifferentiationError(
                f"jvp: the tangents' leading (batch) axes differ: {fmt(batch)} and "
                f"{fmt(t.shape[: t.ndim - w.ndim])}")
    with _budget(outs[0], "jvp"):
        record = forward_pass(outs, targets, seeds, cleanup)
    result = []
    for o in outs:
        node = record.tangent_of.get(o.node)
        result.append(Expr(graph, node) if node is not None else _zeros(o, batch + o.shape))
    result = as_differentiated(result, targets)  # custom rules: what the next transform sees
    return tuple(result) if many_out else result[0]


def _tangent_seed(f: Expr, w: Expr, t: Any) -> Expr:
    """A tangent of ``w`` as an Expr of ``f``'s graph with ``w``'s dtype."""
    if isinstance(t, str):
        return _var_like(f, t, w.shape, w.dtype)
    t = _join(f, t)
    if t.shape[t.ndim - w.ndim:] != w.shape or t.ndim < w.ndim:
        raise DifferentiationError(f"the tangent of '{w.name}' has shape {fmt(t.shape)}; it "
                                   f"must end with the variable's shape {fmt(w.shape)}")
    return t if t.dtype == w.dtype else F.astype(t, w.dtype)


def jacfwd(f: Expr, wrt: Wrt | Sequence[Wrt], *, cleanup: bool = True
           ) -> Expr | tuple[Expr, ...]:
    """The Jacobian ``f.shape + wrt.shape`` by forward mode, in ONE batched pass.

    The seed is the identity with a batch axis per input element (all wrt variables
    together), so every forward rule runs once on a batched tangent; cheaper than reverse
    mode when the inputs are fewer than the outputs.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> sg.evaluate(sg.jacfwd(sg.stack([x[0] * x[1], x[0], x[1] ** 2]), x), {"x": [2.0, 3.0]})
    array([[3., 2.],
           [1., 0.],
           [0., 6.]])
    """
    _check_output(f, "jacfwd")
    cleanup = _flag(cleanup, "jacfwd: cleanup")
    many = isinstance(wrt, (list, tuple))
    targets = [resolve_wrt(f, w) for w in (exact(wrt) if many else [wrt])]
    if not targets:
        raise DifferentiationError("jacfwd needs at least one variable to differentiate by")
    total = sum(w.size for w in targets)
    seeds, start = [], 0
    for w in targets:
        size = w.size
        with f.graph.provenance(w.node, "tangent"):
            block = F.eye(total, M=size, k=-start, dtype=w.dtype)
            seeds.append(F.reshape(block, (total,) + w.shape) if w.shape != (size,) else block)
        start += size
    out = jvp(f, targets, seeds, cleanup=cleanup)  # (total,) + f.shape
    blocks, start = [], 0
    with f.graph.provenance(f.node, "tangent"):
        for w in targets:
            part = out if w.size == total else out[start:start + w.size]
            blocks.append(_batch_last(part, f, w))
            start += w.size
    return tuple(blocks) if many else blocks[0]


def _batch_last(t: Expr, f: Expr, w: Expr) -> Expr:
    """A batched tangent ``(n,) + f.shape`` as ``f.shape + w.shape`` (the batch axis last)."""
    if f.ndim:
        t = F.transpose(t, axes=tuple(range(1, f.ndim + 1)) + (0,))
    return t if t.shape == f.shape + w.shape else F.reshape(t, f.shape + w.shape)


def jacobian(f: Expr, wrt: Wrt | Sequence[Wrt], *, mode: str | None = None,
             cleanup: bool = True, sparse: bool = False) -> Any:
    """The Jacobian, shape ``f.shape + wrt.shape``, built in ONE vectorised pass.

    ``mode="reverse"`` seeds the output with the identity (a batch axis per output element)
    and runs the backprop rules once; ``mode="forward"`` is :func:`jacfwd` (a batch axis per
    input element). By default the mode with the smaller batch is chosen: forward when the
    inputs have fewer elements than ``f``, reverse otherwise.

    ``sparse=True`` (one variable): the structural sparsity pattern is found, its columns
    (forward) or rows (reverse) coloured, and one batched pass with one seed per colour
    gives every non-zero: a :class:`~symgrad.transforms.sparse.SparseExpr`, whose value is
    a ``scipy.sparse`` matrix of shape ``(f.size, wrt.size)``.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> sg.evaluate(sg.jacobian(x * x, x), {"x": [1.0, 3.0]})
    array([[2., 0.],
           [0., 6.]])
    """
    _check_output(f, "jacobian")
    cleanup = _flag(cleanup, "jacobian: cleanup")
    mode = exact_choice(mode, "jacobian: mode (None: choose by size)", MODES,
                        DifferentiationError)
    sparse = _flag(sparse, "jacobian: sparse")
    many = isinstance(wrt, (list, tuple))
    targets = [resolve_wrt(f, w) for w in (exact(wrt) if many else [wrt])]
    if sparse:
        if many:
            raise DifferentiationError("a sparse Jacobian takes one variable (concatenate "
                                       "several into one vector)")
        with _budget(f, "jacobian"):
            return _sparse_jacobian(f, targets[0], mode)
    inputs = sum(w.size for w in targets)
    if mode is None:
        mode = "forward" if inputs < f.size else "reverse"
    _check_dense("jacobian", f.size * inputs,
                 inputs * inputs if mode == "forward" else f.size * f.size)
    if mode == "forward":
        with _budget(f, "jacobian"):
            return jacfwd(f, wrt, cleanup=cleanup)
    seed = _seed(np.eye(f.size, dtype=f.dtype).reshape(f.shape + f.shape), f)
    with _budget(f, "jacobian"):
        return vjp(f, wrt, seed, cleanup=cleanup)


def hessian(f: Expr, wrt: Wrt | Sequence[Wrt], *, sparse: bool | None = None,
            method: str | None = None) -> Any:
    """The Hessian of scalar ``f``: the Jacobian of its gradient, shape ``wrt.shape * 2``.

    With a list of variables, the nested blocks (JAX's convention): ``H[i][j]`` is
    ``d2f / dwrt_i dwrt_j``, shape ``wrt_i.shape + wrt_j.shape``.

    ``sparse=True`` (one variable) returns a :class:`~symgrad.transforms.sparse.SparseExpr`:
    the pattern of the gradient's Jacobian, a star (or distance-2: ``method=``) colouring,
    and one batched forward-over-reverse pass with one seed per colour; its value is a
    ``scipy.sparse`` matrix ``(wrt.size, wrt.size)``. By default (``sparse=None``) the
    sparse path is taken for ``wrt`` of at least 32 elements when the colours are at most a
    quarter of them, and the dense array is filled from the compressed result;
    ``sparse=False`` always builds the dense Hessian in one pass.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> sg.evaluate(sg.hessian(x[0] ** 2 * x[1], x), {"x": [1.0, 2.0]})
    array([[4., 2.],
           [2., 0.]])
    >>> a, b = sg.var("a"), sg.var("b")
    >>> H = sg.hessian(a * a * b, [a, b])
    >>> sg.evaluate([H[0][0], H[0][1], H[1][0], H[1][1]], {"a": 3.0, "b": 2.0})
    [4.0, 6.0, 6.0, 0.0]
    """
    _check_output(f, "hessian")
    sparse = exact_choice(sparse, "hessian: sparse", (None, True, False), DifferentiationError)
    method = exact_choice(method, "hessian: method", (None, "star", "distance2"),
                          DifferentiationError)
    if isinstance(wrt, (list, tuple)):
        if sparse:
            raise DifferentiationError("a sparse Hessian takes one variable (concatenate "
                                       "several into one vector)")
        targets = [resolve_wrt(f, w) for w in exact(wrt)]
        size = sum(w.size for w in targets)
        _check_dense("hessian", size * size, size * size)
        with _budget(f, "hessian"):
            grads = grad(f, targets)
            return tuple(tuple(jacobian(g, targets, mode="reverse")) for g in grads)
    w = resolve_wrt(f, wrt)
    method = exact(method)
    if not sparse:  # the result is dense whichever way it is computed
        _check_dense("hessian", w.size * w.size, w.size)
    with _budget(f, "hessian"):
        g = grad(f, w)
        if sparse is False or (sparse is None and w.size < SPARSE_MIN):
            return _dense_hessian(g, w)
        try:
            with pair_limit(max(w.size * w.size // SPARSE_GAIN, 10_000) if not sparse
                            else NNZ_LIMIT):
                plan = hessian_plan(w, g, method)
        except LimitError:
            if sparse:
                raise
            return _dense_hessian(g, w)
        if sparse:
            return _sparse_hessian(w, g, plan)
        if plan.colours * SPARSE_GAIN > w.size:
            return _dense_hessian(g, w)
        _check_dense("hessian", w.size * w.size, plan.colours * w.size)
        return _sparse_hessian(w, g, plan).todense()


def _dense_hessian(g: Expr, w: Expr) -> Expr:
    _check_dense("hessian", w.size * w.size, w.size * w.size)
    return jacobian(g, w, mode="reverse")


def _sparse_jacobian(f: Expr, w: Expr, mode: str | None) -> SparseExpr:
    """``df/dw`` from one batched pass with a seed per colour (:mod:`.sparse`): forward
    over the coloured columns or reverse over the coloured rows."""
    plan = jacobian_plan(f, w, mode)
    if not plan.colours:
        product, origin = None, f
    elif plan.method == "forward":
        product, origin = jvp(f, w, seeds(plan, w)), f
    else:
        product, origin = vjp(f, w, seeds(plan, f)), w
    return compressed(plan, product, origin, f.shape + w.shape, f.dtype)


def _sparse_hessian(w: Expr, g: Expr, plan: Plan) -> SparseExpr:
    """The Hessian whose gradient is ``g``, forward over reverse: one batched tangent pass
    over the gradient with a seed per colour of ``plan``."""
    product = jvp(g, w, seeds(plan, w)) if plan.colours else None
    return compressed(plan, product, g, w.shape + w.shape, w.dtype)

def jacobian_sparsity(f: Expr, wrt: Wrt) -> Any:
    """The structural sparsity pattern of ``df/dwrt`` as a boolean ``scipy.sparse``
    matrix of shape ``(f.size, wrt.size)`` (``(rows, cols)`` index arrays without SciPy):
    every entry that can be non-zero at some point is in it.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(4,))
    >>> sg.jacobian_sparsity(x[1:] - x[:-1], x).toarray().astype(int)
    array([[1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    _check_output(f, "jacobian_sparsity")
    return as_pattern(jacobian_pattern([f], [resolve_wrt(f, wrt)]))


def hessian_sparsity(f: Expr, wrt: Wrt) -> Any:
    """The symmetric structural sparsity pattern of the Hessian of scalar ``f`` (the
    pattern of its gradient's Jacobian), as a boolean ``scipy.sparse`` matrix (``(rows,
    cols)`` without SciPy). Built in a copy of the graph: ``f``'s graph is unchanged.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(4,))
    >>> sg.hessian_sparsity(sg.sum(x[1:] * x[:-1]) + sg.sum(x ** 3), x).nnz
    10
    """
    _check_output(f, "hessian_sparsity")
    if f.shape != ():
        raise DifferentiationError(f"hessian_sparsity needs a scalar f, got shape "
                                   f"{fmt(f.shape)}")
    graph = Graph()
    copy = Expr(graph, graph.import_node(f.graph, f.node))
    w = resolve_wrt(copy, wrt)
    return as_pattern(hessian_pattern(w, grad(copy, w)))



def hvp(f: Expr, wrt: Wrt, v: Expr | str | Any) -> Expr:
    """The Hessian-vector product ``H v`` without building ``H``: forward mode over the
    gradient (one tangent pass over the gradient graph).

    ``v`` is an Expr, an array, or the name of a new variable of ``wrt``'s shape; extra
    leading axes of ``v`` are a batch (``H V`` for several directions at once).

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> hv = sg.hvp(x[0] ** 2 * x[1], x, "v")
    >>> sg.evaluate(hv, {"x": [1.0, 2.0], "v": [1.0, 0.0]})
    array([4., 2.])
    """
    _check_output(f, "hvp")
    w = resolve_wrt(f, wrt)
    v = _var_like(f, v, w.shape) if isinstance(v, str) else _join(f, v)
    if v.shape[v.ndim - w.ndim:] != w.shape or v.ndim < w.ndim:
        raise DifferentiationError(f"hvp: v has shape {fmt(v.shape)}, wrt has {fmt(w.shape)}")
    with _budget(f, "hvp"):
        return jvp(grad(f, w), w, v)


def derivative(f: Expr, wrt: Wrt, n: int = 1) -> Expr:
    """The ``n``-th derivative of scalar ``f``; for a non-scalar ``wrt`` the derivative
    tensor of shape ``wrt.shape * n``.

    For a scalar ``wrt`` and ``2 <= n <= 512`` it is built by Taylor mode
    (:mod:`symgrad.transforms.taylor`: one pass carrying every order, O(n^2) nodes per op)
    when every op between ``wrt`` and ``f`` has a Taylor rule; otherwise (and for tensors)
    by ``n`` reverse passes, whose graph can grow geometrically with ``n`` (each pass
    differentiates the last one's products again).

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> sg.evaluate(sg.derivative(x ** 4, x, 3), {"x": 2.0})
    48.0
    """
    _check_output(f, "derivative")
    n = exact(n)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise DifferentiationError(
            f"derivative order must be a non-negative int, got {describe(n)}")
    w = resolve_wrt(f, wrt)
    if w.size > 1 and n > 1:  # the last order's seed has w.size ** (2 (n - 1)) elements
        big = math.log(limits.dense_elements + 1) / math.log(w.size)
        if 2 * (n - 1) > big or n > big:
            _check_dense(f"derivative(n={n})", w.size ** min(n, 64), w.size ** min(2 * n - 2, 64))
    if w.ndim == 0 and f.ndim == 0 and TAYLOR_FROM <= n <= TAYLOR_UP_TO and is_float(f.dtype):
        try:  # a budget of its own: a rule that declines mid-way leaves nothing behind
            with _budget(f, f"derivative(n={n})"):
                return series_of(f, w, n)[n]
        except Declined:
            pass
    out = f
    results, orders = [f], {f.node: 0}  # for a scalar wrt: each derivative's first order
    with _budget(f, f"derivative(n={n})"):
        for k in range(1, n + 1):
            out = grad(out, w) if k == 1 else jacobian(out, w)
            if w.ndim == 0:
                first = orders.setdefault(out.node, k)
                if first != k:  # d^k f is d^first f: the derivatives repeat from here on
                    return results[first + (n - first) % (k - first)]
                results.append(out)
    return out


# -- helpers ------------------------------------------------------------------------------


def _check_output(f: Any, what: str) -> None:
    if not isinstance(f, Expr):
        raise DifferentiationError(f"{what} needs a symgrad expression (an Expr) to "
                                   f"differentiate, got {type_name(f)}")


def _flag(value: Any, what: str) -> bool:
    """A yes/no argument: True or False (a truthy string or an array is not one)."""
    return exact_choice(value, what, (True, False), DifferentiationError)


def _check_dense(what: str, result: int, seed: int) -> None:
    """A dense derivative (and its identity seed) must fit ``sg.limits.dense_elements``."""
    size = max(result, seed)
    if size > limits.dense_elements:
        raise exceeded("dense_elements", f"{what} would build a dense array of {size:,} "
                       f"elements (limit {limits.dense_elements:,}); for large problems "
                       "use sg.vjp or sg.hvp, which never build it")


@contextmanager
def _budget(f: Expr, what: str) -> Iterator[None]:
    """The nodes ``what`` may add to ``f``'s graph: ``sg.limits.transform_nodes``."""
    n = limits.transform_nodes
    def overrun() -> LimitError:
        err = exceeded("transform_nodes", f"{what} built more than {n:,} nodes")
        return LimitError(f"{err}; a Python loop traced step by step that did not roll into "
                          "one loop is differentiated step by step: write it with sg.scan "
                          "or sg.fori_loop, whose step is traced once")

    with f.graph.budget(n, overrun):
        yield


def resolve_wrt(f: Expr, w: Wrt) -> Expr:
    """A wrt given as an Expr or a name, as a float variable of ``f``'s graph."""
    graph = f.graph
    if isinstance(w, str):
        w = exact_str(w, "a variable name")
        if w not in graph.variables:
            known = ", ".join(sorted(graph.variables)) or "none"
            raise DifferentiationError(f"'{w}' is not a variable of this expression "
                                       f"(its variables: {known})")
        w = Expr(graph, graph.variables[w])
    elif not isinstance(w, Expr):
        raise DifferentiationError(f"wrt must be an Expr or a variable name, got {describe(w)}")
    elif w.graph is not graph:
        w = Expr(graph, graph.import_node(w.graph, w.node))
    if not graph.nodes[w.node].is_var:
        raise DifferentiationError(f"wrt must be a variable, got the expression {w}")
    if not is_float(w.dtype):
        raise DifferentiationError(f"cannot differentiate with respect to '{w.name}': it has "
                                   f"dtype {w.dtype} (only float variables carry gradients)")
    return w


def _join(f: Expr, e: Any) -> Expr:
    """``e`` (an Expr, an array or a number) as an Expr of ``f``'s graph."""
    if not isinstance(e, Expr):
        return _const(e, f)
    return e if e.graph is f.graph else Expr(f.graph, f.graph.import_node(e.graph, e.node))


def _const(value, like: Expr) -> Expr:
    return Expr(like.graph, like.graph.const(value))


def _seed(value, f: Expr) -> Expr:
    """The output's own adjoint (dz/dz = 1, or the identity): an adjoint node of ``f``."""
    with f.graph.provenance(f.node):
        return _const(value, f)


def _var_like(f: Expr, name: str, shape, dtype: str | None = None) -> Expr:
    return Expr(f.graph, f.graph.var(name, shape, dtype or f.dtype))


def _zeros(w: Expr, shape) -> Expr:
    return F.broadcast_to(_const(np.zeros((), w.dtype), w), tuple(shape))
