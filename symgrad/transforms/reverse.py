"""The reverse-mode transform: append the derivative subgraph B to a graph.

Goodfellow et al., *Deep Learning*, Alg. 6.2 (``grad_table``) and Collins' notes, Fig. 1.5:
walk the forward nodes that lie on a path from a ``wrt`` to the output in reverse
topological order; sum each node's incoming contributions into ONE adjoint node; ask the
node's op for one contribution per operand; undo broadcasting centrally. The loop knows no
op: all calculus lives in the registry's backprop rules.

The nodes the rules build pass through the reverse-mode passes (the ``reverse`` stage of
:mod:`symgrad.passes.registry`: constant folding, exact identities, the adjoint cleanup) as
they are built; ``cleanup=False`` builds B exactly as the rules write it. The seed may
carry leading *batch* axes (an identity seed gives a whole Jacobian in one pass).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import reduce

import numpy as np

from ..base.memory import gc_paused
from ..base.progress import start
from ..ir.expr import Expr, F
from ..ir.graph import Graph
from ..ir.nodeview import NodeView
from ..ir.op import REGISTRY, RESULT
from ..ir.shapes import Shape, is_float
from ..passes.adjoint_cleanup import sum_contributions
from ..passes.pattern import constant_value, rewriter
from ..passes.pipeline import analysed, rule_passes


@dataclass(frozen=True)
class Backprop:
    """One run of the transform: ``adjoint_of`` maps forward id -> adjoint id."""

    output: int
    wrt: tuple[int, ...]
    adjoint_of: dict[int, int]
    batch: int
    nodes_before: int
    nodes_after: int
    seed: str = "other"  # "ones" (a gradient), "identity" (a Jacobian) or "other" (a VJP)

    @property
    def size(self) -> int:
        """Nodes this transform added to the graph (the size of B)."""
        return self.nodes_after - self.nodes_before

    def remap(self, mapping: dict[int, int]) -> Backprop:
        """The same record for a rebuilt graph (``mapping``: old id -> new id)."""
        table = {mapping[f]: mapping[a] for f, a in self.adjoint_of.items()
                 if f in mapping and a in mapping}
        return replace(self, output=mapping.get(self.output, -1), adjoint_of=table,
                       wrt=tuple(mapping.get(w, -1) for w in self.wrt))


def backprop(output: Expr, wrt: Sequence[Expr], seed: Expr, cleanup: bool = True,
             idioms: bool | None = None) -> Backprop:
    """Append B for ``output`` with adjoint ``seed`` (shape ``batch + output.shape``).

    ``idioms`` (default: ``cleanup``): differentiate hand-written sigmoids, log-sum-exps, ...
    by their own rule (:data:`symgrad.passes.IDIOMS`); off, every node gets its own adjoint.
    """
    graph = output.graph
    with gc_paused(), adjoint_rewriting(graph, cleanup):
        result = backprop_inside(output, wrt, seed, sum_contributions if cleanup else _fold,
                           idioms=cleanup if idioms is None else idioms)
    with graph.lock:
        graph.transforms.append(result)
        graph.adjoint_of.update(result.adjoint_of)
    return result


@contextmanager
def adjoint_rewriting(graph: Graph, cleanup: bool = True) -> Iterator[None]:
    """Nodes built inside pass through the reverse-mode passes (nothing if not ``cleanup``)."""
    with graph.rewriting(rewriter(graph, rule_passes("reverse")) if cleanup else None):
        yield



def _fold(terms: Sequence[Expr]) -> Expr:
    return reduce(lambda a, b: a + b, terms)


def _relevant(graph: Graph, forward: list[int], wrt: set[int]) -> set[int]:
    """The float nodes of ``forward`` (topological) a derivative flows to from ``wrt``:
    those reached through ops with a backprop rule only (a ``stop_gradient`` or ``floor``
    on the way cuts the path, so the rules are not asked for contributions nothing will
    use; a user's op defined without a rule keeps its rule that raises). A call with several
    results is relevant when one of its float operands is; its projections, when their call
    is and they are float."""
    nodes = graph.nodes
    relevant: set[int] = set()
    for i in forward:
        n = nodes[i]
        if n.op == RESULT:
            if is_float(n.dtype) and n.args[0] in relevant:
                relevant.add(i)
            continue
        if not (is_float(n.dtype) or n.is_call):
            continue
        if i in wrt or (n.args and REGISTRY[n.op].backprop is not None
                        and any(a in relevant for a in n.args)):
            relevant.add(i)
    return relevant


def backprop_inside(output: Expr, wrt: Sequence[Expr], seed: Expr, total=_fold,
                    role: str = "adjoint", idioms: bool = False,
                    also: Sequence[tuple[Expr, Expr]] = ()) -> Backprop:
    """``also``: more ``(output, seed)`` pairs seeded in the same pass (a loop body's
    results: one pass gives the adjoint of their seeded sum).

    A projection's adjoint goes to its call, whose rule runs once, at the call, with ``g``
    the tuple of its results' adjoints (None where a result has none)."""
    graph = output.graph
    batch = seed.ndim - output.ndim
    before = len(graph)
    seeded = [(output, seed), *also]
    forward = graph.ancestors([o.node for o, _ in seeded])
    nodes = graph.nodes
    relevant = _relevant(graph, forward, {w.node for w in wrt})
    parts: dict[int, list[Expr]] = {}
    for o, s in seeded:
        if o.node in relevant:
            parts.setdefault(o.node, []).append(s)
    found = analysed("reverse", graph, [i for i in forward if i in relevant]).idioms \
        if idioms else {}
    calls: dict[int, dict[int, Expr]] = {}  # a call -> the adjoints of its results so far
    adjoint_of: dict[int, int] = {}
    progress = start("reverse mode", total=len(forward))
    for i in reversed(forward):
        progress.update()
        if i not in parts and i not in calls:
            continue
        node = nodes[i]
        with graph.provenance(i, role):
            if node.is_call:
                got = calls.pop(i)
                g = tuple([got.get(k) for k in range(len(node.dtype))])
            else:
                g = total(parts.pop(i))
                adjoint_of[i] = g.node
                if node.op == RESULT:
                    calls.setdefault(node.args[0], {})[node.attrs["index"]] = g
                    continue
            targets, rule = found.get(i) or (node.args, REGISTRY[node.op].backprop
                                             if node.args else None)  # leaves pass nothing on
            if rule is None:
                continue
            needed = tuple([a in relevant for a in node.args])
            for a, c in zip(targets, rule(NodeView(graph, node, needed), g)):
                if c is not None and a in relevant:
                    if batch or nodes[c.node].shape != nodes[a].shape:
                        c = sum_to_shape(c, nodes[a].shape, batch)
                    parts.setdefault(a, []).append(c)
    progress.close()
    return Backprop(output.node, tuple(w.node for w in wrt), adjoint_of, batch, before,
                    len(graph), seed_kind([seed], batch))


def seed_kind(seeds: Sequence[Expr], batch: int) -> str:
    """What the seeds of a transform make of it: ``"ones"`` (no batch axes: a gradient),
    ``"identity"`` (a batch axis per element: a Jacobian) or ``"other"`` (a VJP, a JVP)."""
    kinds = {_seed_kind(s, batch) for s in seeds}
    return kinds.pop() if len(kinds) == 1 else "other"


def _seed_kind(seed: Expr, batch: int) -> str:
    value = constant_value(seed.graph, seed.node)  # a constant, maybe repeated
    if value is None:
        return "other"
    if batch == 0:
        return "ones" if bool((value == 1).all()) else "other"
    rows = int(np.prod(seed.shape[:batch]))
    if value.size != rows * rows:
        return "other"
    return "identity" if np.array_equal(value.reshape(rows, rows), np.eye(rows)) else "other"


def sum_to_shape(g: Expr, shape: Shape, batch: int) -> Expr:
    """Undo broadcasting: sum ``g`` (shape ``batch-axes + S``) down to ``batch-axes + shape``.

    No node is built when nothing needs summing.
    """
    if g.shape[batch:] == shape and g.ndim == batch + len(shape):
        return g
    lead = g.ndim - batch - len(shape)
    if lead < 0:
        g = F.reshape(g, g.shape[:batch] + (1,) * -lead + g.shape[batch:])
        lead = 0
    if lead > 0:
        g = F.sum(g, axis=tuple(range(-len(shape) - lead, -len(shape))))
    ones = tuple(i - len(shape) for i, d in enumerate(shape) if d == 1 and g.shape[batch + i] != 1)
    if ones:
        g = F.sum(g, axis=ones, keepdims=True)
    target = g.shape[:batch] + tuple(shape)
    if g.shape != target:
        g = F.broadcast_to(g, target)
    return g
