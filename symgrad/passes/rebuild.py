"""Rebuilding a graph through passes: the one walk every stage of rule passes runs.

:func:`rebuild` copies the outputs' ancestors into a fresh graph in topological order, each
node offered to the passes of its role (forward nodes to one list, adjoint and tangent
nodes to another) as it is built; hash-consing shares identical subexpressions and drops
dead nodes (:data:`CSE`: a rebuild with no rules; :data:`SYMPY`: one through the sympy
bridge, loaded on first use). Adjoint nodes keep their role and origin; ``adjoint_of`` and
every transform's record are carried over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack

from ..base.memory import gc_paused
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from .context import Context
from .pattern import Pass, rewriter

__all__ = ["CSE", "SYMPY", "rebuild", "rebuilt"]

Hook = Callable[[int, dict, Graph], "int | None"]


def rebuild(source: Graph, ids: list[int], forward: Sequence[Pass] = (),
            adjoint: Sequence[Pass] = (), hook: Hook | None = None) -> tuple[Graph, list[int]]:
    """Copy the ancestors of ``ids`` (and the forward nodes their adjoint nodes were made
    for) into a new graph, each node offered to the passes of its role; returns the graph
    and the new ids. ``hook(i, mapping, target)`` may supply the new id of node ``i``."""
    with gc_paused():
        return _rebuild(source, ids, forward, adjoint, hook)


def _rebuild(source: Graph, ids: list[int], forward: Sequence[Pass],
             adjoint: Sequence[Pass], hook: Hook | None) -> tuple[Graph, list[int]]:
    target = Graph()
    hooks = {"forward": rewriter(target, forward) if forward else None,
             "adjoint": rewriter(target, adjoint) if adjoint else None}
    hooks["tangent"] = hooks["adjoint"]  # tangent nodes get what B gets (transforms/forward)
    nodes = source.nodes
    mapping: dict[int, int] = {}
    context = None  # (role, origin) of the contexts entered: consecutive nodes share them
    with ExitStack() as outer:
        stack = outer
        for i in source.ancestors(ids, origins=True):
            n = nodes[i]
            if n.is_var:  # a variable is made outside any provenance
                stack.close()
                context = None
                mapping[i] = target.copy_var(n)
                continue
            if context != (n.role, n.origin):
                stack.close()
                stack = outer.enter_context(ExitStack())
                if n.origin is not None:
                    stack.enter_context(target.provenance(mapping[n.origin], n.role))
                stack.enter_context(target.rewriting(hooks[n.role]))
                context = (n.role, n.origin)
            new = hook(i, mapping, target) if hook is not None else None
            if new is None:
                new = target.add(REGISTRY[n.op], tuple(mapping[a] for a in n.args), n.attrs)
            mapping[i] = new
    target.adjoint_of = _remap(source.adjoint_of, mapping)
    target.transforms = [t.remap(mapping) for t in source.transforms]
    return target, [mapping[i] for i in ids]


def _remap(table: dict[int, int], mapping: dict[int, int]) -> dict[int, int]:
    return {mapping[f]: mapping[a] for f, a in table.items() if f in mapping and a in mapping}


def rebuilt(graph: Graph, ids: list[int], passes: Sequence[Pass]) -> tuple[Graph, list[int]]:
    """The outputs ``ids`` of ``graph`` rebuilt through ``passes`` (every node), keeping
    every variable; the new graph and the outputs' new ids."""
    new, out = rebuild(graph, ids, passes, passes)
    for i in graph.variables.values():  # inputs the outputs do not use stay inputs
        new.copy_var(graph.nodes[i])
    return new, out


CSE = Pass("cse", "rebuilt through hash-consing: identical subexpressions shared, dead nodes "
           "dropped", stages=("simplify",))


def _sympy(graph: Graph, ids: list[int], ctx: Context) -> tuple[Graph, list[int]]:
    from .sympy_bridge import region_hook  # sympy loads on first use only

    return rebuild(graph, ids, hook=region_hook(graph, ids))


SYMPY = Pass("sympy", "sympy.simplify on each elementwise region, kept when it has fewer ops",
             run=_sympy, stages=("sympy",))
