"""Substitution: the same expressions with some variables replaced by expressions.

A function transform called on expressions (``sg.grad(sg.grad(f))`` tracing the inner
``grad`` on the outer's variables) traces on fresh variables, differentiates with respect to
them, and then puts the expressions it was called with in their place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..base.errors import ShapeError
from ..ir.expr import Expr
from ..ir.limits import exceeded, limits
from ..ir.op import REGISTRY
from ..ir.shapes import fmt


def substitute(outputs: Sequence[Expr], mapping: Mapping[str, Expr]) -> list[Expr]:
    """``outputs`` with each variable named in ``mapping`` replaced by its expression (of the
    same shape and dtype). One linear walk over the outputs' ancestors.

    >>> import symgrad as sg
    >>> x, y = sg.var("x"), sg.var("y")
    >>> (out,) = substitute([sg.sin(x) * x], {"x": y + 1.0})
    >>> str(out)
    'sin(y + 1.0) * (y + 1.0)'
    """
    graph = max([o.graph for o in outputs] + [e.graph for e in mapping.values()], key=len)
    outs = [_home(graph, o) for o in outputs]
    new: dict[int, int] = {}
    for name, e in mapping.items():
        node = graph.variables.get(name)
        if node is None:
            continue
        e = _home(graph, e)
        old = graph.nodes[node]
        if e.shape != old.shape or e.dtype != old.dtype:
            raise ShapeError(f"substitute: '{name}' is {old.dtype}{fmt(old.shape)}, its "
                             f"replacement {e.dtype}{fmt(e.shape)}")
        new[node] = e.node
    if not new:
        return outs
    nodes = graph.nodes
    n = limits.transform_nodes
    with graph.budget(n, lambda: exceeded("transform_nodes",
                                          f"substitution built more than {n:,} nodes")):
        for i in graph.ancestors([o.node for o in outs]):
            if i in new:
                continue
            node = nodes[i]
            args = tuple(new.get(a, a) for a in node.args)
            if args != node.args:
                new[i] = graph.add(REGISTRY[node.op], args, node.attrs)
    return [Expr(graph, new.get(o.node, o.node)) for o in outs]


def _home(graph, e: Expr) -> Expr:
    return e if e.graph is graph else Expr(graph, graph.import_node(e.graph, e.node))
