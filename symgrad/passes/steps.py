"""What the loop passes share: per-step slices of one array, lifting them to the whole
slice, and rebuilding the users of replaced nodes.

A *slot* is a node ``x[key]`` with static basic indexing (:func:`~symgrad.ops.indexing.
static_key`) of a value ``x`` that does not change from step to step, one int entry of the
key (position ``p``) advancing by ``delta`` from one step to the next: ``x[i]``,
``obs[k, 0]``. Over ``count`` steps it is one slice of ``x`` with the step axis first.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def padded(x: Expr, ndim: int) -> Expr:
    """Lifted ``x`` (step axis first) with length-1 axes after the step axis, so that it
    has ``ndim`` axes and broadcasts against other lifted operands as its step value did."""
    if x.ndim >= ndim:
        return x
    return F.reshape(x, (x.shape[0], *(1,) * (ndim - x.ndim), *x.shape[1:]))


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


def use_counts(graph: Graph, order: Sequence[int], ids: Sequence[int]) -> dict[int, int]:
    """How many times each node of ``order`` is an operand there or one of ``ids``."""
    uses: dict[int, int] = {}
    nodes = graph.nodes
    for i in order:
        for a in nodes[i].args:
            uses[a] = uses.get(a, 0) + 1
    for i in ids:
        uses[i] = uses.get(i, 0) + 1
    return uses
