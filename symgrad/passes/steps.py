"""What the loop passes share: per-step slices of one array, lifting them to the whole
slice, rebuilding the users of replaced nodes, and the ancestors of some outputs as arrays
(:class:`Walk`). A term rebuilt with the steps as rows is :func:`symgrad.ir.rows.rows_lifted`.

A *slot* is a node ``x[key]`` with static basic indexing (:func:`~symgrad.ops.indexing.
static_key`) of a value ``x`` that does not change from step to step, one int entry of the
key (position ``p``) advancing by ``delta`` from one step to the next: ``x[i]``,
``obs[k, 0]``. Over ``count`` steps it is one slice of ``x`` with the step axis first.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain as concat

import numpy as np

from ..ir.expr import Expr, F
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ops.indexing import static_key


def slot_step(graph: Graph, a: int, b: int) -> tuple[int, int] | None:
    """``(p, delta)`` when nodes ``a`` and ``b`` are slices of one value whose keys differ
    in exactly one int entry ``p`` (by ``delta``, not 0), else None."""
    na, nb = graph.nodes[a], graph.nodes[b]
    ka, kb = static_key(na), static_key(nb)
    if ka is None or kb is None or na.args != nb.args or len(ka) != len(kb):
        return None
    found = None
    for p, (ea, eb) in enumerate(zip(ka, kb)):
        if ea == eb and type(ea) is type(eb):
            continue
        if found is not None or type(ea) is not int or type(eb) is not int:
            return None
        found = (p, eb - ea)
    return found


def lifted_slot(graph: Graph, node: int, p: int, delta: int, count: int) -> Expr:
    """The ``count`` steps of slot ``node`` (its key's entry ``p`` advancing by ``delta``)
    as one array, the step axis first."""
    n = graph.nodes[node]
    key = list(static_key(n))
    start = key[p]
    stop = start + delta * count
    key[p] = slice(start, stop if stop >= 0 else None, delta)
    axis = sum(1 for e in key[:p] if e is None or isinstance(e, slice))
    x = Expr(graph, n.args[0])[tuple(key)]
    if axis:
        x = F.transpose(x, (axis, *range(axis), *range(axis + 1, x.ndim)))
    return x


def replaced(graph: Graph, ids: Sequence[int], new: dict[int, int]) -> list[int]:
    """``ids`` with nodes ``new`` maps replaced, their users rebuilt (one walk)."""
    if not new:
        return list(ids)
    nodes = graph.nodes
    for i in _between(nodes, ids, new):
        n = nodes[i]
        args = tuple(new.get(a, a) for a in n.args)
        if args != n.args:
            new[i] = graph.add(REGISTRY[n.op], args, n.attrs)
    return [new.get(i, i) for i in ids]


def _between(nodes: Sequence, ids: Sequence[int], new: dict[int, int]) -> list[int]:
    """The ancestors of ``ids`` that may use a node ``new`` replaces, in topological order:
    those made after the first replaced node, not reached through a replaced node (a walk
    of the graph's tail only: operands are always made before their users)."""
    lo = min(new)
    seen: set[int] = set()
    stack = [i for i in ids if i > lo and i not in new]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(a for a in nodes[i].args if a > lo and a not in new)
    return sorted(seen)


class Walk:
    """The ancestors of some outputs as arrays, each node read once: ``order`` (ascending
    ids; ``ids`` the same as an array), where each node is in it (``at``: node id ->
    position, or -1) and its operands (``flat``: node ids; a node's are ``flat[starts[k]:
    starts[k] + counts[k]]``)."""

    def __init__(self, graph: Graph, order: Sequence[int]) -> None:
        nodes = graph.nodes
        self.order = order
        self.ns = ns = [nodes[i] for i in order]
        self.ids = np.asarray(order, dtype=np.int64)
        self.counts = np.fromiter(map(len, (m.args for m in ns)), dtype=np.int64, count=len(ns))
        self.flat = np.fromiter(concat.from_iterable(m.args for m in ns), dtype=np.int64,
                                count=int(self.counts.sum()))
        self.starts = np.cumsum(self.counts) - self.counts
        self.at = np.full(len(nodes), -1, dtype=np.int64)
        self.at[self.ids] = np.arange(len(ns))

    def args(self, vs: np.ndarray, width: int) -> np.ndarray:
        """The operands of nodes ``vs`` (each with ``width`` of them), one row a node."""
        return self.flat[self.starts[self.at[vs]][:, None] + np.arange(width)]

    def uses(self, outputs: Sequence[int]) -> list[int]:
        """How many times each node (by id) is an operand here or one of ``outputs``."""
        uses = np.bincount(self.flat, minlength=len(self.at))
        np.add.at(uses, np.asarray(outputs, dtype=np.int64), 1)
        return uses.tolist()
