"""Taylor mode: the derivatives of every order along one scalar variable, in one pass.

``derivative(f, x, n)`` for a scalar ``x`` walks the nodes between ``x`` and ``f`` in
topological order, as forward mode does, but pushes a truncated series (the node and its
derivatives of orders 1..n along ``x``) instead of one tangent: each node's series is its
op's Taylor rule (:mod:`symgrad.ops.series`) applied to its operands' series. That is
O(n^2) nodes per op where ``n`` repeated reverse passes duplicate the Leibniz terms of every
product at every order (``sin(x) * exp(x)``: 1.85x more nodes per order). JAX calls it
``jet`` (Bettencourt, Johnson and Duvenaud, *Taylor-mode automatic differentiation for
higher-order derivatives in JAX*, 2019); Griewank and Walther, *Evaluating Derivatives*,
ch. 13, give the recurrences.

The loop knows no op. An op without a rule makes :func:`series_of` raise :class:`Declined`
before anything is built (a rule that declines later, such as ``x ** 0.5``, raises it
mid-way: the caller runs it inside a budget, which removes what was built), and
``derivative`` falls back to repeated reverse mode. Nodes are built through the same
exact passes as reverse mode's (the ``reverse`` stage of :mod:`symgrad.passes.registry`):
``x * 1``, constants and negations fold away.
"""

from __future__ import annotations

import numpy as np

from ..base.errors import SymgradError
from ..base.memory import gc_paused
from ..base.progress import start
from ..ir.expr import Expr
from ..ir.nodeview import NodeView
from ..ir.op import REGISTRY, Op
from ..ir.shapes import is_float
from ..ops.series import Series, piecewise_linear
from ..ops.tangent import linear
from .forward import fit
from .reverse import adjoint_rewriting


class Declined(SymgradError):
    """An op on the path has no Taylor rule (or its rule declined): use reverse mode."""


def rule_of(op: Op):
    """The Taylor rule of ``op``: its own, or :func:`piecewise_linear` for an op whose forward
    rule is :func:`~symgrad.ops.tangent.linear`; None if it has none."""
    if op.taylor is not None:
        return op.taylor
    return piecewise_linear if op.forward is linear else None


def series_of(f: Expr, x: Expr, order: int) -> list[Expr]:
    """``[f, df/dx, ..., d^order f / dx^order]`` for a scalar float variable ``x`` (each of
    ``f``'s shape and dtype). Raises :class:`Declined` where an op has no rule.

    >>> import symgrad as sg
    >>> from symgrad.transforms.taylor import series_of
    >>> x = sg.var("x")
    >>> [float(sg.evaluate(d, {"x": 0.0})) for d in series_of(sg.exp(2.0 * x), x, 3)]
    [1.0, 2.0, 4.0, 8.0]
    """
    graph = f.graph
    nodes = graph.nodes
    forward = graph.ancestors([f.node])
    reached = graph.descendants([x.node], forward)
    path = [i for i in forward if i in reached and i != x.node]
    rules = {}
    for i in path:
        op = REGISTRY[nodes[i].op] if nodes[i].args else None
        if op is None or not (is_float(nodes[i].dtype) or nodes[i].is_call) \
                or not op.differentiable:  # a call with several results has no Taylor rule
            continue
        rules[i] = rule_of(op)
        if rules[i] is None:
            raise Declined(f"{op.name} has no Taylor rule")
    with gc_paused(), adjoint_rewriting(graph):
        first = fit(Expr(graph, graph.const(1.0)), (), (), x.dtype)
        known: dict[int, Series] = {x.node: ([x, first] + [None] * order)[: order + 1]}
        progress = start("taylor mode", total=len(path))
        for i in path:
            progress.update()
            if i in rules:
                known[i] = _node_series(graph, nodes[i], rules[i], known, order)
        progress.close()
    out = known.get(f.node)
    if out is None:
        return [f] + [_zeros(f)] * order
    return [fit(e, (), f.shape, f.dtype) if e is not None else _zeros(f) for e in out]


def _node_series(graph, node, rule, known: dict[int, Series], order: int) -> Series:
    args = [known.get(a) or [Expr(graph, a)] + [None] * order for a in node.args]
    if all(all(e is None for e in s[1:]) for s in args):
        return [Expr(graph, node.id)] + [None] * order
    with graph.provenance(node.id, "tangent"):
        out = rule(NodeView(graph, node), args, order)
        if out is None:
            raise Declined(f"the Taylor rule of {node.op} declined")
        return [Expr(graph, node.id)] + [
            None if e is None else fit(e, (), node.shape, node.dtype) for e in out[1:]]


def _zeros(f: Expr) -> Expr:
    zero = f.graph.const(np.zeros((), dtype=f.dtype))
    return fit(Expr(f.graph, zero), (), f.shape, f.dtype)
