"""grad, vjp, jacobian, hessian, hvp and derivative(n), all on top of :mod:`.reverse`.

Every function returns Exprs in the output's graph, so results can be evaluated, printed,
turned into source, or differentiated again.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import DifferentiationError
from ..ir.expr import Expr, F
from ..ir.limits import exceeded, limits
from ..ir.shapes import fmt, is_float
from ..ir.values import describe, exact, exact_str, type_name
from .reverse import backprop

Wrt = Expr | str


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
    if f.shape != ():
        raise DifferentiationError(
            f"grad needs a scalar output, but f has shape {fmt(f.shape)}; use "
            "sg.jacobian(f, wrt) for the full derivative or sg.vjp(f, wrt, g) for a product"
        )
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
    many = isinstance(wrt, (list, tuple))
    targets = [_resolve(f, w) for w in (exact(wrt) if many else [wrt])]
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
    return tuple(out) if many else out[0]


def jacobian(f: Expr, wrt: Wrt, *, cleanup: bool = True) -> Expr:
    """The Jacobian, shape ``f.shape + wrt.shape``, built in ONE reverse pass.

    The seed is the identity with a batch axis per output element, so every backprop rule
    runs once on a batched adjoint instead of once per output element.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> sg.evaluate(sg.jacobian(x * x, x), {"x": [1.0, 3.0]})
    array([[2., 0.],
           [0., 6.]])
    """
    _check_output(f, "jacobian")
    w = _resolve(f, wrt)
    _check_dense("jacobian", f.size * w.size, f.size * f.size)
    seed = _seed(np.eye(max(f.size, 1), dtype=f.dtype).reshape(f.shape + f.shape), f)
    with _budget(f, "jacobian"):
        return vjp(f, w, seed, cleanup=cleanup)


def hessian(f: Expr, wrt: Wrt) -> Expr:
    """The Hessian of scalar ``f``: the Jacobian of its gradient, shape ``wrt.shape * 2``.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> sg.evaluate(sg.hessian(x[0] ** 2 * x[1], x), {"x": [1.0, 2.0]})
    array([[4., 2.],
           [2., 0.]])
    """
    _check_output(f, "hessian")
    w = _resolve(f, wrt)
    _check_dense("hessian", w.size * w.size, w.size * w.size)
    with _budget(f, "hessian"):
        return jacobian(grad(f, w), w)


def hvp(f: Expr, wrt: Wrt, v: Expr | str | Any) -> Expr:
    """The Hessian-vector product ``H v`` without building ``H`` (reverse-over-reverse).

    ``v`` is an Expr, an array, or the name of a new variable of ``wrt``'s shape.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> hv = sg.hvp(x[0] ** 2 * x[1], x, "v")
    >>> sg.evaluate(hv, {"x": [1.0, 2.0], "v": [1.0, 0.0]})
    array([4., 2.])
    """
    _check_output(f, "hvp")
    w = _resolve(f, wrt)
    v = _var_like(f, v, w.shape) if isinstance(v, str) else _join(f, v)
    if v.shape != w.shape:
        raise DifferentiationError(f"hvp: v has shape {fmt(v.shape)}, wrt has {fmt(w.shape)}")
    with _budget(f, "hvp"):
        return grad(F.sum(grad(f, w) * v), w)


def derivative(f: Expr, wrt: Wrt, n: int = 1) -> Expr:
    """The ``n``-th derivative of scalar ``f``; for a non-scalar ``wrt`` the derivative
    tensor of shape ``wrt.shape * n``.

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
    w = _resolve(f, wrt)
    if w.size > 1 and n > 1:  # the last order's seed has w.size ** (2 (n - 1)) elements
        big = math.log(limits.dense_elements + 1) / math.log(w.size)
        if 2 * (n - 1) > big or n > big:
            _check_dense(f"derivative(n={n})", w.size ** min(n, 64), w.size ** min(2 * n - 2, 64))
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
    with f.graph.budget(n, lambda: exceeded(
            "transform_nodes", f"{what} built more than {n:,} nodes")):
        yield


def _resolve(f: Expr, w: Wrt) -> Expr:
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


def _var_like(f: Expr, name: str, shape) -> Expr:
    return Expr(f.graph, f.graph.var(name, shape, f.dtype))


def _zeros(w: Expr, shape) -> Expr:
    return F.broadcast_to(_const(np.zeros((), w.dtype), w), tuple(shape))
