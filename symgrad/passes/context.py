"""What the passes of one pipeline run share: the :class:`Context` a stage hands each
whole-graph pass (``run(graph, ids, ctx) -> (graph, ids)``).

A context is made by whoever runs the stages (``optimize`` for ``compile``, the derivative
transforms for the loop passes, reverse mode, ``simplify``, ``sg.stats``) and dropped with
the run, so nothing a pass keeps outlives it: the latest walk of the outputs (the
reductions and the rolling walk the same ancestors in turn) and what an analysis pass found
for the transform that runs it (the idioms reverse mode differentiates by their rule).
What stays true of a graph's nodes beyond one run — which nodes the rolling replaced, so
that ``compile`` after ``grad`` does not search the same loop again — is kept with the
graph (:attr:`~symgrad.ir.graph.Graph.derived`, emptied when a failed transform removes
nodes), reached through :meth:`Context.rolled`.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> y = sg.sin(x) * x
>>> ctx = Context()
>>> ctx.walk(y.graph, [y.node]) is ctx.walk(y.graph, [y.node])   # walked once per run
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ir.graph import Graph
from .steps import Walk

__all__ = ["Context", "GraphPass", "Rolled"]


@dataclass
class Rolled:
    """What the rolling found in one graph, true as long as its nodes are: each node it
    replaced and the node that replaces it (``replaced``), and the nodes whose ancestors
    have nothing left to roll (``settled``)."""

    replaced: dict[int, int] = field(default_factory=dict)
    settled: set[int] = field(default_factory=set)


class Context:
    """One pipeline run's shared state (see the module docstring)."""

    def __init__(self) -> None:
        self._walk: tuple[Graph, tuple[int, ...], int, Walk] | None = None
        self.idioms: dict[int, tuple[tuple, Callable]] = {}  # root id -> (inputs, rule)

    def walk(self, graph: Graph, ids: Sequence[int]) -> Walk:
        """The ancestors of ``ids`` in ``graph`` as a :class:`~.steps.Walk`; the same
        object again while the run asks about the same outputs of the same graph (and no
        failed transform removed nodes meanwhile: their ids may name other nodes since)."""
        key = tuple(ids)
        last = self._walk
        if last is not None and last[0] is graph and last[1] == key \
                and last[2] == graph.rollbacks:
            return last[3]
        found = Walk(graph, tuple(graph.ancestors(key)))
        self._walk = (graph, key, graph.rollbacks, found)
        return found

    @staticmethod
    def rolled(graph: Graph) -> Rolled:
        """What the rolling found in ``graph`` before (in this run or an earlier one)."""
        found: Any = graph.derived.get("rolled")
        if found is None:
            found = graph.derived["rolled"] = Rolled()
        return found


GraphPass = Callable[[Graph, list[int], Context], "tuple[Graph, list[int]]"]
"""A whole-graph pass: the outputs ``ids`` of ``graph`` -> the graph holding their new form
(the same graph with new nodes, or a rebuilt one) and their new ids, in order."""
