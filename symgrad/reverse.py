"""The reverse-mode transform: append the derivative subgraph B to a graph.

Goodfellow et al., *Deep Learning*, Alg. 6.2 (``grad_table``) and Collins' notes, Fig. 1.5:
walk the forward nodes that lie on a path from a ``wrt`` to the output in reverse
topological order; sum each node's incoming contributions into ONE adjoint node; ask the
node's op for one contribution per operand; undo broadcasting centrally. The loop knows no
op: all calculus lives in the registry's backprop rules.

The seed may carry leading *batch* axes (an identity seed gives a whole Jacobian in one pass).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce

from .graph import Expr, Graph, Node
from .ops.registry import REGISTRY
from .shapes import is_float, sum_to_shape


class NodeView:
    """What a backprop rule sees of a forward node: ``args`` and ``out`` as Exprs."""

    __slots__ = ("graph", "data")

    def __init__(self, graph: Graph, data: Node) -> None:
        self.graph, self.data = graph, data

    @property
    def args(self) -> tuple[Expr, ...]:
        return tuple(Expr(self.graph, a) for a in self.data.args)

    @property
    def out(self) -> Expr:
        return Expr(self.graph, self.data.id)

    @property
    def attrs(self) -> dict:
        return self.data.attrs

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape


@dataclass
class Backprop:
    """One run of the transform: ``adjoint_of`` maps forward id -> adjoint id."""

    output: int
    wrt: tuple[int, ...]
    adjoint_of: dict[int, int]
    batch: int
    nodes_before: int
    nodes_after: int

    @property
    def size(self) -> int:
        """Nodes this transform added to the graph (the size of B)."""
        return self.nodes_after - self.nodes_before


def backprop(output: Expr, wrt: Sequence[Expr], seed: Expr) -> Backprop:
    """Append B for ``output`` with adjoint ``seed`` (shape ``batch + output.shape``)."""
    with _gc_paused():  # the transform allocates many small objects and creates no cycles
        return _backprop(output, wrt, seed)


@contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _backprop(output: Expr, wrt: Sequence[Expr], seed: Expr) -> Backprop:
    graph = output.graph
    batch = seed.ndim - output.ndim
    before = len(graph)
    forward = graph.ancestors([output.node])
    nodes = graph.nodes
    on_path = graph.descendants([w.node for w in wrt], forward)
    relevant = {i for i in on_path if is_float(nodes[i].dtype)}
    parts: dict[int, list[Expr]] = {output.node: [seed]} if output.node in relevant else {}
    adjoint_of: dict[int, int] = {}
    for i in reversed(forward):
        if i not in parts:
            continue
        node = nodes[i]
        with graph.provenance(i):
            g = reduce(lambda a, b: a + b, parts.pop(i))
            adjoint_of[i] = g.node
            rule = REGISTRY[node.op].backprop
            if rule is None:
                continue
            for a, c in zip(node.args, rule(NodeView(graph, node), g)):
                if c is not None and a in relevant:
                    parts.setdefault(a, []).append(sum_to_shape(c, nodes[a].shape, batch))
    graph.adjoint_of.update(adjoint_of)
    wrt_ids = tuple(w.node for w in wrt)
    return Backprop(output.node, wrt_ids, adjoint_of, batch, before, len(graph))
