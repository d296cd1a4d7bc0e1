"""The forward-mode transform: a tangent node for every node between the wrt variables and
the outputs.

Forward mode (Griewank & Walther, *Evaluating Derivatives*, ch. 3; JAX's ``jvp``) walks the
nodes in topological order, the same order as the forward values: each node's tangent is
its op's forward rule applied to its operands' tangents. The loop knows no op; all calculus
is in the registry's forward rules. A tangent that is structurally zero (a node that does
not depend on any wrt) is never built. Seeds may carry leading *batch* axes: an identity
seed gives a whole Jacobian in one pass (``jacfwd``), a colouring seed a compressed one.

Tangent nodes have ``role="tangent"`` and ``origin`` = the node whose forward rule built
them, so printers draw and list them beside B and emitted code ties each tangent line to
its forward line.

Passes: the nodes the rules build go through the rule passes of the ``reverse`` stage
(:mod:`symgrad.passes.registry`), those reverse mode runs on B, for the same reasons: the
exact ones (constant folding, ``t * 1``, negations) fold the seeds' constants away, and the
where-masks of the adjoint cleanup keep the tangent of an unselected ``where`` branch an
exact zero through later products, so that ``jvp`` agrees with ``vjp`` at kinks
(``sqrt(relu(x))`` at ``x < 0``: 0, not NaN).
They rewrite only nodes the rules build, never a forward node. ``cleanup=False`` builds the
tangents exactly as the rules write them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..base.memory import gc_paused
from ..base.progress import start
from ..ir.expr import Expr, F
from ..ir.nodeview import NodeView
from ..ir.op import REGISTRY, RESULT
from ..ir.shapes import is_float
from .reverse import adjoint_rewriting, backprop_inside, seed_kind, sum_to_shape


@dataclass(frozen=True)
class Tangents:
    """One run of the forward transform: ``tangent_of`` maps node id -> tangent node id."""

    outputs: tuple[int, ...]
    wrt: tuple[int, ...]
    tangent_of: dict[int, int]
    batch: int
    nodes_before: int
    nodes_after: int
    seed: str = "other"  # "identity" (a Jacobian), "ones" or "other" (a JVP)

    @property
    def adjoint_of(self) -> dict[int, int]:
        """Forward mode builds no adjoints (this record sits among reverse-mode records in
        ``graph.transforms``)."""
        return {}

    @property
    def output(self) -> None:
        """Forward mode has ``outputs`` (any number), not the one output of reverse mode."""
        return None

    @property
    def size(self) -> int:
        """Nodes this transform added to the graph."""
        return self.nodes_after - self.nodes_before

    def remap(self, mapping: dict[int, int]) -> Tangents:
        """The same record for a rebuilt graph (``mapping``: old id -> new id)."""
        table = {mapping[f]: mapping[t] for f, t in self.tangent_of.items()
                 if f in mapping and t in mapping}
        return replace(self, outputs=tuple(mapping.get(o, -1) for o in self.outputs),
                       tangent_of=table, wrt=tuple(mapping.get(w, -1) for w in self.wrt))


def tangents(outputs: Sequence[Expr], wrt: Sequence[Expr], seeds: Sequence[Expr],
             cleanup: bool = True) -> Tangents:
    """Append the tangents of ``outputs`` for tangent ``seeds[k]`` of variable ``wrt[k]``
    (each ``batch + wrt[k].shape``, the same batch axes for all)."""
    graph = outputs[0].graph
    with gc_paused(), adjoint_rewriting(graph, cleanup):
        result = tangents_inside(outputs, wrt, seeds)
    graph.transforms.append(result)
    return result


def tangents_inside(outputs: Sequence[Expr], wrt: Sequence[Expr],
                    seeds: Sequence[Expr]) -> Tangents:
    """:func:`tangents` inside a rewriting context the caller set up (a loop's or a
    solver's rule differentiating its step)."""
    graph = outputs[0].graph
    batch = seeds[0].shape[: seeds[0].ndim - wrt[0].ndim]
    before = len(graph)
    order = graph.ancestors([o.node for o in outputs])
    nodes = graph.nodes
    tangent: dict[int, Expr] = {}
    for w, s in zip(wrt, seeds):
        tangent.setdefault(w.node, s)
    progress = start("forward mode", total=len(order))
    calls: dict[int, tuple] = {}  # a call with several results -> its results' tangents
    read: dict[int, set[int]] = {}  # a call -> the results the outputs read
    for i in order:
        if nodes[i].op == RESULT:
            read.setdefault(nodes[i].args[0], set()).add(nodes[i].attrs["index"])
    for i in order:
        progress.update()
        node = nodes[i]
        if i in tangent or not node.args or not (is_float(node.dtype) or node.is_call):
            continue
        if node.op == RESULT:  # a projection: its entry of the call's tangents
            got = calls.get(node.args[0])
            t = None if got is None else got[node.attrs["index"]]
            if t is not None:
                with graph.provenance(i, "tangent"):
                    tangent[i] = fit(t, batch, node.shape, node.dtype)
            continue
        ts = tuple(tangent.get(a) for a in node.args)
        rule = REGISTRY[node.op].forward
        if rule is None or all(t is None for t in ts):
            continue
        with graph.provenance(i, "tangent"):
            wanted = (tuple(k in read.get(i, ()) for k in range(len(node.dtype)))
                      if node.is_call else None)
            t = rule(NodeView(graph, node, wanted=wanted), ts)
            if node.is_call:
                calls[i] = tuple(t) if t is not None else (None,) * len(node.dtype)
            elif t is not None:
                tangent[i] = fit(t, batch, node.shape, node.dtype)
    progress.close()
    wanted = set(order)
    table = {i: t.node for i, t in tangent.items() if i in wanted}
    return Tangents(tuple(o.node for o in outputs), tuple(w.node for w in wrt), table,
                    len(batch), before, len(graph), seed_kind(seeds, len(batch)))


def fit(t: Expr, batch: tuple[int, ...], shape: tuple[int, ...], dtype: str) -> Expr:
    """A rule's tangent as exactly ``batch + shape`` of ``dtype``: length-1 axes inserted
    after the batch axes, then broadcast (rules may return a broadcastable tangent)."""
    target = batch + tuple(shape)
    if t.shape != target:
        own = t.ndim - len(batch)
        if own < len(shape):
            t = F.reshape(t, batch + (1,) * (len(shape) - own) + t.shape[len(batch):])
        t = F.broadcast_to(t, target)
    if t.dtype != dtype:
        t = F.astype(t, dtype)
    return t


def by_transposition(backprop: Callable[..., tuple]) -> Callable[..., Expr | None]:
    """A forward rule derived from a backprop rule (for ops defined with
    :func:`symgrad.extend.defop` without one): the rule is linear in its adjoint ``g``, so
    ``J t`` is the gradient in ``g`` of ``sum_k <rule(n, g)[k], t_k>``, built by a reverse
    pass over the rule's own nodes (about twice the nodes of a written rule; the placeholder
    ``g`` is a variable that the result does not use)."""

    def forward(n, t):
        graph = n.graph
        lead = next(tk.shape[: tk.ndim - a.ndim] for a, tk in zip(n.args, t) if tk is not None)
        name = f"_sg_dual{n.data.id}_{len(lead)}"
        g = Expr(graph, graph.var(name, lead + n.shape, n.dtype))
        terms = []
        for a, tk, c in zip(n.args, t, backprop(n, g)):
            if tk is not None and c is not None:
                terms.append(F.sum(sum_to_shape(c, a.shape, len(lead)) * tk))
        if not terms:
            return None
        s = terms[0]
        for term in terms[1:]:
            s = s + term
        seed = Expr(graph, graph.const(1.0)) if s.dtype == "float64" else F.astype(1.0, s.dtype)
        record = backprop_inside(s, [g], seed, role="tangent")
        node = record.adjoint_of.get(g.node)
        return None if node is None else Expr(graph, node)

    return forward


__all__ = ["Tangents", "by_transposition", "fit", "tangents"]
