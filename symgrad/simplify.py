"""The optional simplifier: rebuild a graph through the rewrite table, keeping provenance.

The pipeline is correct without it. ``simplify`` copies the outputs' ancestors into a fresh
graph in topological order; each node is rebuilt through the builder (hash-consing, constant
folding, exact identities) and then offered to the registry's rewrite rules
(:mod:`symgrad.ops.rewrites`) until none applies. Nodes no output needs are dropped.
Adjoint nodes keep their role and origin, and ``adjoint_of`` is carried over.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from .graph import Expr, Graph
from .ops.registry import REGISTRY
from .ops.rewrites import RULES
from .reverse import NodeView

_MAX_REWRITES_PER_NODE = 8
_MAX_PASSES = 4
Hook = Callable[[int, dict, Graph], "int | None"]


def simplify(exprs: Any, sympy: bool = False) -> Any:
    """Simplified copies of ``exprs`` (an Expr, or a list/tuple of them: same structure back).

    With ``sympy=True``, every maximal elementwise subexpression (ops with a sympy
    translation, cut at shared nodes so the DAG is never expanded into a tree) of bounded
    size also goes through ``sympy.simplify``, and sympy's answer is kept when it has fewer
    operations and translates back.

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> str(sg.simplify(sg.log(1 + sg.exp(x) * 1.0) - 0.0))
    'softplus(x)'
    >>> str(sg.simplify(sg.sin(x) ** 2 + sg.cos(x) ** 2, sympy=True))
    '1.0'
    """
    single = isinstance(exprs, Expr)
    outs = [exprs] if single else list(exprs)
    if not outs:
        return exprs
    graph = max((e.graph for e in outs), key=len)
    ids = [e.node if e.graph is graph else graph.import_node(e.graph, e.node) for e in outs]
    if sympy:
        from .sympy_bridge import region_hook

        graph, ids = rebuild(graph, ids, region_hook(graph, ids))
    for _ in range(_MAX_PASSES):  # a rewrite leaves the node it replaced dead: drop it
        size = len(graph)
        graph, ids = rebuild(graph, ids)
        if len(graph) == size:
            break
    result = [Expr(graph, i) for i in ids]
    return result[0] if single else type(exprs)(result)


def rebuild(source: Graph, ids: list[int], hook: Hook | None = None) -> tuple[Graph, list[int]]:
    """Copy the ancestors of ``ids`` into a new graph, rewriting; returns it and the new ids.

    ``hook(i, mapping, target)`` may supply the new id of source node ``i`` itself.
    """
    target = Graph()
    mapping: dict[int, int] = {}
    for i in source.ancestors(ids):
        n = source.nodes[i]
        origin = mapping.get(n.origin) if n.origin is not None else None
        with target.provenance(origin) if origin is not None else nullcontext():
            if n.op == "var":
                mapping[i] = target.var(n.name, n.shape, n.dtype)
                continue
            new = hook(i, mapping, target) if hook is not None else None
            if new is None:
                new = target.add(REGISTRY[n.op], tuple(mapping[a] for a in n.args), n.attrs)
            mapping[i] = _rewrite(target, new)
    target.adjoint_of = {mapping[f]: mapping[a] for f, a in source.adjoint_of.items()
                         if f in mapping and a in mapping}
    return target, [mapping[i] for i in ids]


def _rewrite(graph: Graph, node: int) -> int:
    for _ in range(_MAX_REWRITES_PER_NODE):
        data = graph.nodes[node]
        rule = RULES.get(data.op)
        out = rule(NodeView(graph, data)) if rule is not None else None
        if out is None or out.node == node:
            return node
        new = graph.nodes[out.node]
        if new.shape != data.shape or new.dtype != data.dtype:
            return node
        node = out.node
    return node
